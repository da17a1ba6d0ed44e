"""``nmp validate``: the kit's checks against simulators, torch and the papers' claims."""

from __future__ import annotations

import argparse
import json
import sys

from nmp.cliargs import check_out_folder
from nmp.errors import NmpError
from nmp.validate.runner import plan_validation


def _run(args: argparse.Namespace) -> int:
    # rich: loaded on use (start-up time)
    from rich.console import Console

    # loaded when the command runs, not for `nmp --help`
    from nmp.report.progress import bar
    from nmp.validate.report import fmt_value, paper_setups, print_table, write_report

    console = Console(stderr=args.json)
    piped = not console.is_terminal
    if piped:
        console = Console(stderr=args.json, width=160)
    only = tuple(args.only or ())
    tasks = plan_validation(quick=args.quick, only=only)
    if not tasks:
        raise NmpError(f"no check matches --only {' '.join(only)}")
    out = check_out_folder(args.out)  # before the checks run, not after
    results = []
    with bar("validate", len(tasks), quiet=args.json) as advance:
        for _, run in tasks:
            done = run()
            results.extend(done)
            if piped and not args.json:  # a log shows each check as it finishes
                for r in done:
                    print(
                        f"{r.id}: {r.verdict} (published {fmt_value(r.published, r.unit) or '-'}"
                        f", model {fmt_value(r.model, r.unit) or '-'}; kit defaults "
                        f"{fmt_value(r.model_kit_defaults, r.unit) or '-'}: "
                        f"{r.verdict_kit_defaults})",
                        flush=True,
                    )
            advance()
    run_dir = write_report(results, out, quick=args.quick)
    if args.json:
        doc = {"checks": [r.to_json() for r in results], "setups": paper_setups(results)}
        print(json.dumps(doc, indent=2))
    else:
        print_table(results, console)
        console.print(f"report: {run_dir / 'report.md'}")
    errors = [r.id for r in results if r.verdict == "error"]
    broken = [r.id for r in results if r.group != "claim" and r.verdict == "disagrees"]
    if errors or broken:
        what = "; ".join(
            s
            for s in (
                f"{len(errors)} check(s) could not run: {', '.join(errors)}" if errors else "",
                f"the kit disagrees with its references: {', '.join(broken)}" if broken else "",
            )
            if s
        )
        print(f"nmp: error: {what}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check the kit against Ramulator 2, torch, fresh encodes and published claims",
        description="Run the kit's checks: the DRAM engine against Ramulator 2's reference "
        "cases, every design's gather-reduce against torch.nn.EmbeddingBag, in-memory parity "
        "against a fresh encode, and every published claim the kit has a study for "
        "(nmp/validate/claims/*.toml) against the model's value, computed twice: under the "
        "paper's setup and under the kit's defaults, each with a verdict, and beside every speed "
        "claim the model's physical bound on it (docs/validation-rules.md). Writes "
        "reports/validate-<time>/report.md. Exits 1 if a check cannot run or a simulator / "
        "functional check fails; a disagreeing published claim is reported, with its "
        "explanation, not an error.",
    )
    p.add_argument(
        "--quick", action="store_true", help="only the claims marked quick (CI: < 3 minutes)"
    )
    p.add_argument("--json", action="store_true", help="print {checks: [...]} on stdout")
    p.add_argument(
        "--only",
        nargs="+",
        metavar="ID",
        help="only checks whose id matches one of these globs or prefixes (dram, recross.*)",
    )
    p.add_argument("--out", default="reports", help="folder of the report (default: reports)")
    p.set_defaults(func=_run)
