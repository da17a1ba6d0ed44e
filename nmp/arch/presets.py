"""Loading an architecture preset: its spec from TOML, checked by the placement policy it names.

The spec (:mod:`nmp.arch.spec`) is data; the policy registry is asked here, where a design is
assembled from its preset, so that the spec never imports the policies that import it.
"""

from __future__ import annotations

from nmp.arch.policies import check_policy
from nmp.arch.spec import ArchSpec
from nmp.config import apply_overrides, find_preset, from_mapping, load_toml


def load_arch_spec(name: str, overrides: dict | None = None) -> ArchSpec:
    """Load preset ``name`` (or a TOML path) and apply dotted ``overrides``; a SpecError names
    the file (or the ``arch.`` key of an override) where the spec does not suit its policy."""
    path = find_preset("arch", name)
    spec = from_mapping(ArchSpec, load_toml(path), file=str(path))
    check_policy(spec, file=str(path))
    if overrides:
        spec = apply_overrides(spec, overrides, root="arch")
        check_policy(spec, root="arch")
    return spec


__all__ = ["load_arch_spec"]
