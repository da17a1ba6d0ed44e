"""The ``locality`` part of every sweep's summary: which locality each workload ran, each
point's hit rates, and the crossovers of the sweep's ``[locality_scan]`` (the skew scan of
:mod:`nmp.evaluate.locality`), reusing the sweep's own points where they are steps of it."""

from __future__ import annotations

from typing import Any

from nmp.errors import NmpError
from nmp.evaluate.locality import (
    ScanSetup,
    analyze_scan,
    hit_rates,
    parse_scan,
    run_scan,
    sweep_designs,
)


def workload_localities(workloads: list[str]) -> list[dict[str, str]]:
    """Which locality each workload ran, with its source."""
    from nmp.workload.spec import load_workload

    out = []
    for name in workloads:
        try:
            spec = load_workload(name)
        except NmpError:  # a record from elsewhere: nothing to say about it
            continue
        source = spec.access.locality_source(spec)
        if source is None:
            source = "chosen in the workload preset (no published exponent)"
        out.append({"workload": name, "locality": spec.describe_distribution(), "source": source})
    return out


def locality_summary(sweep: Any, records: list[dict[str, Any]], jobs: int = 1) -> dict[str, Any]:
    """The ``locality`` part of a sweep's summary: each workload's locality, each point's hit
    rates, and the crossovers of the sweep's ``locality_scan`` (if it has one). The scan
    reuses the sweep's own points on the scan's workload at a Zipf exponent it scans."""
    out: dict[str, Any] = {
        "workloads": workload_localities(sorted({r["workload"] for r in records})),
        "hit_rates": [
            {
                "design": r["design"],
                "workload": r["workload"],
                "axes": {**r.get("axes", {}), **r.get("design_axes", {})},
                "hit_rates": hit_rates(r["result"].get("breakdown")),
            }
            for r in sorted(records, key=lambda r: r["index"])
        ],
    }
    params = getattr(sweep, "locality_scan", None)
    if not params:
        return {"locality": out}
    setup = parse_scan(params, designs=sweep_designs(sweep), where="locality_scan")
    out["scan"] = analyze_scan(setup, run_scan(setup, jobs, _own_points(setup, records)))
    return {"locality": out}


def _own_points(
    setup: ScanSetup, records: list[dict[str, Any]]
) -> dict[tuple[str, Any], dict[str, Any]]:
    """The sweep's points that are steps of the scan (its workload, no axes, at a scanned
    exponent): not run again."""
    from nmp.workload.spec import load_workload

    spec = load_workload(setup.workload)
    alpha = spec.access.zipf_exponent(spec)  # the scan's step this workload is (0: uniform)
    if alpha is None or alpha not in setup.alphas:
        return {}
    own = {}
    for r in records:
        if r["workload"] == setup.workload and not r.get("axes") and not r.get("design_axes"):
            res = r["result"]
            own[(r["design"], alpha)] = {
                "lookups_per_s": res["lookups_per_s"],
                "energy_pj_per_lookup": res["energy_pj_per_lookup"],
                "hit_rates": hit_rates(res.get("breakdown")),
            }
    return own
