"""SC'24's accuracy claim under a setup (``nmp/validate/claims/sc24.toml``).

The claim trains the CPU-sized DLRM on compressed and uncompressed all-to-alls
(:func:`nmp.train.alltoall.claim.accuracy_claim`); SC'24's setup keys (``compute.utilization``,
:mod:`nmp.compress.claims`) describe the step's timing, which training does not see: they are
checked here, and the experiment is the same under both columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nmp.claim_setup import resolve_setup
from nmp.compress.claims import setup_defaults
from nmp.plugins import claim_model
from nmp.train.alltoall.claim import accuracy_claim as _trained_accuracy


@claim_model
def accuracy_claim(*, quick: bool, setup: Mapping[str, Any] | None = None, **kw: Any) -> dict:
    """Whether compressed training's AUC change is within noise (see the module docstring)."""
    resolve_setup(setup, setup_defaults(), model="nmp.train.sc24_claims:accuracy_claim")
    return _trained_accuracy(quick=quick, **kw)
