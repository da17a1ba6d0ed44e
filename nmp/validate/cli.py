"""``nmp validate``: the kit's checks against simulators, torch and the papers' claims."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

from nmp.cliargs import check_out_folder, json_text
from nmp.errors import NmpError
from nmp.validate.runner import plan_validation

# The `nmp validate` command: nmp.cli reads this literal without importing the module
# (name, place in `nmp --help`, one-line help; nmp.cli.command_table).
NMP_COMMAND = {
    "name": "validate",
    "order": 9,
    "help": "check the kit against Ramulator 2, torch, fresh encodes and published claims",
}


def _default_jobs() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def _run(args: argparse.Namespace) -> int:
    # rich: loaded on use (start-up time)
    from rich.console import Console

    # loaded when the command runs, not for `nmp --help`
    from nmp.report.progress import bar
    from nmp.validate.report import paper_setups, print_summary, print_table, write_report
    from nmp.validate.runner import group_of, run_validation

    console = Console(stderr=args.json)
    piped = not console.is_terminal
    if piped:
        console = Console(stderr=args.json, width=160)
    only = tuple(args.only or ())
    tasks = plan_validation(quick=args.quick, only=only)
    if not tasks:
        raise NmpError(f"no check matches --only {' '.join(only)}")
    out = check_out_folder(args.out)  # before the checks run, not after
    groups = list(dict.fromkeys(group_of(check_id) for check_id, _ in tasks))
    if args.jobs < 0:
        raise NmpError(f"--jobs must be >= 0 (0: the CPU count), got {args.jobs}")
    jobs = args.jobs or _default_jobs()
    t0 = time.perf_counter()
    with bar("validate", len(groups), quiet=args.json or piped) as advance:
        finished = 0

        def on_group(name: str, rows: list, seconds: float) -> None:
            nonlocal finished
            finished += 1
            advance()
            if piped:  # a log shows each stage as it finishes (stderr: stdout may be --json)
                verdicts = Counter(r.verdict for r in rows)
                counts = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
                print(
                    f"validate [{finished}/{len(groups)}] {name}: {len(rows)} checks "
                    f"({counts}) at {seconds:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )

        results = run_validation(quick=args.quick, only=only, advance=on_group, jobs=jobs)
    run_dir = write_report(results, out, quick=args.quick)
    if args.json:
        doc = {"checks": [r.to_json() for r in results], "setups": paper_setups(results)}
        print(json_text(doc))
    elif args.table:
        print_table(results, console)
        console.print(f"report: {run_dir / 'report.md'}", markup=False)
    else:
        print_summary(results, console, run_dir / "report.md", time.perf_counter() - t0)
    errors = [r.id for r in results if r.verdict == "error"]
    # why the first could not run, on the error line itself (the rest are in the report)
    first_error = next((r.model for r in results if r.verdict == "error"), "")
    from nmp.validate.real_gpu import GROUP as REAL_GPU

    # A published claim or a real GPU's measurement that the model misses is a finding about
    # the model, reported with its explanation (docs/gpu-model.md says what still separates the
    # GPU model from the H200); a simulator or functional check that fails is the kit broken.
    judged_not_failed = ("claim", REAL_GPU)
    broken = [
        r.id for r in results if r.group not in judged_not_failed and r.verdict == "disagrees"
    ]
    if errors or broken:
        what = "; ".join(
            s
            for s in (
                f"{len(errors)} check(s) could not run: {', '.join(errors)} "
                f"(the first: {first_error})"
                if errors
                else "",
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
        help=str(NMP_COMMAND["help"]),
        description="Run the kit's checks: the DRAM engine against Ramulator 2's reference "
        "cases, every design's gather-reduce against torch.nn.EmbeddingBag, in-memory parity "
        "against a fresh encode, and every published claim the kit has a study for "
        "(nmp/papers/*/claims.toml) against the model's value, computed twice: under the "
        "paper's setup and under the kit's defaults, each with a verdict, and beside every speed "
        "claim its first-principles bound (docs/validation-rules.md). Prints a one-screen "
        "summary (verdict counts per paper) and writes the full table to "
        "reports/validate-<time>/report.md and checks.json. Exits 1 if a check cannot run "
        "or a simulator / functional check fails; a disagreeing published claim or real-GPU "
        "measurement is reported, with its explanation, not an error.",
    )
    p.add_argument(
        "--quick", action="store_true", help="only the claims marked quick (what CI runs)"
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=0,
        metavar="N",
        help="run the checks' groups (one per paper or built-in check, one per part of a "
        "check in parts: gpu.real's recorded measurements) in N processes (0, the default: the CPU "
        "count, at most 8); the results are the same",
    )
    p.add_argument(
        "--table",
        action="store_true",
        help="print the full table on the console instead of the summary",
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
