"""First-principles bounds (nmp.arch.first_principles) and verdicts that can fail.

* the bound's terms recomputed by hand from the presets' numbers;
* the bounds of ``nmp validate`` come out the same with the model stubbed out;
* every speed check's bound is at least the model's value under the same setup;
* every check's verdict can change when the model's value does (a mutation of the values, and
  of a real model cost), so no verdict is fixed by the order of the rules;
* explanations carry no typed number: they are rendered from the row's values.
"""

from __future__ import annotations

import re

import pytest

from nmp.arch.first_principles import workload_stats
from nmp.arch.presets import load_arch_spec
from nmp.memory import load_memory
from nmp.papers import nmp_points
from nmp.papers import nmp_speed as arch_claims
from nmp.validate.claims import Evaluation, load_claims, paper_files
from nmp.validate.runner import PLACEHOLDERS, run_validation, swept_alternatives
from nmp.workload import load_workload
from tests.validate.test_golden import fixture

NMP_PAPERS = ("recross", "trim", "recnmp")


def _paper_setup(paper: str):
    return next(c.setup for c in load_claims() if c.paper == paper and c.setup is not None)


def test_recross_over_host_terms_by_hand() -> None:
    """ReCross/host under ReCross's setup: the data-path and channel terms from the presets'
    numbers alone (rank bus tx per nBL, column paths tx per tCCD_L)."""
    setup = _paper_setup("recross").mapping()
    mine = arch_claims.fp_ceiling("recross", role="design", setup=setup)
    host = arch_claims.fp_ceiling("host-cpu", role="baseline", setup=setup)
    mem = load_memory("ddr5-4800-40")
    tck, tx = mem.tck_ns, mem.org.tx_bytes
    rank_bus = tx / (mem.timing["nBL"] * tck)  # GB/s
    column = tx / (mem.timing["nCCDL"] * tck)
    spec = load_arch_spec("recross")
    ranks = 2  # ReCross's setup: 1 channel x 2 ranks
    peak = ranks * (rank_bus + spec.bankgroup.units * column + spec.bank.units * column)
    ws = workload_stats(load_workload("recross-eval"))
    assert ws.lookups == 32 * 26 * 80 and ws.row_bytes == 256
    t_data = ws.lookups * ws.row_bytes / peak
    assert mine.terms_ns["data_paths"] == pytest.approx(t_data, rel=1e-6)
    assert mine.binding == "data_paths"
    t_host = ws.lookups * ws.row_bytes / rank_bus  # one channel: its bus is a rank bus's peak
    assert host.terms_ns["channel"] == pytest.approx(t_host, rel=1e-6)
    # the C/A term at the standard's fewest bits (a DDR5 READ: 2 tCK of 14 bits), chosen
    assert "28-bit instruction" in mine.arithmetic["ca"] and any(
        "alternative" in c for c in mine.choices
    )
    ratio = mine.lookups_per_s / host.lookups_per_s
    assert ratio == pytest.approx(peak / rank_bus, rel=1e-6)


def test_a_stated_resource_is_taken_as_stated() -> None:
    """TRiM-G's 85-bit instruction is sourced in ReCross's setup: TRiM-G as a design keeps it;
    the kit's defaults state nothing, so the bound takes the fewest bits the C/A allows."""
    setup = _paper_setup("recross").mapping()
    stated = arch_claims.fp_ceiling("trim-b", role="design", setup=setup)
    kit = arch_claims.fp_ceiling("trim-b", role="design", setup=None)
    assert "85-bit" in stated.arithmetic["ca"] and "28-bit" in kit.arithmetic["ca"]
    assert kit.lookups_per_s > stated.lookups_per_s


def test_the_baseline_takes_its_least_favourable_choices() -> None:
    setup = _paper_setup("recross").mapping()
    best = arch_claims.fp_ceiling("recnmp", role="design", setup=setup)
    worst = arch_claims.fp_ceiling("recnmp", role="baseline", setup=setup)
    assert best.lookups_per_s > worst.lookups_per_s
    assert any("serves nothing" in c for c in worst.choices)


def _fixture(paper: str) -> dict:
    return fixture(paper)


def _bounded(paper: str, mode: str) -> dict[str, dict]:
    return {k: v for k, v in _fixture(paper)[mode].items() if v.get("bound") is not None}


def _papers_with_bounds() -> tuple[str, ...]:
    """Every paper whose golden fixture has a bounded row: a paper added under nmp/papers/ is
    checked too, not only those named here."""
    papers = sorted({c.paper for c in load_claims()})
    return tuple(
        p
        for p in papers
        if any(
            v.get("bound") is not None for m in ("quick", "full") for v in fixture(p)[m].values()
        )
    )


BOUNDED_PAPERS = _papers_with_bounds()


def test_the_shipped_bounded_papers_are_checked() -> None:
    assert {*NMP_PAPERS, "micro24", "recshard", "sc24"} <= set(BOUNDED_PAPERS)


@pytest.mark.parametrize("paper", BOUNDED_PAPERS)
@pytest.mark.parametrize("mode", ["quick", "full"])
def test_every_bound_is_at_least_the_model(paper: str, mode: str) -> None:
    """Under the same setup, no modeled figure is above its first-principles bound (an
    ordering: its closest ratio, 1 + margin)."""
    rows = _bounded(paper, mode)
    assert rows
    for cid, row in rows.items():
        model = row["model_paper_setup"]
        if isinstance(model, bool):
            if row["margin"] is not None:
                assert row["bound"] >= 1 + row["margin"] - 1e-9, cid
            continue
        assert row["bound"] >= model - 1e-9, cid
        assert row["bound_kit_defaults"] >= row["model_kit_defaults"] - 1e-9, cid


def test_bounds_need_no_model_run(monkeypatch) -> None:
    """With the model stubbed out (every point a constant), validate gives the same bounds."""
    ids = ("recross.speedup-vs-cpu", "recross.speedup-vs-trim-g", "recnmp.latency-speedup")
    want = {**_fixture("recross")["quick"], **_fixture("recnmp")["quick"]}

    class Fake:
        lookups_per_s = 1.0
        latency_ns = 1.0
        energy_pj_per_lookup = 1.0
        area_mm2 = 1.0
        breakdown: dict = {}
        extra = {"lookups": 1}

    class FakeCeiling:
        lookups_per_s = time_ns = 1.0

        def text(self) -> str:
            return "stub"

    def stub(*args, **kwargs):
        return Fake()

    monkeypatch.setattr(nmp_points, "run_items", stub)
    monkeypatch.setattr(nmp_points, "ceiling_items", lambda *a, **k: FakeCeiling())
    monkeypatch.setattr(arch_claims, "ceiling", lambda *a, **k: FakeCeiling())
    rows = run_validation(quick=True, only=ids)
    assert {r.id for r in rows} == set(ids)
    for r in rows:
        assert r.model_paper_setup == 1.0  # the stub answered
        assert r.bound == pytest.approx(want[r.id]["bound"], rel=1e-9), r.id
        assert r.bound_kit_defaults == pytest.approx(want[r.id]["bound_kit_defaults"], rel=1e-9)


def test_separate_bounds_need_no_model_run(monkeypatch) -> None:
    """The GPU, sharding and compression claims name a bound function of their own: with
    every one of their models stubbed out (a constant answer) and the models' runs made to
    fail, validate gives the recorded bounds."""
    import nmp.validate.claims as claims_mod
    from nmp.papers.micro24 import model as gpu_claims
    from nmp.papers.recshard import model as shard_claims
    from nmp.papers.sc24 import model as compress_claims

    every = [c for c in load_claims() if c.bound and c.quick]
    # the shipped papers with bounds of their own (a paper added later: its bound runs as is)
    assert {c.paper for c in every} >= {"micro24", "recshard", "sc24"}
    # one claim per bound function (CI time): the others share its code
    bounded = list({c.bound: c for c in reversed(every)}.values())  # the first of each
    kinds = {f"{c.id}.model": c.kind for c in bounded}
    real = claims_mod.load_claim_model

    def load(ref, *, file=None, key=None):
        if key in kinds:
            answer = True if kinds[key] == "ordering" else 1.0
            return lambda **kw: {"value": answer}
        return real(ref, file=file, key=key)

    def no_run(*args, **kwargs):
        raise AssertionError("a bound ran the model")

    monkeypatch.setattr(claims_mod, "load_claim_model", load)
    monkeypatch.setattr(gpu_claims, "_run", no_run)
    monkeypatch.setattr(shard_claims, "_rows", no_run)
    monkeypatch.setattr(shard_claims, "_lower_bounds", no_run)
    monkeypatch.setattr(compress_claims, "_measured", no_run)
    ids = {c.id for c in bounded}
    rows = [r for r in run_validation(quick=True, only=tuple(ids)) if r.id in ids]
    assert len(rows) == len(bounded)
    for r in rows:
        want = _fixture(r.id.split(".")[0])["quick"][r.id]
        assert r.verdict_paper_setup != "error", (r.id, r.model)
        assert r.bound == pytest.approx(want["bound"], rel=1e-9), r.id
        assert r.bound_kit_defaults == pytest.approx(want["bound_kit_defaults"], rel=1e-9)
        assert r.bound_terms and "arithmetic" in r.bound_terms, r.id


def test_every_bounded_check_lists_its_terms() -> None:
    rows = run_validation(quick=True, only=("recross.speedup-vs-cpu",))
    (row,) = rows
    terms = row.bound_terms
    assert terms and terms["design"]["name"] == "recross"
    assert terms["baseline"]["name"] == "host-cpu"
    assert set(terms["design"]["terms"]) >= {"act_budget", "data_paths", "ca", "host_link"}
    assert all(" = " in t["arithmetic"] for t in terms["design"]["terms"].values())
    assert row.model_ceiling is not None and row.model_ceiling != row.bound


# ---------------------------------------------------------------------------------------------
# verdicts


# How a check's figure answers when the model cost it rests on is scaled by ``s`` (a design's
# time, energy or area; a recovery's overhead): a ratio or a share scales with it, a saving
# 100 (1 - a / b) and a gain 100 (b / a - 1) through their ratio.
def _scaled(claim, value: float, s: float) -> float:
    if claim.unit == "%" and ("energy" in claim.id or "reduction" in claim.id):
        return 100.0 * (1.0 - s * (1.0 - value / 100.0))
    if claim.unit == "%" and claim.id.endswith("-gain"):
        return 100.0 * ((1.0 + value / 100.0) * s - 1.0)
    return value * s


# 0.01x to 100x in steps of 10^(1/6) (about 1.47x), 1 left out
SCALES = tuple(10.0 ** (k / 6.0) for k in range(-12, 13) if k)
# Orderings whose model reports no margin (a yes/no from the trainer or the cache): a mutation
# flips the answer itself.
NO_MARGIN = {
    "cpr.accuracy-on-par",
    "evstore.accuracy",
    "evstore.perfect-band",
    "recshard.slow-accesses",
    "sc24.minimal-accuracy-impact",
}


def _mutated(claim, row, s: float) -> Evaluation:
    """The check's answer with the cost it rests on scaled by ``s``; the bound stays (it is
    computed without the model)."""
    value, margin = row["model_paper_setup"], row["margin"]
    if isinstance(value, bool):
        if margin is None:
            return Evaluation(not value, bound=row["bound"])
        ratio = (1.0 + margin) * s
        return Evaluation(ratio > 1.0, margin=ratio - 1.0, bound=row["bound"])
    return Evaluation(_scaled(claim, value, s), bound=row["bound"])


@pytest.mark.parametrize("paper", sorted({c.paper for c in load_claims()}))
def test_every_verdict_can_change(paper: str) -> None:
    """Each check's verdict (paper setup) changes when a model cost it rests on is scaled by
    one of :data:`SCALES` (computed from the recorded value, no model run; the bound stays);
    a check whose value is an input reads "input" whatever it is."""
    rows = _fixture(paper)["full"]
    for claim in (c for c in load_claims() if c.paper == paper):
        row = rows[claim.id]
        if row.get("model_paper_setup") is None:  # measured on the machine: only verdicts pinned
            continue
        now = claim.verdict(
            Evaluation(row["model_paper_setup"], margin=row["margin"], bound=row["bound"])
        )
        assert now == row["verdict_paper_setup"], claim.id
        if row["margin"] is None and isinstance(row["model_paper_setup"], bool):
            assert claim.id in NO_MARGIN or claim.input, claim.id
        seen = {claim.verdict(_mutated(claim, row, s)) for s in SCALES}
        if claim.input:
            assert seen == {"input"}, claim.id
        else:
            assert seen - {now}, f"{claim.id}: always {now}"


def test_verdict_order_band_before_bound() -> None:
    """A value inside its band is "within band" even when the published figure is above the
    bound; outside the band it "exceeds bound"; below the bound it "disagrees"."""
    claim = next(c for c in load_claims() if c.id == "recross.speedup-vs-cpu")
    assert claim.verdict(Evaluation(9.0, bound=12.0)) == "within band"
    assert claim.verdict(Evaluation(5.0, bound=12.0)) == "exceeds bound"
    assert claim.verdict(Evaluation(5.0, bound=20.0)) == "disagrees"
    assert claim.verdict(Evaluation(15.0, bound=12.0)) == "agrees"


def test_a_model_cost_moves_a_verdict() -> None:
    """Doubling ReCross's instruction (a model cost) moves ReCross/host out of its band: the
    verdict changes (it stayed "exceeds bound" when that rule came first)."""
    claim = next(c for c in load_claims() if c.id == "recross.speedup-vs-cpu")
    setup = claim.setup.mapping()
    now = claim.evaluate(True, setup)
    setup["designs.recross.arch.instruction.bits_per_lookup"] = 170
    slower = claim.evaluate(True, setup)
    assert slower.value < now.value
    assert slower.bound == pytest.approx(now.bound)  # a chosen length: the bound takes its fewest
    assert claim.verdict(now) != claim.verdict(slower)


# ---------------------------------------------------------------------------------------------
# explanations and setups

_IDENT = re.compile(r"[A-Za-z_][\w.'/-]*")  # words that start with a letter: DDR5, ddr5-4800-40


def _typed_numbers(text: str) -> list[str]:
    text = re.sub(r"\{\w+\}", " ", text)
    text = re.sub(r"(Fig\.|Table|§)\s*\d+", " ", text)
    text = _IDENT.sub(" ", text)
    return re.findall(r"\d+(?:[.,]\d+)?", text)


@pytest.mark.parametrize("paper", NMP_PAPERS)
def test_explanations_carry_no_typed_number(paper: str) -> None:
    """An NMP claim's explanation holds no number of its own: values come from placeholders
    ({model}, {bound}, {detail}, ...) rendered from the row; only identifiers carry digits."""
    for claim in (c for c in load_claims() if c.paper == paper):
        assert not _typed_numbers(claim.explanation), (claim.id, _typed_numbers(claim.explanation))
        for name in re.findall(r"\{(\w+)\}", claim.explanation):
            assert name in PLACEHOLDERS, (claim.id, name)


def test_no_explanation_types_a_current_model_value() -> None:
    """No explanation of any paper types the model's current value with its unit ("1.64x",
    "1.26 %", 3 significant digits)."""
    for claim in load_claims():
        row = _fixture(claim.paper)["full"].get(claim.id, {})
        for key in ("model_paper_setup", "model_kit_defaults", "bound"):
            v = row.get(key)
            if isinstance(v, float) and abs(v) >= 0.01:
                typed = f"{v:.3g}"
                for text in (f"{typed}x", f"{typed} %", f"{typed}%"):
                    assert text not in claim.explanation, (claim.id, key, text)


def test_swept_alternatives_come_from_the_study() -> None:
    assert swept_alternatives("arch.host.llc_mib", "papers/host-llc", 0) == [
        4.0,
        8.0,
        16.0,
        32.0,
        64.0,
    ]
    assert swept_alternatives(
        "designs.trim-g.arch.replicate_hot_rows", "papers/sensitivity-recross-trim", 4096
    ) == [0, 16384]
    assert swept_alternatives("workload.alpha", "papers/host-llc", 1.05) == []
    # a dotted TOML key (workload.alpha = [...]) is a nested table
    assert swept_alternatives("workload.alpha", "papers/recross-skew", 1.05) == [
        0.6,
        0.8,
        1.0,
        1.2,
        1.4,
    ]


def test_one_configuration_per_design_across_papers() -> None:
    """A design-level key the setups of two papers both give has one value, unless both
    cite a source (each paper then states its own)."""
    seen: dict[str, tuple[object, str, bool]] = {}
    for path in paper_files():
        claims = [c for c in load_claims() if c.file == str(path) and c.setup is not None]
        if not claims:
            continue
        for v in claims[0].setup.values:
            if not v.key.startswith("designs."):
                continue
            if v.key in seen:
                value, other, sourced = seen[v.key]
                assert value == v.value or (sourced and v.source), (v.key, path.parent.name, other)
            seen[v.key] = (v.value, path.parent.name, bool(v.source))


def test_docs_quote_the_whole_tables_counts() -> None:
    """docs/validation.md's counts per paper are the golden full set's, every row."""
    from collections import Counter

    from nmp.config import project_root

    text = (project_root() / "docs" / "validation.md").read_text()
    total = Counter()
    for paper in sorted({c.paper for c in load_claims()}):
        rows = _fixture(paper)["full"]
        got = Counter(r["verdict_paper_setup"] for r in rows.values())
        total += got
        line = next(x for x in text.splitlines() if x.startswith(f"| {paper} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert int(cells[1]) == len(rows), paper
        quoted = {v: int(n) for n, v in (p.split(" ", 1) for p in cells[2].split(", "))}
        assert quoted == dict(got), paper
    line = next(x for x in text.splitlines() if x.startswith("| all papers |"))
    assert int(line.split("|")[2]) == sum(total.values())


def test_docs_table_is_generated_from_the_fixtures() -> None:
    """docs/validation.md's counts and full table are the fixtures' full set, as generated
    (``python -m tests.validate.test_golden --docs``): no typed count or value."""
    from nmp.config import project_root
    from nmp.validate.docs_table import replace_generated
    from tests.validate.test_golden import fixtures_full

    text = (project_root() / "docs" / "validation.md").read_text()
    assert replace_generated(text, fixtures_full()) == text


def test_every_term_of_the_host_baseline_by_hand() -> None:
    """Host-CPU as ReCross's baseline (DDR5-4800, 1 channel x 2 ranks): the terms that do not
    bind (arithmetic, C/A, activations, row cycles) each from the presets' numbers alone, so
    that a term computed wrong cannot hide behind the channel's."""
    setup = _paper_setup("recross").mapping()
    host = arch_claims.fp_ceiling("host-cpu", role="baseline", setup=setup)
    mem = load_memory("ddr5-4800-40")
    tck, org = mem.tck_ns, mem.org
    ws = workload_stats(load_workload("recross-eval"))
    bursts = ws.row_bytes / org.tx_bytes  # 256 B rows: 4 bursts of 64 B
    ranks = org.channels * org.ranks
    banks = ranks * org.bankgroups * org.banks
    h = load_arch_spec("host-cpu").host
    terms = host.terms_ns
    assert (h.cores, h.simd_lanes, h.clock_ghz) == (16, 16, 2.2)
    assert terms["host_compute"] == pytest.approx(
        ws.lookups * ws.dim / (h.cores * h.simd_lanes * h.clock_ghz), rel=1e-9
    )
    # a DDR5 READ is a two-cycle command (JESD79-5): 2 tCK of C/A per burst
    assert terms["ca"] == pytest.approx(ws.lookups * bursts * 2 / org.channels * tck, rel=1e-9)
    # the baseline's most activations: one per lookup, at the rank's tRRD_S / tFAW / 4 pace
    gap = max(mem.timing["nRRDS"], mem.timing["nFAW"] / 4)
    assert terms["act_budget"] == pytest.approx(ws.lookups / ranks * gap * tck, rel=1e-9)
    assert terms["row_cycles"] == pytest.approx(
        ws.lookups / banks * mem.timing["nRC"] * tck, rel=1e-9
    )


def test_the_designs_host_link_and_row_terms_by_hand() -> None:
    """ReCross as the design under its setup: the host link (an instruction per lookup at the
    fewest bits a DDR5 READ's C/A allows, a pooled vector per bag) and the activations of its
    fewest pages (distinct rows packed per page, less the rows its banks keep open)."""
    setup = _paper_setup("recross").mapping()
    design = arch_claims.fp_ceiling("recross", role="design", setup=setup)
    mem = load_memory("ddr5-4800-40")
    tck, org = mem.tck_ns, mem.org
    ws = workload_stats(load_workload("recross-eval"))
    spec = load_arch_spec("recross")
    ins = spec.instruction
    bits = 2 * ins.dram_ca_bits_per_cycle  # two C/A cycles of a DDR5 READ: 28 bits
    channel_peak = org.tx_bytes / (mem.timing["nBL"] * tck)
    t_link = (
        ws.lookups * bits / ins.host_bits_per_cycle * tck + ws.bags * ws.row_bytes / channel_peak
    )
    assert design.terms_ns["host_link"] == pytest.approx(t_link / org.channels, rel=1e-9)
    page_bytes = org.columns // org.prefetch * org.tx_bytes  # 4096 B
    ranks = org.channels * org.ranks
    banks = ranks * org.bankgroups * org.banks
    open_rows = 8  # MASA: the open subarrays the model tracks per bank (salp_readings.py)
    acts = -(-ws.distinct // int(page_bytes // ws.row_bytes)) - banks * open_rows
    assert acts > 0
    gap = max(mem.timing["nRRDS"], mem.timing["nFAW"] / 4)
    assert design.terms_ns["act_budget"] == pytest.approx(acts / ranks * gap * tck, rel=1e-9)
    assert design.terms_ns["row_cycles"] == pytest.approx(
        acts / (banks * open_rows) * mem.timing["nRC"] * tck, rel=1e-9
    )
