"""Data files that name code: ``"module:function"`` references to registered functions.

Claims files (``nmp/papers/*/claims.toml``, key ``model``) and custom studies
(``workloads/sweeps/**/*.toml``, key ``runner``) name the function that computes them. The
string keeps its ``module:function`` form, but it resolves only to a function its module
registered, with :func:`claim_model` or :func:`study_runner`: a data file can run a model or a
study, never another callable that happens to be reachable (a re-exported class, a helper
imported from the standard library, a private function).
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from typing import Any, TypeVar

from nmp.errors import NmpError, SpecError
from nmp.registry import Registry

F = TypeVar("F", bound=Callable[..., Any])

#: Claim models by ``module:function``: the modules of ``nmp.papers`` (one folder per paper,
#: plus the models several papers share) register theirs when imported.
#: (The decorator is found as written: ``@claim_model``, ``@plugins.claim_model`` or
#: ``@nmp.plugins.claim_model``, each alone on its line.)
CLAIM_MODELS: Registry[Callable[..., Any]] = Registry(
    "claim model", package="nmp.papers", marker=r"^@(?:nmp\.)?(?:plugins\.)?claim_model$"
)

#: Custom-study runners by ``module:function``; the modules below register theirs when imported.
STUDY_RUNNERS: Registry[Callable[..., Any]] = Registry(
    "study runner", package="nmp", marker=r"^@(?:nmp\.)?(?:plugins\.)?study_runner$"
)


# the decorator that registers a function in each registry (for the error that names it)
_DECORATORS = {CLAIM_MODELS.kind: "claim_model", STUDY_RUNNERS.kind: "study_runner"}


def reference(fn: Callable[..., Any]) -> str:
    """The ``module:function`` string a data file names ``fn`` by."""
    return f"{fn.__module__}:{fn.__name__}"


def claim_model(fn: F) -> F:
    """Decorator: a claims file may name ``fn`` as a claim's ``model``."""
    CLAIM_MODELS.register(fn, name=reference(fn))
    return fn


def study_runner(fn: F) -> F:
    """Decorator: a custom study may name ``fn`` as its ``runner``."""
    STUDY_RUNNERS.register(fn, name=reference(fn))
    return fn


def load_callable(
    ref: Any, registry: Registry[Any], *, file: str | None = None, key: str | None = None
) -> Callable[..., Any]:
    """The function ``ref`` (``"nmp.pkg.module:function"``) names, if its module registered it
    in ``registry``; a one-line SpecError naming the file and key where it is malformed,
    outside ``nmp``, in no module, or not registered."""
    if not isinstance(ref, str) or ref.count(":") != 1:
        raise SpecError(f"must be 'module:function', got {ref!r}", file=file, key=key)
    module_name = ref.split(":")[0]
    if module_name != "nmp" and not module_name.startswith("nmp."):
        raise SpecError(
            f"'{ref}': only functions of the nmp package are allowed", file=file, key=key
        )
    try:
        module = importlib.import_module(module_name)  # registers the module's functions
    except ModuleNotFoundError as exc:
        raise SpecError(f"'{ref}': no module {exc.name!r}", file=file, key=key) from None
    try:
        return registry.get(ref)
    except NmpError as exc:
        if _unregistered_function(module, ref):  # say what registers it, not the known names
            raise SpecError(
                f"unknown {registry.kind} '{ref}': a function of that module, not registered "
                f"(decorate it with @nmp.plugins.{_DECORATORS[registry.kind]})",
                file=file,
                key=key,
            ) from None
        raise SpecError(exc.message, file=file, key=key) from None


def _unregistered_function(module: Any, ref: str) -> bool:
    """A public function defined in ``module`` that no plugin registry holds: what an author
    wrote and forgot to decorate (not a helper imported from elsewhere, not a private one)."""
    name = ref.split(":")[1]
    fn = getattr(module, name, None)
    return (
        not name.startswith("_")
        and isinstance(fn, types.FunctionType)
        and fn.__module__ == module.__name__
        and all(ref not in registry for registry in (CLAIM_MODELS, STUDY_RUNNERS))
    )


def load_claim_model(ref: Any, *, file: str | None = None, key: str | None = None):
    """The claim model ``ref`` names (see :func:`load_callable`)."""
    return load_callable(ref, CLAIM_MODELS, file=file, key=key)


def load_study_runner(ref: Any, *, file: str | None = None, key: str | None = None):
    """The study runner ``ref`` names (see :func:`load_callable`)."""
    return load_callable(ref, STUDY_RUNNERS, file=file, key=key)


__all__ = [
    "CLAIM_MODELS",
    "STUDY_RUNNERS",
    "claim_model",
    "load_callable",
    "load_claim_model",
    "load_study_runner",
    "reference",
    "study_runner",
]
