"""The numba cache layers against the plain-Python reference, hit for hit."""

import numpy as np
import pytest

from nmp.cache import engine, policy
from nmp.cache.policy import HIT_COUNT, HIT_GROUP_MAX
from tests.cache.reference import simulate_reference


def _stream(seed, requests=300, per_req=5, n_keys=60, alpha=1.2):
    rng = np.random.default_rng(seed)
    p = (np.arange(n_keys) + 1.0) ** -alpha
    keys = rng.choice(n_keys, requests * per_req, p=p / p.sum()).astype(np.int64)
    lens = rng.integers(1, 2 * per_req, requests)
    off = np.concatenate([[0], np.cumsum(lens)])
    off = off[off <= keys.size]
    subst = np.where(rng.random(n_keys) < 0.5, rng.integers(0, n_keys, n_keys), -1)
    return keys[: off[-1]], off.astype(np.int64), subst.astype(np.int64)


def _nb(pol, off):
    longest = int(np.diff(off).max())
    return (
        longest + 2 if pol.hit_rule == HIT_GROUP_MAX else (4098 if pol.hit_rule == HIT_COUNT else 2)
    )


@pytest.mark.parametrize("name", policy.names())
@pytest.mark.parametrize("caps", [(8, 0, 0), (5, 12, 0), (6, 10, 20), (0, 0, 0), (1, 1, 3)])
@pytest.mark.parametrize("seed", [0, 1])
def test_engine_matches_reference(name, caps, seed):
    pol = policy.get(name)
    keys, off, subst = _stream(seed)
    codes, used, held = engine.simulate(keys, off, subst, caps, pol.insert_rule, pol.hit_rule)
    ref_codes, ref_used = simulate_reference(
        keys, off, subst, caps, pol.insert_rule, pol.hit_rule, _nb(pol, off)
    )
    assert codes.tolist() == ref_codes
    assert used.tolist() == ref_used
    assert (held <= np.asarray(caps)).all()


def test_policies_differ_on_a_stream():
    """The three rules are not the same cache in disguise: on one stream they hit differently."""
    keys, off, subst = _stream(3, requests=400)
    hits = {}
    for name in ("lru", "lfu", "groupscore"):
        pol = policy.get(name)
        codes, _, _ = engine.simulate(keys, off, subst, (6, 0, 0), pol.insert_rule, pol.hit_rule)
        hits[name] = int(np.count_nonzero(codes))
    assert len(set(hits.values())) == 3, hits


def test_lru_by_hand():
    # capacity 2, one key per request: a b a c b -> miss miss hit miss(evicts b) miss
    keys = np.array([0, 1, 0, 2, 1], dtype=np.int64)
    off = np.arange(6, dtype=np.int64)
    pol = policy.get("lru")
    codes, _, _ = engine.simulate(
        keys, off, np.full(3, -1), (2, 0, 0), pol.insert_rule, pol.hit_rule
    )
    assert codes.tolist() == [0, 0, 1, 0, 0]


def test_groupscore_keeps_keys_of_good_groups():
    # request (0,1) twice makes both score 2; key 2 alone scores 0 and is the victim for 3
    keys = np.array([0, 1, 0, 1, 2, 3, 0, 1], dtype=np.int64)
    off = np.array([0, 2, 4, 5, 6, 8], dtype=np.int64)
    pol = policy.get("groupscore")
    codes, _, _ = engine.simulate(
        keys, off, np.full(4, -1), (3, 0, 0), pol.insert_rule, pol.hit_rule
    )
    assert codes.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]


def test_unknown_policy():
    from nmp.errors import NmpError

    with pytest.raises(NmpError, match="unknown cache policy 'fifo'"):
        policy.get("fifo")
