"""Locality: crossovers, hit rates, the near-memory designs' hot-row stores (zeroing one
changes the result), the skew scan and its report section."""

from __future__ import annotations

import pytest

from nmp.errors import SpecError
from nmp.evaluate.locality import crossovers, hit_rates, parse_scan, run_study, skew_overrides
from nmp.evaluate.point import run_point
from nmp.evaluate.sweep import parse_sweep
from nmp.report.files import report_markdown
from nmp.report.locality import locality_markdown

MEM = {"arch.memory.preset": "ddr5-4800-40", "arch.memory.channels": 1, "arch.memory.ranks": 2}


def test_crossovers_interpolate_in_log_ratio():
    # ratio 2 at x=0, 0.5 at x=1: log-linear, crosses at 0.5
    (c,) = crossovers([0.0, 1.0], [2.0, 0.5])
    assert c["alpha"] == pytest.approx(0.5)
    assert c["ahead_below"] == "design"
    (c,) = crossovers([0.0, 1.0, 2.0], [0.5, 0.8, 4.0])
    assert 1.0 < c["alpha"] < 2.0 and c["ahead_below"] == "reference"
    assert crossovers([0.0, 1.0], [1.5, 1.2]) == []
    assert crossovers([0.0, 1.0], [0.5, 0.9]) == []


def test_hit_rates_read_every_cache():
    bd = {
        "llc": {"hit_rate": 0.8, "warmup_hit_rates": [0.1]},
        "channel": {"row_hit_rate": 0.6},
        "l2_hit_rate": 0.3,
        "cache_hits": 30,
        "cache_lookups": 60,
        "replicated_lookups": 25,
        "levels": {"rank": {"lookups": 0}, "bank": {"lookups": 60}, "bankgroup": {"lookups": 40}},
    }
    rates = hit_rates(bd)
    assert rates["llc"] == 0.8 and rates["l2"] == 0.3 and rates["rank cache"] == 0.5
    assert rates["replicas"] == pytest.approx(0.25)
    assert rates["bank level"] == pytest.approx(0.6)
    assert "channel" not in rates and "row" not in " ".join(rates)


def _lookups(arch, workload, **over):
    return run_point(arch, workload, overrides={**MEM, **over})


def test_zeroing_recnmp_rankcache_changes_its_result():
    on = _lookups("recnmp", "recross-measured")
    off = _lookups("recnmp", "recross-measured", **{"arch.rank.cache_kib": 0.0})
    assert hit_rates(on.breakdown)["rank cache"] > 0.3
    assert "rank cache" not in hit_rates(off.breakdown)
    assert on.lookups_per_s > 1.2 * off.lookups_per_s


def test_zeroing_trim_replicas_changes_its_result():
    on = _lookups("trim-g", "recross-measured")
    off = _lookups("trim-g", "recross-measured", **{"arch.replicate_hot_rows": 0})
    assert hit_rates(on.breakdown)["replicas"] > 0.3
    assert on.lookups_per_s > 1.1 * off.lookups_per_s


def test_the_host_lead_moves_with_skew():
    """Near-memory leads the host at uniform lookups and falls behind at strong skew: the
    crossover lies inside the scan (a host whose cache did not depend on skew would fail)."""
    ratios = []
    for alpha in (0.0, 1.4):
        over = {k.split(".", 1)[1]: v for k, v in skew_overrides(alpha, "meta-2022").items()}
        wl = {f"workload.{k}": v for k, v in over.items()}
        host = _lookups("host-cpu", "recross-eval", **wl).lookups_per_s
        nmp = _lookups("recnmp", "recross-eval", **wl).lookups_per_s
        ratios.append(nmp / host)
    assert ratios[0] > 1.0 > ratios[1]
    assert len(crossovers([0.0, 1.4], ratios)) == 1


def test_scan_params_errors_name_the_key():
    with pytest.raises(Exception, match="params.alphas"):
        parse_scan({"workload": "recross-eval", "alphas": [1.0], "designs": ["host-cpu"]})
    with pytest.raises(Exception, match="params.reference"):
        parse_scan({"workload": "recross-eval", "alphas": [0.0, 1.0], "designs": ["recnmp"]})
    with pytest.raises(Exception, match="params.colour"):
        parse_scan({"workload": "recross-eval", "alphas": [0.0, 1.0], "colour": 1})
    # an exponent the workload refuses (above 50), or more than a report can draw, passed
    # --check and failed after the sweep had run (or its report ran past a minute)
    for alphas in ([0.0, 1e15], [i / 1000 for i in range(65)]):
        with pytest.raises(Exception, match=r"params.alphas: must be 2..64 .* \[0, 50\]"):
            parse_scan({"workload": "recross-eval", "alphas": alphas, "designs": ["host-cpu"]})


def test_sweep_locality_scan_is_checked_on_load():
    data = {
        "name": "s",
        "workloads": ["recross-eval"],
        "archs": ["host-cpu", "recnmp"],
        "locality_scan": {"workload": "recross-eval", "alphas": [0.0, 1.0], "designs": ["trim-g"]},
    }
    with pytest.raises(SpecError, match=r"s.toml.*locality_scan.designs"):
        parse_sweep(data, file="s.toml")
    data["locality_scan"]["designs"] = ["host-cpu", "recnmp"]
    assert parse_sweep(data, file="s.toml").locality_scan["alphas"] == [0.0, 1.0]


def test_study_writes_its_report(tmp_path):
    params = {
        "workload": "recross-eval",
        "alphas": [0.0, 1.4],
        "designs": ["host-cpu", "trim-g"],
        "set": {**MEM, "workload.batch": 8},
    }
    rows = run_study(params, out_dir=tmp_path, jobs=1)
    assert [r["design"] for r in rows] == ["trim-g"]
    text = (tmp_path / "report.md").read_text()
    assert "alpha" in text and "meta-2022" in text and "rank cache" not in text
    for name in ("crossover.png", "fit.png", "results.csv", "results.jsonl"):
        assert (tmp_path / name).stat().st_size > 0


def test_report_section_states_locality_and_crossover():
    scan = {
        "workload": "recross-eval", "alphas": [0.0, 1.0], "locality": "meta-2022",
        "equivalent_alpha": 1.04, "head_fraction": 0.01, "head_share": 0.53,
        "reference": "host-cpu", "gpus": [],
        "designs": [
            {"design": "host-cpu", "lookups_per_s": [1.0, 3.0], "measured_lookups_per_s": 2.0,
             "hit_rates_at_measured": {"llc": 0.85}, "versus": {}},
            {"design": "trim-g", "lookups_per_s": [2.0, 2.0], "measured_lookups_per_s": 2.5,
             "hit_rates_at_measured": {"replicas": 0.6},
             "versus": {"host-cpu": {"crossings": crossovers([0.0, 1.0], [2.0, 2 / 3]),
                                     "ratio": [2.0, 2 / 3], "ratio_at_measured": 1.25}}},
        ],
    }  # fmt: skip
    loc = {
        "workloads": [
            {"workload": "recross-eval", "locality": "zipf(alpha=1.05)", "source": "chosen"}
        ],
        "scan": scan,
    }
    text = "\n".join(locality_markdown(loc))
    assert "zipf(alpha=1.05)" in text
    assert "crosses at alpha 0.63" in text and "1.25x" in text and "llc 85.0 %" in text
    summary = {
        "sweep": "x", "points": 0, "completed": 0, "ran": 0, "reused": 0, "failed": [],
        "wall_s": 0.0, "executor": {"executor": "serial"}, "baseline": "host-cpu",
        "objectives": {"lookups_per_s": "max"}, "rows": [], "groups": [], "locality": loc,
    }  # fmt: skip
    assert "## Locality" in report_markdown(summary, [])


def test_equivalent_alpha_matches_the_head_share():
    from nmp.evaluate.locality import HEAD_FRACTION, equivalent_alpha
    from nmp.workload import load_workload
    from nmp.workload.distributions import workload_head_mass

    alpha, head = equivalent_alpha("recross-eval", "meta-2022")
    zipf = load_workload("recross-eval", {"alpha": alpha})
    assert workload_head_mass(zipf, HEAD_FRACTION) == pytest.approx(head, abs=1e-6)
    assert 0.5 < alpha < 1.5


def test_default_sweep_scans_locality():
    from nmp.evaluate.sweep import load_sweep

    sweep, _ = load_sweep("default")  # parsing checks the scan against the sweep's designs
    params = sweep.locality_scan
    assert params["alphas"][0] == 0.0 and params["reference"] == "host-cpu"
    assert params["locality"] == "meta-2022"
