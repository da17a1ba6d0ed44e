"""benchmarks/_host.py names an AMD core's generation: a VM calls its CPU only "AMD EPYC",
and the engine's and the gather's code paths differ between a Zen 3 and a Zen 4."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _host import amd_core  # type: ignore[import-not-found]  # noqa: E402


@pytest.mark.parametrize(
    "family,model,core",
    [
        ("25", "1", ", Zen 3"),  # Milan
        ("25", "33", ", Zen 3"),  # Vermeer (0x21)
        ("25", "17", ", Zen 4"),  # Genoa (0x11)
        ("25", "97", ", Zen 4"),  # Raphael (0x61)
        ("25", "160", ", Zen 4"),  # Bergamo (0xa0)
        ("26", "2", ", Zen 5"),
        ("23", "49", ", Zen to Zen 2"),  # Rome (0x31)
        ("21", "2", ""),
    ],
)
def test_an_amd_family_and_model_name_the_core(family: str, model: str, core: str) -> None:
    assert amd_core("AuthenticAMD", family, model) == core


def test_other_vendors_and_odd_fields_name_nothing() -> None:
    assert amd_core("GenuineIntel", "6", "207") == ""
    assert amd_core("AuthenticAMD", "25", "?") == ""
