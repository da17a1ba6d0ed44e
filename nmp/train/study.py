"""``nmp evaluate papers/ecrec`` / ``papers/cpr``: the fault-tolerance study of a paper's setup.

Runs the Monte-Carlo comparison (:func:`nmp.train.extrapolate.monte_carlo`) and the crossover
sweep (:mod:`nmp.train.crossover`) on the setup named by ``params.setup`` and writes
``report.md``, ``results.csv``, ``results.jsonl`` (the comparison's rows, then the
crossovers) and ``crossover-<setup>.png`` into the run folder.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from nmp.errors import NmpError
from nmp.plugins import study_runner

PARAMS = ("setup", "trials", "seed", "crossover")


def check_params(params: dict[str, Any]) -> tuple[Any, Any]:
    """The study's parameters (``nmp evaluate --check`` calls this too): the deployment of
    ``params.setup`` with the trials and seed given, and the setup's sources."""
    from nmp.train.setup import load_setup

    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise NmpError(f"params.{unknown[0]}: unknown (known: {', '.join(PARAMS)})")
    if "setup" not in params:
        raise NmpError("params.setup: missing (a file of workloads/train/, e.g. ecrec)")
    dep, sources = load_setup(str(params["setup"]))
    for key, least in (("trials", 1), ("seed", 0)):
        if key in params:
            value = params[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise NmpError(f"params.{key}: must be an integer >= {least}")
            override: dict[str, Any] = {key: value}
            dep = replace(dep, **override)
    if not isinstance(params.get("crossover", True), bool):
        raise NmpError("params.crossover: must be true or false")
    return dep, sources


@study_runner
def run_study(params: dict[str, Any], *, out_dir: Path, jobs: int = 1) -> list[dict[str, Any]]:
    """A paper setup's fault tolerance: the Monte-Carlo comparison and the crossovers."""
    from nmp.compress.study import write_jsonl, write_table
    from nmp.fileio import atomic_write_text
    from nmp.train.crossover import plot, sweep
    from nmp.train.extrapolate import monte_carlo

    dep, sources = check_params(params)
    out_dir = Path(out_dir)
    rows = monte_carlo(dep)
    crossings: list[dict[str, Any]] = []
    png = None
    if params.get("crossover", True):
        points, crossings = sweep(dep)
        from nmp.train.setup import load_marks

        marks = load_marks(str(params["setup"]))
        png = plot(dep, points, crossings, out_dir / f"crossover-{dep.name}.png", marks)
    flat = [{"kind": "comparison", **r} for r in rows] + [
        {"kind": "crossover", **{k: v for k, v in c.items() if k != "range"}} for c in crossings
    ]
    write_jsonl(out_dir / "results.jsonl", flat)
    write_table(out_dir / "results.csv", flat)
    atomic_write_text(out_dir / "report.md", _report(dep, sources, rows, crossings, png))
    return [
        {
            k: r.get(k)
            for k in (
                "strategy",
                "overhead_pct",
                "overhead_ci95_pct",
                "recovery_s",
                "time_to_full_redundancy_s",
                "memory_overhead_pct",
            )
        }
        for r in rows
    ]


def _report(dep, sources, rows, crossings, png) -> str:
    def s(v):
        return "-" if v is None else f"{v:.3g}"

    from nmp.train.extrapolate_report import describe

    lines = [
        f"# Fault tolerance at the scale of setup `{dep.name}`",
        "",
        describe(dep, rows) + ".",
        "",
        "| strategy | overhead % (±95%) | expected % | no-failure % | recovery s "
        "| to full redundancy s | memory +% |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['strategy']} | {r['overhead_pct']:.3g} ±{r['overhead_ci95_pct']:.2g} "
            f"| {r['overhead_expected_pct']:.3g} | {r['overhead_no_failure_pct']:.3g} "
            f"| {s(r['recovery_s'])} | {s(r['time_to_full_redundancy_s'])} "
            f"| {r['memory_overhead_pct']:.3g} |"
        )
    if crossings:
        lines += [
            "",
            f"## Where ECRec overtakes (plot: `{Path(png).name}`)",
            "",
            "| parameter | rival | setup value | ECRec wins at setup | crossover |",
            "|---|---|---|---|---|",
        ]
        for c in crossings:
            cross = c["crossover_value"]
            where = (
                "none in range"
                if cross is None
                else (f"{cross:.4g} (ECRec wins {'above' if c['ecrec_wins_above'] else 'below'})")
            )
            lines.append(
                f"| {c['parameter']} | {c['rival']} | {c['setup_value']:.4g} "
                f"| {'yes' if c['ecrec_wins_at_setup'] else 'no'} | {where} |"
            )
    lines += [
        "",
        "Accuracy is not modeled at this scale: `nmp train --compare --seeds N --nodes "
        f"{dep.servers}` measures each strategy's AUC change, paired with the failure-free run of "
        "each seed, on the CPU-sized trainer.",
    ]
    lines += ["", "## Sources of the setup's values", ""]
    lines += [f"- `{k}`: {v}" for k, v in sources.items()]
    return "\n".join(lines) + "\n"
