"""``sampling = "latin-hypercube"``: ``samples`` points in which every axis's values appear in
equal shares (within one), the balance a uniform draw of a sparse sample lacks.

The samples are shared among the blocks (design, memory, workload) in proportion to their
points, largest remainders first. Within a block each axis gets a stratified column (sample
``j`` of ``k`` takes value ``floor((j + u) * values / k)``, one ``u`` uniform in [0, 1) per
column) in a random order of its own (McKay, Beckman and Conover, Technometrics 21(2), 1979,
on a grid of discrete levels). Where two samples land on one point, the columns are permuted
again (the shares stay exact); a block dense enough that no permutation of
:data:`PERMUTATION_TRIES` avoids it is topped up with points drawn uniformly from those not
taken, and only such a block's shares can differ by more than one.
"""

from __future__ import annotations

import math

import numpy as np

from nmp.evaluate.samplers import INT64_POINTS, SAMPLERS, GridShape, Sampler, random_offset


def apportion(n: int, sizes: list[int]) -> list[int]:
    """``n`` samples shared in proportion to ``sizes`` (largest remainders, then block order);
    none above its block's size."""
    total = sum(sizes)
    exact = [n * s / total for s in sizes]
    shares = [int(e) for e in exact]
    order = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - shares[i]), i))
    for i in order[: n - sum(shares)]:
        shares[i] += 1
    return shares


# Permutations of a block's columns tried for a draw with no point twice (each keeps every
# axis's shares exact); chosen: 12 samples of 120 points need two tries on average
PERMUTATION_TRIES = 64


def block_offsets(counts: tuple[int, ...], k: int, rng: np.random.Generator) -> list[int]:
    """``k`` distinct offsets into a block whose axes have ``counts`` values (last fastest)."""
    size = math.prod(counts)
    if k == 0:
        return []
    # one offset a column: k evenly spaced points put floor or ceil of k / c in each value's
    # interval (an offset a sample gave shares up to two apart where c does not divide k)
    columns = [np.floor((np.arange(k) + rng.random()) * c / k).astype(np.int64) for c in counts]
    best: list[int] = []
    for _ in range(PERMUTATION_TRIES):
        digits = [rng.permutation(column) for column in columns]
        taken = list(dict.fromkeys(_combine(counts, digits, size)))  # first occurrences
        if len(taken) > len(best):
            best = taken
        if len(best) == k:
            return best
    return best + _top_up(counts, size, best, k - len(best), rng)


def _combine(counts: tuple[int, ...], digits: list[np.ndarray], size: int) -> list[int]:
    """Each sample's offset from its digit per axis (last fastest): numpy's integers where
    the block fits them, Python's past 2^63 points."""
    if size < INT64_POINTS:
        offsets = np.zeros(len(digits[0]) if digits else 1, dtype=np.int64)
        for c, column in zip(counts, digits, strict=True):
            offsets = offsets * c + column
        return [int(x) for x in offsets]
    out = []
    for sample in zip(*(column.tolist() for column in digits), strict=True):
        offset = 0
        for c, digit in zip(counts, sample, strict=True):
            offset = offset * c + digit
        out.append(offset)
    return out


def _top_up(
    counts: tuple[int, ...], size: int, taken: list[int], missing: int, rng: np.random.Generator
) -> list[int]:
    """``missing`` more offsets below ``size`` (a block of ``counts``), none of ``taken``,
    drawn uniformly."""
    if size <= 4 * (len(taken) + missing):
        free = np.setdiff1d(np.arange(size, dtype=np.int64), taken)
        return [int(x) for x in rng.choice(free, size=missing, replace=False)]
    seen, extra = set(taken), list[int]()
    while len(extra) < missing:  # a block far larger than its share: redraw until distinct
        x = random_offset(counts, rng)
        if x not in seen:
            seen.add(x)
            extra.append(x)
    return extra


class LatinHypercube(Sampler):
    name = "latin-hypercube"
    description = "samples points, each axis's values in equal shares (seed)"
    takes_samples = True

    def pick(self, shape: GridShape, samples: int, seed: int) -> list[int]:
        sizes = shape.sizes
        rng = np.random.default_rng(seed)
        picked: list[int] = []
        start = 0
        for counts, size, k in zip(
            shape.blocks, sizes, apportion(min(samples, sum(sizes)), sizes), strict=True
        ):
            picked += [start + off for off in block_offsets(counts, k, rng)]
            start += size
        return sorted(picked)


SAMPLERS.register(LatinHypercube())
