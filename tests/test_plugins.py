"""Data files name code only through the claim-model and study-runner registries."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nmp.errors import SpecError
from nmp.plugins import (
    CLAIM_MODELS,
    STUDY_RUNNERS,
    load_claim_model,
    load_study_runner,
    reference,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "ref",
    [
        "nmp.train.strategies:import_module",  # a standard-library function re-exported
        "nmp.cache.kvstore:Path",  # a class imported from pathlib
        "nmp.evaluate.executor:ProcessPoolExecutor",
        "nmp.shard.sharders.recshard:milp",  # scipy's solver
        "nmp.papers.nmp_speed:_design",  # a private helper beside the claim models
        "nmp.evaluate.point:run_point",  # an nmp function, but not a claim model
        "nmp.evaluate.sensitivity:run_study",  # a study runner is not a claim model
    ],
)
def test_a_claim_names_only_registered_claim_models(ref):
    with pytest.raises(SpecError) as exc:
        load_claim_model(ref, file="claims/x.toml", key="x.a.model")
    text = str(exc.value)
    assert text.startswith("claims/x.toml: key 'x.a.model': unknown claim model")
    assert f"'{ref}'" in text and "\n" not in text
    # a public function of that module, in no registry: the error says how to register it
    unregistered = ref == "nmp.evaluate.point:run_point"
    assert ("@nmp.plugins.claim_model" in text) == unregistered, text
    assert ("(known: " in text) != unregistered, text


@pytest.mark.parametrize(
    "ref",
    ["nmp.evaluate.executor:ProcessPoolExecutor", "nmp.papers.nmp_speed:speedup"],
)
def test_a_study_names_only_registered_runners(ref):
    with pytest.raises(SpecError, match=r"study.toml: key 'runner': unknown study runner"):
        load_study_runner(ref, file="study.toml", key="runner")


@pytest.mark.parametrize(
    ("ref", "words"),
    [
        ("os:system", "only functions of the nmp package"),
        ("nmp.no_such_module:f", "no module 'nmp.no_such_module'"),
        ("nmp.evaluate.point", "must be 'module:function'"),
        (3, "must be 'module:function'"),
    ],
)
def test_malformed_references(ref, words):
    with pytest.raises(SpecError, match=re.escape(words)):
        load_claim_model(ref, file="f.toml", key="k")


def test_registered_functions_resolve_to_themselves():
    fn = load_claim_model("nmp.papers.nmp_speed:speedup")
    assert reference(fn) == "nmp.papers.nmp_speed:speedup"
    assert load_study_runner("nmp.shard.study:run_study").__name__ == "run_study"


def _refs(pattern: str, files: list[Path]) -> set[str]:
    found = set()
    for path in files:
        found |= set(re.findall(pattern, path.read_text(), re.M))
    return found


def test_every_reference_in_the_data_files_is_registered_in_a_declared_module():
    """``nmp models --registries`` lists a family from its declared modules: a module that
    registers a model the data files name must be among them."""
    papers = sorted((ROOT / "nmp/papers").glob("*/claims.toml"))
    claims = _refs(r'^(?:model|bound)\s*=\s*"([^"]+)"', papers)
    runners = _refs(r'^runner\s*=\s*"([^"]+)"', sorted((ROOT / "workloads").rglob("*.toml")))
    assert claims and runners
    assert claims <= set(CLAIM_MODELS.names())
    assert runners <= set(STUDY_RUNNERS.names())


@pytest.mark.parametrize("prefix", ["", "plugins.", "nmp.plugins."])
@pytest.mark.parametrize("registry", [STUDY_RUNNERS, CLAIM_MODELS], ids=lambda r: r.kind)
def test_a_decorated_module_is_found_however_the_decorator_is_spelled(
    tmp_path, monkeypatch, registry, prefix
):
    """docs/extending.md writes ``@nmp.plugins.study_runner``: a module decorated so is found
    by the registry's scan of the sources, as the bare ``@study_runner`` form is."""
    from nmp.registry import package_modules

    name = "study_runner" if registry is STUDY_RUNNERS else "claim_model"
    pkg = tmp_path / "decodemo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mine.py").write_text(f"import nmp.plugins\n\n@{prefix}{name}\ndef f(): ...\n")
    (pkg / "other.py").write_text(f"# @{prefix}{name} in a comment\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert package_modules("decodemo", registry._marker) == ["decodemo.mine"]
