"""The users request generator and user request files: laws, determinism, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nmp.cache.requestfile import load_request_file, save_request_file
from nmp.cache.serve import CacheConfig, run_cache
from nmp.cache.users import UserModel, user_requests
from nmp.cli import main
from nmp.errors import NmpError, TraceError
from nmp.workload import load_workload

SPEC = load_workload("dlrm-benchmark", {"num_tables": 4, "rows": 5000, "pooling": 2, "alpha": 1.05})


def test_locality_one_keeps_every_lookup_in_its_users_history():
    m = UserModel(users=300, history=3, locality=1.0)
    batch, users = user_requests(SPEC, 4000, m, seed=1)
    assert batch.batch == 4000 and users.shape == (4000,) and users.max() < 300
    for lk in batch.tables:
        owner = np.repeat(users, np.diff(lk.offsets))
        pairs = np.unique(np.stack([owner, lk.indices]), axis=1)
        per_user = np.bincount(pairs[0], minlength=300)
        assert per_user.max() <= 3  # at most `history` distinct rows per user and table


def test_locality_zero_is_the_workloads_law_and_histories_are_stable():
    fresh, _ = user_requests(SPEC, 4000, UserModel(users=300, locality=0.0), seed=1)
    lk = fresh.tables[0]
    # a Zipf(1.05) table: the hottest row takes a large share, most rows are drawn rarely
    counts = np.bincount(lk.indices, minlength=5000)
    assert counts.max() / lk.indices.size > 0.05 and np.count_nonzero(counts) > 500
    # a user's history does not depend on the stream's length or seed's other draws
    m = UserModel(users=300, history=1, locality=1.0)
    short, u1 = user_requests(SPEC, 500, m, seed=2)
    long, u2 = user_requests(SPEC, 5000, m, seed=2)
    row_of = {}
    for batch, users in ((short, u1), (long, u2)):
        lk = batch.tables[1]
        for u, off in zip(users[:300], lk.offsets[:300], strict=True):
            assert row_of.setdefault(int(u), int(lk.indices[off])) == lk.indices[off]
    again, u3 = user_requests(SPEC, 500, m, seed=2)
    assert np.array_equal(u3, u1) and np.array_equal(
        again.tables[1].indices, short.tables[1].indices
    )


def test_users_raise_the_perfect_hit_rate_not_only_the_per_key_rate():
    base = {"workload": "criteo-kaggle", "requests": 3000, "warmup": 1500, "backend": ""}
    base |= {"accuracy": False, "l1_mb": 0.5, "policy": "lru"}
    ind = run_cache(CacheConfig(**base))
    usr = run_cache(CacheConfig(**base, request_model="users", users=20_000))
    assert usr["request_model"] == "users" and "users generator" in usr["source"]
    assert ind["perfect_hit_rate"] < 0.01 < usr["perfect_hit_rate"]
    # keys of a request hit together: far above the product of the tables' hit rates
    assert usr["perfect_hit_rate"] > 2 * usr["perfect_if_independent"]
    assert ind["perfect_hit_rate"] < 2 * ind["perfect_if_independent"] + 0.002
    assert usr["avg_latency_us"] < ind["avg_latency_us"]


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("users", 0, "--users and --user-history must be >= 1"),
        ("user_locality", 1.5, r"locality must be in \[0, 1\]"),
        (
            "request_model",
            "bots",
            "request_model: unknown request model 'bots' \\(known: independent, users\\)",
        ),
    ],
)
def test_bad_model_parameters(field, value, match):
    with pytest.raises(NmpError, match=match):
        run_cache(CacheConfig(**{field: value}, accuracy=False, backend=""))


def test_request_file_round_trip(tmp_path):
    batch, users = user_requests(SPEC, 50, UserModel(users=20), seed=4)
    path = tmp_path / "req.tsv"
    save_request_file(path, batch, [f"u{u}" for u in users])
    text = path.read_text()
    assert text.startswith("# nmp requests") and text.count("\n") == 51
    got, names = load_request_file(path, SPEC)
    assert names == [f"u{u}" for u in users]
    for a, b in zip(got.tables, batch.tables, strict=True):
        assert np.array_equal(a.indices, b.indices) and np.array_equal(a.offsets, b.offsets)


@pytest.mark.parametrize("multi_hot", [False, True])
def test_leading_zeros_are_no_digits_of_a_row(tmp_path, multi_hot):
    """'0...01' (31 characters) is row 1: it was refused as out of range past 18 characters."""
    padded = "0" * 30 + "1"
    field = f"{padded},2" if multi_hot else padded
    path = _write(tmp_path, f"u1\t{field}\t2\t3\t4\n".encode())
    got, _ = load_request_file(path, SPEC)
    assert got.tables[0].indices.tolist() == ([1, 2] if multi_hot else [1])
    path = _write(tmp_path, f"u1\t{'0' * 30}5000\t2\t3\t4\n".encode())
    with pytest.raises(TraceError, match=r"bad\.tsv:1: table 0: row 0+5000 out of range"):
        load_request_file(path, SPEC)


def _write(tmp_path, body: bytes):
    path = tmp_path / "bad.tsv"
    path.write_bytes(body)
    return path


@pytest.mark.parametrize(
    "body, match",
    [
        (b"# c\nu1\t1\t2\t3\t4\nu2\t1\t2\t3\n", r"bad\.tsv:3: expected 5 tab-separated fields"),
        (b"u1\t1\tx\t3\t4\n", r"bad\.tsv:1: table 1: row 'x' is not a non-negative integer"),
        (b"u1\t1\t-2\t3\t4\n", r"bad\.tsv:1: table 1: row '-2' is not"),
        (b"u1\t1\t2\t3\t5000\n", r"bad\.tsv:1: table 3: row 5000 out of range"),
        # past 4,300 digits int() raised ValueError: an internal error
        (b"u1\t1\t2\t3\t" + b"9" * 5000 + b"\n", r"bad\.tsv:1: table 3: row 9+\.\.\.\(5,000"),
        (b"\n\nu1\t1\t2\t\xff\t4\n", r"bad\.tsv:3: not UTF-8 text"),
        (b"\tu1\t1\t2\t3\n", r"bad\.tsv:1: empty user field"),
        (b"# only a comment\n", r"bad\.tsv: no request in the file"),
    ],
)
def test_bad_request_files_name_the_line(tmp_path, body, match):
    with pytest.raises(TraceError, match=match):
        load_request_file(_write(tmp_path, body), SPEC)


def test_request_file_multi_hot_and_empty_fields(tmp_path):
    path = _write(tmp_path, b"a\t1,2,3\t\t7\t4999\nb\t0\t1\t2\t3\r\n")
    batch, users = load_request_file(path, SPEC)
    assert users == ["a", "b"]
    assert batch.tables[0].indices.tolist() == [1, 2, 3, 0]
    assert np.diff(batch.tables[1].offsets).tolist() == [0, 1]


def test_cli_saves_then_serves_a_request_file(tmp_path, capsys):
    path = tmp_path / "req.tsv"
    args = ["cache", "--policy", "lru", "--requests", "400", "--warmup", "200", "--backend", ""]
    args += ["--no-accuracy", "--json"]
    assert main([*args, "--request-model", "users", "--save-requests", str(path)]) == 0
    gen = json.loads(capsys.readouterr().out)
    assert main([*args, "--request-file", str(path)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["source"].startswith(f"request file {path}")
    for key in ("hit_rate", "perfect_hit_rate", "avg_latency_us"):
        assert got[key] == pytest.approx(gen[key])
    path.write_text("u1\t1\n")
    assert main([*args, "--request-file", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"nmp: error: {path}:1: expected 27") and err.count("\n") == 1


def test_study_sweeps_the_users_generator(tmp_path):
    from nmp.cache.study import run_study

    params = {
        "policies": ["lru"],
        "l1_mb": [0.05],
        "l2_dtypes": ["int8"],
        "dtype_l1_mb": 0.05,
        "requests": 400,
        "warmup": 200,
        "accuracy": False,
        "backend": "",
        "request_models": ["independent", "users"],
        "users": [1000, 100],
        "user_localities": [0.8, 0.5],
    }
    rows = run_study(params, out_dir=tmp_path)
    keyed = {(r["request_model"], r["users"], r["user_locality"]) for r in rows}
    assert keyed == {
        ("independent", None, None),
        ("users", 1000, 0.8),
        ("users", 1000, 0.5),
        ("users", 100, 0.8),
        ("users", 100, 0.5),
    }
    assert "Request models ['independent', 'users']" in (tmp_path / "report.md").read_text()
    with pytest.raises(NmpError, match="params.request_models: unknown request model 'bots'"):
        run_study({"request_models": ["bots"]}, out_dir=tmp_path)
    with pytest.raises(NmpError, match="params.user_localities"):
        run_study({"user_localities": [2]}, out_dir=tmp_path)
