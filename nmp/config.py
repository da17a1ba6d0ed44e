"""Specs as data: TOML presets become frozen dataclasses, validated on load.

Every spec type in the kit (memory, architecture, GPU, workload, sweep) is a frozen dataclass.
This module turns a TOML table into one, checking names and types key by key so that an error
names the file and the dotted key path, and applies ``--set key=value`` overrides by dotted path.

A dataclass may define ``validate(self)``; it runs after construction and may raise
``ValueError`` (reported at the table's own key) or :class:`KeyedValueError` (reported at a
sub-key).

The code lives in one module per concern, and this one re-exports their public names, the ones
the kit imports from here: :mod:`nmp.config_toml` (a TOML file read and checked),
:mod:`nmp.config_presets` (the preset folders and the lookup of a preset by name),
:mod:`nmp.config_mapping` (a table to a dataclass and back), :mod:`nmp.config_overrides`
(``--set`` overrides by dotted path).
"""

from __future__ import annotations

from nmp.config_mapping import MAX_SPEC_NUMBER as MAX_SPEC_NUMBER
from nmp.config_mapping import KeyedValueError, from_mapping, to_mapping
from nmp.config_mapping import require_at_least as require_at_least
from nmp.config_mapping import require_positive as require_positive
from nmp.config_overrides import (
    apply_overrides,
    field_exists,
    parse_set_args,
    parse_value,
    split_overrides,
)
from nmp.config_presets import ARCH_PRESETS as ARCH_PRESETS
from nmp.config_presets import DRAM_STANDARDS as DRAM_STANDARDS
from nmp.config_presets import GPU_PRESETS as GPU_PRESETS
from nmp.config_presets import MEMORY_PRESETS as MEMORY_PRESETS
from nmp.config_presets import NETWORK_PRESETS as NETWORK_PRESETS
from nmp.config_presets import PRESET_CATALOGS as PRESET_CATALOGS
from nmp.config_presets import TOPOLOGY_PRESETS as TOPOLOGY_PRESETS
from nmp.config_presets import WORKLOAD_PRESETS as WORKLOAD_PRESETS
from nmp.config_presets import PresetRegistry as PresetRegistry
from nmp.config_presets import find_preset, preset_dir, preset_names, project_root
from nmp.config_presets import preset_registry as preset_registry
from nmp.config_toml import MAX_TOML_BYTES as MAX_TOML_BYTES
from nmp.config_toml import MAX_TOML_DEPTH as MAX_TOML_DEPTH
from nmp.config_toml import check_depth as check_depth
from nmp.config_toml import check_finite, load_toml

__all__ = [
    "KeyedValueError",
    "apply_overrides",
    "check_finite",
    "field_exists",
    "find_preset",
    "from_mapping",
    "load_toml",
    "parse_set_args",
    "parse_value",
    "preset_dir",
    "preset_names",
    "project_root",
    "split_overrides",
    "to_mapping",
]
