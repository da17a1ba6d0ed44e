"""The generic registry: duplicate names, unknown names, lazy loading."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import nmp
from nmp.errors import NmpError
from nmp.registry import REGISTRIES, Registry, package_modules
from tests.shipped import package_files

# the modules each package holds, read from its folder: a module a user adds is walked too
NMP = Path(nmp.__file__).parent
policy_modules = package_files(NMP / "arch" / "policies")
sharder_modules = package_files(NMP / "shard" / "sharders")


@dataclass(frozen=True)
class _Variant:
    name: str
    description: str = ""


def _fresh(kind: str, package: str | None = None, marker: str | None = None) -> Registry:
    REGISTRIES.pop(kind, None)
    return Registry(kind, package=package, marker=marker)


def test_register_get_and_names_keep_order():
    reg = _fresh("test variant")
    a = reg.register(_Variant("a", "first one"))
    reg.register(_Variant("b"))
    assert reg.get("a") is a
    assert reg.names() == ("a", "b")
    assert "b" in reg and "c" not in reg
    assert reg.describe()[0] == {"name": "a", "description": "first one", "module": __name__}


def test_unknown_name_lists_known_names():
    reg = _fresh("test variant")
    reg.register(_Variant("x"))
    reg.register(_Variant("y"))
    with pytest.raises(NmpError, match=r"unknown test variant 'z' \(known: x, y\)"):
        reg.get("z")


def test_duplicate_name_is_an_error_but_reregistering_the_same_object_is_not():
    reg = _fresh("test variant")
    v = reg.register(_Variant("x", "one"))
    reg.register(v)
    with pytest.raises(NmpError, match="test variant 'x' registered twice"):
        reg.register(_Variant("x", "another"))


def test_decorator_with_explicit_name():
    reg = _fresh("test function")

    @reg.register(name="double")
    def _double(v: int) -> int:
        """Twice the value."""
        return 2 * v

    assert reg.get("double")(3) == 6
    assert reg.describe() == [
        {"name": "double", "description": "Twice the value.", "module": __name__}
    ]


def test_modules_load_on_first_lookup_only(monkeypatch):
    imported: list[str] = []
    reg = _fresh("test lazy", "nmp.arch.policies")
    monkeypatch.setattr(
        "nmp.registry.importlib.import_module",
        lambda name: imported.append(name) or reg.register(_Variant("late")),
    )
    assert imported == []
    assert reg.names() == ("late",)
    reg.names()
    assert imported == [f"nmp.arch.policies.{m}" for m in policy_modules]


def test_a_nameless_item_is_refused():
    reg = _fresh("test variant")
    with pytest.raises(NmpError, match="non-empty string name"):
        reg.register(object())


def test_a_registered_name_is_found_without_loading_the_other_modules(monkeypatch):
    imported: list[str] = []
    reg = _fresh("test lazy", "nmp.shard.sharders")
    monkeypatch.setattr("nmp.registry.importlib.import_module", imported.append)
    early = reg.register(_Variant("early"))
    assert reg.get("early") is early and imported == []
    with pytest.raises(NmpError, match="unknown test lazy 'late'"):
        reg.get("late")
    assert imported == [f"nmp.shard.sharders.{m}" for m in sharder_modules]


def test_unregister_forgets_a_name():
    reg = _fresh("test variant")
    reg.register(_Variant("x"))
    reg.unregister("x")
    reg.unregister("x")  # absent: nothing
    assert reg.names() == ()
    reg.register(_Variant("x", "a different object, now allowed"))


def test_every_family_gives_the_same_unknown_name_error():
    from nmp.arch.policies import POLICIES
    from nmp.cache.policy import CACHE_POLICIES
    from nmp.compress.codec import CODECS
    from nmp.design import FAMILIES
    from nmp.gpu.variants import GPU_VARIANTS
    from nmp.shard.registry import SHARDERS

    for reg in (POLICIES, CACHE_POLICIES, CODECS, FAMILIES, GPU_VARIANTS, SHARDERS):
        with pytest.raises(NmpError, match=rf"^unknown {reg.kind} 'nope' \(known: \w"):
            reg.get("nope")


def test_a_package_is_walked_in_name_order_and_a_marker_filters_it():
    assert package_modules("nmp.arch.policies") == [
        f"nmp.arch.policies.{m}" for m in policy_modules
    ]
    assert package_modules("nmp.workload.distributions") == [
        f"nmp.workload.distributions.{m}" for m in package_files(NMP / "workload" / "distributions")
    ]
    assert {"base", "cross_level", "horizontal", "host", "vertical"} <= set(policy_modules)
    assert package_modules("nmp.compress", r"^CODECS: ") == ["nmp.compress.codec"]
    assert "nmp.__main__" not in package_modules("nmp")


def test_a_marker_reads_each_module_in_its_own_folder(tmp_path, monkeypatch):
    """A package over two folders (a namespace package, a plugin beside the kit): a module in
    the second folder is read there, not looked for in the first."""
    for root, module in (("one", "alpha"), ("two", "beta")):
        (tmp_path / root / "nsdemo").mkdir(parents=True)
        (tmp_path / root / "nsdemo" / f"{module}.py").write_text("MARK = 1\n")
        monkeypatch.syspath_prepend(str(tmp_path / root))
    assert sorted(package_modules("nsdemo", r"^MARK = ")) == ["nsdemo.alpha", "nsdemo.beta"]


def test_a_new_module_in_the_package_is_found(tmp_path, monkeypatch):
    """Adding a variant is adding its module: the registry finds it, no list to edit."""
    pkg = tmp_path / "regdemo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "alpha.py").write_text(
        "from nmp.registry import REGISTRIES\nREGISTRIES['test found'].register(name='a')(1)\n"
    )
    (pkg / "helper.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = _fresh("test found", "regdemo", r"^REGISTRIES\[")
    assert reg.modules() == ["regdemo.alpha"]
    assert reg.names() == ("a",)


def test_order_keys_the_listing():
    REGISTRIES.pop("test ordered", None)
    reg = Registry("test ordered", order=lambda v: v.description)
    reg.register(_Variant("late", "2"))
    reg.register(_Variant("early", "1"))
    assert reg.names() == ("early", "late")


def test_an_instance_names_the_module_that_registered_it():
    """A cache policy is a Policy instance (class in nmp.cache.policy) registered by its own
    module: --registries names that module, not the class's."""
    from types import SimpleNamespace

    reg = _fresh("test variant")
    reg.register(SimpleNamespace(name="y", description="its class is types'"))
    reg.register(_module_level_function, name="f")
    modules = {r["name"]: r["module"] for r in reg.describe()}
    assert modules == {"y": __name__, "f": __name__}


def _module_level_function() -> None:
    """A function names its own module."""
