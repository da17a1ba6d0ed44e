"""nmp.gpu.slowest: a wait for several loads lasts the slowest of them."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.gpu.slowest import max_excess

HBM_ONLY = np.array([0.0, 0.0, 1.0])
MEANS = np.array([40.0, 300.0, 800.0])


@pytest.mark.parametrize("m", [2, 3, 4, 8, 16])
def test_one_exponential_level_pays_its_spread_times_h_m_minus_one(m):
    harmonic = sum(1.0 / k for k in range(1, m + 1))
    got = max_excess(MEANS, (0.0, 0.0, 100.0), HBM_ONLY, m)
    assert got == pytest.approx(100.0 * (harmonic - 1.0), rel=1e-5)


def test_one_load_or_one_fixed_latency_pays_nothing():
    assert max_excess(MEANS, (0.0, 30.0, 100.0), np.array([0.2, 0.3, 0.5]), 1.0) == 0.0
    assert max_excess(MEANS, (0.0, 0.0, 0.0), HBM_ONLY, 8.0) == 0.0


def test_a_mix_waits_for_its_slowest_level_without_any_spread():
    # Two loads, half L2 hits (300), half misses (800): E[max] = 800 x 3/4 + 300 x 1/4 = 675,
    # 125 over the mean 550.
    mix = np.array([0.0, 0.5, 0.5])
    assert max_excess(MEANS, (0.0, 0.0, 0.0), mix, 2.0) == pytest.approx(125.0, rel=1e-3)


def test_more_loads_or_more_spread_wait_longer():
    mix = np.array([0.1, 0.5, 0.4])
    spreads = (0.0, 30.0, 190.0)
    waits = [max_excess(MEANS, spreads, mix, m) for m in (1.5, 2.0, 4.0, 5.333)]
    assert waits == sorted(waits) and waits[0] > 0.0
    assert max_excess(MEANS, (0.0, 60.0, 380.0), mix, 4.0) > waits[2]
