"""L3's substitute map against a brute-force search; the study runner writes its files."""

import json

import numpy as np
import pytest

from nmp.cache.neighbors import substitute_map
from nmp.errors import NmpError


def test_substitutes_match_brute_force():
    rng = np.random.default_rng(5)
    n = 400
    table_of = np.repeat([0, 1], n // 2)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    counts = rng.integers(0, 50, n)
    subst, rel = substitute_map(table_of, x, counts, candidates=20, bound=0.9, chunk=64)
    for k in range(n):
        members = np.flatnonzero(table_of == table_of[k])
        order = sorted(members, key=lambda i: (-counts[i], i))
        cands = [c for c in order[:20] if counts[c] > 0 and c != k]
        d = [np.linalg.norm(x[k].astype(np.float64) - x[c]) for c in cands]
        best = cands[int(np.argmin(d))]
        r = min(d) / np.linalg.norm(x[k].astype(np.float64))
        assert rel[k] == pytest.approx(r, rel=1e-6)
        assert subst[k] == (best if r <= 0.9 else -1)
    assert (subst >= 0).any() and (subst < 0).any()


def test_bound_errors():
    with pytest.raises(NmpError, match="bound"):
        substitute_map(np.zeros(2, int), np.ones((2, 2)), np.ones(2), candidates=1, bound=-1)


def test_study_writes_its_files(tmp_path):
    from nmp.cache.study import run_study

    params = {
        "policies": ["lru", "evstore"],
        "l1_mb": [0.05],
        "l2_dtypes": ["int4"],
        "dtype_l1_mb": 0.05,
        "requests": 600,
        "warmup": 300,
        "accuracy": False,
        "backend": "",
    }
    rows = run_study(params, out_dir=tmp_path)
    assert [r["policy"] for r in rows] == ["lru", "evstore", "evstore"]
    for name in ("report.md", "results.csv", "results.jsonl", "hit_rates.png", "latency.png"):
        assert (tmp_path / name).stat().st_size > 0
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert json.loads(lines[1])["l2_mb"] == pytest.approx(0.05, abs=1e-5)  # whole bytes
    with pytest.raises(NmpError, match="params.colour"):
        run_study({"colour": 1}, out_dir=tmp_path)
    with pytest.raises(NmpError, match="params.l1_mb must be a list"):
        run_study({"l1_mb": 1.0}, out_dir=tmp_path)
    with pytest.raises(NmpError, match="params.l3_bounds must not be empty"):
        run_study({"l3_bounds": []}, out_dir=tmp_path)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        # each was an internal TypeError mid-run, or (accuracy "yes") taken as true
        ({"requests": "x"}, "params.requests: an integer >= 1"),
        ({"warmup": 1.5}, "params.warmup: an integer >= 0"),
        ({"dtype_l1_mb": "big"}, "params.dtype_l1_mb: a size > 0"),
        ({"l3_bounds": ["x"]}, "params.l3_bounds: numbers >= 0"),
        ({"l1_mb": ["1"]}, "params.l1_mb: a non-empty list of sizes > 0"),
        ({"accuracy": "yes"}, "params.accuracy: true or false"),
        ({"backend": "/tmp/x"}, "unknown backend '/tmp/x'"),
        ({"l1_mb": [1e15]}, "l1_mb must be at most 2\\^20 MiB"),
    ],
)
def test_study_params_are_checked_before_any_point(params, message) -> None:
    from nmp.cache.study import check_params

    with pytest.raises(NmpError, match=message):
        check_params(params)
