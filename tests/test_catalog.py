"""``nmp models --registries``: every registry and its members."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from nmp.catalog import REGISTRY_MODULES
from nmp.cli import main

NMP = Path(__file__).resolve().parents[1] / "nmp"


def _declaring_modules() -> set[str]:
    """Modules of nmp that create a Registry at module level."""
    found = set()
    for path in NMP.rglob("*.py"):
        if path.name == "registry.py" and path.parent == NMP:
            continue
        for node in ast.parse(path.read_text()).body:
            value = getattr(node, "value", None)
            if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "Registry":
                rel = path.relative_to(NMP.parent).with_suffix("")
                parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
                found.add(".".join(parts))
    return found


def test_every_module_that_declares_a_registry_is_listed():
    assert _declaring_modules() == set(REGISTRY_MODULES)


def test_registries_json_lists_each_family_and_its_members(capsys):
    assert main(["models", "--registries", "--json"]) == 0
    registries = json.loads(capsys.readouterr().out)["registries"]
    assert [m["name"] for m in registries["design family"]] == ["nmp", "gpu"]
    assert {m["name"] for m in registries["placement policy"]} == {
        "host",
        "horizontal",
        "vertical",
        "cross-level",
    }
    assert "recshard" in {m["name"] for m in registries["sharder"]}
    assert "combined" in {m["name"] for m in registries["GPU kernel variant"]}
    model = {m["name"]: m for m in registries["claim model"]}["nmp.validate.arch_claims:speedup"]
    assert model["module"] == "nmp.validate.arch_claims" and model["description"]
    for family in ("cache policy", "codec", "plot", "study runner"):
        assert registries[family], family


def test_registries_table_and_presets_unchanged_without_the_flag(capsys):
    assert main(["models", "--registries"]) == 0
    out = capsys.readouterr().out
    assert "registry: placement policy" in out and "cross-level" in out
    assert main(["models", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"memory", "arch", "gpu", "workload"}
