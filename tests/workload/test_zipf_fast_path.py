"""The Zipf sampler's libm-free fast path decides every draw as libm does, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from nmp.workload import _kernels, sampling
from nmp.workload._fastmath import exp_small, log_pos


def _over_arrays(fn):
    """``fn`` of every element of a float64 array, compiled (as the kernels call it)."""

    @njit(error_model="numpy")
    def each(x):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = fn(x[i])
        return out

    return each


_logs, _exps = _over_arrays(log_pos), _over_arrays(exp_small)


def _ulps(got: np.ndarray, want: np.ndarray) -> float:
    return float((np.abs(got - want) / np.spacing(np.abs(want))).max())


def test_fast_log_and_exp_are_within_their_stated_ulps_of_libm():
    rng = np.random.default_rng(3)
    w = np.concatenate([
        rng.random(200_000) + 2.0**-60, 1.0 + rng.random(200_000) * 1e-6,
        1.0 - rng.random(200_000) * 1e-9, np.exp(rng.uniform(-700.0, 700.0, 200_000)),
    ])  # fmt: skip
    w = w[w != 1.0]  # (log 1 = 0 exactly: no ulp to count in)
    assert _ulps(_logs(w), np.log(w)) <= 4.0
    y = np.concatenate([rng.uniform(-700.0, 700.0, 200_000), rng.uniform(-1.0, 1.0, 200_000)])
    assert _ulps(_exps(y), np.exp(y)) <= 3.0


def _both(u01: np.ndarray, rows: int, alpha: float):
    h_x1, h_n, s = sampling._zipf_constants(rows, alpha)
    n = u01.shape[0]
    exact = (np.empty(n, np.int64), np.empty(n, np.bool_))
    fast = (np.empty(n, np.int64), np.empty(n, np.bool_))
    _kernels.zipf_exact_kernel(u01, rows, alpha, h_x1, h_n, s, *exact)
    decided = _kernels.zipf_decided_kernel(u01, rows, alpha, h_x1, h_n, s, *fast)
    return exact, fast, decided


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.6, 0.999999, 1.0, 1.0000001, 1.05, 2.0, 50.0])
@pytest.mark.parametrize("rows", [1, 3, 1000, 10_000_000, 2**40])
def test_fast_path_decides_random_draws_as_libm(alpha, rows):
    u01 = np.random.default_rng(rows % 1000 + int(alpha * 1e6)).random(100_000)
    u01[:3] = (0.0, 1.0 - 2.0**-53, 2.0**-53)
    (r_exact, ok_exact), (r_fast, ok_fast), decided = _both(u01, rows, alpha)
    assert np.array_equal(r_exact, r_fast) and np.array_equal(ok_exact, ok_fast)
    if 1000 <= rows <= 10**7 and alpha <= 2.0:  # (the fast path does the bulk of these)
        assert decided > 0.9 * u01.shape[0]


@pytest.mark.parametrize("alpha", [0.6, 1.0, 1.05, 2.0])
def test_fast_path_decides_draws_at_the_boundaries_as_libm(alpha):
    """Uniforms whose x lies within a few ulp of a half-integer (where the rank changes) or of
    k - s (the squeeze's edge): the draws the margin hands back to libm."""
    rows = 10_000_000
    h_x1, h_n, s = sampling._zipf_constants(rows, alpha)

    def u01_at(x: np.ndarray) -> np.ndarray:  # H(x), the inverse of x(u), as a uniform
        lx = np.log(x)
        h = lx if alpha == 1.0 else np.expm1((1.0 - alpha) * lx) / (1.0 - alpha)
        return (h - h_n) / (h_x1 - h_n)

    k = np.unique(np.geomspace(1, rows - 1, 400).astype(np.int64)).astype(np.float64)
    centres = u01_at(np.concatenate([k + 0.5, k - s]))
    steps = np.arange(-40, 41)
    u01 = (centres[:, None] + steps[None, :] * np.spacing(centres)[:, None]).ravel()
    u01 = u01[(u01 >= 0.0) & (u01 < 1.0)]
    (r_exact, ok_exact), (r_fast, ok_fast), decided = _both(u01, rows, alpha)
    assert np.array_equal(r_exact, r_fast) and np.array_equal(ok_exact, ok_fast)
    assert decided < u01.shape[0]  # (some came near enough to go back to libm)


def test_zipf_ranks_draws_what_libm_alone_draws():
    """The sampler end to end (first round and redraws) against libm alone, same Generator."""
    rows, alpha, n = 5_000_000, 1.05, 50_000
    got = sampling.zipf_ranks(np.random.default_rng(9), n, rows, alpha)
    rng = np.random.default_rng(9)
    h_x1, h_n, s = sampling._zipf_constants(rows, alpha)
    want = np.empty(n, np.int64)
    todo = np.arange(n)
    while todo.size:
        ranks, ok = np.empty(todo.size, np.int64), np.empty(todo.size, np.bool_)
        _kernels.zipf_exact_kernel(rng.random(todo.size), rows, alpha, h_x1, h_n, s, ranks, ok)
        want[todo[ok]] = ranks[ok]
        todo = todo[~ok]
    assert np.array_equal(got, want)
