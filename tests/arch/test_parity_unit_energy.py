"""The parity units' XOR energy of the presets that tests/arch/test_parity_costs.py does not pin
(ReCross, RecNMP), recomputed by hand from the cited per-byte cost.

Per update of a row of ``rb`` = 4 x dim bytes, the data node XORs old with new and each of the
``r`` parity nodes XORs the delta into its parity: ``(1 + r) rb`` bytes through XOR units. Both
presets cite the same unit: "8 XOR gates + register per byte in 40 nm", 0.1 pJ a byte. So a
batch of ``N`` updates costs ``N (1 + r) rb x 0.1 pJ`` in its units, and the units' energy
scales with the per-byte cost while the DRAM's does not.
"""

from __future__ import annotations

import numpy as np
import pytest

from nmp.arch import load_arch

DIM = 64  # the small_workload fixture's tables (tests/arch/conftest.py)
RB = 4 * DIM
N = 200
ROWS = np.arange(0, 4 * N, 4)  # one row of each of N stripes (k = 4)
PJ_PER_BYTE_XOR = 0.1  # models/arch/{recross,recnmp}.toml [parity]: 8 XOR gates + register


def _update(name, workload, overrides=None):
    arch = load_arch(name, overrides=overrides or {})
    arch.bind(workload)
    vals = np.random.default_rng(0).standard_normal((N, DIM)).astype(np.float32)
    return arch.parity_update(ROWS, vals, table=0)


@pytest.mark.parametrize("name", ["recross", "recnmp"])
def test_a_parity_update_xors_each_nodes_row_at_the_cited_cost(small_workload, name):
    op = _update(name, small_workload)
    r = 1  # both presets: XOR code, one parity
    assert op.energy_pj["units"] == pytest.approx(N * (1 + r) * RB * PJ_PER_BYTE_XOR, rel=1e-12)


def test_the_units_energy_scales_with_the_xor_cost_and_the_drams_does_not(small_workload):
    base = _update("recross", small_workload)
    tripled = _update("recross", small_workload, {"parity.pj_per_byte_xor": 3 * PJ_PER_BYTE_XOR})
    assert tripled.energy_pj["units"] == pytest.approx(3 * base.energy_pj["units"], rel=1e-12)
    for part in ("dram_core", "dram_io"):
        assert tripled.energy_pj[part] == pytest.approx(base.energy_pj[part], rel=1e-12)
