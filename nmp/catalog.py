"""``nmp models``: every preset of every kind with its key figures, and every registry.

Each model package that has presets registers its ``catalog_rows() -> list[dict]`` in
:data:`nmp.config.PRESET_CATALOGS`; a row has at least ``name`` and ``summary`` (a short string of
key figures) and may add columns of its own.

``nmp models --registries`` lists every variant family (:class:`nmp.registry.Registry`) and its
members, as Ramulator 2 dumps its factories: what a preset's ``policy``, a sweep's ``sharder``
or a claim's ``model`` may name, and every preset folder (``memory preset``, ``workload preset``).
"""

from __future__ import annotations

import argparse
from typing import Any

from nmp.cliargs import json_text
from nmp.config import PRESET_CATALOGS
from nmp.registry import load_all_registries

# The `nmp models` command: nmp.cli reads this literal without importing the module
# (name, place in `nmp --help`, one-line help; nmp.cli.command_table).
NMP_COMMAND = {
    "name": "models",
    "order": 2,
    "help": "list hardware and workload presets with their key figures",
}


def collect_registries() -> dict[str, list[dict[str, str]]]:
    """Every registry's members (name, description, module or file), by family: the modules
    that declare a registry are found by :func:`nmp.registry.load_all_registries`."""
    return {kind: reg.describe() for kind, reg in sorted(load_all_registries().items())}


def collect(kinds: list[str] | None = None) -> dict[str, list[dict]]:
    """Each preset kind's rows (:data:`nmp.config.PRESET_CATALOGS`), or only ``kinds``'."""
    return {
        kind: rows_fn() for kind, rows_fn in PRESET_CATALOGS.items() if not kinds or kind in kinds
    }


def _run(args: argparse.Namespace) -> int:
    catalog: dict[str, Any] = {}
    if args.registries:
        catalog["registries"] = collect_registries()
    if args.kind or not args.registries:
        catalog.update(collect(args.kind))
    if args.json:
        print(json_text(catalog))
        return 0
    # rich takes a noticeable fraction of a second to import: only for a table
    from rich.markup import escape
    from rich.table import Table

    from nmp.report.console import make_console

    console = make_console()
    for kind, members in catalog.pop("registries", {}).items():
        table = Table(title=f"registry: {escape(kind)}", title_justify="left")
        for col in ("name", "description", "module"):
            table.add_column(col, overflow="fold")
        for member in members:
            table.add_row(*(escape(member[k]) for k in ("name", "description", "module")))
        console.print(table)
    for kind, rows in catalog.items():
        if not rows:
            continue
        columns = list(dict.fromkeys(k for row in rows for k in row))
        invalid = any(str(row.get("summary", "")).startswith("invalid:") for row in rows)
        if len(columns) > 3 and "summary" in columns and not invalid:
            # The figure columns already say what the one-line summary says; keep it for --json
            # (and for a preset that did not load: its summary is all there is to say of it).
            columns.remove("summary")
        table = Table(title=f"{escape(kind)} presets", title_justify="left")
        for col in columns:
            table.add_column(col, overflow="fold")
        for row in rows:
            table.add_row(*(escape(str(row.get(col, ""))) for col in columns))
        console.print(table)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "models",
        help=str(NMP_COMMAND["help"]),
        description="List the presets (memory, arch, gpu, workload) with their key figures, "
        "or (--registries) every variant family and its members.",
    )
    p.add_argument(
        "--kind",
        action="append",
        choices=PRESET_CATALOGS.names(),
        help="only this kind (repeatable)",
    )
    p.add_argument(
        "--registries",
        action="store_true",
        help="list every registry (placement policies, sharders, codecs, claim models...) and "
        "its members instead of the presets (with --kind: and those presets)",
    )
    p.add_argument("--json", action="store_true", help="print the catalog as JSON")
    p.set_defaults(func=_run)
