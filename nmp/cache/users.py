"""Inference requests from users whose histories draw related rows across tables.

The workload generators draw every table's key independently, so the 26 keys of a Criteo
request are unrelated and a request hits perfectly only by chance (the product of the tables'
hit rates). Real requests come from users who come back and look up what they looked up
before, in every table at once. This generator models that, with four parameters
(:class:`UserModel`; the kit's values are chosen, none is sourced, and the EVStore study
sweeps them):

1. **Users.** ``users`` users; each request comes from one of them, drawn from a bounded Zipf of
   exponent ``user_alpha`` (0: the workload's own exponent): a few users make many requests.
2. **Histories.** Each user has, in every table, a history of ``history`` rows drawn once from
   the table's own access distribution (:func:`nmp.workload.draw_rows`). Popular rows are in
   many users' histories, so histories overlap: a user's rows form a skewed neighbourhood
   shared with other users, related across the tables by belonging to the same user.
3. **Lookups.** Each lookup of a request takes, with probability ``locality``, one of its
   user's history rows of that table (uniformly), else a fresh draw from the table's
   distribution. ``locality = 0`` is the independent generator's law (not its draws).

The bag lengths follow the workload's pooling. In expectation over the histories, every table's
rows keep the workload's distribution (a history row is a draw from it); a given set of
histories concentrates the lookups of active users, which is the correlation.

Everything is seeded: a history depends on (seed, table, user) only (users are drawn in blocks
of :data:`BLOCK` with their own seeds), so a user's rows do not change with the stream's length.
Memory is O(lookups + distinct users' blocks x history), whatever the number of users.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmp.errors import NmpError
from nmp.workload import LookupBatch, TableLookups, WorkloadSpec, draw_rows
from nmp.workload.sampling import pooling_lengths, zipf_ranks
from nmp.workload.spec import MAX_ZIPF_ALPHA

BLOCK = 1024  # users whose histories share one seeded draw
# The most users and history rows taken. Chosen: 2^20 users (20x the default 50,000; every
# block of 1,024 users a stream touches is drawn, per table), 64 history rows per user and table
# (the default is 4: a few rows each). Measured (nmp cache --request-model users --no-accuracy,
# default requests): 10 s by default, 20 s at either bound.
MAX_USERS = 2**20
MAX_HISTORY = 64


@dataclass(frozen=True)
class UserModel:
    """Parameters of the users generator (see the module docstring). Every default is chosen:
    the sources give no statistics of users' request histories for Criteo."""

    users: int = 50_000  # chosen: of the order of the requests measured (40K after 20K)
    history: int = 4  # chosen: a few rows per user and table
    locality: float = 0.8  # chosen: most of a request's lookups revisit the user's history
    user_alpha: float = 0.0  # 0: the workload's Zipf exponent (chosen: one skew for all)

    def check(self) -> None:
        if self.users < 1 or self.history < 1:
            raise NmpError(
                f"--users and --user-history must be >= 1, got {self.users}, {self.history}"
            )
        # bounded before anything is drawn: each block of BLOCK users a request touches draws
        # BLOCK x history rows per table (--user-history 1e12 ran out of memory; --users 1e12
        # drew a block per lookup for minutes)
        if self.users > MAX_USERS:
            raise NmpError(f"--users must be <= {MAX_USERS:,}, got {self.users:,}")
        if self.history > MAX_HISTORY:
            raise NmpError(f"--user-history must be <= {MAX_HISTORY:,}, got {self.history:,}")
        if not 0.0 <= self.locality <= 1.0:
            raise NmpError(f"--user-locality must be in [0, 1], got {self.locality}")
        if not 0.0 <= self.user_alpha <= MAX_ZIPF_ALPHA:  # the Zipf sampler's domain
            raise NmpError(
                f"--user-alpha must lie in [0, {MAX_ZIPF_ALPHA:g}], got {self.user_alpha}"
            )

    def alpha_for(self, spec: WorkloadSpec) -> float:
        if self.user_alpha > 0:
            return self.user_alpha
        skew = spec.skew_alpha
        return 1.0 if skew is None else skew


def _history_rows(
    spec: WorkloadSpec, table: int, model: UserModel, seed: int, users: np.ndarray, slot: np.ndarray
) -> np.ndarray:
    """Row ``slot`` of each user's history in ``table`` (drawn per block of users, seeded)."""
    out = np.empty(users.size, dtype=np.int64)
    if not users.size:
        return out
    blocks = users // BLOCK
    order = np.argsort(blocks, kind="stable")
    uniq, starts = np.unique(blocks[order], return_index=True)
    for b, sel in zip(uniq, np.split(order, starts[1:]), strict=True):
        rng = np.random.default_rng([seed, table, int(b), 0x4157])
        rows = draw_rows(spec, table, rng, BLOCK * model.history).reshape(BLOCK, model.history)
        out[sel] = rows[users[sel] - b * BLOCK, slot[sel]]
    return out


def user_requests(
    spec: WorkloadSpec, requests: int, model: UserModel, seed: int = 0
) -> tuple[LookupBatch, np.ndarray]:
    """``requests`` requests as one :class:`LookupBatch` (bag r of every table = request r) and
    the user of each request (int64)."""
    model.check()
    if requests < 1:
        raise NmpError(f"requests must be >= 1, got {requests}")
    rng = np.random.default_rng([seed, 0x05E5])
    user = zipf_ranks(rng, requests, model.users, model.alpha_for(spec))
    tables = []
    for t, tspec in enumerate(spec.tables):
        trng = np.random.default_rng([seed, t, 0x05E5])
        lengths = pooling_lengths(trng, spec.table_pooling(t), requests)
        offsets = np.zeros(requests + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        n = int(offsets[-1])
        rows = draw_rows(spec, t, trng, n)
        local = np.flatnonzero(trng.random(n) < model.locality)
        slot = trng.integers(0, model.history, local.size)
        owner = np.repeat(user, lengths)[local]
        rows[local] = _history_rows(spec, t, model, seed, owner, slot)
        weights = trng.random(n, dtype=np.float32) if spec.weighted else None
        tables.append(TableLookups(rows, offsets, weights, tspec.rows, tspec.dim))
    return LookupBatch(tuple(tables)), user
