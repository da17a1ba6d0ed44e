"""The one way variants are registered and found.

A variant family (placement policies, recovery strategies, sharders, cache policies, codecs,
plots, claim models, design families, commands) is one :class:`Registry`. A variant's module
registers it once, with :meth:`Registry.register` (a decorator, or a plain call on an object
that has a ``name``); stages then ask the registry, never test a name:

* :meth:`Registry.get` returns the variant, or raises :class:`~nmp.errors.NmpError` naming the
  family and listing the known names (the same one-line error everywhere);
* :meth:`Registry.names` lists the names in registration order (CLI choices, docs, tests);
* a registry that declares ``modules`` imports them on its first lookup, so a family's modules
  load only when the family is used (``nmp --help`` imports none of them).

Registering a second, different object under a name already taken raises ``NmpError``: two
modules that claim one name are a bug, not a silent override. Every registry created here is
listed in :data:`REGISTRIES`, which ``nmp models --registries`` prints (as Ramulator 2 dumps its
factories).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
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


class Registry(Generic[T]):
    """Named variants of one family.

    ``kind`` names the family in errors and listings ("placement policy"); ``modules`` are
    imported on first lookup (each registers its variants when imported).
    """

    def __init__(self, kind: str, modules: Sequence[str] = ()) -> None:
        if kind in REGISTRIES:
            raise NmpError(f"registry '{kind}' created twice")
        self.kind = kind
        self._modules = tuple(modules)
        self._items: dict[str, T] = {}
        self._loaded = not self._modules
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
        return self._add(key, item)

    def _add(self, key: str, item: T) -> T:
        old = self._items.get(key)
        if old is not None and old is not item and old != item:
            raise NmpError(f"{self.kind} '{key}' registered twice")
        self._items[key] = item
        return item

    def unregister(self, name: str) -> None:
        """Forget ``name`` (a test's temporary variant); nothing if it is not registered."""
        self._items.pop(name, None)

    # -- finding -------------------------------------------------------------------------------

    def load(self) -> None:
        """Import the declared modules (once); each registers its variants."""
        if self._loaded:
            return
        self._loaded = True  # before importing: a module's register() must not recurse here
        for module in self._modules:
            importlib.import_module(module)

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
        self.load()
        known = ", ".join(self._items) or "none registered"
        return f"unknown {self.kind} {name!r} (known: {known})"

    def names(self) -> tuple[str, ...]:
        self.load()
        return tuple(self._items)

    def items(self) -> tuple[tuple[str, T], ...]:
        self.load()
        return tuple(self._items.items())

    def describe(self) -> list[dict[str, str]]:
        """One row per variant: name, description and defining module (``nmp models``)."""
        return [
            {"name": k, "description": _describe(v), "module": _module(v)} for k, v in self.items()
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


def all_registries() -> dict[str, Registry[Any]]:
    """Every registry created so far (a family's registry exists once the module that declares
    it is imported: :data:`nmp.catalog.REGISTRY_MODULES` lists those modules)."""
    return dict(REGISTRIES)
