"""Float-sum parity (ECRec): exact bookkeeping, inexact arithmetic, and its measured drift."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.coding import DecodeError, FloatSumParity, measure_float_sum_drift
from nmp.coding.floatsum import ulp_distance


def test_encode_update_decode():
    rng = np.random.default_rng(0)
    code = FloatSumParity(4)
    data = rng.standard_normal((4, 32)).astype(np.float32)
    parity = code.encode(data)
    assert parity.shape == (1, 32) and parity.dtype == np.float32
    expect = ((data[0] + data[1]) + data[2]) + data[3]
    assert np.array_equal(parity[0], expect)
    new = data[2] + np.float32(0.25)
    code.update(parity, 2, data[2], new)
    data[2] = new
    assert np.allclose(parity[0], data.sum(axis=0), atol=1e-5)
    shards = np.concatenate([data, parity])
    assert np.allclose(code.decode(shards, [1])[1], data[1], atol=1e-5)
    with pytest.raises(DecodeError):
        code.decode(shards, [0, 1])


def test_sum_parity_does_not_recover_bits():
    # (a + b) - b != a in float32: the sum code cannot give a row back bit for bit.
    code = FloatSumParity(2)
    data = np.array([[1e-8], [1.0]], dtype=np.float32)
    shards = np.concatenate([data, code.encode(data)])
    assert code.decode(shards, [0])[0, 0] != data[0, 0]


def test_ulp_distance():
    one = np.float32(1.0)
    assert ulp_distance(one, np.nextafter(one, np.float32(2))) == 1
    assert ulp_distance(np.float32(0.0), np.float32(-0.0)) == 0
    assert ulp_distance(np.float32(-1e-45), np.float32(1e-45)) == 2


def test_drift_measurement():
    a = measure_float_sum_drift(4, stripes=8, dim=16, updates=5000, seed=3)
    b = measure_float_sum_drift(4, stripes=8, dim=16, updates=5000, seed=3)
    assert a == b  # deterministic
    assert a.xor_recovery_mismatch_fraction == 0.0
    assert a.parity_max_abs > 0 and a.parity_max_ulp > 0  # drift is real at this scale
    assert 0 < a.recovery_mismatch_fraction <= 1
    assert a.recovery_max_abs < 1e-4  # but small against values of ~5e-2
