"""Bad input files for the table of bad inputs (tests/test_cli_errors*.py): each made only where a
case names it (``{tmp}/<name>``), in a few milliseconds; and the in-process run and the one-line
error check that the tables of bad input (``tests/test_cli_errors*.py``) share."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np


def nmp_error_in_child(
    module: str, call: str, path: str | os.PathLike, timeout_s: float
) -> subprocess.CompletedProcess:
    """``from module import ...; call`` in a fresh interpreter, ``Path(sys.argv[1])`` standing
    for ``path``, printing the NmpError it raises on stdout. A child, so that a read that would
    block on a pipe or never end on /dev/zero fails the test at the timeout, not the suite."""
    code = (
        "import sys\nfrom pathlib import Path\nfrom nmp.errors import NmpError\n"
        f"from {module}\n"
        f"try:\n    {call}\n"
        "except NmpError as exc:\n    print(exc)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=timeout_s
    )


ROOT = Path(__file__).resolve().parents[1]
# what the tables of bad input run: a reference trace and a design point
TRACE = str(ROOT / "traces" / "stream_64k.trace.gz")
RUN = ["run", "--arch", "recross", "--workload", "recross-eval"]

# A bad input fails within seconds: this bound (generous, for a loaded 2-core CI runner) tells a
# hang from a slow start (imports, presets)
SECONDS = 60


def main_in_process(
    args: list[str], tmp: Path, capsys, monkeypatch, seconds: float = SECONDS
) -> subprocess.CompletedProcess:
    """``nmp ARGS`` through the CLI's entry point in this process, run in ``tmp`` with the
    default memory limit (not the caller's ``$NMP_MAX_MEMORY``): its exit status (a usage
    error's too) and what it printed. Fails past ``seconds``."""
    from nmp.cli import main

    monkeypatch.chdir(tmp)
    monkeypatch.setenv("COLUMNS", "200")  # what main() sets for piped output, kept local
    monkeypatch.delenv("NMP_MAX_MEMORY", raising=False)
    capsys.readouterr()
    t0 = time.monotonic()
    code: object
    try:
        code = main(args)
    except SystemExit as exc:  # a usage error, raised by argparse
        code = exc.code
    assert time.monotonic() - t0 < seconds, f"{args} took {time.monotonic() - t0:.0f} s"
    out = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out.out, out.err)


def case_in_process(argv: list[str], tmp: Path, capsys, monkeypatch) -> subprocess.CompletedProcess:
    """A table's case, ``nmp ARGV`` with its ``{tmp}/<name>`` files made first
    (:func:`make_files`), through :func:`main_in_process`."""
    subs = make_files(tmp, argv)
    return main_in_process([a.format(**subs) for a in argv], tmp, capsys, monkeypatch)


def assert_one_line_error(proc: subprocess.CompletedProcess, expect: str) -> None:
    """Exit status 1, no traceback, one line ``nmp: error: ...`` on stderr holding ``expect``
    (a usage line or a warning beside it is a second line)."""
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(err) == 1 and err[0].startswith("nmp: error: "), proc.stderr[-2000:]
    assert expect in err[0], err[0]


SMALL_SWEEP = (
    'name = "small"\nworkloads = ["recross-eval"]\narchs = ["host-cpu", "recross"]\n'
    'baseline = "host-cpu"\n'
)
TSV_FIELDS = ["1", *(str(i) for i in range(13)), *(["a1"] * 26)]


def _tsv(bad_field: int, value: str) -> str:
    good = "\t".join(TSV_FIELDS) + "\n"
    bad = list(TSV_FIELDS)
    bad[bad_field] = value
    return good * 2 + "\t".join(bad) + "\n"


def _index_arrays() -> dict[str, np.ndarray]:
    """A valid index file of recross-eval's shape is not needed: criteo-kaggle's 26 tables,
    two bags each, is what the cases' workloads read."""
    from nmp.workload import load_workload

    spec = load_workload("criteo-kaggle")
    arrays: dict[str, np.ndarray] = {"dims": np.array([t.dim for t in spec.tables])}
    for t in range(len(spec.tables)):
        arrays[f"indices_{t}"] = np.array([0, 1], dtype=np.int64)
        arrays[f"offsets_{t}"] = np.array([0, 1, 2], dtype=np.int64)
    return arrays


def _npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    np.savez(path, **arrays)


def _truncated_npz(path: Path) -> None:
    _npz(path, _index_arrays())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _batch0_npz(path: Path) -> None:
    arrays = _index_arrays()
    for key in list(arrays):
        if key.startswith("indices_"):
            arrays[key] = np.zeros(0, np.int64)
        elif key.startswith("offsets_"):
            arrays[key] = np.zeros(1, np.int64)
    _npz(path, arrays)


def _nan_weights_npz(path: Path) -> None:
    arrays = _index_arrays()
    arrays["weights_3"] = np.array([1.0, np.nan], dtype=np.float32)
    _npz(path, arrays)


def _zip_bomb_npz(path: Path) -> None:
    """indices_5 declares 30 Mi int64 (240 MiB) of zeros, deflated to about 240 KiB."""
    arrays = _index_arrays()
    n = 30 * 2**20
    del arrays["indices_5"]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key, value in arrays.items():
            with zf.open(f"{key}.npy", "w") as fh:
                np.lib.format.write_array(fh, value)
        with zf.open("indices_5.npy", "w", force_zip64=True) as fh:
            header = {"descr": "<i8", "fortran_order": False, "shape": (n,)}
            np.lib.format.write_array_header_1_0(fh, header)
            zeros = bytes(1 << 22)
            for _ in range(n * 8 // len(zeros)):
                fh.write(zeros)


def _lying_header_npz(path: Path) -> None:
    """indices_0's header declares 10^12 entries; the member holds 64 bytes."""
    arrays = _index_arrays()
    del arrays["indices_0"]
    with zipfile.ZipFile(path, "w") as zf:
        for key, value in arrays.items():
            with zf.open(f"{key}.npy", "w") as fh:
                np.lib.format.write_array(fh, value)
        with zf.open("indices_0.npy", "w") as fh:
            header = {"descr": "<i8", "fortran_order": False, "shape": (10**12,)}
            np.lib.format.write_array_header_1_0(fh, header)
            fh.write(bytes(64))


def _gzip_bomb(path: Path) -> None:
    """40 MB of trace text gzipped to about 40 KB."""
    with gzip.open(path, "wb") as fh:
        line = b"LD 0x40\n" * 100_000
        for _ in range(50):
            fh.write(line)


def _custom_study_run(path: Path) -> None:
    """A run folder of a custom study (its sweep.toml names a runner), as `nmp evaluate` of
    papers/recshard-capacity leaves it."""
    path.mkdir(parents=True)
    (path / "sweep.toml").write_text(
        'name = "caps"\nrunner = "nmp.shard.study:run_study"\n[params]\nhbm_gib = [4]\n'
    )
    (path / "plan.json").write_text("{}\n")


def _non_utf8_run(path: Path) -> None:
    path.mkdir(parents=True)
    (path / "sweep.toml").write_bytes(SMALL_SWEEP.encode() + b'description = "caf\xe9"\n')
    (path / "plan.json").write_text("{}\n")


def _memory_preset(old: str, new: str) -> Callable[[Path], None]:
    """DDR4-3200AA's preset with ``old`` replaced by ``new``."""
    source = ROOT / "models" / "memory" / "ddr4-3200aa.toml"
    return lambda p: p.write_text(source.read_text().replace(old, new, 1))


def _setup_with(old: str, new: str) -> Callable[[Path], None]:
    """ECRec's training setup with ``old`` replaced by ``new``."""
    source = ROOT / "workloads" / "train" / "ecrec.toml"
    return lambda p: p.write_text(source.read_text().replace(old, new, 1))


def _symlink_to_victim(path: Path) -> None:
    """A link to ``victim.txt`` beside it: an output given the link must leave both alone."""
    (path.parent / "victim.txt").write_text("keep\n")
    path.symlink_to(path.parent / "victim.txt")


def _text(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(text)


def _preset_with(replace: tuple[str, str]) -> str:
    path = ROOT / "models" / "arch" / "trim-b.toml"
    return path.read_text().replace(*replace)


def _sweep_of_bad_key_assumption(path: Path) -> None:
    """A sweep (explain = "all") of a preset whose key assumption sets a field it lacks."""
    arch = path.parent / "bad-key-arch.toml"
    arch.write_text(_preset_with(('"arch.replicate_hot_rows"', '"arch.no_such_field"')))
    path.write_text(
        f'name = "s"\nworkloads = ["recross-eval"]\narchs = ["{arch}"]\nexplain = "all"\n'
    )


MAKERS: dict[str, Callable[[Path], None]] = {
    "bad-explain.toml": _text(SMALL_SWEEP + 'explain = "some"\n'),
    "bad-key-sweep.toml": _sweep_of_bad_key_assumption,
    "tables-axis.toml": _text(SMALL_SWEEP + '[axes]\n"workload.tables" = [[]]\n'),
    "name-300.toml": _text(SMALL_SWEEP.replace('name = "small"', 'name = "' + "n" * 300 + '"')),
    "bad-key-root.toml": _text(_preset_with(('"arch.replicate_hot_rows"', '"wrong.root"'))),
    "arch-memory-nosuch.toml": _text(_preset_with(('preset = "ddr5-4800an"', 'preset = "nosuch"'))),
    "arch-channels-3.toml": _text(_preset_with(("\nchannels = 1 ", "\nchannels = 3 "))),
    "a_file": _text("x\n"),
    "ooo.trace": _text("0x40 READ 10\n0x80 READ 20\n0xc0 WRITE 15\n"),
    "binary.bin": lambda p: p.write_bytes(bytes(range(256)) * 8),
    "big.toml": _text(
        'name = "big"\nworkloads = ["recross-eval"]\narchs = ["host-cpu", "recross"]\n'
        'baseline = "host-cpu"\n[axes]\n"workload.batch" = [32, 100000000]\n'
    ),
    # a small sweep of two NMP presets: the evaluate cases fail before any point runs
    "small.toml": _text(SMALL_SWEEP),
    "nan-axis.toml": _text(SMALL_SWEEP + '[axes]\n"workload.alpha" = [1.0, nan]\n'),
    "inf-set.toml": _text(
        'name = "s"\nworkloads = ["recross-eval"]\nbaseline = "host-cpu"\narchs = ["host-cpu"]\n'
        '[[designs]]\nname = "r"\narch = "recross"\nset = { "memory.timing.nCL" = inf }\n'
    ),
    "huge-grid.toml": _text(
        SMALL_SWEEP
        + "[axes]\n"
        + "".join(
            f'"workload.{k}" = [{", ".join(str(v) for v in range(1, 101))}]\n'
            for k in ("batch", "pooling", "dim", "seed", "alpha")
        )
    ),
    "non-utf8.toml": lambda p: p.write_bytes(SMALL_SWEEP.encode() + b'description = "\xff"\n'),
    "nan-memory.toml": lambda p: p.write_text(
        (ROOT / "models" / "memory" / "ddr4-3200aa.toml")
        .read_text()
        .replace("nCL = 22 ", "nCL = nan ")
    ),
    "bad-runner.toml": _text(
        'name = "bad-runner"\nrunner = "nmp.evaluate.study:is_custom"\n[params]\nx = 1\n'
    ),
    "bad-scan.toml": _text(
        SMALL_SWEEP + '[locality_scan]\nworkload = "recross-eval"\nalphas = [0.0, 1.0]\n'
        'designs = ["trim-g"]\n'
    ),
    "bad-label.tsv": _text(_tsv(0, "x")),
    "nan-dense.tsv": _text(_tsv(5, "nan")),
    "neg-hex.tsv": _text(_tsv(14, "-1")),
    "hex-2^64.tsv": _text(_tsv(20, "1" + "0" * 16)),
    "truncated.npz": _truncated_npz,
    "batch0.npz": _batch0_npz,
    "nan-weights.npz": _nan_weights_npz,
    "zip-bomb.npz": _zip_bomb_npz,
    "lying-header.npz": _lying_header_npz,
    "gzip-bomb.trace.gz": _gzip_bomb,
    "reports/study-run": _custom_study_run,
    # issue 42
    "no-rows.toml": _text('name = "no-rows"\nrows = []\ndim = 16\nbatch = 4\n'),
    "fifo": os.mkfifo,
    "fifo.toml": os.mkfifo,
    "a_folder.toml": lambda p: p.mkdir(),
    "link": _symlink_to_victim,
    "deep-arrays.toml": _text("a = " + "[" * 5000 + "]" * 5000 + "\n"),
    "deep-dotted.toml": _text(".".join(["a"] * 3000) + " = 1\n"),
    "deep-inline.toml": _text("a = " + "{b = " * 600 + "1" + "}" * 600 + "\n"),
    "refresh-forever.toml": _memory_preset("nREFI = 12480", "nREFI = 600"),
    "nrfc-overflow.toml": _memory_preset("nRFC = 576", "nRFC = 99999999999999999"),
    "ddr9.toml": _memory_preset('standard = "DDR4"', 'standard = "DDR9"'),
    "watermark.toml": _memory_preset("wr_high_watermark = 0.8", "wr_high_watermark = 5"),
    "reports/non-utf8-run": _non_utf8_run,
    # issue 42, round 3
    "fifo.trace": os.mkfifo,
    "link.toml": _symlink_to_victim,
    "fifo.npz": os.mkfifo,
    "rate-mismatch.toml": _memory_preset("rate_mtps = 3200", "rate_mtps = 1600"),
    "setup-tiny-mtbf.toml": _setup_with("server_mtbf_hours = 720.0", "server_mtbf_hours = 1e-7"),
    "setup-k-0.toml": _setup_with("k = 4\n", "k = 0\n"),
    "channels-2^20.toml": _memory_preset("\nchannels = 1\n", "\nchannels = 1048576\n"),
    "pooling-1e9.toml": _text(
        'name = "w"\nrows = [1000]\ndim = 16\nbatch = 4\npooling = 1000000000\n'
    ),
    "batch-1e9.toml": _text(
        'name = "w"\nrows = [1000]\ndim = 16\nbatch = 1000000000\npooling = 8\n'
    ),
    # round 4
    "huge-rows.toml": _text(
        'name = "w"\nrows = [100000000000, 100000000000]\ndim = 128\nbatch = 4\npooling = 8\n'
    ),
    "seed-neg-sweep.toml": _text(SMALL_SWEEP + "seed = -5\n"),
    "lookup-seed-2^64-sweep.toml": _text(SMALL_SWEEP + "lookup_seed = 18446744073709551616\n"),
    "setup-rows-2^64.toml": _setup_with(
        "table_rows = 197767405", "table_rows = 18446744073709551616"
    ),
    "setup-storage-1e300.toml": _setup_with("storage_gbps = 0.8", "storage_gbps = 1e300"),
    "req-huge-row.txt": _text(
        "\t".join(["7"] + ["1"] * 26) + "\n" + "\t".join(["7"] + ["9" * 23] * 26) + "\n"
    ),
}


def make_files(tmp: Path, argv: list[str]) -> dict[str, str]:
    """Create the files the arguments name (``{tmp}/<name>``); the substitutions for them."""
    text = " ".join(argv)
    for name, make in MAKERS.items():
        folder, _, run = name.rpartition("/")
        named = "{tmp}/" + name in text or (folder and "{tmp}/" + folder in text and run in argv)
        if named:
            path = tmp / name
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                make(path)
    return {"tmp": str(tmp)}
