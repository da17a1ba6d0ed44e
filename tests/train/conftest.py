"""A training configuration small enough for the test budget (8 tables, tiny MLP)."""

from __future__ import annotations

import pytest

from nmp.train.config import TrainConfig


def tiny(**kw) -> TrainConfig:
    base = dict(
        steps=120,
        max_tables=8,
        max_rows=400,
        bottom=(16,),
        top=(16,),
        eval_batches=4,
        batch=64,
        cost_sample=10_000,  # time the architecture on step 0 only (the budget is CPU seconds)
        mtbf_steps=120.0,
    )
    base.update(kw)
    return TrainConfig(**base)


@pytest.fixture(scope="session")
def tiny_cfg():
    """``tiny_cfg(**overrides)`` -> a small TrainConfig."""
    return tiny


@pytest.fixture(scope="session")
def failure_free():
    from nmp.train.trainer import run

    cache = {}

    def get(**kw):
        key = tuple(sorted(kw.items()))
        if key not in cache:
            cache[key] = run(tiny(**kw), "failure-free", [])
        return cache[key]

    return get
