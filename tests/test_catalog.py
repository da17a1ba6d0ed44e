"""``nmp models --registries``: every registry and its members."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from nmp.cli import main
from nmp.registry import load_all_registries
from tests.shipped import assert_shipped_in_order

NMP = Path(__file__).resolve().parents[1] / "nmp"


def _declared_kinds() -> set[str]:
    """The kind of every Registry/PresetRegistry created at module level in nmp (ast)."""
    found = set()
    for path in NMP.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            value = getattr(node, "value", None)
            func = getattr(getattr(value, "func", None), "id", None)
            if func in ("Registry", "PresetRegistry") and value.args:
                arg = value.args[0]
                if isinstance(arg, ast.Constant):
                    suffix = " preset" if func == "PresetRegistry" else ""
                    found.add(arg.value + suffix)
    return found


def test_every_registry_is_found_without_a_list():
    """load_all_registries finds each module that declares a registry by its source."""
    assert _declared_kinds() <= set(load_all_registries())


def test_registries_json_lists_each_family_and_its_members(capsys):
    assert main(["models", "--registries", "--json"]) == 0
    registries = json.loads(capsys.readouterr().out)["registries"]
    assert_shipped_in_order([m["name"] for m in registries["design family"]], ["nmp", "gpu"])
    assert {"host", "horizontal", "vertical", "cross-level"} <= {
        m["name"] for m in registries["placement policy"]
    }
    assert "recshard" in {m["name"] for m in registries["sharder"]}
    assert "combined" in {m["name"] for m in registries["GPU kernel variant"]}
    model = {m["name"]: m for m in registries["claim model"]}["nmp.papers.nmp_speed:speedup"]
    assert model["module"] == "nmp.papers.nmp_speed" and model["description"]
    for family in ("cache policy", "codec", "plot", "study runner", "preset catalog"):
        assert registries[family], family
    presets = {m["name"]: m for m in registries["memory preset"]}
    assert presets["ddr4-3200aa"]["module"] == "models/memory/ddr4-3200aa.toml"
    for kind in ("DRAM standard", "workload", "arch", "gpu", "topology"):
        assert registries[f"{kind} preset"], kind


def test_every_shipped_member_says_what_it_is(capsys):
    """A user choosing a variant reads its one-line description (``description`` or the first
    line of its docstring): none of the kit's own members leaves the column empty."""
    assert main(["models", "--registries", "--json"]) == 0
    registries = json.loads(capsys.readouterr().out)["registries"]
    empty = [
        f"{kind}: {m['name']}"
        for kind, members in registries.items()
        for m in members
        if not m["description"].strip()
    ]
    assert not empty, empty


def test_registries_table_and_presets_unchanged_without_the_flag(capsys):
    assert main(["models", "--registries"]) == 0
    out = capsys.readouterr().out
    assert "registry: placement policy" in out and "cross-level" in out
    assert main(["models", "--json"]) == 0
    kinds = set(json.loads(capsys.readouterr().out))
    assert {"memory", "arch", "gpu", "workload"} <= kinds and "registries" not in kinds


def test_an_invalid_preset_is_named_in_the_table(tmp_path, monkeypatch, capsys):
    """A workload preset with ``dim = nan`` was listed as a row of empty cells (its summary,
    the reason, dropped from the table), and an invalid memory preset stopped the listing
    of every kind: each is a row that says what is wrong, the others listed beside it."""
    import shutil

    root = NMP.parent
    home = tmp_path / "home"
    shutil.copytree(root / "models" / "memory", home / "models" / "memory")
    (home / "workloads").mkdir()
    shutil.copy(root / "workloads" / "criteo-kaggle.toml", home / "workloads")
    (home / "workloads" / "bad.toml").write_text('name = "bad"\nrows = [1]\ndim = nan\n')
    (home / "models" / "memory" / "broken.toml").write_text("standard = 3\n")
    monkeypatch.setenv("NMP_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "400")
    capsys.readouterr()
    assert main(["models", "--kind", "workload", "--kind", "memory"]) == 0
    out = capsys.readouterr().out
    text = " ".join(out.replace("\u2502", " ").split())  # the cells' text, folds joined
    assert "bad invalid: " in text and "key 'dim': must be a finite number" in text
    assert "broken invalid: " in text and "key 'name': missing required key" in text
    assert " criteo-kaggle " in text and " ddr4-2400 " in text
    assert main(["models", "--kind", "workload", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)["workload"]}
    assert f"{home / 'workloads' / 'bad.toml'}: key 'dim'" in rows["bad"]["summary"]
