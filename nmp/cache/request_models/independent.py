"""``independent``: every table's key drawn on its own, by the workload's generator (the
default)."""

from __future__ import annotations

from typing import Any

from nmp.cache.request_models import REQUEST_MODELS, RequestModel
from nmp.cache.requests import RequestStream, request_stream


class Independent(RequestModel):
    name = "independent"
    description = "independent keys per table"
    has_users = False

    def parameters(self, cfg: Any) -> tuple:
        return ()

    def stream(self, cfg: Any, spec, requests: int, elem_bytes: int) -> RequestStream:
        return request_stream(spec, requests, cfg.seed)

    def describe(self, cfg: Any, spec, how: str) -> str:
        return f"generator {how} (seed {cfg.seed})"


REQUEST_MODELS.register(Independent())
