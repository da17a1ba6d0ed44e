"""The one way variants are registered and found.

A variant family (placement policies, recovery strategies, sharders, cache policies, codecs,
plots, claim models, design families, commands) is one :class:`Registry`. A variant's module
registers it once, with :meth:`Registry.register` (a decorator, or a plain call on an object
that has a ``name``); stages then ask the registry, never test a name:

* :meth:`Registry.get` returns the variant, or raises :class:`~nmp.errors.NmpError` naming the
  family and listing the known names (the same one-line error everywhere);
* :meth:`Registry.names` lists the names in registration order (CLI choices, docs, tests);
* a registry finds its members itself: on its first lookup it imports the modules of its
  ``package`` (walked with :mod:`pkgutil`, submodules included; with a ``marker``, only those
  whose source matches it), so a family's modules load only when the family is used
  (``nmp --help`` imports none of them) and adding a variant is adding its module: no list of
  module names is kept anywhere.

Registering a second, different object under a name already taken raises ``NmpError``: two
modules that claim one name are a bug, not a silent override. Every registry created here is
listed in :data:`REGISTRIES`, which ``nmp models --registries`` prints (as Ramulator 2 dumps its
factories); :func:`load_all_registries` finds the modules that declare one the same way.

This module is the one place that imports nmp modules by name (tests/test_layers.py checks it).
"""

from __future__ import annotations

import importlib
import re
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from nmp.errors import NmpError

T = TypeVar("T")

#: Every registry, by family name (the ``kind`` given to :class:`Registry`).
REGISTRIES: dict[str, Registry[Any]] = {}


def _describe(item: Any) -> str:
    """A one-line description: the item's ``description``, else its docstring's first line."""
    text = getattr(item, "description", None)
    if not isinstance(text, str) or not text:
        text = (getattr(item, "__doc__", None) or "").strip()
    return text.splitlines()[0].strip() if text else ""


def _module(item: Any) -> str:
    """The module that defines ``item`` (a function, a class, or an instance's class)."""
    module = getattr(item, "__module__", None)
    if not isinstance(module, str):
        module = type(item).__module__
    return module


def _defines_itself(item: Any) -> bool:
    """A function or a class names its own module; an instance names its class's."""
    return isinstance(
        item, type | types.FunctionType | types.BuiltinFunctionType | types.MethodType
    )


def package_modules(package: str, marker: str | None = None) -> list[str]:
    """The modules of ``package`` and its subpackages, in name order, without importing any
    (:func:`pkgutil.iter_modules` over the folders); with ``marker`` (a regular expression,
    matched per line) only those whose source matches it. ``__main__`` modules are left out."""
    import importlib.util  # (here, with pkgutil: a preset lookup walks no package; issue 43)
    import pkgutil

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise NmpError(f"registry package '{package}' is not a package")
    pattern = re.compile(marker, re.MULTILINE) if marker else None
    found: list[str] = []

    def walk(folders: list[str], prefix: str) -> None:
        for info in pkgutil.iter_modules(folders, prefix):
            leaf = info.name.rpartition(".")[2]
            if leaf == "__main__":
                continue
            # its own folder of the path (a FileFinder's; the first folder for another finder)
            folder = Path(getattr(info.module_finder, "path", folders[0])) / leaf
            source = folder / "__init__.py" if info.ispkg else folder.with_suffix(".py")
            if pattern is None or (source.is_file() and pattern.search(source.read_text())):
                found.append(info.name)
            if info.ispkg:
                walk([str(folder)], info.name + ".")

    walk(list(spec.submodule_search_locations), package + ".")
    return found


class Registry(Generic[T]):
    """Named variants of one family.

    ``kind`` names the family in errors and listings ("placement policy"). On the first lookup
    the modules of ``package`` are imported (those matching ``marker`` where it is given: a
    family whose variants share a package with other code); each registers its variants when
    imported. ``order`` (a key of a variant) orders the listing where registration order
    (module name order) is not the one a comparison prints.
    """

    def __init__(
        self,
        kind: str,
        *,
        package: str | None = None,
        marker: str | None = None,
        order: Callable[[T], Any] | None = None,
    ) -> None:
        if kind in REGISTRIES:
            raise NmpError(f"registry '{kind}' created twice")
        self.kind = kind
        self._package = package
        self._marker = marker
        self._order = order
        self._items: dict[str, T] = {}
        # the module that registered each instance (its class may be defined elsewhere)
        self._registered_in: dict[str, str] = {}
        self._loaded = package is None
        REGISTRIES[kind] = self

    # -- registering ---------------------------------------------------------------------------

    @overload
    def register(self, item: T, /) -> T: ...
    @overload
    def register(self, item: T, /, *, name: str) -> T: ...
    @overload
    def register(self, item: None = None, /, *, name: str) -> Callable[[T], T]: ...

    def register(self, item: Any = None, /, *, name: str | None = None) -> Any:
        """Register ``item`` under ``name`` (default: ``item.name``); usable as a decorator.

        ``@registry.register`` uses the object's ``name`` attribute;
        ``@registry.register(name="x")`` gives the name explicitly (for functions).
        """
        if item is None:
            if name is None:
                raise TypeError("register() needs an item or name=")
            return lambda obj: self._add(name, obj)
        key = name if name is not None else getattr(item, "name", None)
        if not isinstance(key, str) or not key:
            raise NmpError(f"a {self.kind} must have a non-empty string name, got {key!r}")
        added = self._add(key, item)
        if not _defines_itself(item):
            self._registered_in[key] = sys._getframe(1).f_globals.get("__name__", "")
        return added

    def _add(self, key: str, item: T) -> T:
        old = self._items.get(key)
        if old is not None and old is not item and old != item:
            raise NmpError(f"{self.kind} '{key}' registered twice")
        self._items[key] = item
        return item

    def unregister(self, name: str) -> None:
        """Forget ``name`` (a test's temporary variant); nothing if it is not registered."""
        self._items.pop(name, None)
        self._registered_in.pop(name, None)

    # -- finding -------------------------------------------------------------------------------

    def modules(self) -> list[str]:
        """The modules this registry imports on its first lookup."""
        if self._package is None:
            return []
        return package_modules(self._package, self._marker)

    def load(self) -> None:
        """Import the package's modules (once); each registers its variants."""
        if self._loaded:
            return
        self._loaded = True  # before importing: a module's register() must not recurse here
        for module in self.modules():
            importlib.import_module(module)

    def _listed(self) -> dict[str, T]:
        """The variants in listing order: by ``order`` where given, else as registered."""
        self.load()
        if self._order is None:
            return self._items
        key = self._order
        return dict(sorted(self._items.items(), key=lambda kv: key(kv[1])))

    def get(self, name: str) -> T:
        """The variant ``name``; an NmpError listing the known names when there is none.

        A name already registered is returned without importing the family's other modules
        (a claim model's module registers it when the claim names it)."""
        try:
            return self._items[name]
        except (KeyError, TypeError):
            pass
        self.load()
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise NmpError(self.unknown_message(name)) from None

    def unknown_message(self, name: object) -> str:
        """The one-line error for an unknown name (for callers that add a file or key)."""
        known = ", ".join(self._listed()) or "none registered"
        return f"unknown {self.kind} {name!r} (known: {known})"

    def names(self) -> tuple[str, ...]:
        return tuple(self._listed())

    def items(self) -> tuple[tuple[str, T], ...]:
        return tuple(self._listed().items())

    def describe(self) -> list[dict[str, str]]:
        """One row per variant: name, description and defining module (``nmp models``)."""
        return [
            {
                "name": k,
                "description": _describe(v),
                "module": self._registered_in.get(k) or _module(v),
            }
            for k, v in self.items()
        ]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name not in self._items:
            self.load()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._items)} registered)"


# A module that declares a registry: ``NAME: Registry[...] = Registry(`` (or a PresetRegistry) at
# the start of a line.
_DECLARES_A_REGISTRY = r"^\w+(: [^=]+)? = (Preset)?Registry\("


def load_all_registries() -> dict[str, Registry[Any]]:
    """Every registry of the kit: the modules of ``nmp`` that declare one are found by their
    source (:data:`_DECLARES_A_REGISTRY`) and imported, then each registry is returned."""
    for module in package_modules("nmp", _DECLARES_A_REGISTRY):
        importlib.import_module(module)
    return dict(REGISTRIES)


def all_registries() -> dict[str, Registry[Any]]:
    """Every registry created so far (a family's registry exists once the module that declares
    it is imported; :func:`load_all_registries` imports them all)."""
    return dict(REGISTRIES)
