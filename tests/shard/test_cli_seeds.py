"""``nmp shard --seeds N``: every sharder at N profile seeds, each figure's median and range."""

from __future__ import annotations

import json
import statistics

import pytest

from nmp.cli import main
from nmp.shard.run import run_shard
from tests.shard.test_errors import SMALL, WORKLOAD


def test_seeds_report_each_sharders_median_and_range(capsys):
    rc = main(["shard", "--workload", WORKLOAD, *SMALL, "--seeds", "3", "--seed", "4", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    (entry,) = out["sharders"]
    assert entry["sharder"] == "recshard" and entry["seeds"] == [4, 5, 6]
    # each seed's run is the run at that --seed alone
    alone = [
        run_shard(
            workload=WORKLOAD,
            sharder="recshard",
            workload_overrides={
                "num_tables": 2,
                "rows": 300,
                "batch": 8,
                "pooling": 3,
            },
            seed=s,
        )["step_ms"]
        for s in (4, 5, 6)
    ]
    assert entry["step_ms_by_seed"] == pytest.approx(alone)
    step = entry["step_ms"]
    assert step["median"] == pytest.approx(statistics.median(alone))
    assert (step["min"], step["max"]) == (pytest.approx(min(alone)), pytest.approx(max(alone)))
    assert len(out["runs"]["recshard"]) == 3


def test_seeds_table_has_a_line_per_sharder(capsys):
    from nmp.shard.registry import sharder_names

    assert main(["shard", "--workload", WORKLOAD, *SMALL, "--sharder", "all", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "profile seeds 0..1" in out
    for name in sharder_names():
        assert f"\n{name} " in out


@pytest.mark.parametrize("n", ["0", "101"])
def test_seeds_are_bounded(capsys, n):
    # refused as it is parsed (nmp.cliargs.INT_FLAG_RANGES): argparse exits
    with pytest.raises(SystemExit) as exc:
        main(["shard", "--workload", WORKLOAD, *SMALL, "--seeds", n])
    assert exc.value.code != 0
    err = capsys.readouterr().err
    assert "--seeds" in err and "100" in err, err


def test_seeds_need_generated_batches(tmp_path, capsys):
    path = tmp_path / "lookups.npz"
    path.write_bytes(b"PK")  # refused before it is read
    args = ["shard", "--workload", WORKLOAD, *SMALL, "--seeds", "2", "--index-file", str(path)]
    assert main(args) != 0
    assert "--seeds: draws generated batches" in capsys.readouterr().err
