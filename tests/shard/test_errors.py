"""Bad input fails with one clear line: capacity, unknown GPU, index file vs tables."""

from __future__ import annotations

import numpy as np
import pytest

from nmp.cli import main
from nmp.errors import NmpError, SpecError
from nmp.shard.topology import load_topology
from nmp.workload import save_index_file
from tests.shard.conftest import problem, table

WORKLOAD = "dlrm-benchmark"
SMALL = [
    "--set",
    "workload.num_tables=2",
    "--set",
    "workload.rows=300",
    "--set",
    "workload.batch=8",
    "--set",
    "workload.pooling=3",
]


def test_capacity_too_small_for_any_placement():
    p = problem([table([1, 2, 3], 3), table([1], 4)], 2, 1, host_bytes=256)
    from nmp.shard.registry import get_sharder, sharder_names

    for name in sharder_names():
        with pytest.raises(NmpError, match="capacity too small for any placement"):
            get_sharder(name).place(p)


def test_cli_capacity_error(capsys):
    rc = main(
        ["shard", "--workload", WORKLOAD, *SMALL]
        + ["--set", "topology.host.capacity_gib=1e-6", "--set", "topology.hbm_gib=0"]
    )
    err = capsys.readouterr().err
    assert rc == 1
    assert err.startswith("nmp: error: capacity too small") and err.count("\n") == 1


def test_unknown_gpu_in_topology(tmp_path):
    from nmp.config import find_preset

    text = find_preset("topology", "a100x8-pcie4").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('gpu = "a100-80gb"', 'gpu = "z900"'))
    with pytest.raises(SpecError, match=r"key 'gpu': unknown GPU 'z900'"):
        load_topology(str(bad))


def test_index_file_that_does_not_match_the_tables(tmp_path, capsys):
    from nmp.workload import LookupBatch, TableLookups

    # one table only, the workload has two
    t = TableLookups(np.array([1, 2], np.int64), np.array([0, 1, 2], np.int64), None, 300, 64)
    path = tmp_path / "idx.npz"
    save_index_file(LookupBatch((t,)), path)
    rc = main(["shard", "--workload", WORKLOAD, *SMALL, "--index-file", str(path)])
    err = capsys.readouterr().err
    assert rc == 1 and "idx.npz" in err and err.count("\n") == 1


def test_unknown_sharder(capsys):
    rc = main(["shard", "--workload", WORKLOAD, *SMALL, "--sharder", "random"])
    assert rc == 1
    assert "unknown sharder 'random'" in capsys.readouterr().err


def test_time_limit_must_be_positive(capsys):
    rc = main(["shard", "--workload", WORKLOAD, *SMALL, "--time-limit", "-1"])
    err = capsys.readouterr().err
    assert (
        rc == 1 and err.startswith("nmp: error: --time-limit (the MILP's)") and err.count("\n") == 1
    )


def test_cli_table_of_every_sharder(capsys):
    from nmp.shard.registry import sharder_names

    assert main(["shard", "--workload", WORKLOAD, *SMALL, "--sharder", "all"]) == 0
    out = capsys.readouterr().out
    for name in sharder_names():
        assert f"\n{name} " in out
    # solver statistics only for the sharder that searches
    assert [line.split()[0] for line in out.splitlines() if " MILP: " in line] == ["recshard"]


def test_cli_json_keys(capsys):
    import json

    rc = main(["shard", "--workload", WORKLOAD, *SMALL, "--sharder", "recshard", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("sharder", "step_ms", "load_balance", "slow_accesses_per_batch", "hbm_bytes"):
        assert key in out
    assert out["solve_s"] >= 0 and len(out["per_gpu"]) == 8
    assert out["step_ms"] == pytest.approx(max(g["t_ms"] for g in out["per_gpu"]))


def test_sharder_help_lists_the_registered_sharders(monkeypatch, capsys):
    """--help names what --sharder takes from the registry, a sharder a user adds included."""
    from nmp.shard.registry import SHARDERS, get_sharder

    mine = type("Mine", (), {"name": "mine-test", "description": "a user's"})()
    monkeypatch.setitem(SHARDERS._items, "mine-test", mine)
    with pytest.raises(SystemExit):
        main(["shard", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert all(name in out for name in SHARDERS.names())
    assert "mine-test" in out and get_sharder("recshard")


@pytest.mark.parametrize(
    "key, value",
    [
        ("link.raw_gbps", 1e-300),  # HiGHS: "Model error"
        ("link.raw_gbps", 1e-9),  # HiGHS: "Solve error"
        ("link.overhead_bytes", 10**18),  # HiGHS: "Model error"
        ("link.payload_bytes", 10**18),
        ("link.latency_ns", 1e18),  # the MILP ran out its whole --time-limit
    ],
)
def test_a_link_outside_its_range_is_refused_by_key(key, value) -> None:
    """A link so slow that a host access costs 10^12 HBM ones or more reached the MILP, which
    failed without naming the key (or spent the whole time limit)."""
    with pytest.raises(SpecError) as err:
        load_topology("a100x8-pcie4", {key: value})
    assert err.value.key == f"topology.{key}"


def test_the_link_floor_is_on_row_data_and_blames_the_key_given() -> None:
    """The floor is on the row data the link carries, and blames a packet key given alone."""
    load_topology("a100x8-pcie4", {"link.raw_gbps": 0.0014})  # 1.02e-3 GB/s of row data
    with pytest.raises(SpecError) as err:
        load_topology("a100x8-pcie4", {"link.raw_gbps": 0.0013})
    assert err.value.key == "topology.link.raw_gbps"
    with pytest.raises(SpecError) as err:  # 31.5 GB/s raw, 3e-5 of it row data
        load_topology("a100x8-pcie4", {"link.overhead_bytes": 2**20, "link.payload_bytes": 1})
    assert err.value.key in ("topology.link.overhead_bytes", "topology.link.payload_bytes")


@pytest.mark.parametrize(
    "key, value",
    [("host.channels", 3), ("gpu", "z900"), ("host.memory_preset", "nope")],
)
def test_a_topology_override_is_named_as_given(key, value) -> None:
    """--set topology.host.channels=3 was refused by the cost model, after the profile, as the
    memory's own 'org.channels'; an unknown GPU or memory given by --set was blamed on the
    preset's file."""
    with pytest.raises(SpecError) as err:
        load_topology("a100x8-pcie4", {key: value})
    assert err.value.key == f"topology.{key}" and err.value.file is None


def test_host_channels_in_a_topology_file_are_named_at_the_file(tmp_path) -> None:
    from nmp.config import find_preset

    text = find_preset("topology", "a100x8-pcie4").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("channels = 16", "channels = 12"))
    with pytest.raises(SpecError) as err:
        load_topology(str(bad))
    assert (err.value.file, err.value.key) == (str(bad), "host.channels")
