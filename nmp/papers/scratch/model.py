"""The scratch paper's one claim: a memory preset's data-bus peak, from its timing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nmp.claim_setup import describe_setup, resolve_setup
from nmp.memory import load_memory
from nmp.plugins import claim_model, reference

DEFAULTS = {"memory": "ddr4-3200aa"}


@claim_model
def peak_gbps(*, quick: bool, setup: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The preset's peak (GB/s): bytes per burst over the burst's time (per channel)."""
    values = resolve_setup(setup, DEFAULTS, model=reference(peak_gbps))
    spec = load_memory(values["memory"])
    per_channel = spec.peak_bandwidth_gbps / spec.org.channels
    return {"value": per_channel, "detail": describe_setup(values, setup)}
