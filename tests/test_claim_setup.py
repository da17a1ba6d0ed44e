"""The setup mapping every claim model takes: defaults, overrides, and one-line errors."""

from __future__ import annotations

import pytest

from nmp.claim_setup import describe_setup, resolve_setup
from nmp.errors import NmpError

DEFAULTS = {"a.policy": "x", "a.count": 3, "a.rate": 0.5, "a.flag": False}


def test_none_is_the_defaults_and_a_mapping_overrides():
    assert resolve_setup(None, DEFAULTS, model="m") == DEFAULTS
    got = resolve_setup({"a.count": 4, "a.rate": 1}, DEFAULTS, model="m")
    assert got == {**DEFAULTS, "a.count": 4, "a.rate": 1.0}
    assert isinstance(got["a.rate"], float)
    assert describe_setup(got, {"a.count": 4}).startswith("paper setup: a.policy=x")
    assert describe_setup(DEFAULTS, None).startswith("kit defaults: ")


def test_unknown_key_names_the_model_and_the_known_keys():
    with pytest.raises(NmpError, match=r"^m: unknown setup key\(s\) a\.typo \(known: a\.policy"):
        resolve_setup({"a.typo": 1}, DEFAULTS, model="m")


@pytest.mark.parametrize(
    "key, value", [("a.count", "3"), ("a.policy", 1), ("a.flag", 1), ("a.count", True)]
)
def test_wrong_type_is_named(key, value):
    with pytest.raises(NmpError, match=f"setup key '{key}' must be a"):
        resolve_setup({key: value}, DEFAULTS, model="m")


def test_choices_are_enforced():
    with pytest.raises(NmpError, match="must be one of x, y, got 'z'"):
        resolve_setup({"a.policy": "z"}, DEFAULTS, model="m", choices={"a.policy": ("x", "y")})
    with pytest.raises(NmpError, match="setup must be a table"):
        resolve_setup(["a.policy"], DEFAULTS, model="m")  # type: ignore[arg-type]
