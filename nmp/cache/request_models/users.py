"""``users``: users whose histories draw related rows across tables (:mod:`nmp.cache.users`),
with the configuration's ``users``, ``user_history``, ``user_locality`` and ``user_alpha``."""

from __future__ import annotations

from typing import Any

from nmp.cache.request_models import REQUEST_MODELS, RequestModel
from nmp.cache.requests import RequestStream, stream_from_batches
from nmp.cache.users import user_requests


class Users(RequestModel):
    name = "users"
    description = "users' histories: related rows across tables (nmp.cache.users)"
    has_users = True

    def parameters(self, cfg: Any) -> tuple:
        return (cfg.user_model(),)

    def stream(self, cfg: Any, spec, requests: int, elem_bytes: int) -> RequestStream:
        batch = user_requests(spec, requests, cfg.user_model(), cfg.seed)[0]
        return stream_from_batches([batch], elem_bytes)

    def describe(self, cfg: Any, spec, how: str) -> str:
        m = cfg.user_model()
        return (
            f"users generator {how}, users {m.users} (alpha {m.alpha_for(spec):g}), "
            f"history {m.history}, locality {m.locality:g} (seed {cfg.seed})"
        )

    def requests_and_users(self, cfg: Any, spec, requests: int):
        return user_requests(spec, requests, cfg.user_model(), cfg.seed)


REQUEST_MODELS.register(Users())
