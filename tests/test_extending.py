"""docs/extending.md's promise, checked: a variant registered by a module nobody lists (here, this
test, at run time) is listed by its registry, chosen by the CLI and the specs that name one, and
named in the one-line error for an unknown name; no stage keeps its own copy of the names.

The cheap kinds only (no model run): the strategy's scale rows are in
tests/train/test_strategy_rows.py.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from nmp.errors import NmpError
from nmp.registry import Registry, all_registries

TOY = "test-toy"


@contextlib.contextmanager
def registered(registry: Registry[Any], item: Any, **name: str) -> Iterator[Any]:
    """``item`` in ``registry`` for the block, forgotten after (the registry's other members
    are loaded first, as a lookup would)."""
    registry.load()
    added = registry.register(item, **name)
    try:
        yield added
    finally:
        registry.unregister(name.get("name", TOY))


def listed(registry: Registry[Any]) -> list[str]:
    """The names ``nmp models --registries`` prints for ``registry`` (its catalog's rows)."""
    assert all_registries()[registry.kind] is registry
    return [row["name"] for row in registry.describe()]


def unknown_error(registry: Registry[Any]) -> str:
    with pytest.raises(NmpError) as info:
        registry.get("nope")
    return info.value.message


def test_a_cache_policy_is_listed_and_chosen_by_the_cli():
    from nmp.cache.policy import CACHE_POLICIES, HIT_MOVE_TO_TAIL, INSERT_ZERO, Policy
    from nmp.cli import build_parser

    toy = Policy(TOY, "LRU under another name", INSERT_ZERO, HIT_MOVE_TO_TAIL)
    with registered(CACHE_POLICIES, toy):
        assert TOY in listed(CACHE_POLICIES)
        row = next(r for r in CACHE_POLICIES.describe() if r["name"] == TOY)
        assert row["module"] == __name__  # the module that registered it, not nmp.cache.policy
        assert f", {TOY}" in unknown_error(CACHE_POLICIES)
        parser = build_parser(["cache"])
        assert parser.parse_args(["cache", "--policy", TOY]).policy == TOY
        err = io.StringIO()
        with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
            parser.parse_args(["cache", "--policy", "nope"])
        assert TOY in err.getvalue()


def test_an_l2_format_sizes_rows_and_is_taken_by_the_cache_and_its_study():
    from nmp.cache import quant
    from nmp.cache.serve import CacheConfig
    from nmp.cache.study import check_params
    from nmp.cli import build_parser

    two_bit = quant.RowwiseAffine(2)
    two_bit.name = TOY
    with registered(quant.L2_FORMATS, two_bit):
        assert TOY in listed(quant.L2_FORMATS)
        assert f", {TOY}" in unknown_error(quant.L2_FORMATS)
        # 16 two-bit elements pack into 4 bytes, then the row's minimum and step
        assert quant.row_bytes(16, TOY) == 4 + 8
        x = np.linspace(-1.0, 1.0, 64, dtype=np.float32).reshape(4, 16)
        served = quant.quantize_dequantize(x, TOY)
        assert np.unique(served[0]).size == 4  # two bits: four levels per row
        assert (np.abs(served - x) <= quant.error_bound(x, TOY)).all()
        CacheConfig(l2_dtype=TOY).check()
        assert check_params({"l2_dtypes": [TOY]})["l2_dtypes"] == [TOY]
        parser = build_parser(["cache"])
        assert parser.parse_args(["cache", "--l2-dtype", TOY]).l2_dtype == TOY
    with pytest.raises(NmpError, match=f"unknown L2 dtype '{TOY}'"):
        CacheConfig(l2_dtype=TOY).check()
    with pytest.raises(NmpError, match=f"params.l2_dtypes: unknown L2 dtype '{TOY}'"):
        check_params({"l2_dtypes": [TOY]})


def test_a_request_model_draws_the_cache_requests_and_its_users_are_swept():
    from nmp.cache.request_models import REQUEST_MODELS
    from nmp.cache.request_models.users import Users
    from nmp.cache.serve import CacheConfig, run_cache
    from nmp.cache.study import check_params, configs
    from nmp.cli import build_parser

    class FewUsers(Users):
        """The users' law with a tenth of the configured users: a model of its own."""

        name = TOY
        description = "a tenth of the users"

        def parameters(self, cfg: Any) -> tuple:
            return (cfg.users // 10, *super().parameters(cfg))

        def stream(self, cfg: Any, spec, requests: int, elem_bytes: int):
            return super().stream(self._fewer(cfg), spec, requests, elem_bytes)

        def describe(self, cfg: Any, spec, how: str) -> str:
            return "a tenth: " + super().describe(self._fewer(cfg), spec, how)

        @staticmethod
        def _fewer(cfg: Any) -> Any:
            import dataclasses

            return dataclasses.replace(cfg, users=max(1, cfg.users // 10))

    with registered(REQUEST_MODELS, FewUsers()):
        assert TOY in listed(REQUEST_MODELS)
        assert f", {TOY}" in unknown_error(REQUEST_MODELS)
        parser = build_parser(["cache"])
        assert parser.parse_args(["cache", "--request-model", TOY]).request_model == TOY
        base = {"workload": "criteo-kaggle", "requests": 800, "warmup": 400, "backend": ""}
        base |= {"accuracy": False, "l1_mb": 0.5, "policy": "lru", "users": 2000}
        row = run_cache(CacheConfig(**base, request_model=TOY))
        assert row["request_model"] == TOY and "a tenth: users generator" in row["source"]
        assert "users 200 " in row["source"]
        # the study sweeps a model's users where it has them, whatever its name
        params = check_params({"request_models": [TOY], "users": [100, 300], "l2_dtypes": []})
        swept = {(c.request_model, c.users) for c in configs(params)}
        assert {(TOY, 100), (TOY, 300)} <= swept


def test_a_codec_is_listed_and_taken_by_the_trainer_config():
    from nmp.compress import make_codec, measure
    from nmp.compress.codec import CODECS, Encoded, check_chunk
    from nmp.config import KeyedValueError
    from nmp.train.config import TrainConfig

    class Identity:
        name = TOY
        lossy = False
        description = "identity"

        def encode(self, x: np.ndarray, eb_rel: float, *, table: int = 0) -> Encoded:
            x = check_chunk(x)
            return Encoded(self.name, x.shape, {"data": x.tobytes()})

        def decode(self, enc: Encoded) -> np.ndarray:
            return np.frombuffer(enc.parts["data"], dtype=np.float32).reshape(enc.shape).copy()

    with registered(CODECS, Identity, name=TOY):
        assert TOY in listed(CODECS)
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        codec = make_codec(TOY)
        assert np.array_equal(codec.decode(codec.encode(x, 0.03)), x)
        assert measure(codec, [x], 0.03, repeats=1)["ratio"] < 1  # the header costs bytes
        TrainConfig(compress=TOY).validate()
        with pytest.raises(KeyedValueError, match=rf"unknown codec 'nope' \(known: .*{TOY}"):
            TrainConfig(compress="nope").validate()


def test_a_salp_reading_and_a_rankcache_policy_are_choices_of_the_spec():
    """The spec took its choices from a copy of the names made at import: a reading registered
    after it was listed by ``nmp models --registries`` and refused by ``arch.bank.salp``."""
    from nmp.arch.presets import load_arch_spec
    from nmp.arch.salp_readings import SALP_READINGS_REGISTRY, SalpReading
    from nmp.arch.spec import RANK_CACHE_POLICIES, RankCachePolicy

    reading = SalpReading(TOY, "masa under another name", 8, 8, lambda t, c, n: None)
    policy = RankCachePolicy(TOY, "online under another name", False, True)
    with registered(SALP_READINGS_REGISTRY, reading), registered(RANK_CACHE_POLICIES, policy):
        assert TOY in listed(SALP_READINGS_REGISTRY) and TOY in listed(RANK_CACHE_POLICIES)
        spec = load_arch_spec("recross", {"bank.salp": TOY})
        assert spec.bank.salp == TOY
        spec = load_arch_spec("recnmp", {"rank.cache_policy": TOY})
        assert spec.rank.cache_policy == TOY
    with pytest.raises(NmpError, match=r"unknown reading 'nope' \(known: salp1"):
        load_arch_spec("recross", {"bank.salp": "nope"})


def test_a_sharder_is_listed_and_named_in_the_unknown_name_error():
    from nmp.shard.registry import SHARDERS, get_sharder, sharder_names

    class Toy:
        name = TOY
        description = "places nothing"
        uses_row_stats = False

        def place(self, problem):
            raise NotImplementedError

    with registered(SHARDERS, Toy()):
        assert TOY in listed(SHARDERS) and TOY in sharder_names()
        assert get_sharder(TOY).name == TOY
        assert unknown_error(SHARDERS).endswith(f"{TOY})")
