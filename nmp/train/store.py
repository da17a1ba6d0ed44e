"""The near-memory embedding store: records striped with parity over N memory nodes.

Every embedding row lives with its optimizer state in one float32 record ``[value | state |
pad]`` (padded to whole 64-bit words). Records are grouped ``k`` to a stripe; each stripe has
``r`` parities (none for the checkpoint strategies); ``nmp.coding.StripeLayout`` places the
``k + r`` positions of every stripe on distinct nodes, rotating parity like RAID-5.

Each position is *valid*, *lost* (its node failed: the memory holds garbage and is never read)
or *in flight* (being rebuilt on the replacement node). The rules that keep data and parity
consistent:

- read: valid -> memory; in flight -> the rebuilt snapshot, or a newer buffered value; lost ->
  decoded from the survivors of its stripe.
- write (phase 1 of the two-phase commit): valid -> memory; in flight -> side buffer (applied
  when the range commits); lost -> nothing (the parity absorbs the delta in phase 2).
- parity delta (phase 2): for each parity of the stripe, valid -> applied in place; in flight ->
  accumulated in the side buffer; lost -> dropped (rebuilt by re-encoding). The delta of a
  write to an in-flight data row is deferred to the range's commit, so parity always encodes the
  snapshot that decoding of its neighbours uses.

:class:`Rebuild` restores a failed node's positions range by range: at the start of a range it
decodes (data) or re-encodes (parity) the positions from survivors; at its end the snapshot,
updated by the buffered writes and deltas, is committed to the replacement node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nmp.arch.parity import xor_into
from nmp.errors import NmpError
from nmp.train.codes import ParityScheme
from nmp.train.layout import stripe_positions

VALID, LOST, INFLIGHT = 0, 1, 2


class DataLossError(NmpError):
    """More nodes are lost than the parity tolerates."""


@dataclass
class Pending:
    """Phase 1 done, phase 2 (parity deltas) not yet: the coordinator's commit log."""

    rows: np.ndarray
    old: np.ndarray
    new: np.ndarray


@dataclass
class RangeInFlight:
    """One range of a failed node being rebuilt on its replacement."""

    node: int
    stripes: np.ndarray  # stripes of this range
    pos: np.ndarray  # position of ``node`` in each of them
    snapshot_data: np.ndarray  # float32 [m, W] (meaningful where pos < k)
    snapshot_parity: np.ndarray  # parity [m, ...] (meaningful where pos >= k)
    buf_has: np.ndarray  # bool [m]: a newer value was written
    buf_value: np.ndarray  # float32 [m, W]
    buf_delta: np.ndarray  # parity deltas accumulated [m, ...]


class StripedStore:
    """Embedding records on ``num_nodes`` memory nodes with an optional parity scheme."""

    def __init__(
        self,
        total_rows: int,
        width: int,
        num_nodes: int,
        scheme: ParityScheme | None,
        *,
        layout_parities: int = 0,
        rotating: bool = True,
        seed: int = 0,
    ) -> None:
        self.width = width + (width % 2)  # whole 64-bit words per record
        self.num_nodes = num_nodes
        self.scheme = scheme
        # Without a scheme the rows still sit where a layout with ``layout_parities`` parities
        # puts them (k = nodes - layout_parities data rows per stripe), so that every strategy
        # of one configuration places each row on the same node (the servers' partial sums, and
        # so the bits of training, depend on the placement).
        r_layout = scheme.r if scheme else layout_parities
        self.k = scheme.k if scheme else num_nodes - layout_parities
        self.r = scheme.r if scheme else 0
        self.total_rows = total_rows
        lay = stripe_positions(total_rows, num_nodes, self.k, r_layout, rotating=rotating)
        self.stripe_of, self.slot_of, node_of_pos = lay
        self.node_of_pos = np.ascontiguousarray(node_of_pos[:, : self.k + self.r])
        self.stripes = self.node_of_pos.shape[0]
        self.data = np.zeros((self.stripes, self.k, self.width), dtype=np.float32)
        self.parity = (
            scheme.empty_parity(self.stripes, self.width) if scheme else np.zeros((self.stripes, 0))
        )
        self.state = np.zeros((self.stripes, self.k + self.r), dtype=np.uint8)
        # Row g is member g % k of stripe g // k, so data viewed as [S * k, W] is indexed by row.
        self._flat = self.data.reshape(-1, self.width)
        self._all_valid = True  # no lost or in-flight position anywhere: the fast paths
        self.inflight: RangeInFlight | None = None
        self._garbage = np.random.default_rng([seed, 0x6A2BA6E])
        # What the store did, for the cost model (row counts; bytes = rows * record bytes).
        self.counters = {"decoded_rows": 0, "decode_shard_reads": 0, "rebuilt_positions": 0}

    # -- geometry -----------------------------------------------------------------------------

    @property
    def record_bytes(self) -> int:
        return self.width * 4

    @property
    def data_bytes(self) -> int:
        return self.total_rows * self.record_bytes

    @property
    def parity_bytes(self) -> int:
        return int(self.parity.nbytes)

    def node_of_row(self, rows: np.ndarray) -> np.ndarray:
        return self.node_of_pos[self.stripe_of[rows], self.slot_of[rows]]

    def rows_on_node(self, node: int) -> np.ndarray:
        """Global rows whose data lives on ``node``."""
        return np.flatnonzero(self.node_of_row(np.arange(self.total_rows)) == node)

    def lost_nodes(self) -> list[int]:
        bad = self.state != VALID
        return sorted({int(n) for n in np.unique(self.node_of_pos[bad])})

    # -- whole-store access (initialisation, checkpoints, hashing) -----------------------------

    def load_all(self, records: np.ndarray) -> None:
        """Fill every record (float32 [total_rows, width or less]) and encode all parity."""
        flat = self.data.reshape(-1, self.width)
        flat[:] = 0.0
        idx = self.stripe_of * self.k + self.slot_of
        flat[idx, : records.shape[1]] = records
        if self.scheme:
            self.parity[:] = self.scheme.encode(self.data)
        self.state[:] = VALID
        self.inflight = None
        self._all_valid = True

    def snapshot_all(self) -> np.ndarray:
        """Every record's current value (decoding lost ones) as float32 [total_rows, width]."""
        return self.read(np.arange(self.total_rows, dtype=np.int64))

    # -- reads ----------------------------------------------------------------------------------

    def read(self, rows: np.ndarray) -> np.ndarray:
        """Current records of global ``rows`` (float32 [n, width]); never returns garbage."""
        if self._all_valid:
            return self._flat[rows]
        s, j = self.stripe_of[rows], self.slot_of[rows]
        out = self.data[s, j]
        st = self.state[s, j]
        if not st.any():
            return out
        fl = st == INFLIGHT
        if fl.any():
            out[fl] = self._inflight_read(s[fl])
        lost = st == LOST
        if lost.any():
            out[lost] = self._decode_rows(s[lost], j[lost])
        return out

    def _inflight_read(self, stripes: np.ndarray) -> np.ndarray:
        f = self.inflight
        assert f is not None  # (a range is in flight here)
        i = np.searchsorted(f.stripes, stripes)
        return np.where(f.buf_has[i, None], f.buf_value[i], f.snapshot_data[i])

    def _stripe_shards(self, stripes: np.ndarray):
        """Data and parity of ``stripes`` as parity currently encodes them, and the erased mask.

        In-flight data reads as its snapshot (its newer value's delta is deferred); in-flight
        parity as snapshot combined with its buffered deltas.
        """
        data = self.data[stripes].copy()
        parity = self.parity[stripes].copy()
        st = self.state[stripes]
        f = self.inflight
        if f is not None and (st == INFLIGHT).any():
            assert self.scheme is not None  # (only a store with parity rebuilds ranges)
            rows, cols = np.nonzero(st == INFLIGHT)
            i = np.searchsorted(f.stripes, stripes[rows])
            d = cols < self.k
            data[rows[d], cols[d]] = f.snapshot_data[i[d]]
            p = ~d
            parity[rows[p], cols[p] - self.k] = self.scheme.combine(
                f.snapshot_parity[i[p]], f.buf_delta[i[p]]
            )
        return data, parity, st == LOST

    def _decode_stripes(self, stripes: np.ndarray) -> np.ndarray:
        """Full data [m, k, W] of ``stripes`` with lost positions rebuilt from survivors."""
        data, parity, erased = self._stripe_shards(stripes)
        if not erased.any():
            return data
        if self.scheme is None:
            raise DataLossError("rows on a failed node and no parity to decode them")
        n_erased = erased.sum(axis=1)
        if n_erased.max() > self.r:
            raise DataLossError(
                f"{int(n_erased.max())} positions of a stripe lost; parity tolerates {self.r}"
            )
        weights = 1 << np.arange(self.k + self.r, dtype=np.int64)
        pattern = erased.astype(np.int64) @ weights
        for pat in np.unique(pattern):
            if pat == 0:
                continue
            sel = np.flatnonzero(pattern == pat)
            which = [int(b) for b in np.flatnonzero(erased[sel[0]])]
            data[sel] = self.scheme.decode(data[sel], parity[sel], which)
        self.counters["decode_shard_reads"] += int(len(stripes) * (self.k + self.r - 1))
        return data

    def _decode_rows(self, stripes: np.ndarray, slots: np.ndarray) -> np.ndarray:
        uniq, inv = np.unique(stripes, return_inverse=True)
        full = self._decode_stripes(uniq)
        self.counters["decoded_rows"] += int(len(stripes))
        return full[inv, slots]

    # -- updates: two-phase commit ---------------------------------------------------------------

    def write_phase1(self, rows: np.ndarray, old: np.ndarray, new: np.ndarray) -> Pending:
        """Phase 1: the data units store the new records (rows unique). Returns the log entry."""
        if self._all_valid:
            self._flat[rows] = new
            return Pending(rows=rows, old=old, new=new)
        s, j = self.stripe_of[rows], self.slot_of[rows]
        st = self.state[s, j]
        if not st.any():
            self.data[s, j] = new
            return Pending(rows=rows, old=old, new=new)
        ok = st == VALID
        self.data[s[ok], j[ok]] = new[ok]
        fl = st == INFLIGHT
        if fl.any():
            f = self.inflight
            assert f is not None  # (a range is in flight here)
            i = np.searchsorted(f.stripes, s[fl])
            f.buf_value[i] = new[fl]
            f.buf_has[i] = True
        return Pending(rows=rows, old=old, new=new)

    def write_phase2(self, p: Pending) -> None:
        """Phase 2: the parity units apply the deltas (deferred for in-flight data rows)."""
        if self.scheme is None or len(p.rows) == 0:
            return
        s, j = self.stripe_of[p.rows], self.slot_of[p.rows]
        if self.inflight is None:
            self._apply_parity(s, j, self.scheme.delta(p.old, p.new))
            return
        keep = self.state[s, j] != INFLIGHT
        if not keep.all():
            s, j, old, new = s[keep], j[keep], p.old[keep], p.new[keep]
        else:
            old, new = p.old, p.new
        self._apply_parity(s, j, self.scheme.delta(old, new))

    def _apply_parity(self, s: np.ndarray, j: np.ndarray, delta: np.ndarray) -> None:
        # Rows of one slot hit distinct stripes, so per slot the scatter has no duplicates:
        # k vectorized passes instead of a per-row loop or an unbuffered ufunc.at.
        scheme = self.scheme
        if (
            scheme is not None
            and scheme.in_place_xor
            and (self._all_valid or not self.state[:, self.k].any())
        ):
            # XOR with every parity valid: the parity units' in-place XOR of nmp.arch (duplicate
            # stripes accumulate; XOR is associative and commutative).
            xor_into(self.parity.reshape(self.stripes, -1), s, delta)
            return
        assert scheme is not None  # (only a store with parity applies it)
        for slot in range(self.k):
            sel = np.flatnonzero(j == slot)
            if len(sel) == 0:
                continue
            ss = s[sel]
            contrib = scheme.contributions(slot, delta[sel])
            for i in range(self.r):
                pst = self.state[ss, self.k + i]
                ok = pst == VALID
                if ok.all():
                    self.parity[ss, i] = scheme.combine(self.parity[ss, i], contrib[i])
                else:
                    so = ss[ok]
                    self.parity[so, i] = scheme.combine(self.parity[so, i], contrib[i][ok])
                    fl = pst == INFLIGHT
                    if fl.any():
                        f = self.inflight
                        assert f is not None  # (a range is in flight here)
                        fi = np.searchsorted(f.stripes, ss[fl])
                        f.buf_delta[fi] = scheme.combine(f.buf_delta[fi], contrib[i][fl])

    def update(self, rows: np.ndarray, old: np.ndarray, new: np.ndarray) -> None:
        self.write_phase2(self.write_phase1(rows, old, new))

    # -- failures and rebuild -------------------------------------------------------------------

    def fail_node(self, node: int) -> None:
        """The node's memory becomes garbage; its positions are lost (an in-flight range of this
        node is aborted, its buffered writes folded into the surviving parity first)."""
        f = self.inflight
        if f is not None and f.node == node:
            self._abort_inflight()
        on = self.node_of_pos == node
        new_lost = on & (self.state == VALID)
        # In-flight positions are not erasures: their snapshot is held by the replacement node.
        already = (self.state == LOST) & ~on
        if self.scheme is not None:
            both = (already | on).sum(axis=1)
            if (both > self.r).any():
                raise DataLossError(
                    f"node {node} failed while other positions of its stripes are lost; "
                    f"the parity tolerates {self.r} (lost nodes: {self.lost_nodes()})"
                )
        garbage = self._garbage
        ds, dj = np.nonzero(new_lost[:, : self.k])
        self.data[ds, dj] = garbage.integers(
            0, 2**32, size=(len(ds), self.width), dtype=np.uint32
        ).view(np.float32)
        if self.r:
            ps, pj = np.nonzero(new_lost[:, self.k :])
            nbytes = self.parity.shape[2] * self.parity.itemsize
            raw = garbage.integers(0, 256, size=(len(ps), nbytes), dtype=np.uint8)
            self.parity[ps, pj] = raw.view(self.parity.dtype)
        self.state[on & (self.state == VALID)] = LOST
        self._all_valid = False

    def _abort_inflight(self) -> None:
        f = self.inflight
        assert f is not None  # (a range is in flight here)
        d = f.pos < self.k
        idx = np.flatnonzero(d & f.buf_has)
        self.state[f.stripes, f.pos] = LOST
        self.inflight = None
        if len(idx) and self.scheme is not None:
            s = f.stripes[idx]
            j = f.pos[idx]
            self._apply_parity(s, j, self.scheme.delta(f.snapshot_data[idx], f.buf_value[idx]))

    def lost_positions(self, node: int) -> np.ndarray:
        """Stripes where ``node``'s position is lost (sorted)."""
        on = self.node_of_pos == node
        return np.flatnonzero((on & (self.state == LOST)).any(axis=1))

    def start_range(self, node: int, stripes: np.ndarray) -> None:
        """Decode/re-encode ``node``'s positions in ``stripes`` into a snapshot (range start)."""
        if self.inflight is not None:
            raise NmpError("a range is already being rebuilt")
        stripes = np.sort(stripes)
        pos = np.argmax(self.node_of_pos[stripes] == node, axis=1)
        full = self._decode_stripes(stripes)
        m = len(stripes)
        assert self.scheme is not None  # (only a store with parity rebuilds ranges)
        snap_d = full[np.arange(m), np.minimum(pos, self.k - 1)]
        snap_p = self.scheme.encode(full)  # [m, r, ...]
        snap_p = snap_p[np.arange(m), np.clip(pos - self.k, 0, self.r - 1)]
        self.state[stripes, pos] = INFLIGHT
        self.inflight = RangeInFlight(
            node=node,
            stripes=stripes,
            pos=pos,
            snapshot_data=snap_d,
            snapshot_parity=snap_p,
            buf_has=np.zeros(m, dtype=bool),
            buf_value=np.zeros_like(snap_d),
            buf_delta=np.zeros_like(snap_p),
        )
        self.counters["rebuilt_positions"] += m

    def commit_range(self) -> None:
        """Write the range to the replacement node; apply buffered writes and deltas."""
        f = self.inflight
        assert f is not None and self.scheme is not None  # (a range is in flight here)
        d = f.pos < self.k
        value = np.where(f.buf_has[:, None], f.buf_value, f.snapshot_data)
        self.data[f.stripes[d], f.pos[d]] = value[d]
        p = ~d
        if p.any():
            self.parity[f.stripes[p], f.pos[p] - self.k] = self.scheme.combine(
                f.snapshot_parity[p], f.buf_delta[p]
            )
        self.state[f.stripes, f.pos] = VALID
        self.inflight = None
        self._all_valid = not self.state.any()
        idx = np.flatnonzero(d & f.buf_has)
        if len(idx):
            self._apply_parity(
                f.stripes[idx],
                f.pos[idx],
                self.scheme.delta(f.snapshot_data[idx], f.buf_value[idx]),
            )

    def restore_rows(self, rows: np.ndarray, records: np.ndarray) -> None:
        """Write ``records`` to ``rows`` on a replaced node (checkpoint reload, re-init) and mark
        them valid. For stores without parity only."""
        s, j = self.stripe_of[rows], self.slot_of[rows]
        self.data[s, j] = records
        self.state[s, j] = VALID
        self._all_valid = not self.state.any()

    def replace_node(self, node: int) -> None:
        """Mark a node's positions valid again (after every row of it was restored)."""
        on = self.node_of_pos == node
        if self.r:
            raise NmpError("replace_node is for stores without parity; parity stores rebuild")
        self.state[on] = VALID
        self._all_valid = not self.state.any()

    # -- consistency check (tests, end of run) ---------------------------------------------------

    def parity_consistent(self) -> bool:
        """Whether every valid parity equals a fresh encode of the current data (bit for bit)."""
        if self.scheme is None:
            return True
        if (self.state != VALID).any():
            raise NmpError("parity check needs every position valid")
        fresh = self.scheme.encode(self.data)
        return bool(np.array_equal(fresh.view(np.uint8), self.parity.view(np.uint8)))
