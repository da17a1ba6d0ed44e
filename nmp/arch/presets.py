"""Loading an architecture preset: its spec from TOML, checked by the placement policy it names.

The spec (:mod:`nmp.arch.spec`) is data; the policy registry is asked here, where a design is
assembled from its preset, so that the spec never imports the policies that import it.
"""

from __future__ import annotations

import functools
from pathlib import Path

from nmp.arch.policies import check_policy
from nmp.arch.spec import ArchSpec
from nmp.config import apply_overrides, find_preset, from_mapping, load_toml


def load_arch_spec(name: str, overrides: dict | None = None) -> ArchSpec:
    """Load preset ``name`` (or a TOML path) and apply dotted ``overrides``; a SpecError names
    the file (or the ``arch.`` key of an override) where the spec does not suit its policy."""
    path = Path(find_preset("arch", name))
    stat = path.stat()
    spec = _preset_spec(str(path), stat.st_mtime_ns, stat.st_size)
    if overrides:
        spec = apply_overrides(spec, overrides, root="arch")
        check_policy(spec, root="arch")
    return spec


@functools.lru_cache(maxsize=32)
def _preset_spec(path: str, mtime_ns: int, size: int) -> ArchSpec:
    """The file's spec, parsed once per version of the file (a sweep loads its preset for
    every design; the spec is frozen, so its users share it)."""
    spec = from_mapping(ArchSpec, load_toml(path), file=path)
    check_policy(spec, file=path)
    return spec


__all__ = ["load_arch_spec"]
