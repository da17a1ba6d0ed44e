"""``nmp rtl``: export and characterize the parity-update datapath.

``nmp rtl export`` writes the Verilog module and its self-checking testbench; ``nmp rtl report``
prints cells (yosys), PyRTL area estimate, critical path and fmax for a set of widths.
"""

from __future__ import annotations

import argparse
import json

import nmp.guard as guard
from nmp.cliargs import check_out_folder
from nmp.errors import NmpError

# The `nmp rtl` command: nmp.cli reads this literal without importing the module
# (name, place in `nmp --help`, one-line help; nmp.cli.command_table).
NMP_COMMAND = {
    "name": "rtl",
    "order": 5,
    "help": "export and characterize the parity-update datapath",
}


DEFAULT_OUT = "rtl"


def _config(args: argparse.Namespace, **over):
    # numba, pyrtl: loaded on use (start-up time)
    from nmp.rtl.parity import ParityUnitConfig

    fields = dict(
        width=getattr(args, "width", 64),
        depth=args.depth,
        stages=args.stages,
        gf=args.gf,
        input_mode=args.input.replace("-", "_"),
    )
    fields.update(over)
    try:
        return ParityUnitConfig(**fields)
    except NmpError as exc:  # the unit's field is the flag's value: name the flag
        if exc.key in ("width", "depth", "stages"):
            # (``rtl report`` gives the width of each of its --widths)
            flag = f"--{exc.key}s" if exc.key in over else f"--{exc.key}"
            raise type(exc)(exc.message, key=flag) from None
        raise


# The most stimulus entries a testbench takes. Measured (2-core Intel Xeon VM): 100,000
# entries export in 1.5 s to 15 MB, which Icarus compiles in 3.2 s and runs in 2.2 s; 2 M took
# 17 s to export (311 MB) and 20 M ran past a minute. Chosen: 2^20, under ten seconds here
# and about a minute in Icarus.
MAX_ENTRIES = 2**20


def _export(args: argparse.Namespace) -> int:
    # numba, pyrtl: loaded on use (start-up time)
    from nmp.rtl.verilog import export

    if not 1 <= args.entries <= MAX_ENTRIES:
        raise NmpError(
            f"--entries must be in 1..{MAX_ENTRIES:,} (2^20), got {args.entries:,}: the stimulus "
            "is one statement per entry of the testbench's initial block"
        )
    cfg = _config(args)
    guard.check(guard.testbench_estimate(args.entries, cfg.width), args.max_memory)
    check_out_folder(args.out)
    try:
        paths = export(cfg, args.out, entries=args.entries, seed=args.seed)
    except OSError as exc:
        raise NmpError(f"cannot write to {args.out}: {exc.strerror or exc}") from exc
    for path in paths:
        print(path)
    return 0


def _report(args: argparse.Namespace) -> int:
    # numba, pyrtl: loaded on use (start-up time)
    from nmp.rtl import synth

    variants = {"xor": [False], "gf": [True], "both": [False, True]}[args.variant]
    if not args.cached and not synth.yosys_available():
        raise NmpError("yosys is not installed (needed for cell counts); try --cached")
    cfgs = [_config(args, width=width, gf=gf) for gf in variants for width in args.widths]
    if args.cached:
        figures = [
            synth.parity_unit_figures(
                c.width, gf=c.gf, depth=c.depth, stages=c.stages, input_mode=c.input_mode
            )
            for c in cfgs
        ]
    else:  # every width's yosys run side by side
        figures = synth.measure_all(cfgs)
    if args.json:
        print(json.dumps([f.to_dict() for f in figures], indent=1))
        return 0
    # rich: loaded on use (start-up time)
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"parity-update datapath without its SRAM (depth {args.depth}, "
        f"{args.stages} stages, {args.input} input; PyRTL figures at 130 nm)",
        title_justify="left",
    )
    for col in (
        "unit",
        "width b",
        "cells (yosys)",
        "area mm2 (PyRTL)",
        "crit. path ps",
        "fmax MHz",
    ):
        table.add_column(col, justify="right")
    for f in figures:
        table.add_row(
            "GF(2^8)" if f.gf else "XOR",
            str(f.width),
            "-" if f.cells is None else str(f.cells),
            f"{f.pyrtl_area_mm2:.4f}",
            f"{f.critical_path_ps:.0f}",
            f"{f.fmax_mhz:.0f}",
        )
    Console().print(table)
    return 0


def _common(p: argparse.ArgumentParser, *, width: bool = True) -> None:
    from nmp.rtl.input_modes import INPUT_MODES  # (no pyrtl: the modes are data)

    if width:
        p.add_argument("--width", type=int, default=64, help="parity word bits, 64..512 (64)")
    p.add_argument("--depth", type=int, default=1024, help="parity memory words (1024)")
    p.add_argument("--stages", type=int, default=2, help="pipeline depth, 2..8 (2)")
    p.add_argument(
        "--input",
        choices=[name.replace("_", "-") for name in INPUT_MODES.names()],
        default="delta",
        help="the unit's front end: "
        + "; ".join(f"{n.replace('_', '-')} {INPUT_MODES.get(n).description}" for n in INPUT_MODES)
        + " (delta)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rtl", help=str(NMP_COMMAND["help"]))
    rtl_sub = p.add_subparsers(dest="rtl_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda _args: p.error("give a subcommand (export, report)"))

    ex = rtl_sub.add_parser("export", help="write the Verilog module and a self-checking testbench")
    _common(ex)
    ex.add_argument("--gf", action="store_true", help="GF(2^8) variant (Reed-Solomon parity)")
    ex.add_argument("--out", default=DEFAULT_OUT, help=f"output folder ({DEFAULT_OUT})")
    ex.add_argument("--entries", type=int, default=512, help="stimulus entries (512)")
    ex.add_argument("--seed", type=int, default=0, help="stimulus seed (0)")
    from nmp.guard import add_argument

    add_argument(ex)
    ex.set_defaults(func=_export)

    rp = rtl_sub.add_parser("report", help="cells, area, critical path and fmax per width")
    _common(rp, width=False)
    rp.add_argument(
        "--widths", type=int, nargs="+", default=[64, 128, 256, 512], help="widths in bits"
    )
    rp.add_argument(
        "--variant",
        choices=("xor", "gf", "both"),
        default="both",
        help="the XOR datapath, the GF(2^8) one, or both (default both)",
    )
    rp.add_argument("--cached", action="store_true", help="use nmp/rtl/data figures if present")
    rp.add_argument("--json", action="store_true", help="print the figures as JSON")
    rp.set_defaults(func=_report, gf=False)
