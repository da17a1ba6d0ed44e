"""The profile policy: time on held-out batches (kit default) or on the served, profiled ones."""

from __future__ import annotations

from typing import Any

import pytest

from nmp.cli import main
from nmp.errors import NmpError
from nmp.shard.run import run_shard, step_lower_bound

SMALL = {"num_tables": 3, "rows": 20000, "batch": 32, "pooling": 4, "alpha": 1.05}
# room for about 600 rows per GPU: every row a 2-batch profile touches fits, the tables do not
TOPO = {"gpus": 2, "hbm_gib": 600 * 256 / 2**30}
KW: dict[str, Any] = {
    "workload": "dlrm-benchmark",
    "workload_overrides": SMALL,
    "topology_overrides": TOPO,
}


def _run(sharder, policy):
    return run_shard(sharder=sharder, profile_batches=2, profile_policy=policy, **KW)


def test_served_sends_nothing_to_the_host_held_out_does():
    served, held = _run("recshard", "served"), _run("recshard", "held-out")
    assert served["profile_policy"] == "served" and not served["held_out"]
    assert held["profile_policy"] == "held-out" and held["held_out"]
    # every row the served batches touch was profiled and fits in HBM; held-out batches reach
    # rows the profile never saw, which stay in host memory
    assert served["slow_accesses_per_batch"] == 0
    assert held["slow_accesses_per_batch"] > 0
    assert served["step_ms"] < held["step_ms"]


# On this tiny point (4 lookups per bag) the link is the faster path for a lone table (size and
# lookup send every row there: 2872 ns); the bound takes the faster path per table (2154 ns).
@pytest.mark.parametrize("policy", ["served", "held-out"])
def test_lower_bound_holds_for_every_sharder(policy):
    lb = step_lower_bound(profile_policy=policy, **KW)
    assert lb["lb_ns"] >= lb["sum_table_ns"] / 2 and lb["lb_ns"] >= lb["max_table_ns"]
    for name in ("recshard", "size", "lookup"):
        assert _run(name, policy)["step_ms"] * 1e6 >= lb["lb_ns"] * (1 - 1e-9)


def test_bad_policy_and_too_many_served_batches():
    with pytest.raises(NmpError, match="profile policy must be one of held-out, served"):
        _run("size", "both")
    with pytest.raises(NmpError, match=r"eval batches \(3\) must be at most the profile's \(2\)"):
        run_shard(sharder="size", profile_batches=2, eval_batches=3, profile_policy="served", **KW)


def test_cli_profile_policy(capsys):
    import json

    args = ["shard", "--workload", "dlrm-benchmark", "--sharder", "size", "--json"]
    args += ["--set", "workload.num_tables=2", "--set", "workload.rows=300"]
    assert main([*args, "--profile-policy", "served"]) == 0
    assert json.loads(capsys.readouterr().out)["profile_policy"] == "served"
    assert main([*args, "--eval-on-profile"]) == 0  # the older flag, same policy
    assert json.loads(capsys.readouterr().out)["profile_policy"] == "served"
    with pytest.raises(SystemExit) as exc:
        main([*args, "--profile-policy", "never"])
    assert exc.value.code != 0 and "invalid choice: 'never'" in capsys.readouterr().err


def test_served_index_file_is_timed_on_itself(tmp_path):
    from nmp.workload import generate_batch, load_workload, save_index_file

    spec = load_workload("dlrm-benchmark", SMALL)
    path = tmp_path / "idx.npz"
    save_index_file(generate_batch(spec, seed=11), path)
    row = run_shard(
        sharder="recshard", index_file=str(path), eval_batches=1, profile_policy="served", **KW
    )
    assert row["slow_accesses_per_batch"] == 0 and "idx.npz" in row["profile"]
