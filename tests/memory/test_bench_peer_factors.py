"""benchmarks/peer_summary.py's split of an in-process ratio against a peer into the run's
channel-cycles per command, the peer's cost per channel-cycle and nmp's cost per command
(issue 43: where each standard's ratio comes from)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from peer_summary import (  # type: ignore[import-not-found]  # noqa: E402
    case_factors,
    in_process_ratio,
    ratio_factors,
)


def _row(std: str, cycles: int, commands: int, nmp_s: float, peer_s: float) -> dict:
    return {
        "id": f"case{cycles}@{std}",
        "standard": std,
        "channel_cycles": cycles,
        "commands": commands,
        "nmp": {"in_cpu": [nmp_s * 1.5, nmp_s]},
        "peer": {"in_cpu": [peer_s, peer_s * 1.2]},
    }


def test_the_factors_multiply_back_to_the_cases_ratio() -> None:
    for row in (
        _row("DDR4", 460_000, 150_000, 0.007, 0.46),
        _row("HBM2", 230_000, 200_000, 0.015, 0.4),
    ):
        per_cmd, peer_ns, nmp_ns = case_factors(row, "peer")
        assert math.isclose(per_cmd * peer_ns / nmp_ns, in_process_ratio(row, "peer"))
        assert math.isclose(nmp_ns, row["nmp"]["in_cpu"][1] / row["commands"] * 1e9)


def test_a_busier_memory_lowers_the_ratio_at_the_same_costs() -> None:
    # the same peer cost per channel-cycle and nmp cost per command, half the idle cycles
    idle = _row("DDR4", 400_000, 100_000, 100_000 * 60e-9, 400_000 * 900e-9)
    busy = _row("HBM2", 200_000, 100_000, 100_000 * 60e-9, 200_000 * 900e-9)
    assert math.isclose(case_factors(idle, "peer")[1], case_factors(busy, "peer")[1])
    assert math.isclose(in_process_ratio(idle, "peer"), 2 * in_process_ratio(busy, "peer"))


def test_the_cost_per_command_the_target_needs(capsys) -> None:
    # three cases; the median case runs at 40x: 60x needs its command 1.5x cheaper
    rows = [
        _row("HBM2", 200_000, 100_000, 0.004, 0.4),  # 100x
        _row("HBM2", 200_000, 100_000, 0.010, 0.4),  # 40x (median)
        _row("HBM2", 200_000, 100_000, 0.020, 0.4),  # 20x
    ]
    ratio_factors(rows, "peer", ["HBM2"])
    line = capsys.readouterr().out.splitlines()[-1]
    assert "needs nmp at 66.7 ns per command (now 100.0: x1.50)" in line
