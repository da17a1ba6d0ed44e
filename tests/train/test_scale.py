"""The papers' setups, the Monte-Carlo comparison and the crossover sweep (cheap: cpr setup)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from nmp.cli import main
from nmp.errors import NmpError
from nmp.train.extrapolate import expected, monte_carlo
from nmp.train.setup import load_setup, setup_names


def test_setups_load_and_every_value_has_a_source():
    assert {"ecrec", "cpr"} <= set(setup_names())
    for name in ("ecrec", "cpr"):
        spec, sources = load_setup(name)
        assert spec.name == name and sources
    ecrec = load_setup("ecrec")[0]
    assert (ecrec.table_rows, ecrec.dim, ecrec.servers, ecrec.workers) == (197767405, 128, 5, 15)
    assert ecrec.interval_min == (30.0, 60.0)


def test_a_value_without_source_is_an_error(tmp_path):
    bad = tmp_path / "x.toml"
    bad.write_text('name = "x"\n[values]\nservers = 4\n[sources]\n')
    with pytest.raises(NmpError, match="values.servers has no entry"):
        load_setup(str(bad))
    bad.write_text('[values]\ninterval_min = ["a"]\n[sources]\ninterval_min = "s"\n')
    with pytest.raises(NmpError, match="values.interval_min must be a list of floats"):
        load_setup(str(bad))


def test_monte_carlo_mean_matches_the_closed_form_within_its_interval():
    dep = load_setup("cpr")[0]
    mc = {r["strategy"]: r for r in monte_carlo(dep, trials=4000)}
    for name, r in mc.items():
        tol = 3 * max(r["overhead_ci95_pct"], 1e-9) + 1e-6 * r["overhead_expected_pct"]
        assert abs(r["overhead_pct"] - r["overhead_expected_pct"]) <= tol, name
    # CPR keeps its realized portion of lost samples near the bound it was sized for.
    assert mc["cpr-mfu"]["pls_realized_mean"] == pytest.approx(dep.cpr_pls, rel=0.1)
    assert mc["ecrec"]["recovery_s"] == 0.0 and mc["checkpoint"]["recovery_s"] > 0


def test_checkpointing_overhead_grows_when_storage_slows_ecrec_does_not():
    dep = load_setup("cpr")[0]
    fast = {r["strategy"]: r["overhead_pct"] for r in expected(dep)}
    slow = {r["strategy"]: r["overhead_pct"] for r in expected(replace(dep, storage_gbps=0.05))}
    assert slow["checkpoint"] > 2 * fast["checkpoint"]
    assert slow["ecrec"] == pytest.approx(fast["ecrec"])


def test_extrapolate_and_crossover_cli(capsys, tmp_path):
    argv = ["train", "--extrapolate", "--setup", "cpr", "--trials", "200", "--json"]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    keys = ("strategy", "overhead_pct", "recovery_s", "time_to_full_redundancy_s")
    assert all(k in r for r in rows for k in (*keys, "memory_overhead_pct", "overhead_ci95_pct"))
    argv = ["train", "--crossover", "--setup", "cpr", "--out", str(tmp_path), "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert (tmp_path / "crossover-cpr.png").stat().st_size > 10_000
    params = {c["parameter"] for c in out["crossovers"]}
    assert params == {
        "table_rows",
        "storage_gbps",
        "server_mtbf_hours",
        "servers",
        "step_ms",
        "network_gbps",
        "restart_s",
        "cpr_pls",
        "cpr_full_every",
    }
    # A longer step dilutes the coded update's extra work: ECRec wins above a crossover.
    st = next(
        c for c in out["crossovers"] if c["parameter"] == "step_ms" and c["rival"] == "checkpoint"
    )
    assert st["crossover_value"] > st["setup_value"] and st["ecrec_wins_above"] is True
    not_a_folder = tmp_path / "crossover-cpr.png"
    assert main([*argv[:-2], str(not_a_folder), "--json"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("nmp: error: --out") and len(err.strip().splitlines()) == 1, err


def test_study_runner_writes_its_files(tmp_path):
    from nmp.train.study import run_study

    rows = run_study({"setup": "cpr", "trials": 100, "crossover": False}, out_dir=tmp_path)
    assert [r["strategy"] for r in rows][:3] == ["ecrec", "checkpoint", "cpr-mfu"]
    for name in ("report.md", "results.csv", "results.jsonl"):
        assert (tmp_path / name).stat().st_size > 100
    assert "Sources of the setup's values" in (tmp_path / "report.md").read_text()
    with pytest.raises(NmpError, match="params.bogus"):
        run_study({"setup": "cpr", "bogus": 1}, out_dir=tmp_path)
    with pytest.raises(NmpError, match="params.trials"):
        run_study({"setup": "cpr", "trials": True}, out_dir=tmp_path)
    with pytest.raises(NmpError, match="params.crossover"):
        run_study({"setup": "cpr", "crossover": "no"}, out_dir=tmp_path)


def test_parameter_servers_pay_the_deltas_and_the_rebuild_over_their_nic():
    from nmp.train.extrapolate import _model
    from nmp.train.traffic import layout

    dep = load_setup("cpr")[0]
    inbox, ps = _model(replace(dep, network_gbps=0.0)), _model(dep)
    assert ps.step_ns > inbox.step_ns  # the lookups, partial sums and gradients cross the NIC
    c = ps.c
    tp = layout(c.dim, c.record_bytes, dep.k)  # = what the distributed trainer sends (counted)
    bw = dep.network_gbps
    lost = c.rows_total / dep.servers * (dep.k + dep.r) / dep.k
    assert ps.rebuild_traffic_ns == pytest.approx(
        max(inbox.rebuild_traffic_ns, lost * tp.repair / bw)
    )
    # The coded update's extra time per step is its schedule's two phases in series (the
    # parity is updated on the push's critical path): each touched row's delta to its parity
    # server, at the bytes per updated row the distributed run counts (stripe id + record),
    # then the parity's in-memory XOR (the arch's parity_update beyond a plain update).
    from nmp.train.extrapolate import steady_fraction
    from nmp.train.strategies import REGISTRY

    delta_ns = c.rows_touched * dep.r * (8 + c.record_bytes) / dep.servers / bw
    xor_ns = c.upd_coded_ns - c.upd_plain_ns
    assert ps.phase_ns["parity_delta"] == pytest.approx(delta_ns, rel=1e-9)
    assert ps.phase_ns["parity_xor"] == pytest.approx(xor_ns, rel=1e-9)
    # the plain step is the common schedule's phases in series (nothing is declared background)
    assert ps.step_ns == pytest.approx(sum(ps.phase_ns[p] for p in COMMON_CHAIN), rel=1e-9)
    frac = steady_fraction(ps, REGISTRY.get("ecrec"))
    assert frac == pytest.approx((delta_ns + xor_ns) / ps.step_ns, rel=1e-9)
    assert frac > 0.01  # the term is not negligible here: tripling it would show


COMMON_CHAIN = ("lookup", "gather", "pooled", "dense", "row_grad", "optimizer")


def test_tripling_the_parity_updates_cost_moves_ecrecs_modeled_overhead(monkeypatch):
    """The arch's parity_update (nmp/train/hwcost.py: ArchBackend.update of a coded store)
    prices ECRec's parity_xor phase, which is on the step's critical path."""
    from nmp.arch.architecture import Architecture
    from nmp.train import extrapolate, hwcost

    dep = replace(load_setup("cpr")[0], network_gbps=0.0)
    base = extrapolate._model(dep)
    rows0 = {r["strategy"]: r for r in extrapolate.expected(dep)}
    assert rows0["ecrec"]["overhead_no_failure_pct"] > 0
    real = Architecture.parity_update

    def tripled(self, rows, new_values, table=0):
        res = real(self, rows, new_values, table)
        return replace(res, t_ns=3.0 * res.t_ns)

    monkeypatch.setattr(Architecture, "parity_update", tripled)
    monkeypatch.setattr(hwcost, "_COST_CACHE", {})
    extrapolate._step_costs.cache_clear()
    try:
        slow = extrapolate._model(dep)
    finally:  # the tripled costs must not outlive the patch (later tests read the cache)
        extrapolate._step_costs.cache_clear()
    c0, c1 = base.c, slow.c
    assert c1.upd_coded_ns == pytest.approx(3.0 * c0.upd_coded_ns, rel=1e-6)
    # A physical bound pins the cost: at r = 1 the coded update is the data's read-modify-write
    # plus one parity record's (same size, on another node) and the XOR pass, so it costs more
    # than the plain update and at most about twice it (+25 % for the delta and the XOR).
    assert 1.0 < c0.upd_coded_ns / c0.upd_plain_ns <= 2.5
    assert c1.upd_coded_ns / c1.upd_plain_ns > 2.5  # tripled: the bound above catches it
    assert slow.phase_ns["parity_xor"] > 2.0 * base.phase_ns["parity_xor"]


def test_ecrec_setup_is_the_artifacts_and_what_reverses_it():
    """ECRec's artifact (Thesys-lab/ECRec): SGD records of 512 B, 100 Gbit/s servers, workers
    at 10 Gbit/s, a batch of 2048 per worker. The workers' NICs bound the step, the parity
    deltas ride the servers' slack: ECRec's overhead is below checkpointing's; with the
    artifact's commented-out 25 Gbit/s servers the servers bound the step and it is not."""
    from nmp.train.setup import load_marks

    dep, sources = load_setup("ecrec")
    assert (dep.optimizer_state_words, dep.batch, dep.batch_per_worker) == (0, 2048, True)
    assert all("Thesys-lab/ECRec" in sources[k] for k in ("servers", "workers", "k", "dim"))
    rows = {r["strategy"]: r for r in expected(dep)}
    ckpt = rows["checkpoint-30min"]["overhead_no_failure_pct"]
    ecrec = rows["ecrec"]["overhead_no_failure_pct"]
    assert ecrec > ckpt
    slow = {r["strategy"]: r for r in expected(replace(dep, network_gbps=25 / 8))}
    assert slow["ecrec"]["overhead_no_failure_pct"] > 2 * ecrec  # the deltas cross slower NICs
    marks = {m["label"]: m for m in load_marks("ecrec")}
    assert (
        marks["4S"]["value"] == 4 * dep.table_rows
        and "TOTAL_NUM_STEPS" in marks["226004 steps in 2 h?"]["source"]
    )
