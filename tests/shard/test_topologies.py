"""Every shipped topology loads and places a small workload (gh200x4-c2c's 104 host channels
were refused by the memory model, whose channel count is a power of two, on every run)."""

from __future__ import annotations

import json

import pytest

from nmp.cli import main
from nmp.memory import load_memory
from nmp.shard.topology import load_topology, topology_names

SMALL = ["--workload", "dlrm-benchmark", "--profile-batches", "1", "--eval-batches", "1"]
SMALL += ["--set", "workload.num_tables=2", "--set", "workload.rows=300"]
SMALL += ["--set", "workload.batch=8", "--set", "workload.pooling=3"]


@pytest.mark.parametrize("name", topology_names())
def test_every_shipped_topology_places_a_workload(name, capsys):
    topo = load_topology(name)
    host = load_memory(topo.host.memory_preset, channels=topo.host.channels)
    assert host.org.channels == topo.host.channels
    assert main(["shard", *SMALL, "--topology", name, "--sharder", "all", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out if isinstance(out, list) else out.get("sharders", [out])
    assert rows and all(r["topology"] == name and r["gpus"] == topo.gpus for r in rows)


def test_the_topologies_include_the_ones_the_docs_name():
    assert {"a100x8-pcie4", "h100x8-pcie5", "gh200x4-c2c"} <= set(topology_names())
