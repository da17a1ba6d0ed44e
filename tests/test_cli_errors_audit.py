"""Bad input found by a mutation audit of every file the commands read (traces, presets,
setups, sweeps, run folders, data files; about 1,900 mutated inputs): what each gave before is
in the comment above its case. Every case runs through ``nmp.cli.main`` in this process and
must end within seconds in one line ``nmp: error: ...`` naming the file and the key or line,
with exit status 1; a resumed run folder that is refused must be left as it was."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from bad_inputs import ROOT, RUN, assert_one_line_error, main_in_process

TRACE = "{tmp}/write-then-read.trace"
EXTRAPOLATE = ["train", "--extrapolate", "--trials", "10", "--setup"]
GPU = ["run", "--arch", "h200", "--workload", "gpu-micro24"]


def _with(source: str, key: str, value: str) -> Callable[[Path], None]:
    """A maker of file ``source`` with the first ``key = ...`` line set to ``value``."""

    def make(path: Path) -> None:
        lines = (ROOT / source).read_text().splitlines()
        i = next(i for i, line in enumerate(lines) if line.startswith(f"{key} = "))
        lines[i] = f"{key} = {value}"
        path.write_text("\n".join(lines) + "\n")

    return make


def _setup_with(key: str, value: str, setup: str = "ecrec") -> Callable[[Path], None]:
    """A maker of a training setup with ``values.<key> = value``."""
    return _with(f"workloads/train/{setup}.toml", key, value)


def _topology_with(key: str, value: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        text = (ROOT / "models/topology/a100x8-pcie4.toml").read_text()
        lines = [
            f"{key} = {value}" if ln.startswith(f"{key} = ") else ln for ln in text.split("\n")
        ]
        path.write_text("\n".join(lines))

    return make


def _tsv_empty_label(path: Path) -> None:
    fields = ["1", *(str(i) for i in range(13)), *(["a1"] * 26)]
    good = "\t".join(fields) + "\n"
    path.write_text(good * 2 + "\t".join(["", *fields[1:]]) + "\n")


MAKERS: dict[str, Callable[[Path], object]] = {
    "write-then-read.trace": lambda p: p.write_text("ST 0x0\nLD 0x40\n"),
    "setup-batch.toml": _setup_with("batch", "300000000"),
    "setup-workers.toml": _setup_with("workers", "100000000000000000"),
    "setup-workload.toml": _setup_with("workload", '"nosuch"'),
    "setup-dim.toml": _setup_with("dim", "100000000000000000"),
    "setup-rows.toml": _setup_with("table_rows", "100000000000000000"),
    "setup-network.toml": _setup_with("network_gbps", "1e-300"),
    "topology-gpus.toml": _topology_with("gpus", "100000000000000000"),
    "label-empty.tsv": _tsv_empty_label,
    # the second audit: presets, sweeps, the CPR setup
    "cpr-full-every.toml": _setup_with("cpr_full_every", "100000", "cpr"),
    "cpr-horizon.toml": _setup_with("horizon_hours", "1e12", "cpr"),
    "cpr-state-words.toml": _setup_with("optimizer_state_words", "1000000000000", "cpr"),
    "arch-long-memory.toml": _with("models/arch/recross.toml", "preset", '"' + "q" * 5000 + '"'),
    "scan-workload.toml": _with("workloads/sweeps/default.toml", "workload", '"nope"'),
    "huge-batch-sweep.toml": lambda p: p.write_text(
        'name = "huge"\nworkloads = ["recross-eval"]\narchs = ["recnmp"]\n'
        '[axes]\n"workload.batch" = [100000000000000000]\n'
    ),
}

# (case id, argv with {tmp} placeholders, text the one-line message must contain)
CASES = [
    # the controller never left write mode: a write then a read replayed forever
    (
        "replay-low-watermark-0",
        ["replay", TRACE, "--set", "controller.wr_low_watermark=0"],
        "key 'controller.wr_low_watermark': must be > 0",
    ),
    ("replay-priority-queue-0", ["replay", TRACE, "--set", "controller.priority_queue=0"], "prio"),
    # internal error: ZeroDivisionError (host-cpu); a result of no lookups on the others
    (
        "run-host-pooling-0",
        ["run", "--arch", "host-cpu", "--workload", "recross-eval", "--set", "workload.pooling=0"],
        "key 'workload.pooling': gives no lookups",
    ),
    ("run-pooling-0", [*RUN, "--set", "workload.pooling=0"], "key 'workload.pooling'"),
    # internal error: ZeroDivisionError (chips per rank); -8 ran as one chip
    (
        "run-device-width-0",
        [*RUN, "--set", "memory.org.device_width_bits=0"],
        "key 'memory.org.device_width_bits'",
    ),
    (
        "replay-device-width-negative",
        ["replay", TRACE, "--set", "org.device_width_bits=-8"],
        "key 'org.device_width_bits'",
    ),
    # blamed org.tx_bytes, org.prefetch: the key not set
    (
        "run-channel-width-0",
        [*RUN, "--set", "memory.org.channel_width_bits=0"],
        "key 'memory.org.channel_width_bits': must be a positive multiple of 8",
    ),
    ("run-columns-1", [*RUN, "--set", "memory.org.columns=1"], "key 'memory.org.columns'"),
    # 7.2 GB and 11 s, then "out of memory" naming nothing; 10^17 workers: the same at once
    (
        "train-setup-batch-huge",
        [*EXTRAPOLATE, "{tmp}/setup-batch.toml"],
        "setup-batch.toml: key 'values.batch': this run needs",
    ),
    (
        "train-setup-workers-huge",
        [*EXTRAPOLATE, "{tmp}/setup-workers.toml"],
        "setup-workers.toml: key 'values.workers': must be <= 1,048,576",
    ),
    # named neither the setup file nor its key
    (
        "train-setup-workload-unknown",
        [*EXTRAPOLATE, "{tmp}/setup-workload.toml"],
        "setup-workload.toml: key 'values.workload': unknown workload preset 'nosuch'",
    ),
    ("train-setup-dim-huge", [*EXTRAPOLATE, "{tmp}/setup-dim.toml"], "key 'values.dim'"),
    (
        "train-setup-rows-do-not-fit",
        [*EXTRAPOLATE, "{tmp}/setup-rows.toml"],
        "setup-rows.toml: key 'values.table_rows': 1.28e+10 GB of records",
    ),
    (
        "train-setup-network-tiny",
        [*EXTRAPOLATE, "{tmp}/setup-network.toml"],
        "key 'values.network_gbps': must be 0 (no network) or >= 1e-06",
    ),
    # worded as if --set had given it
    (
        "shard-topology-file-gpus-huge",
        ["shard", "--workload", "criteo-kaggle", "--topology", "{tmp}/topology-gpus.toml"],
        "topology-gpus.toml: key 'gpus': this run needs",
    ),
    # the second audit. CPR's partial saves kept 10^5 columns a row: out of memory, no key
    (
        "train-setup-cpr-full-every",
        [*EXTRAPOLATE, "{tmp}/cpr-full-every.toml"],
        "cpr-full-every.toml: key 'values.cpr_full_every': must be <= 1,024",
    ),
    # blamed values.server_mtbf_hours
    (
        "train-setup-horizon-huge",
        [*EXTRAPOLATE, "{tmp}/cpr-horizon.toml"],
        "cpr-horizon.toml: key 'values.horizon_hours': this run needs",
    ),
    # "the tables (183009717625.17 GiB) do not fit in ddr4-2400", no file or key
    (
        "train-setup-state-words-huge",
        [*EXTRAPOLATE, "{tmp}/cpr-state-words.toml"],
        "key 'values.optimizer_state_words': must be <= 1,048,576",
    ),
    # GPU presets: 10^12-byte indices, a negative register count ran; the unit blamed
    # kernel.regs_per_thread; an unknown memory preset named no key
    ("gpu-index-bytes", [*GPU, "--set", "arch.kernel.index_bytes=1e12"], "'arch.kernel.index_b"),
    (
        "gpu-prefetch-regs-negative",
        [*GPU, "--set", "arch.kernel.prefetch_regs_per_thread=-1"],
        "key 'arch.kernel.prefetch_regs_per_thread': must be >= 0",
    ),
    (
        "gpu-reg-alloc-unit-huge",
        [*GPU, "--set", "arch.sm.reg_alloc_unit=1e12"],
        "key 'arch.sm.reg_alloc_unit'",
    ),
    (
        "gpu-regs-over-the-sm",
        [*GPU, "--set", "arch.kernel.regs_per_thread=1000"],
        "must be at most sm.max_regs_per_thread (255)",
    ),
    ("gpu-unroll-huge", [*GPU, "--set", "arch.kernel.unroll=1e12"], "'arch.kernel.unroll'"),
    (
        "gpu-memory-preset-unknown",
        [*GPU, "--set", "arch.hbm.memory_preset=zzz"],
        "key 'arch.hbm.memory_preset': unknown memory preset 'zzz'",
    ),
    # "File name too long" naming a made-up path
    (
        "arch-memory-preset-5000-characters",
        ["run", "--arch", "{tmp}/arch-long-memory.toml", "--workload", "recross-eval"],
        "arch-long-memory.toml: key 'memory.preset': unknown memory preset 'qqq",
    ),
    # named neither the sweep nor locality_scan.workload
    (
        "sweep-scan-workload-unknown",
        ["evaluate", "{tmp}/scan-workload.toml", "--check"],
        "scan-workload.toml: locality_scan.workload: unknown workload preset 'nope'",
    ),
    # --check said "ok, 1 points"; the run refused the point at once
    (
        "sweep-check-guards-its-points",
        ["evaluate", "{tmp}/huge-batch-sweep.toml", "--check"],
        "key 'workload.batch': point recnmp",
    ),
    (
        "measure-check-workload-unknown",
        ["measure", "host", "--check", "--workload", "nope"],
        "key '--workload': unknown workload preset",
    ),
    # "malformed value in column None"
    (
        "train-data-label-empty",
        ["train", "--strategy", "none", "--steps", "2", "--data", "{tmp}/label-empty.tsv"],
        "label-empty.tsv:3: label must be 0 or 1, got an empty field",
    ),
]


def _make(tmp: Path, argv: list[str]) -> list[str]:
    text = " ".join(argv)
    for name, make in MAKERS.items():
        if "{tmp}/" + name in text:
            make(tmp / name)
    return [a.format(tmp=tmp) for a in argv]


@pytest.mark.parametrize(("argv", "expect"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gives_one_line_error(
    argv: list[str], expect: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    proc = main_in_process(_make(tmp_path, argv), tmp_path, capsys, monkeypatch)
    assert_one_line_error(proc, expect)


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


@pytest.mark.parametrize(
    ("field", "value", "expect"),
    [
        # OverflowError: int too large to convert to float
        ("lookups_per_s", 10**400, "'result.lookups_per_s': must be above 0 and at most 1e18"),
        # matplotlib: "Axis limits cannot be NaN or Inf", half the folder rewritten
        ("energy_pj_per_lookup", 1e308, "'result.energy_pj_per_lookup': must be at least 0"),
        ("lookups_per_s", 0, "'result.lookups_per_s': must be above 0"),
    ],
)
def test_a_resumed_run_refuses_a_saved_figure_and_changes_nothing(
    field: str, value: float, expect: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    from nmp.cli import main

    (tmp_path / "wl.toml").write_text(
        'name = "tiny"\nrows = [1000, 2000]\ndim = 16\nbatch = 2\npooling = 4\nseed = 0\n'
    )
    (tmp_path / "sweep.toml").write_text(
        f'name = "rs"\nworkloads = ["{tmp_path}/wl.toml"]\narchs = ["host-cpu", "recross"]\n'
        'baseline = "host-cpu"\nexplain = "none"\n'
    )
    monkeypatch.chdir(tmp_path)
    run = ["evaluate", "sweep.toml", "--run", "r", "--out", "out", "--jobs", "1"]
    assert main(run) == 0
    folder = tmp_path / "out" / "r"
    lines = (folder / "results.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["result"][field] = value
    (folder / "results.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    before = _digests(folder)
    proc = main_in_process(
        ["evaluate", "--resume", "--run", "r", "--out", "out"], tmp_path, capsys, monkeypatch
    )
    assert_one_line_error(proc, "results.jsonl:1: key " + expect)
    assert _digests(folder) == before


def test_an_error_line_is_one_printable_line_of_bounded_length(capsys) -> None:
    """A quoted value with a newline split the line; a 20,000-character one made a 20 KB line."""
    from nmp.cli import MAX_ERROR_CHARS, main

    assert main(["replay", str(ROOT / "traces/stream_64k.trace.gz"), "--mapping", "Ro\nx\0"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\0" not in err, repr(err)
    assert (
        main(["replay", str(ROOT / "traces/stream_64k.trace.gz"), "--mapping", "A" * 20_000]) == 1
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) <= MAX_ERROR_CHARS + 60, len(err)
    assert "characters) ..." in err


def test_reference_data_others_could_write_is_not_read(tmp_path: Path, monkeypatch) -> None:
    """A tampered cycle count in a folder every user may write into changed a verdict."""
    import shutil

    from nmp.errors import NmpError
    from nmp.reference import dram_reference_dir, read_cases

    shared = tmp_path / "shared"
    (shared / "reference").mkdir(parents=True)
    shutil.copytree(ROOT / "data/reference/dram", shared / "reference/dram")
    monkeypatch.setenv("NMP_SHARED", str(shared))
    assert dram_reference_dir() == shared / "reference" / "dram"
    for part in (shared, shared / "reference", shared / "reference" / "dram"):
        part.chmod(0o777)
        with pytest.raises(NmpError, match=f"reference data is not read from {part}: every user"):
            dram_reference_dir()
        part.chmod(0o755)
    (shared / "reference/dram/cases.json").write_text('{"cases": [1,')
    with pytest.raises(NmpError, match="cases.json: not valid JSON"):
        read_cases(shared / "reference/dram")
