"""How ``nmp cache`` generates requests when no file gives them (``--request-model``, a cache
study's ``params.request_models``), one module each: :mod:`.independent` (every table's key
drawn on its own: the workload generator) and :mod:`.users` (users whose histories draw related
rows across tables).

A model turns a cache configuration and its workload into a request stream and says in words
what it drew; ``has_users`` says whether the configuration's user parameters (``users``,
``user_history``, ``user_locality``, ``user_alpha``) shape it, so that the study sweeps them and
its rows report them only where they do. Adding one: a module here that registers a
:class:`RequestModel` with ``REQUEST_MODELS.register(...)`` (found by that line).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from nmp.registry import Registry

if TYPE_CHECKING:
    import numpy as np

    from nmp.cache.requests import RequestStream
    from nmp.workload.batch import LookupBatch
    from nmp.workload.spec import WorkloadSpec


class RequestModel(ABC):
    """One law of generated inference requests."""

    name: str
    description: str
    has_users: bool

    @abstractmethod
    def parameters(self, cfg: Any) -> tuple:
        """The configuration's values this model reads (with the workload, the request count
        and the seed: what identifies its stream, for reuse)."""

    @abstractmethod
    def stream(self, cfg: Any, spec: WorkloadSpec, requests: int, elem_bytes: int) -> RequestStream:
        """``requests`` requests of ``spec`` drawn with ``cfg.seed``."""

    @abstractmethod
    def describe(self, cfg: Any, spec: WorkloadSpec, how: str) -> str:
        """Where the requests came from, in words (``how``: the workload's distribution)."""

    def requests_and_users(
        self, cfg: Any, spec: WorkloadSpec, requests: int
    ) -> tuple[LookupBatch, np.ndarray] | None:
        """The requests with the user of each (``--save-requests`` writes them); None where
        the model has no users."""
        return None


REQUEST_MODELS: Registry[RequestModel] = Registry(
    "request model", package="nmp.cache.request_models", marker=r"^REQUEST_MODELS\.register\("
)
