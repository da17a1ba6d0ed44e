"""The SALP readings carry what the models need of them (the stages tested the names "salp1",
"salp2" and "masa"); a bank's row rate per reading, by hand."""

from __future__ import annotations

import pytest

from nmp.arch.salp_readings import (
    SALP_READINGS_REGISTRY,
    SALP_TRACKED_SUBARRAYS,
    no_salp_row_cycles,
)
from tests.shipped import assert_shipped_in_order

# DDR5-4800 (40-40-40): tRC 116, tRAS 76, tRP 40, tCCD_L 12; a 4-line row: tRCD 40 + 4 x 12
T = {"nRC": 116, "nRAS": 76, "nRP": 40, "nCCDL": 12}
COLUMNS = 40 + 4 * 12


@pytest.mark.parametrize(
    ("name", "activated", "open_rows", "cycles"),
    [
        ("salp1", 0, 1, 88),  # max(tRAS 76, columns 88): the precharge hidden
        ("salp2", 2, 1, 58),  # max(tRC / 2, 4 x tCCD_L 48): two activations in flight
        ("masa", SALP_TRACKED_SUBARRAYS, SALP_TRACKED_SUBARRAYS, None),  # the column peak
    ],
)
def test_each_reading_says_how_a_bank_serves_rows(name, activated, open_rows, cycles) -> None:
    reading = SALP_READINGS_REGISTRY.get(name)
    assert reading.activated_subarrays == activated and reading.open_rows == open_rows
    assert reading.per_row_cycles(T, COLUMNS, 4) == cycles


def test_without_salp_a_row_costs_a_row_cycle_and_the_spec_lists_the_readings() -> None:
    assert no_salp_row_cycles(T, COLUMNS) == 128  # max(tRC 116, columns 88 + tRP 40)
    assert_shipped_in_order(SALP_READINGS_REGISTRY.names(), ("salp1", "salp2", "masa"))


@pytest.mark.parametrize("reading", ["salp2", "masa"])
def test_a_bank_unit_opens_about_one_row_per_lookup_under_salp(reading) -> None:
    """dlrm-benchmark's uniform rows, 4 lines each: a bank unit whose subarrays are replayed as
    banks opens about one row per lookup, as without SALP (0.75 of the lines hit). A buffer that
    admits the lookup taking a slot back while the slot's last lookup still reads made FR-FCFS
    close and reopen rows: 0.43 of the lines hit under MASA, 2.3 activations per lookup, which
    the rank-wide activation window then charged ReCross for (4.54 against 3.78 ms a batch)."""
    from nmp.arch import run_design_point

    over = {"workload": {"batch": 4}, "arch": {"bank.salp": reading}}
    bank = run_design_point("recross", "dlrm-benchmark", overrides=over).to_json()
    hit = bank["breakdown"]["levels"]["bank"]["row_hit_rate"]
    assert 0.70 <= hit <= 0.76  # 3 of a lookup's 4 lines, less the rare shared row
