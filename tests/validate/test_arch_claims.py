"""The NMP papers' claims (ReCross, TRiM, RecNMP) and their studies: the claims files parse and
name functions that exist, a cheap model function computes from the model, every papers sweep
validates, and the studies that compare designs pin one memory per comparison."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from nmp.config import project_root
from nmp.errors import NmpError
from nmp.evaluate.analysis import memory_system, memory_warnings
from nmp.evaluate.sweep import expand, load_sweep
from nmp.evaluate.sweepcheck import validate_sweep
from nmp.papers import nmp_speed as arch_claims
from nmp.plugins import load_claim_model
from nmp.validate.claims import PAPERS_DIR, load_claim_file, load_claims

PAPERS = ("recross", "trim", "recnmp")
SWEEPS = project_root() / "workloads" / "sweeps"
PAPER_SWEEPS = sorted(
    p
    for p in (SWEEPS / "papers").glob("*.toml")
    if p.stem.startswith(("recross", "trim", "recnmp"))
)
# Studies that compare DRAM-side designs and must do so on one memory per comparison.
COMPARING = [
    SWEEPS / f"{n}.toml"
    for n in (
        "default",
        "vector-length",
        "batch-size",
        "rank-count",
        "bank-units",
        "recross-ablation",
    )
]


@pytest.mark.parametrize("paper", PAPERS)
def test_claims_file_parses_and_models_resolve(paper: str) -> None:
    claims = load_claim_file(PAPERS_DIR / paper / "claims.toml")
    assert len(claims) >= 5
    for claim in claims:
        assert claim.id.startswith(f"{paper}.")
        assert callable(load_claim_model(claim.model, key=claim.id))
        assert claim.source and claim.claim
        if claim.kind == "value":
            assert claim.unit, claim.id
    assert any(c.quick for c in claims)


def test_claim_ids_unique_over_all_papers() -> None:
    ids = [c.id for c in load_claims()]
    assert len(ids) == len(set(ids))
    assert {c.paper for c in load_claims()} >= set(PAPERS)


def test_a_model_function_computes_from_the_model() -> None:
    # Small batches keep it cheap; the claims themselves run at the papers' batch 32.
    small = arch_claims.speedup(quick=True, design="trim-g", baseline="recnmp", batch=2)
    large = arch_claims.speedup(quick=True, design="trim-g", baseline="recnmp", batch=4)
    assert small["value"] > 0 and "trim-g / recnmp" in small["detail"]
    assert small["value"] != large["value"]  # it follows the model's points, not a constant
    one = {"workload.seed": 0}  # one draw: a seeded ordering holds at every seed, not the median
    small, large = (
        arch_claims.speedup(quick=True, design="trim-g", baseline="recnmp", batch=b, setup=one)
        for b in (2, 4)
    )
    both = arch_claims.faster_than_each(
        quick=True, design="trim-g", baselines=["recnmp"], axis="batch", values=[2, 4], setup=one
    )
    assert isinstance(both["value"], bool)
    assert both["value"] == (min(small["value"], large["value"]) > 1.0)


def test_curve_claims_follow_every_step() -> None:
    # one draw: over seeds a curve's figure is the median seed's curve, not the curve of each
    # step's median (test_claim_seeds.py checks the seeds)
    one = {"workload.seed": 0}
    kw = {"quick": True, "design": "trim-g", "baseline": "recnmp", "axis": "batch", "setup": one}
    ratios = [
        arch_claims.speedup(quick=True, design="trim-g", baseline="recnmp", batch=b, setup=one)[
            "value"
        ]
        for b in (2, 4)
    ]
    assert arch_claims.max_speedup(**kw, values=[2, 4])["value"] == max(ratios)
    mean = arch_claims.mean_speedup(**kw, values=[2, 4])
    assert mean["value"] == pytest.approx((ratios[0] * ratios[1]) ** 0.5)  # geometric mean
    assert f"batch 2: {ratios[0]:.2f}x (bound" in mean["detail"]
    assert f"batch 4: {ratios[1]:.2f}x (bound" in mean["detail"]


def test_linked_steps_and_bad_arguments() -> None:
    assert arch_claims.axis_steps("vector", [{"dim": 128, "channels": 2}]) == [
        {"dim": 128, "channels": 2}
    ]
    assert arch_claims.axis_steps("batch", [1, 2]) == [{"batch": 1}, {"batch": 2}]
    with pytest.raises(NmpError, match="unknown setup key"):
        arch_claims.point("recross", setup={"nope": 1})
    with pytest.raises(NmpError, match="not an architecture preset"):
        arch_claims.point("recross", setup={"designs.nope.arch.rank.units": 1})
    with pytest.raises(NmpError, match="no field"):
        arch_claims.point("recross", setup={"arch.host.no_such": 1}, batch=2)
    with pytest.raises(NmpError, match="unknown axis"):
        arch_claims.point("recross", pooling=3)
    with pytest.raises(NmpError, match="unknown ablation step"):
        arch_claims.ablation_speedup(quick=True, step="recross+nothing")


def test_a_setup_moves_the_points_it_names_and_only_those() -> None:
    kit = arch_claims.point("host-cpu", batch=2)
    paper = {"arch.host.llc_mib": 0, "workload.pooling": 80, "designs.trim-g.arch.units": 0}
    no_llc = arch_claims.point("host-cpu", setup=paper, batch=2)
    assert "llc" in kit.breakdown and "llc" not in no_llc.breakdown
    assert no_llc.lookups_per_s < kit.lookups_per_s  # every row now crosses the channel
    # values equal to the design's own defaults (pooling 80) and keys of other designs are
    # dropped: the same point, one run
    assert arch_claims.point("host-cpu", setup={"workload.pooling": 80}, batch=2) is kit
    assert arch_claims.point("recnmp", setup=paper, batch=2) is arch_claims.point(
        "recnmp", setup={"arch.host.llc_mib": 0}, batch=2
    )


@pytest.mark.parametrize("design", ["host-cpu", "recnmp", "tensordimm", "trim-g", "recross"])
def test_the_ceiling_bounds_the_modeled_throughput(design: str) -> None:
    res = arch_claims.point(design, batch=4)
    cap = arch_claims.ceiling(design, batch=4)
    assert cap.lookups_per_s >= res.lookups_per_s * (1 - 1e-9), cap.text()
    assert cap.lookups == res.extra["lookups"]


def test_the_model_ceiling_arithmetic_by_hand() -> None:
    """The model's own ceiling (model_ceiling), recross at batch 4: the column-path and C/A
    terms from the point's breakdown and the specs (DDR5-4800-40: 64-B bursts, nBL 8,
    tCCD_L 12, tCK 0.416 ns; 85-bit instructions at 14 bits per tCK over 2 ranks)."""
    res = arch_claims.point("recross", batch=4)
    cap = arch_claims.ceiling("recross", batch=4)
    levels = res.breakdown["levels"]
    tck = 0.416
    # rank + BG paths; the 8 bank units share their bank groups' paths (the kit's default)
    peak = 2 * 64 / (8 * tck) + 8 * 64 / (12 * tck)
    total = sum(d["bytes"] for d in levels.values())
    assert cap.terms_ns["column_paths"] == pytest.approx(total / peak)
    in_dram = levels["bankgroup"]["lookups"] + levels["bank"]["lookups"]
    rank_cmd = res.breakdown["instruction"].get("rank_command_cycles", 0.0)
    assert cap.terms_ns["instruction_ca"] == pytest.approx((in_dram * 85 / 14 + rank_cmd) / 2 * tck)
    assert cap.terms_ns["act_window"] == res.breakdown["bounds_ns"]["act_window"]
    # the model's own ceiling of a speedup is reported as model_ceiling, never as the bound
    speed = arch_claims.speedup(quick=True, design="recross", baseline="trim-g", batch=4)
    trim = arch_claims.point("trim-g", batch=4).lookups_per_s
    assert speed["model_ceiling"] == pytest.approx(cap.lookups_per_s / trim)
    assert (
        "column_paths" in speed["model_ceiling_detail"]
        or "act_window" in (speed["model_ceiling_detail"])
    )
    assert speed["bound"] != speed["model_ceiling"] and speed["bound_terms"]


def test_the_host_ceiling_arithmetic_by_hand() -> None:
    """The host's ceiling at batch 4: the bytes past its LLC at the channels' peak, and its
    adds (a lookup's dim each) on every core's SIMD lanes at the clock."""
    from nmp.arch.presets import load_arch_spec
    from nmp.memory import load_memory

    res = arch_claims.point("host-cpu", batch=4)
    cap = arch_claims.ceiling("host-cpu", batch=4)
    b = res.breakdown
    mem = load_memory(b["memory_setup"]["preset"])
    peak = mem.org.tx_bytes / (mem.timing["nBL"] * mem.tck_ns) * b["memory_setup"]["channels"]
    assert cap.terms_ns["channel"] == pytest.approx(b["channel"]["bytes"] / peak, rel=1e-9)
    h = load_arch_spec("host-cpu").host
    adds = res.extra["lookups"] * 64  # recross-eval's tables are dim 64, unweighted
    assert cap.terms_ns["host_compute"] == pytest.approx(
        adds / (h.cores * h.simd_lanes * h.clock_ghz), rel=1e-9
    )


def test_orderings_report_their_margin() -> None:
    one = {"workload.seed": 0}  # one draw (the seeded answer: the smallest margin of any seed)
    out = arch_claims.faster_than_each(
        quick=True,
        design="trim-g",
        baselines=["recnmp", "tensordimm"],
        axis="batch",
        values=[4],
        setup=one,
    )
    ratios = [
        arch_claims.speedup(quick=True, design="trim-g", baseline=b, batch=4, setup=one)["value"]
        for b in ("recnmp", "tensordimm")
    ]
    assert out["margin"] == pytest.approx(min(ratios) - 1.0)
    assert out["value"] == (min(ratios) > 1.0)


@pytest.mark.parametrize("path", PAPER_SWEEPS, ids=[p.stem for p in PAPER_SWEEPS])
def test_papers_sweeps_check(path: Path) -> None:
    spec, found = load_sweep(f"papers/{path.stem}")  # as `nmp evaluate papers/<name>` finds it
    assert found == path
    keyed = validate_sweep(spec, file=str(path))  # what `nmp evaluate ... --check` runs
    assert len({k for _, k in keyed}) == len(keyed) > 0


@pytest.mark.parametrize(
    "path", PAPER_SWEEPS + COMPARING, ids=[p.stem for p in PAPER_SWEEPS + COMPARING]
)
def test_compared_designs_share_one_memory(path: Path) -> None:
    spec, _ = load_sweep(path)
    by_context: dict[tuple, set[str]] = defaultdict(set)
    for p in expand(spec):
        mem = memory_system(p.arch, p.memory, p.overrides)
        if mem:  # GPUs bring their own HBM
            by_context[(p.workload, repr(sorted(p.axes.items())))].add(mem)
    assert by_context
    assert all(len(mems) == 1 for mems in by_context.values()), dict(by_context)


def test_memory_system_and_warning() -> None:
    assert memory_system("recnmp") == "ddr4-2400, 4 ch x 2 ranks"
    pinned = {"arch.memory.preset": "ddr5-4800-40", "arch.memory.channels": 1}
    assert memory_system("recnmp", None, pinned) == "ddr5-4800-40, 1 ch x 2 ranks"
    assert memory_system("a100-80gb") == ""
    rows = [
        {"group": "g", "design": "host-cpu", "memory_system": "ddr5-4800-40, 1 ch x 2 ranks"},
        {"group": "g", "design": "recnmp", "memory_system": "ddr4-2400, 4 ch x 2 ranks"},
        {"group": "g", "design": "a100", "memory_system": ""},
    ]
    (warning,) = memory_warnings(rows)
    assert "recnmp on ddr4-2400, 4 ch x 2 ranks" in warning and "a100" not in warning
    assert memory_warnings([rows[0], {**rows[1], "memory_system": rows[0]["memory_system"]}]) == []


def test_sensitivity_study_parses() -> None:
    from nmp.evaluate.sensitivity import parse_params
    from nmp.evaluate.study import load_custom_study

    study = load_custom_study("papers/sensitivity-recross-trim")
    assert study is not None and study.runner == "nmp.evaluate.sensitivity:run_study"
    setup = parse_params(study.params)
    assert (setup.design, setup.reference) == ("recross", "trim-g")
    assert len(setup.assumptions) >= 8
    assert all(a.source for a in setup.assumptions)  # every range says where it comes from
    energy = parse_params(load_custom_study("papers/sensitivity-recross-trim-energy").params)
    assert energy.metric == "energy_pj_per_lookup"
    # > 1 means the design is better: faster, or less energy per lookup
    assert energy.ratio({"energy_pj_per_lookup": 50.0}, {"energy_pj_per_lookup": 100.0}) == 2.0
    assert setup.ratio({"lookups_per_s": 2.0}, {"lookups_per_s": 1.0}) == 2.0
    assert setup.ratio_name() == "recross / trim-g lookups/s"
    assert energy.ratio_name() == "trim-g / recross energy per lookup"
    # any figure a sweep can optimize: a smaller area is better, as energy
    params = load_custom_study("papers/sensitivity-recross-trim").params
    area = parse_params({**params, "metric": "area_mm2"})
    assert area.ratio({"area_mm2": 2.0}, {"area_mm2": 4.0}) == 2.0


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"design": ""}, "params.design"),
        ({"metric": "speed"}, "params.metric"),
        ({"assumptions": []}, "params.assumptions"),
        ({"assumptions": [{"name": "x", "low": {}, "high": {"workload.alpha": 1}}]}, "low"),
        ({"assumptions": [{"name": "x", "low": {"foo.a": 1}, "high": {"foo.a": 2}}]}, "foo.a"),
        (
            {
                "assumptions": [
                    {
                        "name": "x",
                        "low": {"workload.alpha": 1},
                        "high": {"workload.alpha": 2},
                        "designs": ["gpu"],
                    }
                ]
            },
            "designs: .*got 'gpu'",  # names the stray design
        ),
    ],
)
def test_sensitivity_bad_params_name_the_key(patch: dict, message: str) -> None:
    from nmp.evaluate.sensitivity import parse_params

    params = {
        "design": "recross",
        "reference": "trim-g",
        "workload": "recross-eval",
        "assumptions": [
            {"name": "a", "low": {"workload.alpha": 0.8}, "high": {"workload.alpha": 1.3}}
        ],
        **patch,
    }
    with pytest.raises(NmpError, match=message):
        parse_params(params)


def test_sensitivity_study_runs_small(tmp_path: Path) -> None:
    from nmp.evaluate.sensitivity import run_study

    params = {
        "design": "recross",
        "reference": "trim-g",
        "workload": "recross-eval",
        "set": {
            "arch.memory.preset": "ddr5-4800-40",
            "arch.memory.channels": 1,
            "arch.memory.ranks": 2,
            "workload.batch": 2,
        },
        "assumptions": [
            {"name": "skew", "low": {"workload.alpha": 0.8}, "high": {"workload.alpha": 1.3}},
            {
                "name": "replication",
                "low": {"arch.replicate_hot_rows": 0},
                "high": {"arch.replicate_hot_rows": 4096},
                "designs": ["trim-g"],
            },
        ],
    }
    rows = run_study(params, out_dir=tmp_path, jobs=1)
    assert {r["assumption"] for r in rows} == {"skew", "replication"}
    assert rows[0]["swing"] >= rows[1]["swing"]  # widest first, as the tornado draws them
    for r in rows:
        values = (r["ratio_low"], r["ratio_nominal"], r["ratio_high"])
        assert r["decides_order"] == (min(values) < 1.0 < max(values))
    # replication at 4096 is the trim-g preset's own value: its high end is the nominal point
    (rep,) = [r for r in rows if r["assumption"] == "replication"]
    assert rep["ratio_high"] == pytest.approx(rep["ratio_nominal"])
    for name in ("report.md", "results.csv", "results.jsonl", "tornado.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert "| skew |" in (tmp_path / "report.md").read_text()
