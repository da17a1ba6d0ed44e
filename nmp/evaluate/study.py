"""Studies that are not design-point sweeps: a sweep file with a ``runner`` key.

Sharding, caches, compression and training studies do not cross architectures with workloads;
each brings its own runner::

    name = "recshard-capacity"
    description = "..."
    runner = "nmp.shard.study:run_study"     # module:function inside nmp
    [params]                                  # the runner's own parameters
    hbm_gib = [4, 8, 16]

``nmp evaluate papers/recshard-capacity`` makes the run folder (locked, named and linked from
``reports/latest`` as for any sweep) and calls ``runner(params, out_dir=run_dir, jobs=N)``
(``--jobs``, by default one per CPU, as for any sweep; a runner that runs its points in worker
processes gives each one thread: :func:`nmp.evaluate.executor.point_worker_init`). The runner
computes the study, writes its own files there (``report.md``, ``results.csv``,
``results.jsonl``, plots) and returns its result rows (flat dicts); this module saves the
sweep file and ``summary.json`` and prints the rows. A runner's module may define
``check_params(params)``, which ``nmp evaluate --check`` calls (runners check their params
before they compute anything).
"""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmp.config import load_toml
from nmp.errors import NmpError, SpecError
from nmp.evaluate.executor import default_jobs
from nmp.fileio import atomic_write_json, atomic_write_text
from nmp.plugins import load_study_runner

KEYS = ("name", "description", "runner", "params")


@dataclass(frozen=True)
class CustomStudy:
    """A study run by its own function rather than by the design-point runner."""

    name: str
    runner: str
    description: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    file: str | None = None


def is_custom(data: dict[str, Any]) -> bool:
    return "runner" in data


def load_custom_study(name_or_path: str | Path) -> CustomStudy | None:
    """The custom study a sweep name or file holds, or None for a design-point sweep."""
    # numpy: loaded on use (start-up time)
    from nmp.evaluate.sweep import find_sweep

    path = find_sweep(name_or_path)
    data = load_toml(path)
    return parse_custom_study(data, file=str(path)) if is_custom(data) else None


def parse_custom_study(data: dict[str, Any], *, file: str | None = None) -> CustomStudy:
    """Check a custom study's keys (the runner must resolve) before anything runs."""
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise SpecError(
            f"unknown key(s) {', '.join(unknown)} in a study with a runner "
            f"(allowed: {', '.join(KEYS)}; the runner's own settings go under [params])",
            file=file,
        )
    name = data.get("name") or (Path(file).stem if file else "study")
    if not isinstance(name, str):
        raise SpecError("must be a string", file=file, key="name")
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise SpecError("must be a table", file=file, key="params")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise SpecError("must be a string", file=file, key="description")
    check_runner_signature(load_study_runner(data["runner"], file=file, key="runner"), file=file)
    return CustomStudy(name, data["runner"], description, dict(params), file)


def check_runner_signature(runner: Any, *, file: str | None = None) -> None:
    """A runner is called as ``runner(params, out_dir=..., jobs=...)``: one that cannot be
    (another signature) is refused when the study is loaded, naming the study file."""
    import inspect

    try:
        signature = inspect.signature(runner)
    except (TypeError, ValueError):
        return  # a builtin without a signature: judged when it is called
    try:
        signature.bind({}, out_dir=Path("."), jobs=1)
    except TypeError as exc:
        name = getattr(runner, "__qualname__", repr(runner))
        raise SpecError(
            f"{name}{signature} cannot be called as runner(params, out_dir=..., jobs=...): {exc}",
            file=file,
            key="runner",
        ) from None


@contextlib.contextmanager
def _named(study: CustomStudy) -> Iterator[None]:
    """A runner's error about its params (``params.eb: ...``) names the study file too."""
    try:
        yield
    except NmpError as exc:
        if exc.file is not None or study.file is None:
            raise
        raise NmpError(exc.message, file=study.file, line=exc.line, key=exc.key) from None


def check_study_params(study: CustomStudy) -> bool:
    """Check the study's ``[params]`` with its runner module's ``check_params(params)``, where
    the module has one (it raises :class:`NmpError` naming ``params.<key>``); returns whether
    the params were checked."""
    module = importlib.import_module(study.runner.split(":")[0])
    check = getattr(module, "check_params", None)
    if check is None:
        return False
    with _named(study):
        check(study.params)
    return True


def run_custom_study(
    study: CustomStudy, run_dir: Path, *, jobs: int | None = None, sweep_text: str = ""
) -> dict[str, Any]:
    """Run ``study`` into ``run_dir`` (which exists); returns the summary also saved there."""
    runner = load_study_runner(study.runner, file=study.file, key="runner")
    check_runner_signature(runner, file=study.file)
    if sweep_text:
        atomic_write_text(run_dir / "sweep.toml", sweep_text)
    with _named(study):
        rows = runner(study.params, out_dir=run_dir, jobs=jobs or default_jobs())
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise NmpError(f"{study.runner} returned {type(rows).__name__}, not a list of rows (dicts)")
    written = sorted(
        p.name
        for p in run_dir.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.name != "summary.json"
    )
    summary = {
        "sweep": study.name,
        "description": study.description,
        "kind": "study",
        "runner": study.runner,
        "run_dir": str(run_dir),
        "points": len(rows),
        "rows": [_jsonable(r) for r in rows],
        "files": [str(run_dir / f) for f in [*written, "summary.json"]],
    }
    atomic_write_json(run_dir / "summary.json", summary)
    return summary


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in row.items():
        if hasattr(v, "item"):  # numpy scalars
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        out[str(k)] = v
    return out


def print_study_rows(summary: dict[str, Any], console: Any, *, max_columns: int = 12) -> None:
    """The study's rows as one table (the first ``max_columns`` columns; the rest are in its
    files)."""
    # rich: loaded on use (start-up time)
    from rich.markup import escape
    from rich.table import Table

    rows = summary["rows"]
    console.print(f"[bold]{escape(summary['sweep'])}[/bold]: {escape(summary['description'])}")
    if not rows:
        console.print("(no rows)")
        return
    columns = list(dict.fromkeys(k for r in rows for k in r))
    shown = columns[:max_columns]
    table = Table()
    for c in shown:
        table.add_column(escape(c), justify="right" if _numeric(rows, c) else "left")
    for r in rows:
        table.add_row(*(escape(_fmt(r.get(c))) for c in shown))
    console.print(table)
    if len(columns) > len(shown):
        console.print(f"({len(columns) - len(shown)} more columns in results.csv)")
    console.print(f"report: {summary['run_dir']}/report.md", markup=False, highlight=False)


def _numeric(rows: list[dict[str, Any]], column: str) -> bool:
    return all(isinstance(r.get(column), int | float) for r in rows if r.get(column) is not None)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
