"""The report explains itself (nmp.evaluate.explain): each point's binding resource from its
breakdown, a regime flag where most of its time is tail, its area and source, and the key
assumption of its preset re-run with its --set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nmp.config import project_root
from nmp.errors import SpecError
from nmp.evaluate.explain import (
    binding,
    check_key_assumptions,
    explain,
    key_assumptions,
    regime_flags,
)
from nmp.evaluate.point import run_point
from nmp.evaluate.runner import run_sweep
from nmp.evaluate.sweep import parse_sweep
from nmp.evaluate.sweepcheck import validate_sweep

SHARED = {"arch.memory.preset": "ddr5-4800-40", "arch.memory.channels": 1, "arch.memory.ranks": 2}


def _record(key: str, design: str, lookups: float, energy: float, breakdown: dict) -> dict:
    return {
        "key": key,
        "index": int(key[-1]),
        "design": design,
        "arch": design,
        "workload": "w",
        "memory": None,
        "overrides": {},
        "axes": {},
        "design_axes": {},
        "result": {
            "latency_ns": 100.0,
            "lookups_per_s": lookups,
            "energy_pj_per_lookup": energy,
            "area_mm2": 1.0,
            "breakdown": breakdown,
        },
    }


def test_binding_resource_comes_from_the_breakdown() -> None:
    res: dict = {"latency_ns": 100.0, "breakdown": {"bounds_ns": {"rank": 90.0, "bank": 45.0}}}
    assert binding(res) == {"resource": "rank", "share": 0.9, "next": "bank", "next_ratio": 0.5}
    # the model's own verdict wins over the largest bound
    res["breakdown"]["bottleneck"] = "bank"
    assert binding(res)["resource"] == "bank"
    gpu = {"latency_ns": 10.0, "breakdown": {"stall_ns": {"tail": 9.8, "hbm_latency": 0.2}}}
    assert binding(gpu)["resource"] == "tail" and binding(gpu)["share"] == pytest.approx(0.98)


def test_regime_flag_from_the_tail_share() -> None:
    def point(tail: float, static: float) -> dict:
        return {
            "latency_ns": 100.0,
            "breakdown": {
                "stall_ns": {"tail": tail, "hbm_latency": 100.0 - tail},
                "energy_pj": {"static": static, "hbm_dynamic": 100.0 - static},
            },
        }

    flagged = regime_flags(point(98.0, 94.0), batch=32)
    assert len(flagged) == 1
    assert "98% of its batch time is tail" in flagged[0] and "batch (32)" in flagged[0]
    assert "static power is 94% of its energy" in flagged[0]
    assert regime_flags(point(41.0, 94.0), batch=2048) == []
    nmp_point = {"latency_ns": 100.0, "breakdown": {"bounds_ns": {"rank": 40.0}, "tail_ns": 60.0}}
    assert regime_flags(nmp_point) != []


@pytest.mark.slow
def test_a_gpu_at_batch_32_is_outside_its_regime_at_8192_not() -> None:
    small = run_point("a100-80gb", "recross-eval").to_json()
    big = run_point("a100-80gb", "recross-eval", overrides={"workload.batch": 8192}).to_json()
    (flag,) = regime_flags(small, batch=32)
    assert "batch (32) is too small" in flag
    assert regime_flags(big, batch=8192) == []


def test_deciding_assumption_is_the_one_that_moves_the_point_most(monkeypatch) -> None:
    from nmp.design import KeyAssumption
    from nmp.evaluate import analysis
    from nmp.evaluate import explain as ex

    small = KeyAssumption("small effect", {"arch.a": 1})
    large = KeyAssumption("large effect", {"arch.b": 2}, evidence="hit_rate", source="chosen")
    monkeypatch.setattr(ex, "key_assumptions", lambda arch: (small, large) if arch == "x" else ())
    bd = {"bounds_ns": {"channel": 100.0}, "hit_rate": 0.9}
    records = [_record("k0", "x", 3e8, 10.0, bd), _record("k1", "y", 2e8, 20.0, bd)]
    summary = analysis.analyze(
        records, baseline="y", objectives={"lookups_per_s": "max", "energy_pj_per_lookup": "min"}
    )
    whatifs = {
        "k0|small effect": {"result": {"lookups_per_s": 2.9e8, "energy_pj_per_lookup": 10.0}},
        "k0|large effect": {"result": {"lookups_per_s": 1e8, "energy_pj_per_lookup": 10.0}},
    }
    explain(records, summary, whatifs)
    why = next(r for r in summary["rows"] if r["key"] == "k0")["why"]
    assert why["deciding"] == "large effect"
    assert why["rank"] == 1 and why["evidence"] == {"hit_rate": 0.9}
    line = summary["groups"][0]["why"][0]
    assert line.startswith("x: 1st of 2 on lookups/s")
    assert "deciding assumption: large effect (hit_rate = 0.9)" in line
    assert (
        "`--set arch.b=2` gives 100 M lookups/s instead of 300 M (2nd of 2 instead of 1st" in line
    )


def test_host_area_is_its_die_with_a_source() -> None:
    res = run_point("host-cpu", "recross-eval", overrides=SHARED).to_json()
    assert res["area_mm2"] == pytest.approx(780.0)
    assert "Sapphire Rapids" in res["breakdown"]["area_source"]["host_die"]
    trim = run_point("trim-b", "recross-eval", overrides=SHARED).to_json()
    assert "host_die" not in trim["breakdown"]["area_mm2"]  # an NMP design counts its units


def test_every_preset_declares_a_key_assumption_that_names_its_fields() -> None:
    presets = ["host-cpu", "tensordimm", "recnmp", "trim-g", "trim-b", "recross", "a100-80gb"]
    check_key_assumptions(presets)
    assert all(key_assumptions(p) for p in presets)


def test_a_key_assumption_naming_no_field_fails_naming_the_key(tmp_path: Path) -> None:
    text = (project_root() / "models" / "arch" / "trim-b.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('"arch.replicate_hot_rows"', '"arch.no_such_field"'))
    with pytest.raises(SpecError, match=r"key_assumptions\[0\]\.set\.arch\.no_such_field"):
        check_key_assumptions([str(bad)])
    bad.write_text(text.replace('"arch.replicate_hot_rows"', '"wrong.root"'))
    with pytest.raises(SpecError, match=r"key_assumptions\[0\]\.set\.wrong\.root"):
        key_assumptions.__wrapped__(str(bad))


def _host_sweep(tmp_path: Path, name: str, host_set: dict) -> dict:
    spec = parse_sweep(_host_sweep_data(name, host_set))
    return run_sweep(spec, validate_sweep(spec), tmp_path / name)


def _host_sweep_data(name: str, host_set: dict) -> dict:
    return {
        "name": name,
        "workloads": ["recross-eval"],
        "baseline": "host-cpu",
        "explain": "all",
        "designs": [
            {"name": "host-cpu", "arch": "host-cpu", "set": {**SHARED, **host_set}},
            {"name": "trim-b", "arch": "trim-b", "set": SHARED},
        ],
    }


@pytest.mark.slow
def test_the_hosts_llc_decides_its_explanation(tmp_path: Path) -> None:
    """The host's line says its LLC serves most reads and what it makes without one; with the
    LLC assumed away in the design itself, the line changes."""
    with_llc = _host_sweep(tmp_path, "with-llc", {})
    host = next(r for r in with_llc["rows"] if r["design"] == "host-cpu")
    why = host["why"]
    assert why["binding"]["resource"] == "channel"
    assert why["evidence"]["llc.hit_rate"] > 0.8
    (whatif,) = why["whatif"]
    assert whatif["set"] == {
        "arch.host.llc_mib": 0.0,
        "arch.host.l2_kib": 0.0,
        "arch.host.l1_kib": 0.0,
    }
    assert whatif["result"]["lookups_per_s"] < host["lookups_per_s"] / 4  # the LLC decides
    line = next(s for s in with_llc["groups"][0]["why"] if s.startswith("host-cpu"))
    assert (
        "llc.hit_rate = 0.8" in line and "--set arch.host.llc_mib=0.0" in line and "` gives" in line
    )
    stored = [
        json.loads(s) for s in (tmp_path / "with-llc" / "whatif.jsonl").read_text().splitlines()
    ]
    declared = [a.name for d in ("host-cpu", "trim-b") for a in key_assumptions(d)]
    assert len(stored) == len(declared) and {s["assumption"] for s in stored} == set(declared)

    # --resume runs nothing again: the points and the what-ifs are in the run folder
    def must_not_run(point):
        raise AssertionError(f"re-ran {point.label()}")

    spec = parse_sweep(_host_sweep_data("with-llc", {}))
    again = run_sweep(
        spec, validate_sweep(spec), tmp_path / "with-llc", resume=True, point_fn=must_not_run
    )
    assert again["groups"][0]["why"] == with_llc["groups"][0]["why"]

    no_llc = _host_sweep(
        tmp_path,
        "no-llc",
        {"arch.host.llc_mib": 0.0, "arch.host.l2_kib": 0.0, "arch.host.l1_kib": 0.0},
    )
    host2 = next(r for r in no_llc["rows"] if r["design"] == "host-cpu")
    assert host2["lookups_per_s"] == pytest.approx(whatif["result"]["lookups_per_s"])
    assert host2["why"]["evidence"].get("llc.hit_rate", 0.0) == 0.0
    assert host2["why"]["whatif"][0]["change"] == pytest.approx(0.0, abs=1e-9)
    line2 = next(s for s in no_llc["groups"][0]["why"] if s.startswith("host-cpu"))
    assert line2 != line


def test_an_assumption_that_moves_nothing_is_said_not_to_decide(monkeypatch) -> None:
    from nmp.design import KeyAssumption
    from nmp.evaluate import analysis
    from nmp.evaluate import explain as ex

    idle = KeyAssumption("idle cache", {"arch.c": 0}, evidence="hits")
    monkeypatch.setattr(ex, "key_assumptions", lambda arch: (idle,) if arch == "x" else ())
    bd = {"bounds_ns": {"rank": 100.0}, "hits": 2}
    records = [_record("k0", "x", 3e8, 10.0, bd), _record("k1", "y", 2e8, 20.0, bd)]
    summary = analysis.analyze(records, baseline="y", objectives={"lookups_per_s": "max"})
    whatifs = {"k0|idle cache": {"result": {"lookups_per_s": 3.001e8}}}
    explain(records, summary, whatifs)
    line = summary["groups"][0]["why"][0]
    assert "key assumption: idle cache (hits = 2)" in line
    assert "changes no objective by 1 % or more: it does not decide this point" in line
    # moved by 5 %: now it decides, and the line gives the result under it
    whatifs = {"k0|idle cache": {"result": {"lookups_per_s": 2.85e8}}}
    explain(records, summary, whatifs)
    assert "deciding assumption: idle cache" in summary["groups"][0]["why"][0]


def test_nmp_run_notes_a_point_outside_its_regime(capsys) -> None:
    from nmp.cli import main

    assert main(["run", "--arch", "a100-80gb", "--workload", "recross-eval"]) == 0
    assert "note: outside its regime" in capsys.readouterr().out
    assert main(["run", "--arch", "trim-b", "--workload", "recross-eval"]) == 0
    assert "outside its regime" not in capsys.readouterr().out


def test_the_explain_key_picks_the_points_re_run() -> None:
    from nmp.evaluate import analysis
    from nmp.evaluate.explain import key_assumptions, whatif_points

    bd = {"bounds_ns": {"channel": 100.0}}
    records = [
        {**_record("k0", "host-cpu", 3e8, 10.0, bd), "arch": "host-cpu"},
        {**_record("k1", "trim-b", 2e8, 20.0, bd), "arch": "trim-b"},
        {**_record("k2", "trim-g", 1e8, 30.0, bd), "arch": "trim-g"},
    ]
    summary = analysis.analyze(records, baseline="trim-g", objectives={"lookups_per_s": "max"})
    ids = {
        m: [w.id.split("|")[0] for w in whatif_points(records, summary, m)]
        for m in ("all", "best", "none")
    }
    # one re-run per key assumption of the point's design
    per_design = {r["key"]: len(key_assumptions(r["arch"])) for r in records}
    assert all(per_design.values())
    assert ids["all"] == [k for k in ("k0", "k1", "k2") for _ in range(per_design[k])]
    # the best on lookups/s and the baseline
    assert ids["best"] == [k for k in ("k0", "k2") for _ in range(per_design[k])]
    assert ids["none"] == []
    (w,) = [w for w in whatif_points(records, summary, "best") if w.key == "k0"]
    # the record's own, then the --set
    assert w.point.overrides == {
        "arch.host.llc_mib": 0.0,
        "arch.host.l2_kib": 0.0,
        "arch.host.l1_kib": 0.0,
    }


def test_a_point_off_the_pareto_set_names_who_dominates_it() -> None:
    """Round 3: a design off its workload's Pareto set (ReCross on dlrm-benchmark) was
    explained by its own binding resource only; the line now names the designs at least as good
    on every objective."""
    from nmp.evaluate import analysis

    bd = {"bounds_ns": {"channel": 100.0}}
    records = [
        _record("k0", "fast", 3e8, 10.0, bd),
        _record("k1", "slow", 2e8, 20.0, bd),  # slower and costlier than fast: dominated
        _record("k2", "frugal", 1e8, 5.0, bd),  # slowest, cheapest: on the set
    ]
    objectives = {"lookups_per_s": "max", "energy_pj_per_lookup": "min"}
    summary = analysis.analyze(records, baseline="slow", objectives=objectives)
    explain(records, summary, {})
    why = {r["key"]: r["why"] for r in summary["rows"]}
    assert why["k1"]["dominated_by"] == ["fast"]
    assert why["k0"]["dominated_by"] == [] and why["k2"]["dominated_by"] == []
    line = next(x for x in summary["groups"][0]["why"] if x.startswith("slow:"))
    assert "off the Pareto set: fast at least as good on lookups/s and pJ/lookup" in line
    assert not any("off the Pareto" in x for x in summary["groups"][0]["why"] if "slow" not in x)
