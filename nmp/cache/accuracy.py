"""AUC change of inference served through the cache, against full-precision inference.

The model is the trainer's DLRM (:mod:`nmp.train`) trained briefly on the synthetic teacher
(``nmp train``'s stream; tables capped at ``max_rows`` rows as ``nmp train`` does). Its
held-out batches are the measured requests; the last training batches warm the cache first.
The cache keeps the *same fraction of the table* in each layer as the serving configuration
does on the full-size workload (its entries per table row), since the trained tables are
smaller. Each lookup is then served as the cache would serve it: L1 and misses exactly, L2 hits
quantized and dequantized, L3 hits with the substitute's vector (quantized if the substitute sits
in L2). The AUC change is AUC(served) - AUC(exact) on the same samples, with a 95 % interval
from a paired bootstrap over the samples (seeded).
"""

from __future__ import annotations

import functools

import numpy as np

from nmp.cache import engine, quant
from nmp.cache.neighbors import substitute_map
from nmp.train.config import TrainConfig
from nmp.train.metrics import auc


@functools.cache
def trained_model(workload: str, steps: int, seed: int, eval_batches: int, alpha: float = 0.0):
    """A trained trainer (``nmp.train.trainer.run`` with no failures); cached per process."""
    # torch: loaded on use (start-up time)
    from nmp.train.trainer import run

    cfg = TrainConfig(
        workload=workload, steps=steps, seed=seed, eval_batches=eval_batches, zipf_alpha=alpha
    )
    return run(cfg, "none", []).trainer


def _requests(batches, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys, lens = [], []
    for b in batches:
        t, bsz, p = b.ids.shape
        g = b.ids + offsets[:t, None, None]
        keys.append(g.transpose(1, 0, 2).reshape(-1))
        lens.append(np.full(bsz, t * p, dtype=np.int64))
    req_off = np.concatenate([[0], np.cumsum(np.concatenate(lens))]).astype(np.int64)
    return np.concatenate(keys).astype(np.int64), req_off


def auc_change(
    *,
    workload: str,
    policy,
    entries_per_row: tuple[float, float, float],
    l2_dtype: str,
    l3_bound: float,
    l3_candidates: int = 1024,
    steps: int = 300,
    alpha: float = 0.0,
    warm_batches: int = 32,
    eval_batches: int = 64,
    seed: int = 0,
    resamples: int = 400,
) -> dict[str, float]:
    """AUC change (served - exact) and its bootstrap interval; see the module docstring.

    ``entries_per_row`` are the L1, L2, L3 entries per table row of the serving configuration.
    """
    # torch: loaded on use (start-up time)
    import torch

    tr = trained_model(workload, steps, seed, eval_batches, alpha)
    dim = tr.geo.dim
    table = tr.store.snapshot_all()[:, :dim].astype(np.float32)
    offsets = tr.geo.offsets
    total = int(table.shape[0])
    num_tables = len(tr.geo.table_rows)
    warm = [tr.data.batch_at(s) for s in range(max(0, steps - warm_batches), steps)]
    wk, wo = _requests(warm, offsets)
    ek, eo = _requests(tr.eval_set, offsets)
    keys = np.concatenate([wk, ek])
    req_off = np.concatenate([wo, wo[-1] + eo[1:]])
    c1, c2, c3 = (int(round(e * total)) for e in entries_per_row)
    caps = (c1, c2, c3)
    subst = np.full(total, -1, dtype=np.int64)
    if caps[2] > 0:
        counts = np.bincount(wk, minlength=total)
        table_of = np.searchsorted(offsets, np.arange(total), side="right") - 1
        cands = min(l3_candidates, max(1, (caps[0] + caps[1]) // num_tables))
        subst, _ = substitute_map(table_of, table, counts, candidates=cands, bound=l3_bound)
    codes, used, _ = engine.simulate(
        keys, req_off, subst, caps, policy.insert_rule, policy.hit_rule
    )
    codes, used, keys = codes[wk.size :], used[wk.size :], keys[wk.size :]
    exact = table[keys]
    served = exact.copy()
    l2 = codes == engine.L2_HIT
    served[l2] = quant.quantize_dequantize(exact[l2], l2_dtype)
    via1 = codes == engine.L3_VIA_L1
    served[via1] = table[used[via1]]
    via2 = codes == engine.L3_VIA_L2
    served[via2] = quant.quantize_dequantize(table[used[via2]], l2_dtype)

    labels: list[np.ndarray] = []
    p_exact: list[np.ndarray] = []
    p_served: list[np.ndarray] = []
    pos = 0
    with torch.no_grad():
        for b in tr.eval_set:
            t, bsz, p = b.ids.shape
            n = t * bsz * p
            dense = torch.from_numpy(b.dense)
            for vec, out in ((exact, p_exact), (served, p_served)):
                pooled = vec[pos : pos + n].reshape(bsz, t, p, dim).sum(axis=2)
                logit = tr.dense(dense, torch.from_numpy(np.ascontiguousarray(pooled)))
                out.append(torch.sigmoid(logit).numpy())
            labels.append(b.label)
            pos += n
    y = np.concatenate(labels)
    pe, ps = np.concatenate(p_exact), np.concatenate(p_served)
    auc_exact, auc_served = auc(y, pe), auc(y, ps)
    rng = np.random.default_rng([seed, 0xA0C])
    diffs = np.empty(resamples)
    for i in range(resamples):
        idx = rng.integers(0, y.size, y.size)
        diffs[i] = auc(y[idx], ps[idx]) - auc(y[idx], pe[idx])
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    n = max(1, codes.size)
    return {
        "auc_exact": auc_exact,
        "auc_served": auc_served,
        "auc_change": auc_served - auc_exact,
        "auc_change_ci_lo": float(lo),
        "auc_change_ci_hi": float(hi),
        "acc_samples": int(y.size),
        "acc_l2_share": float(np.count_nonzero(l2)) / n,
        "acc_l3_share": float(np.count_nonzero(via1 | via2)) / n,
        "acc_train_steps": steps,
    }
