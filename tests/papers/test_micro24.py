"""The MICRO'24 claims file parses and its cheap model function answers from the kernel config."""

from __future__ import annotations

from pathlib import Path

from nmp.papers.micro24 import model as claims
from nmp.validate.claims import load_claim_file

CLAIMS = Path(__file__).resolve().parents[2] / "nmp" / "papers" / "micro24" / "claims.toml"


def test_claims_file_loads_and_names_existing_model_functions():
    loaded = load_claim_file(CLAIMS)
    assert {c.id.split(".")[0] for c in loaded} == {"micro24"}
    for claim in loaded:
        module, name = claim.model.split(":")
        assert module == "nmp.papers.micro24.model" and callable(getattr(claims, name))


def test_stock_kernel_register_limited_reads_the_kernel_config():
    out = claims.stock_kernel_register_limited(quick=True)
    assert out["value"] is True and "56 registers" in out["detail"]
    assert "limited by registers" in out["detail"]
