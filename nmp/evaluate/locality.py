"""Locality: which skew a run used, and where near-memory overtakes the host (and the GPU).

Every design's speed moves with the skew of the lookups: the host's LLC, RecNMP's RankCache,
TRiM's hot-row replicas and ReCross's frequency partition all live on hot rows. A *skew scan*
runs each design on one workload's tables from uniform (alpha 0) through Zipf exponents to
strongly skewed, plus the *measured* locality (``distribution = "measured"``: Meta's production
reuse histograms, :mod:`nmp.workload.locality`), and finds per design the exponents where its
throughput crosses the reference design's (:func:`crossovers`: generic over any two series, so
it holds whatever host model produced them). The measured point sits on the same axis at its
*equivalent exponent*: the Zipf exponent whose hottest 1 % of each table's rows take the same
share of the lookups (:func:`equivalent_alpha`).

Two users:

* the study ``nmp evaluate papers/locality`` (``runner = "nmp.evaluate.locality:run_study"``),
  which writes report.md, results.csv, results.jsonl, crossover.png and fit.png (the
  generator's reuse histograms beside the published ones);
* every sweep's report (:func:`nmp.evaluate.locality_summary.locality_summary`, one call in
  the runner): which locality each workload ran, every design's hit rates beside the host's,
  and, where the sweep file has a ``[locality_scan]`` table (the default sweep does), the
  crossovers of a short scan.

Params of the study (and keys of ``[locality_scan]``)::

    workload = "recross-eval"     # whose tables are scanned
    alphas = [0.0, 0.6, 1.0]      # Zipf exponents; 0 = uniform
    locality = "meta-2022"        # the measured point (data/locality/<name>.toml)
    reference = "host-cpu"        # the design the others are compared with (a design label)
    designs = ["host-cpu", ...]   # presets (the study); a scan in a sweep takes the sweep's
    set = { "arch.memory.preset" = ... }   # overrides of every DRAM design (GPUs keep theirs)
"""

from __future__ import annotations

import csv
import io
import json
import math
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nmp.errors import NmpError
from nmp.evaluate.executor import point_worker_init
from nmp.fileio import atomic_write_text
from nmp.plugins import study_runner
from nmp.units import is_number

# chosen: the share of each table's rows whose lookup share places a measured locality on the
# Zipf axis (1 %: 100K rows of the largest Criteo table, the order of a host LLC's rows).
HEAD_FRACTION = 0.01
MEASURED = "measured"
PARAM_KEYS = ("workload", "alphas", "locality", "reference", "designs", "set")
# The most exponents a scan takes: each adds a point per design and a row to every curve of
# the report. Chosen: 64 (the kit's scans take 5 to 8); 100,000 ran its report past a minute.
MAX_SCAN_ALPHAS = 64


@dataclass(frozen=True)
class ScanDesign:
    """A design of the scan: its label, preset and fixed overrides."""

    label: str
    arch: str
    set: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class ScanSetup:
    workload: str
    alphas: tuple[float, ...]
    locality: str
    reference: str
    designs: tuple[ScanDesign, ...]


def _err(key: str, message: str, where: str) -> NmpError:
    return NmpError(f"{where}.{key}: {message}")


def parse_scan(
    params: dict[str, Any], *, designs: tuple[ScanDesign, ...] = (), where: str = "params"
) -> ScanSetup:
    """The scan's settings, checked (errors name ``<where>.<key>``); ``designs`` are the
    sweep's when the scan belongs to a sweep (then ``designs`` and ``set`` are not keys)."""
    # on use: the workload and preset lookups (start-up time)
    from nmp.workload.locality import DEFAULT_LOCALITY, locality_names
    from nmp.workload.spec import MAX_ZIPF_ALPHA, load_workload

    unknown = sorted(set(params) - set(PARAM_KEYS))
    if unknown:
        raise _err(unknown[0], f"unknown key (known: {', '.join(PARAM_KEYS)})", where)
    workload = params.get("workload")
    if not isinstance(workload, str) or not workload:
        raise _err("workload", "must name a workload preset", where)
    try:
        load_workload(workload)
    except NmpError as exc:  # (an unknown preset, a workload file that does not load)
        raise _err("workload", exc.message, where) from None
    alphas = params.get("alphas")
    if (
        not isinstance(alphas, list)
        or not 2 <= len(alphas) <= MAX_SCAN_ALPHAS
        or not all(is_number(a) for a in alphas)
        or any(not 0 <= a <= MAX_ZIPF_ALPHA for a in alphas)
        or sorted(alphas) != alphas
        or len(set(alphas)) != len(alphas)
    ):
        raise _err(
            "alphas",
            f"must be 2..{MAX_SCAN_ALPHAS} distinct increasing Zipf exponents in "
            f"[0, {MAX_ZIPF_ALPHA:g}] (0 = uniform)",
            where,
        )
    locality = params.get("locality", DEFAULT_LOCALITY)
    if locality not in locality_names():
        raise _err(
            "locality",
            f"unknown measured locality {locality!r} (known: {', '.join(locality_names())})",
            where,
        )
    if not designs:
        common = params.get("set", {})
        if not isinstance(common, dict):
            raise _err("set", "must be a table of overrides (dotted path = value)", where)
        names = params.get("designs")
        if not isinstance(names, list) or not names or not all(isinstance(d, str) for d in names):
            raise _err("designs", "must list design presets", where)
        designs = tuple(ScanDesign(d, d, _design_set(d, common)) for d in names)
    else:
        # a sweep's scan: its designs, or those of them that ``designs`` names
        if "set" in params:
            raise _err("set", "a sweep's scan runs its designs with their own overrides", where)
        names = params.get("designs", [d.label for d in designs])
        known = [d.label for d in designs]
        if not isinstance(names, list) or not names or not all(n in known for n in names):
            raise _err(
                "designs", f"must list some of the sweep's designs ({', '.join(known)})", where
            )
        designs = tuple(d for d in designs if d.label in names)
    labels = [d.label for d in designs]
    reference = params.get("reference", "host-cpu")
    if reference not in labels:
        raise _err(
            "reference",
            f"must be one of the designs ({', '.join(labels)}), got {reference!r}",
            where,
        )
    return ScanSetup(workload, tuple(float(a) for a in alphas), locality, reference, designs)


def _design_set(arch: str, common: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The common overrides a design takes: a GPU keeps its own memory (arch.memory.* and
    memory.* are not its)."""
    from nmp.evaluate.point import own_memory  # on use (start-up time)

    if own_memory(arch):
        common = {k: v for k, v in common.items() if not k.startswith(("arch.memory.", "memory."))}
    return tuple(sorted(common.items()))


def skew_overrides(skew: float | str, locality: str) -> dict[str, Any]:
    """Workload overrides of one scan step: a Zipf exponent (0: uniform) or "measured"."""
    if skew == MEASURED:
        return {"workload.distribution": "measured", "workload.locality": locality}
    if float(skew) == 0.0:
        return {"workload.distribution": "uniform"}
    return {"workload.distribution": "zipf", "workload.alpha": float(skew)}


def skew_steps(setup: ScanSetup) -> list[float | str]:
    return [*setup.alphas, MEASURED]


# --- running ---------------------------------------------------------------------------------


def _run(job: tuple[str, str, tuple[tuple[str, Any], ...]]) -> dict[str, Any]:
    from nmp.evaluate.point import run_point  # numpy: loaded on use (start-up time)

    arch, workload, items = job
    res = run_point(arch, workload, overrides=dict(items))
    return {
        "lookups_per_s": res.lookups_per_s,
        "energy_pj_per_lookup": res.energy_pj_per_lookup,
        "hit_rates": hit_rates(res.breakdown),
    }


def run_scan(
    setup: ScanSetup, jobs: int = 1, done: dict[tuple[str, Any], dict[str, Any]] | None = None
) -> dict[tuple[str, Any], dict[str, Any]]:
    """(design label, skew) -> the point's lookups/s, energy and hit rates; ``done`` holds
    points already run (a sweep's own), which are not run again."""
    todo: dict[tuple[str, Any], tuple] = {}
    for d in setup.designs:
        for skew in skew_steps(setup):
            if done and (d.label, skew) in done:
                continue
            items = {**dict(d.set), **skew_overrides(skew, setup.locality)}
            todo[(d.label, skew)] = (d.arch, setup.workload, tuple(sorted(items.items())))
    unique = sorted(set(todo.values()), key=repr)
    if jobs > 1 and len(unique) > 1:
        with ProcessPoolExecutor(max_workers=jobs, initializer=point_worker_init) as pool:
            measured = dict(zip(unique, pool.map(_run, unique), strict=True))
    else:
        measured = {job: _run(job) for job in unique}
    out = dict(done or {})
    out.update({key: measured[job] for key, job in todo.items()})
    return out


# --- reading results -------------------------------------------------------------------------


def hit_rates(breakdown: dict[str, Any] | None) -> dict[str, float]:
    """Every cache's (or hot-row store's) share of the lookups it was offered, from a point's
    breakdown: any ``<name>.hit_rate`` / ``<name>_hit_rate`` (a host's or GPU's caches, at any
    depth; DRAM row-buffer hit rates excluded), RecNMP's RankCache (``cache_hits`` over
    ``cache_lookups``), TRiM's replicas (``replicated_lookups`` over the lookups) and the
    share of lookups each data level serves where rows sit on several (ReCross's partition
    puts the hottest rows on the level with the most bandwidth per row)."""
    out: dict[str, float] = {}
    bd = breakdown or {}

    def walk(d: dict[str, Any], prefix: str) -> None:
        for k, v in d.items():
            if k in ("levels", "warmup_hit_rates"):
                continue
            if isinstance(v, dict):
                walk(v, f"{prefix}{k}.")
            elif is_number(v) and "row_hit" not in k:
                if k == "hit_rate":
                    out[prefix.rstrip(".") or "cache"] = float(v)
                elif k.endswith("_hit_rate"):
                    out[f"{prefix}{k[: -len('_hit_rate')]}"] = float(v)

    walk(bd, "")
    if bd.get("cache_lookups"):
        out["rank cache"] = float(bd.get("cache_hits", 0)) / float(bd["cache_lookups"])
    levels = bd.get("levels") or {}
    lookups = {k: float(v.get("lookups", 0)) for k, v in levels.items() if isinstance(v, dict)}
    total = sum(lookups.values())
    if bd.get("replicated_lookups") is not None and total > 0:
        out["replicas"] = float(bd["replicated_lookups"]) / total
    served = {k: v for k, v in lookups.items() if v > 0}
    if len(served) > 1 and total > 0:
        for k, v in served.items():
            out[f"{k} level"] = v / total
    return out


def crossovers(xs: list[float], ratio: list[float]) -> list[dict[str, Any]]:
    """Where a design's throughput ratio over a reference (``ratio[i]`` at ``xs[i]``,
    increasing) crosses 1: between two steps on either side, at the x where log(ratio),
    interpolated linearly, is 0. Each crossing says which side is ahead *below* it."""
    out = []
    for i in range(len(xs) - 1):
        a, b = ratio[i], ratio[i + 1]
        if not (a > 0 and b > 0) or (a >= 1.0) == (b >= 1.0):
            continue
        la, lb = math.log(a), math.log(b)
        x = xs[i] + (xs[i + 1] - xs[i]) * (0.0 - la) / (lb - la)
        out.append({"alpha": x, "ahead_below": "design" if a >= 1.0 else "reference"})
    return out


def equivalent_alpha(workload: str, locality: str) -> tuple[float, float]:
    """(Zipf exponent, head share): the exponent at which the hottest :data:`HEAD_FRACTION`
    of every table's rows of ``workload`` take the same share of its lookups as under the
    measured ``locality`` (bisection; the head share grows with the exponent)."""
    from nmp.workload.distributions import workload_head_mass
    from nmp.workload.spec import load_workload

    measured = load_workload(workload, {"distribution": "measured", "locality": locality})
    target = workload_head_mass(measured, HEAD_FRACTION)
    assert target is not None

    def mass(alpha: float) -> float:
        spec = load_workload(workload, {"distribution": "zipf", "alpha": alpha})
        value = workload_head_mass(spec, HEAD_FRACTION)
        assert value is not None
        return value

    lo, hi = 1e-3, 4.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mass(mid) < target else (lo, mid)
    return 0.5 * (lo + hi), target


def analyze_scan(
    setup: ScanSetup, results: dict[tuple[str, Any], dict[str, Any]]
) -> dict[str, Any]:
    """Per design: lookups/s along the Zipf axis, at the measured locality, and its
    crossovers with the reference (and with every GPU of the scan)."""
    from nmp.evaluate.point import own_memory

    alpha_eq, head = equivalent_alpha(setup.workload, setup.locality)
    xs = list(setup.alphas)
    labels = [d.label for d in setup.designs]
    gpus = [d.label for d in setup.designs if own_memory(d.arch)]
    refs = [setup.reference, *[g for g in gpus if g != setup.reference]]
    series = {lab: [results[(lab, a)]["lookups_per_s"] for a in xs] for lab in labels}
    designs = []
    for lab in labels:
        at_measured = results[(lab, MEASURED)]
        cross = {}
        for ref in refs:
            if ref == lab:
                continue
            ratio = [s / r for s, r in zip(series[lab], series[ref], strict=True)]
            m_ratio = at_measured["lookups_per_s"] / results[(ref, MEASURED)]["lookups_per_s"]
            cross[ref] = {
                "crossings": crossovers(xs, ratio),
                "ratio": ratio,
                "ratio_at_measured": m_ratio,
            }
        designs.append(
            {
                "design": lab,
                "lookups_per_s": series[lab],
                "measured_lookups_per_s": at_measured["lookups_per_s"],
                "hit_rates_at_measured": at_measured["hit_rates"],
                "versus": cross,
            }
        )
    return {
        "workload": setup.workload,
        "alphas": xs,
        "locality": setup.locality,
        "equivalent_alpha": alpha_eq,
        "head_fraction": HEAD_FRACTION,
        "head_share": head,
        "reference": setup.reference,
        "gpus": gpus,
        "designs": designs,
    }


def describe_crossings(entry: dict[str, Any]) -> str:
    """One design against one reference, in words ("ahead below alpha 0.93", ...)."""
    crossings = entry["crossings"]
    ratio = entry["ratio"]
    if not crossings:
        return "ahead at every skew" if ratio[0] >= 1.0 else "behind at every skew"
    parts = [
        f"{'ahead' if c['ahead_below'] == 'design' else 'behind'} below alpha {c['alpha']:.2f}"
        for c in crossings
    ]
    return ", then ".join(parts)


# --- the study -------------------------------------------------------------------------------


def check_params(params: dict[str, Any]) -> None:
    """``nmp evaluate --check``: the study's parameters."""
    parse_scan(params)


def check_sweep_scan(sweep: Any) -> None:
    """A sweep's ``[locality_scan]``, checked when the sweep is loaded (errors name
    ``locality_scan.<key>``)."""
    if sweep.locality_scan:
        parse_scan(sweep.locality_scan, designs=sweep_designs(sweep), where="locality_scan")


def sweep_designs(sweep: Any) -> tuple[ScanDesign, ...]:
    return tuple(
        ScanDesign(d.label, d.arch, tuple(sorted(d.set.items()))) for d in sweep.all_designs
    )


@study_runner
def run_study(params: dict[str, Any], *, out_dir: Path, jobs: int = 1) -> list[dict[str, Any]]:
    """The skew scan of ``params`` into ``out_dir`` (report.md, results.csv, results.jsonl,
    crossover.png, fit.png); returns one row per design and reference."""
    # matplotlib: loaded on use (start-up time)
    from nmp.report.locality import locality_markdown, plot_crossover, plot_fit

    setup = parse_scan(params)
    results = run_scan(setup, jobs)
    scan = analyze_scan(setup, results)
    fit = fit_figures(setup.locality)
    plot_crossover(scan, out_dir / "crossover.png")
    plot_fit(fit, out_dir / "fit.png")
    rows = scan_rows(scan)
    _write_tables(setup, results, rows, out_dir)
    text = [
        f"# Locality: where near-memory overtakes the {setup.reference} on {setup.workload}",
        "",
        *locality_markdown({"scan": scan, "fit": fit}),
        "",
        "![crossover](crossover.png)",
        "",
        "![fit](fit.png)",
        "",
    ]
    atomic_write_text(out_dir / "report.md", "\n".join(text))
    return rows


def scan_rows(scan: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for d in scan["designs"]:
        for ref, entry in d["versus"].items():
            rows.append(
                {
                    "design": d["design"],
                    "versus": ref,
                    "crossover": describe_crossings(entry),
                    "crossover_alphas": ";".join(f"{c['alpha']:.3f}" for c in entry["crossings"]),
                    "ratio_at_measured": entry["ratio_at_measured"],
                    "equivalent_alpha": scan["equivalent_alpha"],
                }
            )
    return rows


def _write_tables(
    setup: ScanSetup, results: dict, rows: list[dict[str, Any]], out_dir: Path
) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["design", "skew", "lookups_per_s", "energy_pj_per_lookup", "hit_rates"])
    for d in setup.designs:
        for skew in skew_steps(setup):
            r = results[(d.label, skew)]
            writer.writerow(
                [d.label, skew, repr(r["lookups_per_s"]), repr(r["energy_pj_per_lookup"]),
                 json.dumps(r["hit_rates"], sort_keys=True)]
            )  # fmt: skip
    atomic_write_text(out_dir / "results.csv", buf.getvalue())
    atomic_write_text(
        out_dir / "results.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    )


def fit_figures(locality: str) -> dict[str, Any]:
    """The published histograms of ``locality``, the fitted classes' expected ones, and the
    histograms of one drawn batch of a table of the fitted size (as Meta's batch: its lookups
    per table), beside Zipf 1.05 and uniform draws on the same table: plain data for the plot
    and the report."""
    from nmp.workload import locality as loc
    from nmp.workload.sampling import zipf_ranks

    hist = loc.load_histogram(locality)
    classes = loc.fit_classes(locality)
    rows = int(round(float(classes.rows.sum())))
    n = int(round(hist.lookups_per_table))
    layout = loc.table_layout(locality, rows)
    rng = np.random.default_rng(2022)
    drawn = {
        "generator": layout.ranks(rng.random(n), rows),
        "zipf 1.05": zipf_ranks(rng, n, rows, 1.05),
        "uniform": rng.integers(0, rows, n),
    }
    expected = loc.expected_histograms(classes, hist)
    out: dict[str, Any] = {
        "locality": hist.name,
        "source": hist.source,
        "table_rows": rows,
        "lookups": n,
        "lookup_upper": list(hist.lookup_upper),
        "unique_upper": list(hist.unique_upper),
        "published": [list(hist.lookup_share), list(hist.unique_share)],
        "fitted": [expected[0].tolist(), expected[1].tolist()],
        "drawn": {},
        "distance": {"fitted": [loc.total_variation(expected[0], hist.lookup_share),
                                loc.total_variation(expected[1], hist.unique_share)]},
    }  # fmt: skip
    for name, ranks in drawn.items():
        _, counts = np.unique(ranks, return_counts=True)
        lk, un = loc.reuse_histogram(counts, hist.lookup_upper, hist.unique_upper)
        out["drawn"][name] = [lk.tolist(), un.tolist()]
        out["distance"][name] = [
            loc.total_variation(lk, hist.lookup_share),
            loc.total_variation(un, hist.unique_share),
        ]
    return out


__all__ = [
    "analyze_scan",
    "crossovers",
    "equivalent_alpha",
    "fit_figures",
    "hit_rates",
    "parse_scan",
    "run_scan",
    "run_study",
]
