"""The kit's own checks against references it can compute or has on file (not papers' claims).

Each check returns :class:`~nmp.validate.result.CheckResult` rows and registers itself in
:data:`~nmp.validate.result.KIT_CHECKS` under the prefix of its rows' ids (``dram.ramulator2``
gives ``dram.ramulator2.ddr4``, ...); ``quick`` checks a smaller sample where the full set is
long.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from nmp.config import preset_names
from nmp.reference import case_memory_spec, dram_reference_dir, read_cases
from nmp.validate.result import CheckResult, builtin
from nmp.workload import generate_batch, load_workload

# The issue-2 bounds of the engine against Ramulator 2 (cycles 5 %, row counts 10 % or two
# events): beyond exactness, a case within them is "within band".
CYCLES_REL = 0.05
ROWS_REL, ROWS_SLACK = 0.10, 2
ROW_KEYS = ("row_hits", "row_misses", "row_conflicts")


def _case_result(case: dict[str, Any], folder) -> tuple[bool, bool, float]:
    """(exact, within bounds, cycle error %) of one reference case."""
    # numba: loaded on use (start-up time)
    from nmp.memory import replay

    spec = case_memory_spec(case["memory_args"])
    stats = replay(str(folder / case["trace"]), spec, drain=False)
    ref = case["ramulator2"]
    got = {"cycles": int(stats.cycles), **{k: int(getattr(stats, k)) for k in ROW_KEYS}}
    exact = all(got[k] == ref[k] for k in got)
    err_pct = 100.0 * abs(got["cycles"] - ref["cycles"]) / ref["cycles"]
    within = err_pct <= 100 * CYCLES_REL and all(
        abs(got[k] - ref[k]) <= max(ROWS_REL * ref[k], ROWS_SLACK) for k in ROW_KEYS
    )
    return exact, within, err_pct


def missing_reference(check_id: str, source: str, published: str) -> CheckResult:
    """A DRAM check's row where the reference cases are not found: where it looked."""
    return CheckResult(
        id=check_id,
        source=source,
        published=published,
        model=f"reference data not found at {dram_reference_dir()}",
        verdict="error",
        group="simulator",
    )


@builtin("dram.ramulator2")
def dram_vs_ramulator(quick: bool) -> list[CheckResult]:
    """The DRAM engine on every reference case against Ramulator 2.1: one row per standard."""
    folder = dram_reference_dir()
    path = folder / "cases.json"
    if not path.is_file():
        return [
            missing_reference(
                "dram.ramulator2",
                "Ramulator 2.1 reference cases",
                "cycles and row hits/misses/conflicts per case",
            )
        ]
    data = read_cases(folder)
    by_standard: dict[str, list[dict]] = defaultdict(list)
    for case in data["cases"]:
        standard = data["memory_configs"][case["mem_config"]]["standard"]
        by_standard[standard].append(case)
    rows = []
    sim = data.get("simulators", {}).get("ramulator2", "Ramulator 2.1")
    for standard, cases in sorted(by_standard.items()):
        results = [_case_result(c, folder) for c in cases]
        exact = sum(r[0] for r in results)
        within = sum(r[1] for r in results)
        worst = max(r[2] for r in results)
        n = len(cases)
        verdict = "agrees" if exact == n else "within band" if within == n else "disagrees"
        rows.append(
            CheckResult(
                id=f"dram.ramulator2.{standard.lower()}",
                source=f"{sim}; {path.parent.name}/cases.json",
                published=f"cycles, row hits/misses/conflicts of {n} {standard} cases",
                model=f"{exact}/{n} exact, {within}/{n} within 5 %/10 %, worst cycles "
                f"{worst:.2f} %",
                verdict=verdict,
                group="simulator",
                claim=f"the DRAM engine reproduces Ramulator 2 on {standard}",
            )
        )
    return rows


def _small_workload():
    # Four small tables (one of 7 rows: heavy reuse), so that every design replays quickly.
    return load_workload("recross-eval", {"rows": [1000, 500, 3000, 7], "batch": 8, "pooling": 20})


def _nmp_designs() -> list[str]:
    return preset_names("arch")


@builtin("functional.gather-reduce")
def gather_reduce_vs_torch(quick: bool) -> list[CheckResult]:
    """Every design's executed gather-reduce against ``torch.nn.EmbeddingBag(mode="sum")``."""
    # torch: loaded on use (start-up time)
    import torch

    # numba: loaded on use (start-up time)
    from nmp.arch import load_arch

    workload = _small_workload()
    worst, names = 0.0, _nmp_designs()
    for name in names:
        arch = load_arch(name)
        arch.bind(workload)
        batch = generate_batch(workload, seed=5)
        pooled, _ = arch.gather_reduce(batch)
        assert pooled is not None and arch.store is not None  # (bound, functional)
        for t, lk in enumerate(batch.tables):
            bag = torch.nn.EmbeddingBag.from_pretrained(
                torch.from_numpy(arch.store.dense_table(t)), mode="sum"
            )
            ref = bag(torch.from_numpy(lk.indices), torch.from_numpy(lk.offsets[:-1])).numpy()
            err = float(np.abs(pooled[t] - ref).max() / max(np.abs(ref).max(), 1e-30))
            worst = max(worst, err)
    # fp32 sums in another order differ by rounding only: a few ulps of the largest output
    ok = worst <= 1e-5
    return [
        CheckResult(
            id="functional.gather-reduce",
            source="torch.nn.EmbeddingBag(mode='sum'), torch " + torch.__version__,
            published="pooled outputs, fp32 (relative error <= 1e-5: summation order)",
            model=f"{len(names)} designs, worst relative error {worst:.1e}",
            verdict="agrees" if ok else "disagrees",
            group="functional",
            claim="every design's in-memory gather-reduce equals EmbeddingBag",
        )
    ]


@builtin("functional.parity")
def parity_vs_fresh_encode(quick: bool) -> list[CheckResult]:
    """In-memory parity after random updates against a fresh encode, and lost nodes decoded."""
    # numba: loaded on use (start-up time)
    from nmp.arch import load_arch

    workload = _small_workload()
    setups = [("recross", {}, "XOR"), ("trim-g", {"parity.code": "rs", "parity.r": 2}, "RS r=2")]
    updates = 600 if quick else 3000
    rows_out = []
    for name, overrides, code in setups:
        arch = load_arch(name, overrides=overrides)
        arch.bind(workload)
        rng = np.random.default_rng(7)
        n_rows = arch.tables[0].rows
        rows = rng.integers(0, n_rows, updates)
        vals = rng.standard_normal((updates, arch.tables[0].dim)).astype(np.float32)
        vals[0, 0] = np.float32(np.nan)  # bit patterns, not floats: NaN and -0.0 survive
        vals[1, :] = -0.0
        arch.parity_update(rows, vals, table=0)
        consistent = arch.parity_consistent(0)
        decoded = 0
        nodes = arch.parity_level_nodes
        for lost in range(nodes):
            got_rows, got = arch.recover_node(lost, 0)
            assert arch.store is not None  # (bound)
            want = arch.store.read(0, got_rows)
            decoded += int(np.array_equal(got.view(np.uint32), want.view(np.uint32)))
        ok = consistent and decoded == nodes
        rows_out.append(
            CheckResult(
                id=f"functional.parity.{name}",
                source="a fresh encode of the updated table (nmp.coding)",
                published="parity bit-identical; every lost node decodes bit for bit",
                model=f"{code} on {name}: {updates} updates, parity "
                f"{'identical' if consistent else 'DIFFERS'}, {decoded}/{nodes} nodes decoded",
                verdict="agrees" if ok else "disagrees",
                group="functional",
                claim="in-place delta parity stays equal to a fresh encode",
            )
        )
    return rows_out
