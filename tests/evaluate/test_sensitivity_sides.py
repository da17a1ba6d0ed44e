"""A sensitivity study's two sides may be two settings of one preset (design_set,
reference_set, labels): each side's points carry its own overrides."""

from __future__ import annotations

import pytest

from nmp.errors import NmpError
from nmp.evaluate.sensitivity import _jobs, parse_params

BASE = {
    "design": "a100-80gb",
    "reference": "a100-80gb",
    "workload": "gpu-micro24",
    "set": {"workload.reuse": "high"},
    "assumptions": [
        {"name": "queue", "low": {"arch.hbm.read_queue": 64}, "high": {"arch.hbm.read_queue": 256}}
    ],
}


def test_two_settings_of_one_preset_are_two_sides():
    setup = parse_params(
        {
            **BASE,
            "design_label": "combined",
            "design_set": {"arch.variant": "combined"},
            "reference_label": "stock",
            "reference_set": {"arch.variant": "baseline"},
        }
    )
    jobs = _jobs(setup)
    assert len(jobs) == 6 and len(set(jobs.values())) == 6  # no side's point stands for another
    arch, workload, items = jobs[("queue", "low", "combined")]
    assert (arch, workload) == ("a100-80gb", "gpu-micro24")
    assert dict(items) == {
        "workload.reuse": "high",
        "arch.variant": "combined",
        "arch.hbm.read_queue": 64,
    }
    assert dict(jobs[("", "nominal", "stock")][2])["arch.variant"] == "baseline"


def test_one_preset_needs_two_labels():
    with pytest.raises(NmpError, match="two names"):
        parse_params({**BASE, "design_set": {"arch.variant": "combined"}})


def test_a_side_set_is_checked_as_set_is():
    with pytest.raises(NmpError, match=r"params\.design_set\.kernel"):
        parse_params({**BASE, "design_label": "a", "design_set": {"kernel": 1}})


def test_presets_by_name_are_unchanged():
    setup = parse_params({**BASE, "reference": "h200"})
    assert (setup.design, setup.reference) == ("a100-80gb", "h200")
    assert _jobs(setup)[("", "nominal", "h200")] == (
        "h200",
        "gpu-micro24",
        (("workload.reuse", "high"),),
    )
