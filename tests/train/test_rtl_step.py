"""The PyRTL parity unit, co-simulated on a real training step's parity update."""

from __future__ import annotations

import numpy as np

from nmp.rtl.parity import ParityUnitConfig
from nmp.rtl.sim import simulate
from nmp.rtl.stream import UpdateStream, int_to_word
from nmp.train.trainer import Trainer


def test_the_rtl_parity_unit_computes_a_training_steps_parity_update(tiny_cfg):
    tr = Trainer(tiny_cfg(steps=2), parity=True)
    store = tr.store
    seen = []
    before = store.parity.copy()
    tr.train_step(between_hook=seen.append)  # phase 1 done; the hook sees the commit log
    p = seen[0]
    stripes = store.stripe_of[p.rows]
    chosen = np.unique(stripes)[:6]  # every update of six stripes, in commit order
    sel = np.flatnonzero(np.isin(stripes, chosen))
    words = store.record_bytes // 8
    local = np.searchsorted(chosen, stripes[sel])
    old = np.ascontiguousarray(p.old[sel]).view(np.uint8).reshape(len(sel), words, 8)
    new = np.ascontiguousarray(p.new[sel]).view(np.uint8).reshape(len(sel), words, 8)
    addr = (local[:, None] * words + np.arange(words)[None, :]).reshape(-1)
    n = len(addr)
    cfg = ParityUnitConfig(width=64, depth=64, stages=2)
    delta_by_addr = {}
    for a, o, w in zip(addr, old.reshape(n, 8), new.reshape(n, 8), strict=True):
        delta_by_addr[int(a)] = delta_by_addr.get(int(a), np.zeros(8, np.uint8)) ^ o ^ w
    stream = UpdateStream(
        valid=np.ones(n, bool),
        addr=addr.astype(np.int64),
        old=old.reshape(n, 8),
        new=new.reshape(n, 8),
        coef=np.ones(n, np.uint8),
        final_parity={a: d.tobytes() for a, d in delta_by_addr.items()},
    )
    sim = simulate(cfg, stream)
    # the store's parity change over the step (its parity units: nmp.arch.parity.xor_into)
    after = store.parity.reshape(store.stripes, -1)
    change = (after ^ before.reshape(store.stripes, -1))[chosen].reshape(-1, 8)
    for a, word in sim.readback.items():
        assert np.array_equal(int_to_word(word, 64), change[a]), a
    assert len(sim.readback) == len(chosen) * words
