"""Which rows CPR's partial saves keep at scale, what they cost and how stale they leave a shard.

CPR (Maeng et al., MLSys'21) saves every τ; every ``F``-th save (``cpr_full_every``) is full,
the others partial. Two policies choose a partial save's rows (``nmp.train.strategies.cpr`` runs
them on the trainer; this module models them on the paper's tables, where the trainer cannot):

* ``top-frequency`` (CPR-MFU): the ``k = cpr_fraction x rows`` rows most used since their own
  last save (a counter per row, reset when the row is saved, all reset by a full save);
* ``sampled-inputs`` (CPR-SSU): every row a sampled ``cpr_ssu_sample`` of the inputs touched
  since the last save (a mark per row, all cleared by each save).

The rows' access rates come from the workload's distribution (bounded Zipf per table, rank
bins: exact for the hottest ranks, then geometric; uniform tables are one bin). Over a save
interval a row of rate λ lookups per step is used ``m = λ S`` times on average (``S`` steps per
interval, Poisson). Per policy:

* **cost**: the rows a partial save writes (MFU: ``k``; SSU: the expected rows a sample of the
  interval's lookups touches, ``sum (1 - exp(-s m))``), so the mean save time;
* **staleness**: the updates a failed shard loses, the lookups since each row's last save,
  averaged over a failure time uniform in the ``F``-interval cycle. ``staleness_ratio`` is that
  over τ/2 of updates (the loss if every save were full), so CPR's portion of lost samples
  (PLS, ``τ / (2 N M)``) becomes ``pls_effective = staleness_ratio x PLS``: the accuracy cost.
  MFU is modeled as a fluid over cohorts (rows of equal rate and last save): at each partial
  save its candidates are a cohort's rows used since (a share ``1 - exp(-μ)``, ``μ = m x
  intervals since saved``), ranked by their mean count ``μ / (1 - exp(-μ))``, the top ``k``
  written; a saved cohort's unused rows had nothing to lose, so the whole cohort counts as
  saved. SSU's
  row misses a save with probability ``exp(-s m)``, and a miss loses the interval's unsampled
  updates (``m (1 - s)`` on average, Poisson thinning) until a save or the full save.

Neither policy's tracking work per lookup (a counter increment, a mark) is charged: the sources
give no cost for it, and it is small beside the lookup itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from nmp.errors import NmpError
from nmp.registry import Registry
from nmp.workload import load_workload

EXACT_RANKS = 256  # hottest ranks binned one by one
BIN_RATIO = 1.02  # then geometric bins: rates within a bin differ by < 2.1 % at alpha 1.05


@dataclass(frozen=True)
class RowRates:
    """Rows grouped in bins of equal access rate: ``count[b]`` rows of ``rate[b]`` lookups per
    step each (read-only: :func:`workload_rates` shares one per workload)."""

    count: np.ndarray  # float64 rows per bin
    rate: np.ndarray  # float64 lookups per step per row

    @property
    def rows(self) -> float:
        return float(self.count.sum())

    @property
    def lookups_per_step(self) -> float:
        return float((self.count * self.rate).sum())


def zipf_bins(rows: int, alpha: float, lookups_per_step: float) -> RowRates:
    """One table of ``rows`` rows, bounded Zipf(``alpha``) over them, ``lookups_per_step``."""
    if rows < 1:
        raise NmpError(f"a table needs rows >= 1, got {rows}")
    edges = list(range(1, min(rows, EXACT_RANKS) + 1))
    e = float(edges[-1])
    while e < rows:
        e = max(e * BIN_RATIO, e + 1.0)
        edges.append(min(int(np.ceil(e)), rows + 1) if e < rows else rows + 1)
    if edges[-1] != rows + 1:
        edges.append(rows + 1)
    lo = np.asarray(edges[:-1], dtype=np.float64)  # first rank of the bin (1-based)
    hi = np.asarray(edges[1:], dtype=np.float64)  # one past its last rank
    count = hi - lo
    # mass of ranks lo..hi-1: the integral of x^-alpha over [lo - 1/2, hi - 1/2] (exact-rank
    # bins use the rank's own weight)
    a, b = lo - 0.5, hi - 0.5
    if abs(alpha - 1.0) < 1e-9:
        mass = np.log(b / a)
    else:
        mass = (b ** (1.0 - alpha) - a ** (1.0 - alpha)) / (1.0 - alpha)
    exact = count == 1
    mass[exact] = lo[exact] ** -alpha
    share = mass / mass.sum()
    return RowRates(count, lookups_per_step * share / count)


@functools.cache
def workload_rates(
    workload: str, table_rows: int = 0, batch: int = 0, alpha: float = 0.0
) -> RowRates:
    """Every row's rate under the workload's tables and access distribution. ``table_rows`` >
    0 scales every table's rows by one factor to that total (a deployment that sizes the tables
    itself); ``batch`` > 0 replaces the batch; ``alpha`` > 0 the Zipf exponent."""
    spec = load_workload(workload)
    if batch and batch != spec.batch:
        spec = replace(spec, batch=batch)
    own_alpha = spec.access.zipf_exponent(spec)  # uniform: Zipf 0
    if own_alpha is None:
        raise NmpError(
            f"CPR's partial-save model needs a zipf or uniform workload, '{workload}' is "
            f"{spec.distribution}"
        )
    a = alpha or own_alpha
    rows = [t.rows for t in spec.tables]
    if table_rows:
        scale = table_rows / sum(rows)
        rows = [max(1, round(r * scale)) for r in rows]
    per_table = [spec.batch * spec.table_pooling(t).mean_lookups for t in range(len(rows))]
    parts = [zipf_bins(r, a, n) for r, n in zip(rows, per_table, strict=True)]
    count = np.concatenate([p.count for p in parts])
    rate = np.concatenate([p.rate for p in parts])
    count.setflags(write=False)
    rate.setflags(write=False)
    return RowRates(count, rate)


@dataclass(frozen=True)
class PartialSave:
    """One policy at scale: rows per partial save and the staleness it leaves."""

    policy: str
    rows_per_partial: float
    staleness_ratio: float  # lost updates per failure / (tau / 2 of updates)

    def save_fraction(self, rows: float) -> float:
        return self.rows_per_partial / rows if rows else 0.0


# A policy: (rates, steps per interval, full_every, cpr_fraction, ssu_sample) -> PartialSave.
POLICIES: Registry[Callable[..., PartialSave]] = Registry("CPR partial-save row policy")


@POLICIES.register(name="top-frequency")
def top_frequency(
    rates: RowRates, steps: float, full_every: int, fraction: float, sample: float
) -> PartialSave:
    """CPR-MFU: the ``fraction`` of rows of largest count since their last save (fluid)."""
    k = fraction * rates.rows
    f = full_every
    m = rates.rate * steps  # uses per interval per row
    # cohort[b, j']: rows of bin b last saved (or last unused) at save j' (0: the full save)
    cohort = np.zeros((rates.count.size, f))
    cohort[:, 0] = rates.count
    lost, written = 0.0, []
    for j in range(f):
        if j > 0:  # partial save j
            # mean count since the last save (no cohort was saved at or after j yet)
            mu = m[:, None] * np.maximum(j - np.arange(f), 0)[None, :]
            used = -np.expm1(-mu)  # share of a cohort's rows with a count > 0
            slots = cohort * used  # MFU's candidates
            # their mean count mu / (1 - exp(-mu)), 1 + mu/2 in the limit of small mu
            small = mu < 1e-6
            prio = np.where(small, 1.0 + 0.5 * mu, mu / np.where(small, 1.0, used))
            prio[mu <= 0] = -1.0
            order = np.argsort(-prio, axis=None, kind="stable")
            flat = slots.reshape(-1)[order]
            taken = np.minimum(flat, np.maximum(0.0, k - (np.cumsum(flat) - flat)))
            share = np.zeros(flat.size)
            share[order] = np.divide(taken, flat, out=np.zeros_like(taken), where=flat > 0)
            # saving a cohort's used rows leaves its unused rows nothing to lose: all move to j
            moved = cohort * share.reshape(cohort.shape)
            cohort -= moved
            cohort[:, j] += moved.sum(axis=1)
            written.append(float(taken.sum()))
        # a failure in interval j, half an interval in: each row loses rate x (1/2 + j - j')
        age = 0.5 + (j - np.arange(f))
        age[j + 1 :] = 0.0
        lost += float((cohort * rates.rate[:, None] * age[None, :]).sum())
    total = rates.lookups_per_step
    rows = float(np.mean(written)) if written else 0.0
    return PartialSave("top-frequency", rows, lost / f / (0.5 * total))


@POLICIES.register(name="sampled-inputs")
def sampled_inputs(
    rates: RowRates, steps: float, full_every: int, fraction: float, sample: float
) -> PartialSave:
    """CPR-SSU: every row the sampled inputs touched in the interval."""
    m = rates.rate * steps  # uses per interval per row
    q_miss = np.exp(-sample * m)  # a save misses the row
    saved = float((rates.count * (1.0 - q_miss)).sum())
    # a failure in interval j: the current half interval, then each earlier interval back to
    # the full save that every save since missed, its unsampled uses (m (1 - s))
    lost = 0.0
    for j in range(full_every):
        chain = sum(q_miss**g for g in range(1, j + 1)) if j else 0.0
        lost += float((rates.count * (0.5 * m + m * (1.0 - sample) * chain)).sum())
    total = float((rates.count * m).sum())
    return PartialSave("sampled-inputs", saved, lost / full_every / (0.5 * total))


def at_scale(
    policy: str, rates: RowRates, steps: float, full_every: int, fraction: float, sample: float
) -> PartialSave:
    """``policy``'s rows and staleness with ``steps`` steps per save interval."""
    if not steps > 0:
        raise NmpError(f"steps per save interval must be > 0, got {steps}")
    return POLICIES.get(policy)(rates, steps, full_every, fraction, sample)
