import csv

import pytest

from nmp.errors import NmpError
from nmp.train.alltoall.study import run_study

PARAMS = {
    "workloads": ["criteo-kaggle"],
    "codecs": ["quant", "hybrid", "zstd"],
    "eb": [0.03],
    "nodes": [4],
    "networks": ["infiniband-hdr-200g", "nvlink3-a100"],
    "codec_gbps": ["measured", 100.0],
    "repeats": 1,
    "train": {
        "workloads": ["criteo-kaggle"],
        "steps": 20,
        "variants": [["quant", "uniform", "constant"]],
    },
}


def test_study_writes_its_files_and_rows(tmp_path):
    rows = run_study(PARAMS, out_dir=tmp_path, jobs=1)
    for name in (
        "report.md",
        "results.csv",
        "results.jsonl",
        "ratio.png",
        "speedup.png",
        "auc.png",
        "ratios.csv",
        "tables.csv",
        "speedup.csv",
        "auc.csv",
    ):
        assert (tmp_path / name).stat().st_size > 0, name
    speed = [r for r in rows if r["part"] == "speedup"]
    assert len(speed) == 2 * 2  # hybrid at eb 0.03: networks x codec throughputs
    auc = [r for r in rows if r["part"] == "auc"]
    assert len(auc) == 1 and auc[0]["ratio_in_training"] > 3.0
    with open(tmp_path / "ratios.csv") as fh:
        ratios = {r["codec"]: float(r["ratio"]) for r in csv.DictReader(fh)}
    assert ratios["hybrid"] > ratios["quant"] > ratios["zstd"]
    # A faster link leaves less to gain: the same codec speeds up the slower network more.
    fast = {r["network"]: r["speedup_modeled"] for r in speed if r["codec_gbps"] == 100.0}
    assert fast["infiniband-hdr-200g"] > fast["nvlink3-a100"]


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"codecs": ["gzip"]}, "params.codecs"),
        ({"eb": [0.0]}, "params.eb"),
        ({"nodes": [1]}, "params.nodes"),
        ({"speed": 1}, "params.speed"),
        ({"repeats": 0}, "params.repeats"),
        ({"seed": "x"}, "params.seed"),
        ({"codec_gbps": ["fast"]}, "params.codec_gbps"),
        ({"main_codec": "gzip"}, "params.main_codec"),
        ({"train": {"step": 3}}, "params.train.step"),
        ({"train": {"steps": 0}}, "params.train.steps"),
        ({"train": {"workloads": ["bogus"]}}, "params.train.workloads"),
        ({"train": {"variants": [["hybrid", "adaptive"]]}}, "params.train.variants"),
        ({"train": {"variants": [["hybrid", "adaptive", "often"]]}}, "params.train.eb_schedule"),
    ],
)
def test_bad_params_name_the_key(tmp_path, bad, match):
    with pytest.raises(NmpError, match=match):
        run_study({**PARAMS, **bad}, out_dir=tmp_path, jobs=1)
