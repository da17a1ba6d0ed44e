"""The dense half of a step, shared by the single-process trainer and the distributed workers.

Each data-parallel worker runs forward and backward on its micro-batch (its contiguous slice of
the batch) with the loss summed over its samples and divided by the *whole* batch's size, so
that the workers' gradients add up to the batch's. The gradients are added in worker order
(:func:`add_grads`) and every replica applies the same update (:func:`apply_update`): plain SGD
or heavy-ball momentum, written out by hand (torch.optim would pull in torch._dynamo, 3 s).

Inputs go to torch as copies in torch's own (64-byte aligned) memory: BLAS kernels may take
other code paths on other alignments, and the two paths must round alike.
"""

from __future__ import annotations

import numpy as np
import torch


def as_tensor(a: np.ndarray) -> torch.Tensor:
    """A float32 copy of ``a`` in torch's allocator (aligned alike in every process)."""
    return torch.tensor(np.ascontiguousarray(a, dtype=np.float32))


def micro_step(model, params, dense_x, pooled, label, batch_total: int, exchange=None):
    """Forward and backward of one micro-batch: (loss sum / batch_total as float, gradients of
    ``params`` (new tensors), gradient of the pooled input float32 [B, T, dim]).

    ``exchange(pooled_tensor) -> tensor`` stands between the servers' pooled vectors and the
    MLP (the SC'24 compressed all-to-all), or None."""
    pooled_t = as_tensor(pooled).requires_grad_(True)
    sent = exchange(pooled_t) if exchange is not None else pooled_t
    logit = model(as_tensor(dense_x), sent)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(
        logit, as_tensor(label), reduction="sum"
    ) / float(batch_total)
    for prm in params:
        prm.grad = None
    loss.backward()
    grads = [prm.grad.detach().clone() for prm in params]
    assert pooled_t.grad is not None  # (after backward)
    return float(loss.detach()), grads, pooled_t.grad.numpy().copy()


def add_grads(parts: list[list[torch.Tensor]]) -> list[torch.Tensor]:
    """The workers' gradients added in worker order."""
    out = [g.clone() for g in parts[0]]
    for part in parts[1:]:
        for acc, g in zip(out, part, strict=True):
            acc.add_(g)
    return out


def apply_update(params, velocity, grads, *, lr: float, momentum: float) -> None:
    """SGD (``w -= lr g``) or, with ``velocity``, heavy-ball momentum (``v = mu v + g``,
    ``w -= lr v``), in place."""
    with torch.no_grad():
        if velocity:
            for prm, vel, g in zip(params, velocity, grads, strict=True):
                vel.mul_(momentum).add_(g)
                prm.add_(vel, alpha=-lr)
        else:
            for prm, g in zip(params, grads, strict=True):
                prm.add_(g, alpha=-lr)


def flat_grads(grads: list[torch.Tensor]) -> np.ndarray:
    """The gradients as one float32 vector (what a worker sends to the others)."""
    return np.concatenate([g.numpy().reshape(-1) for g in grads]).astype(np.float32, copy=False)


def unflat_grads(flat: np.ndarray, like: list[torch.Tensor]) -> list[torch.Tensor]:
    out, at = [], 0
    for t in like:
        n = t.numel()
        out.append(torch.tensor(flat[at : at + n]).reshape(t.shape))
        at += n
    return out


def predict(model, dense_x, pooled) -> np.ndarray:
    """Click probabilities of one micro-batch (no gradient)."""
    with torch.no_grad():
        return torch.sigmoid(model(as_tensor(dense_x), as_tensor(pooled))).numpy()
