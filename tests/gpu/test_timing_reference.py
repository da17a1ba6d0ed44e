"""The wave timing's fast fixed-point search (per-wave memo of the rows it prices, the blocks'
maxima in one compiled pass, the integral's grid by binary search) against the implementation it
replaced (tests/gpu/reference_timing.py), bit for bit, on seeded random waves."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nmp.gpu import load_gpu
from nmp.gpu.hbm import hbm_calibration, with_probe
from nmp.gpu.slowest import max_excess
from nmp.gpu.timing import LoadPrices, SliceQueue, wave_timing

from .reference_timing import reference_max_excess, reference_wave_timing


def _bits(value):
    """A comparable form of a timing field with every float's bits (and its type) kept."""
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return [(k, _bits(v)) for k, v in value.items()]
    if isinstance(value, float):
        return (type(value).__name__, np.float64(value).tobytes())
    return (type(value).__name__, value)


def _random_wave(rng: np.random.Generator, queueing_ns) -> dict:
    wpb = int(rng.choice([1, 4, 8, 32]))
    blocks = int(rng.integers(1, 200))
    levels = rng.integers(0, 120, size=(blocks * wpb, 3)).astype(np.float64)
    levels[rng.random(levels.shape[0]) < 0.2] = 0.0  # idle warps
    for level in range(3):  # a level no load reaches
        if rng.random() < 0.2:
            levels[:, level] = 0.0
    spreads = tuple(float(s) if rng.random() < 0.7 else 0.0 for s in rng.uniform(0, 300, size=3))
    prices = LoadPrices(
        l1_cycles=float(rng.uniform(20, 60)),
        l2_cycles=float(rng.uniform(150, 450)),
        hbm_unloaded_cycles=float(rng.uniform(450, 1000)),
        index_hbm_share=float(rng.choice([0.0, 0.125, rng.uniform(0, 0.3)])),
        index_l2_share=float(rng.choice([0.0, 0.125, rng.uniform(0, 0.3)])),
        spill_cycles=float(rng.choice([0.0, rng.uniform(0, 80)])),
        unroll=int(rng.choice([1, 1, 4])),
        index_batch=int(rng.choice([1, 1, 8])),
        spread_cycles=spreads,
        waits_for_slowest=bool(rng.random() < 0.6),
    )
    cycle_ns = 1 / 1.98
    slots = int(rng.integers(1, 2 * blocks + 1))
    peak = 4800.0
    # bytes that load the HBM from lightly to past its saturation over the unloaded time
    t_guess = float(levels.sum(axis=1).max()) * prices.hbm_unloaded_cycles * cycle_ns
    hbm_bytes = float(rng.uniform(0.0, 1.2)) * peak * max(t_guess, 1.0) * (blocks / slots)
    slices = None
    if rng.random() < 0.7:
        curve = ((), ())
        if rng.random() < 0.3:
            curve = ((0.1, 0.5, 0.8, 0.95), (2.0, 9.0, 40.0, 300.0))
        slices = SliceQueue(
            bytes=hbm_bytes * float(rng.uniform(1.0, 3.0)),
            peak_bytes_per_ns=10137.6,
            service_cycles=3.0,
            requests=hbm_bytes / 128 * float(rng.uniform(1.0, 3.0)),
            requests_per_ns=58.09,
            request_service_cycles=4.09,
            wait_curve=curve,
        )
    bounds = {k: float(rng.uniform(0, 2) * t_guess) for k in ("l2_bandwidth", "l1_bandwidth")}
    if rng.random() < 0.5:
        bounds["issue"] = float(rng.uniform(0, 2) * t_guess)
    bounds["hbm_bandwidth"] = hbm_bytes / (peak * 0.77)
    return dict(
        warp_levels=levels,
        prices=prices,
        mlp=float(rng.choice([1.0, 2.0, 2.7, 4.0, 8.0])),
        warps_per_block=wpb,
        slots=slots,
        cycle_ns=cycle_ns,
        hbm_bytes=hbm_bytes,
        peak_gbps=peak,
        saturation=0.772,
        queueing_ns=None if rng.random() < 0.15 else queueing_ns,
        bounds_ns=bounds,
        slices=slices,
    )


@pytest.fixture(scope="module")
def h200_queue():
    hbm = load_gpu("h200").hbm
    return with_probe(hbm_calibration(hbm), hbm).queueing_ns


@pytest.mark.parametrize("seed", range(8))
def test_fast_search_gives_the_reference_bits(seed, h200_queue):
    rng = np.random.default_rng(20240 + seed)
    for _ in range(25):
        args = _random_wave(rng, h200_queue)
        fast = dataclasses.asdict(wave_timing(**args))
        slow = dataclasses.asdict(reference_wave_timing(**args))
        assert list(fast) == list(slow)
        for key in fast:
            assert _bits(fast[key]) == _bits(slow[key]), key


def test_max_excess_gives_the_reference_bits():
    rng = np.random.default_rng(7)
    for _ in range(300):
        means = rng.uniform(0, 1000, size=3)
        if rng.random() < 0.2:
            means[rng.integers(3)] = 0.0
        spreads = np.where(rng.random(3) < 0.3, 0.0, rng.uniform(0, 400, size=3))
        if rng.random() < 0.1:
            spreads = means.copy()  # fixed parts of zero
        shares = np.where(rng.random(3) < 0.25, 0.0, rng.uniform(0, 1, size=3))
        m = float(rng.choice([0.5, 1.0, 1.5, 2.0, 4.0, 7.3]))
        got = max_excess(means, spreads, shares, m)
        want = reference_max_excess(means, spreads, shares, m)
        assert _bits(got) == _bits(want)
