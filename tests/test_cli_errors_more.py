"""More bad input through the command line (issue 42's hidden-probe kinds, on the commands the
main table covers least: ``evaluate`` run folders and clusters, ``cache`` request files,
trace replays, ``rtl export``): exit status 1, one line ``nmp: error: ...`` naming the
file/line/flag, no traceback, and nothing the command was pointed at replaced. Two instances
of each kind; every case runs through ``nmp.cli.main`` in this process and refuses before any
work (well under a second each)."""

from __future__ import annotations

import gzip
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from bad_inputs import assert_one_line_error, main_in_process

SMALL_SWEEP = 'name = "small"\nworkloads = ["recross-eval"]\narchs = ["host-cpu", "recross"]\n'
RANDOM_SWEEP = SMALL_SWEEP + 'sampling = "random"\nsamples = 2\n'
AXES = "[axes]\nworkload.batch = [1, 2, 4]\n"
GOOD_REQUEST = "u1\t" + "\t".join(["1"] * 26) + "\n"  # criteo-kaggle: 26 tables


MULTIHOT = ["cache", "--requests", "1", "--warmup", "1", "--no-accuracy", "--request-file"]


def _request(path: Path, bad_line: str) -> None:
    path.write_text(GOOD_REQUEST + bad_line)


def _gzip_cut(text: bytes) -> bytes:
    data = gzip.compress(text)
    return data[: len(data) // 2]


def _index_npz(path: Path, *, lookups: int) -> None:
    """An index file of criteo-kaggle's 26 tables, two bags each: ``lookups`` lookups in table
    0's bags (0: every bag empty), one in each bag of the others."""
    import numpy as np

    arrays = {}
    for t in range(26):
        n = lookups if t == 0 else (2 if lookups else 0)
        arrays[f"indices_{t}"] = np.zeros(n, np.int64)
        arrays[f"offsets_{t}"] = np.array([0, n // 2, n], np.int64)
    np.savez_compressed(path, **arrays)


def _index_npz_twice(path: Path, extra: str) -> None:
    """An index file of criteo-kaggle's 26 tables with ``extra`` beside them: another name of
    table 0's indices (``indices_00``), or ``indices_3`` a second time in the archive."""
    import io
    import warnings
    import zipfile

    import numpy as np

    _index_npz(path, lookups=2)
    with zipfile.ZipFile(path, "a") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (zipfile warns of the duplicate name: the case)
        data = io.BytesIO()
        np.lib.format.write_array(data, np.ones(4, np.int64))
        archive.writestr(f"{extra}.npy", data.getvalue())


def _tsv_with(column: int, value: str) -> Callable[[Path], None]:
    """A maker of a Criteo TSV of three lines, ``value`` in ``column`` (1-based) of the third."""

    def make(path: Path) -> None:
        fields = ["1", *(str(i) for i in range(13)), *(["a1"] * 26)]
        bad = list(fields)
        bad[column - 1] = value
        path.write_text(("\t".join(fields) + "\n") * 2 + "\t".join(bad) + "\n")

    return make


def _link_to(target: str) -> Callable[[Path], None]:
    """A maker of a link to ``target`` in the test's folder (tmp), wherever the link is."""

    def make(path: Path) -> None:
        tmp = path.parent if path.parent.name != "reports" else path.parent.parent
        os.symlink(tmp / target, path)

    return make


# {tmp}/<name> in a case's argv: the file is made by its maker before the run
MAKERS: dict[str, Callable[[Path], object]] = {
    "victim.txt": lambda p: p.write_text("keep\n"),
    "link": _link_to("victim.txt"),
    "reports/link": _link_to("victim.txt"),
    "reports/dangling": _link_to("nowhere"),
    "reports/afile": lambda p: p.write_text("keep\n"),
    "small.toml": lambda p: p.write_text(SMALL_SWEEP),
    "seed-negative.toml": lambda p: p.write_text(RANDOM_SWEEP + "seed = -1\n" + AXES),
    "seed-huge.toml": lambda p: p.write_text(RANDOM_SWEEP + f"lookup_seed = {2**64}\n" + AXES),
    "req-nul-row.txt": lambda p: _request(p, "u2\t" + "\t".join(["1\x00"] * 26) + "\n"),
    "req-nul-user.txt": lambda p: _request(p, "u\x002\t" + "\t".join(["1"] * 26) + "\n"),
    "req-neg.txt": lambda p: _request(p, "u2\t" + "\t".join(["-1"] * 26) + "\n"),
    "req-huge.txt": lambda p: _request(p, "u2\t" + "\t".join(["9" * 30] * 26) + "\n"),
    # multi-hot: 400,000 rows in one request's first field (800 kB of text)
    "req-multihot.txt": lambda p: _request(
        p, "u2\t" + ",".join(["0"] * 400_000) + "\t0" * 25 + "\n"
    ),
    "req-multihot-2.txt": lambda p: _request(
        p, "u2\t0\t" + ",".join(["1"] * 300_000) + "\t0" * 24 + "\n"
    ),
    "ds3-decreasing.trace": lambda p: p.write_text("0x0 READ 10\n0x40 READ 20\n0x80 READ 5\n"),
    "ds3-negative.trace": lambda p: p.write_text("0x0 READ 10\n0x40 READ -5\n"),
    "truncated.trace.gz": lambda p: p.write_bytes(_gzip_cut(b"LD 0x0\nST 0x40\n" * 5000)),
    "beyond.trace": lambda p: p.write_text("LD 0x0\nST 0x7fffffff00000000\n"),
    "ds3-beyond.trace": lambda p: p.write_text("0x0 READ 1\n0xfffffffffff00000 WRITE 9\n"),
    "garbage.trace.gz": lambda p: p.write_bytes(b"\x1f\x8b" + b"garbage" * 10),
    "ok.trace": lambda p: p.write_text("LD 0x0\nST 0x40\n"),
    # a copy of a registered standard, in a folder of the test's (as /tmp/x, any user's)
    "std/evil": lambda p: p.with_suffix(".toml").write_text(
        (Path(__file__).resolve().parents[1] / "models/memory/standards/ddr4.toml").read_text()
    ),
    "empty-bags.npz": lambda p: _index_npz(p, lookups=0),
    "many-lookups.npz": lambda p: _index_npz(p, lookups=4_000_000),
    "req-empty.txt": lambda p: p.write_text(("u1" + "\t" * 26 + "\n") * 3),
    "indices-00.npz": lambda p: _index_npz_twice(p, "indices_00"),
    "indices-3-twice.npz": lambda p: _index_npz_twice(p, "indices_3"),
    "indices-arabic-0.npz": lambda p: _index_npz_twice(p, "indices_\u0660"),
    "dense-lsep.tsv": _tsv_with(2, "1\u2028"),
    "dense-underscore.tsv": _tsv_with(9, "1_000"),
    "label-arabic-one.tsv": _tsv_with(1, "\u0661"),
    "wl-missing.toml": lambda p: p.write_text(
        SMALL_SWEEP.replace('"recross-eval"', '"../../../nowhere/evil"')
    ),
    "arch-missing.toml": lambda p: p.write_text(
        SMALL_SWEEP.replace('"host-cpu"', '"../../../nowhere/evil"')
    ),
}
SWEEP = ["evaluate", "{tmp}/small.toml", "--out", "{tmp}/reports", "--jobs", "1"]

# (case id, argv with {tmp} placeholders, text the one-line message must contain)
CASES = [
    # a --run name that is no run folder: "" ran auto-named; a link to a file said "File exists"
    # naming the link's target
    ("evaluate-run-empty", [*SWEEP, "--run", ""], "argument --run: is empty"),
    ("evaluate-run-dot", [*SWEEP, "--run", "."], "--run '.'"),
    ("evaluate-run-link-to-file", [*SWEEP, "--run", "link"], "--run 'link'"),
    ("evaluate-run-dangling-link", [*SWEEP, "--run", "dangling"], "--run 'dangling'"),
    ("evaluate-run-is-a-file", [*SWEEP, "--run", "afile"], "--run 'afile'"),
    # a request file is read whole: its size passes the memory guard before it is read
    (
        "cache-request-file-over-limit",
        ["cache", "--request-file", "{tmp}/req-neg.txt", "--max-memory", "1K"],
        "--request-file",
    ),
    (
        "cache-request-file-over-env-limit",
        ["cache", "--request-file", "{tmp}/req-huge.txt", "--max-memory", "2K"],
        "req-huge.txt: key '--request-file'",
    ),
    # a multi-hot request file has more lookups than the workload's: its run is guarded by them
    (
        "cache-request-file-multihot-over-limit",
        [*MULTIHOT, "{tmp}/req-multihot.txt", "--max-memory", "450M"],
        "key '--request-file': this run needs",
    ),
    (
        "cache-request-file-multihot-2-over-limit",
        [*MULTIHOT, "{tmp}/req-multihot-2.txt", "--max-memory", "440M"],
        "key '--request-file': this run needs",
    ),
    # a sweep's seeds: numpy's ValueError was an internal error
    ("evaluate-seed-negative", ["evaluate", "{tmp}/seed-negative.toml", "--check"], "'seed'"),
    ("evaluate-lookup-seed-huge", ["evaluate", "{tmp}/seed-huge.toml", "--check"], "lookup_seed"),
    # request files: a NUL byte was dropped by numpy ('1\x00' read as row 1)
    ("cache-request-nul-row", ["cache", "--request-file", "{tmp}/req-nul-row.txt"], ":2"),
    ("cache-request-nul-user", ["cache", "--request-file", "{tmp}/req-nul-user.txt"], ":2"),
    ("cache-request-negative", ["cache", "--request-file", "{tmp}/req-neg.txt"], ":2"),
    ("cache-request-huge-row", ["cache", "--request-file", "{tmp}/req-huge.txt"], ":2"),
    # traces: arrival cycles that decrease or are not cycles, gzip cut or not gzip
    ("replay-ds3-decreasing", ["replay", "{tmp}/ds3-decreasing.trace"], "ds3-decreasing.trace:3"),
    ("replay-ds3-negative", ["replay", "{tmp}/ds3-negative.trace"], "ds3-negative.trace:2"),
    ("replay-gzip-truncated", ["replay", "{tmp}/truncated.trace.gz"], "truncated.trace.gz"),
    ("replay-gzip-garbage", ["replay", "{tmp}/garbage.trace.gz"], "garbage.trace.gz"),
    # an address beyond the memory named the memory but not the trace
    ("replay-beyond-capacity", ["replay", "{tmp}/beyond.trace"], "beyond.trace: address"),
    ("replay-ds3-beyond-capacity", ["replay", "{tmp}/ds3-beyond.trace"], "ds3-beyond.trace: a"),
    # a relation of two keys names both (--parities alone blamed train.nodes)
    (
        "train-parities-over-nodes",
        ["train", "--code", "rs", "--parities", "1000"],
        "train.parities (1000)",
    ),
    (
        "train-nodes-under-parities",
        ["train", "--code", "rs", "--parities", "3", "--nodes", "2"],
        "2 nodes must exceed train.parities (3)",
    ),
    # no lookups at all: "internal error: ValueError: cannot convert float NaN to integer"
    (
        "cache-index-file-empty-bags",
        ["cache", "--no-accuracy", "--index-file", "{tmp}/empty-bags.npz"],
        "empty-bags.npz: no lookups in any request",
    ),
    (
        "cache-request-file-empty-requests",
        [*MULTIHOT, "{tmp}/req-empty.txt"],
        "req-empty.txt: no lookups in any request",
    ),
    # an index file's lookups are guarded like a request file's (a 583 KB npz of 75 M lookups
    # peaked at 4-6 GB): from the sizes its headers declare, before it is read
    (
        "cache-index-file-lookups-over-limit",
        [
            "cache",
            "--no-accuracy",
            "--index-file",
            "{tmp}/many-lookups.npz",
            "--max-memory",
            "700M",
        ],
        "key '--index-file': this run needs",
    ),
    # a standard is a registered name: a path loaded that file (from a folder any user may
    # write into) and listed that folder's files as the known standards
    (
        "replay-standard-absolute-path",
        ["replay", "{tmp}/ok.trace", "--set", "standard={tmp}/std/evil"],
        "(known: DDR4, DDR5, HBM2, HBM3)",
    ),
    (
        "replay-standard-relative-path",
        ["replay", "{tmp}/ok.trace", "--set", "standard=../standards/ddr4"],
        "unknown DRAM standard '../standards/ddr4'",
    ),
    # a sweep's preset given as a path that does not exist: "../nowhere/evil: No such file or
    # directory", and an unknown architecture, named neither the sweep file nor the key
    (
        "evaluate-workload-path-missing",
        ["evaluate", "{tmp}/wl-missing.toml", "--check"],
        "wl-missing.toml: key 'workloads[0]': ../../../nowhere/evil: no such file",
    ),
    (
        "evaluate-arch-path-missing",
        ["evaluate", "{tmp}/arch-missing.toml", "--check"],
        "arch-missing.toml: key 'archs[0]': unknown architecture '../../../nowhere/evil'",
    ),
    # a server MTBF of 1e-300 h: refused by the memory guard with a 300-digit failure count;
    # now it has a floor, and a count too large to read is written in three figures
    (
        "train-extrapolate-mtbf-1e-300",
        ["train", "--extrapolate", "--setup", "ecrec", "--server-mtbf-hours", "1e-300"],
        "key '--server-mtbf-hours': must be >= 0.01667 h (one minute), got 1e-300",
    ),
    (
        "train-extrapolate-servers-1e14",
        ["train", "--extrapolate", "--setup", "ecrec", "--servers", "100000000000000"],
        "key '--servers': must be <= 1,048,576",
    ),
    (
        "train-extrapolate-failures-many",
        [
            *["train", "--extrapolate", "--setup", "ecrec", "--servers", "1000000"],
            *["--server-mtbf-hours", "0.02"],
        ],
        "2,000 draws of 2.4e+12 failures in all",
    ),
    # a key given twice was read as the last one (node=2 failed) or one of two members (the
    # archive's indices_0 or indices_00, whichever came last)
    (
        "train-fail-node-twice",
        ["train", "--fail", "step=1,node=1,node=2"],
        "--fail: key 'node' given twice in 'step=1,node=1,node=2'",
    ),
    (
        "train-fail-step-twice",
        ["train", "--fail", "step=1,node=0,step=5"],
        "--fail: key 'step' given twice",
    ),
    (
        "cache-index-file-indices-00",
        ["cache", "--no-accuracy", "--index-file", "{tmp}/indices-00.npz"],
        "indices-00.npz: key 'indices_00': ambiguous table numbering: indices_0 and indices_00",
    ),
    (
        "shard-index-file-member-twice",
        ["shard", "--workload", "criteo-kaggle", "--index-file", "{tmp}/indices-3-twice.npz"],
        "indices-3-twice.npz: key 'indices_3': ambiguous: in the archive twice",
    ),
    (  # (a digit other than 0-9 read as one: indices_\u0660 was table 0's)
        "cache-index-file-indices-arabic-zero",
        ["cache", "--no-accuracy", "--index-file", "{tmp}/indices-arabic-0.npz"],
        "indices-arabic-0.npz: key 'indices_\u0660': unknown key",
    ),
    # a label or dense value that Python's float() reads and no number is written as: a
    # U+2028 stripped ("1\u2028" read as 1), an underscore ("1_000"), another script's digit
    (
        "train-tsv-dense-line-separator",
        ["train", "--strategy", "none", "--data", "{tmp}/dense-lsep.tsv"],
        "dense-lsep.tsv:3: malformed value in column 2: '1\\u2028' is not a number",
    ),
    (
        "train-tsv-dense-underscore",
        ["train", "--strategy", "none", "--data", "{tmp}/dense-underscore.tsv"],
        "dense-underscore.tsv:3: malformed value in column 9: '1_000' is not a number",
    ),
    (
        "train-tsv-label-arabic-one",
        ["train", "--strategy", "none", "--data", "{tmp}/label-arabic-one.tsv"],
        "label-arabic-one.tsv:3: malformed value in column 1",
    ),
    # outputs that are not folders
    ("rtl-out-link", ["rtl", "export", "--out", "{tmp}/link"], "--out"),
    ("rtl-out-device", ["rtl", "export", "--out", "/dev/null"], "--out"),
]


def _make(tmp: Path, argv: list[str]) -> list[str]:
    text = " ".join(argv)
    for name, make in MAKERS.items():
        folder, _, base = name.rpartition("/")
        named = "{tmp}/" + name in text or (folder and "{tmp}/" + folder in text and base in argv)
        if named or name == "victim.txt":
            path = tmp / name
            if not path.exists() and not path.is_symlink():
                path.parent.mkdir(parents=True, exist_ok=True)
                make(path)
    return [a.format(tmp=tmp) for a in argv]


@pytest.mark.parametrize(("argv", "expect"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gives_one_line_error(
    argv: list[str], expect: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    proc = main_in_process(_make(tmp_path, argv), tmp_path, capsys, monkeypatch)
    assert_one_line_error(proc, expect)
    # nothing the command was pointed at was replaced or written through
    assert (tmp_path / "victim.txt").read_text() == "keep\n"
    for link in ("link", "reports/link", "reports/dangling"):
        assert not (tmp_path / link).exists() or (tmp_path / link).is_symlink()
    assert not (tmp_path / "nowhere").exists()


def test_a_local_dask_cluster_starts_no_more_workers_than_points(monkeypatch) -> None:
    """``--dask-workers 100000`` on a two-point sweep started 100000 processes (past 60 s):
    the local cluster gets one worker per point at most."""
    pytest.importorskip("distributed")
    import distributed

    from nmp.evaluate.executor import DaskExecutor

    started: list[int] = []

    class Refused(Exception):
        pass

    def fake_cluster(*, n_workers: int, **_: object) -> None:
        started.append(n_workers)
        raise Refused

    monkeypatch.setattr(distributed, "LocalCluster", fake_cluster)
    for workers, points in ((100_000, 2), (3, 50)):
        with pytest.raises(Exception):  # noqa: B017,PT011 (the fake refuses; counted above)
            list(DaskExecutor(None, workers).run(lambda p: p, list(range(points))))
    assert started == [2, 3]


def test_a_local_dask_clusters_workers_pass_the_memory_guard() -> None:
    """The memory guard counted a local Dask cluster as remote (no check): its workers are
    this machine's, and the refusal names --dask-workers."""
    from nmp.errors import NmpError
    from nmp.evaluate.budget import check_sweep
    from nmp.evaluate.sweep import expand, parse_sweep

    sweep = parse_sweep(
        {"name": "s", "workloads": ["recross-eval"], "archs": ["host-cpu", "recross"]}, file="s"
    )
    points = expand(sweep)
    check_sweep(points, 1, "64G", flag="--dask-workers")
    with pytest.raises(NmpError, match="--dask-workers"):
        check_sweep(points, 2, "1M", flag="--dask-workers")


@pytest.mark.parametrize(
    "failure",
    [OSError("Timed out trying to connect"), TimeoutError("no answer")],
    ids=["refused", "timed-out"],
)
def test_an_unreachable_scheduler_is_one_line_before_any_progress(
    failure: Exception, tmp_path: Path, capsys, monkeypatch
) -> None:
    """An address where nothing answers printed progress lines and "done (0 of 2 points)"
    before its error, and made a run folder: now the scheduler is reached first."""
    pytest.importorskip("distributed")
    import nmp.evaluate.executor as executor
    from nmp.cli import main

    def unreachable(client_cls: object, address: str) -> None:
        raise failure

    monkeypatch.setattr(executor, "_connect", unreachable)
    (tmp_path / "small.toml").write_text(SMALL_SWEEP)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["evaluate", "small.toml", "--out", "reports", "--scheduler", "tcp://127.0.0.1:1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert "cannot reach the Dask scheduler tcp://127.0.0.1:1" in err[0], err
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())


@pytest.mark.parametrize("sizes", [[0, 0, 0], [0]], ids=["empty-requests", "one-empty"])
def test_a_backend_no_lookup_reached_measures_nothing(sizes: list[int], tmp_path: Path) -> None:
    """Every request served by the cache: the backend read nothing, and its rate was printed
    as "inf lookups/s, 0.00 us per lookup" (and written to --json as Infinity)."""
    import numpy as np

    from nmp.cache.kvstore import BACKENDS, measure_reads, open_store

    store = open_store(sorted(BACKENDS)[0], tmp_path / "store", 4)
    try:
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        m = measure_reads(store, np.zeros(0, np.int64), offsets)
    finally:
        store.close()
    assert m["lookups_per_s"] is None and m["lookup_us"] is None


def test_a_closed_scheduler_port_is_named_within_seconds(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """A --scheduler port where nothing listens took 21.6 s to be named (Dask's 20 s connect
    timeout, retried against the refusals): the connection now has a few seconds."""
    pytest.importorskip("distributed")
    import socket

    from nmp.cli import main

    with socket.socket() as probe:  # a port nothing listens on (bound, then let go)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    (tmp_path / "small.toml").write_text(SMALL_SWEEP)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    t0 = time.monotonic()
    code = main(["evaluate", "small.toml", "--out", "reports", "--scheduler", address])
    took = time.monotonic() - t0
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert f"cannot reach the Dask scheduler {address}" in err[0], err
    assert took < 15, f"{took:.1f} s"
