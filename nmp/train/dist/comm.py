"""Messages between the processes of one generation, over a gloo process group.

A message is a tuple of numpy arrays. It travels as two gloo point-to-point transfers: a fixed
header (64 int64: array count, then per array its dtype code, rank and shape) and one payload
buffer with the arrays' bytes. Sends are posted asynchronously and waited for in
:meth:`Comm.flush`; receives block, in the fixed order the protocol gives, so no pattern of
sends and receives can deadlock.

Every payload byte is counted by *kind* (lookup, pooled, row_grad, dense_grad, parity_delta,
repair, ...): these counts are the traffic the scale model's cost terms derive from.

A peer that dies makes an operation with it fail ("Connection closed by peer"); a process that
sees an error aborts its group, which closes its connections, so peers blocked on it fail too
and every survivor reaches the regroup promptly. The group's timeout (``timeout_s``) bounds any
wait that would otherwise hang.
"""

from __future__ import annotations

import datetime
from collections import defaultdict

import numpy as np
import torch
import torch.distributed as dist

HEADER_WORDS = 64
MAX_RANK = 6
DTYPES = (np.float32, np.int64, np.uint8, np.int32, np.float64, np.uint64, np.int8, np.int16)
_CODE = {np.dtype(t): i for i, t in enumerate(DTYPES)}


class CommError(RuntimeError):
    """A peer of this generation died or the group failed: regroup."""


def make_group(store, gen: int, rank: int, size: int, *, timeout_s: float, host: str):
    """The gloo group of generation ``gen`` (its own key prefix in the rendezvous store)."""
    prefix = dist.PrefixStore(f"pg/{gen}/", store)
    # the timeout and device live here (a private class torch's stubs do not declare)
    opts = dist.ProcessGroupGloo._Options()  # type: ignore[attr-defined]
    opts._timeout = datetime.timedelta(seconds=timeout_s)
    opts._devices = [dist.ProcessGroupGloo.create_device(hostname=host)]
    return dist.ProcessGroupGloo(prefix, rank, size, opts)


def _header(arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    h = np.zeros(HEADER_WORDS, dtype=np.int64)
    h[0] = len(arrays)
    at = 1
    for a in arrays:
        if a.ndim > MAX_RANK:
            raise ValueError(f"array of rank {a.ndim} > {MAX_RANK}")
        h[at] = _CODE[a.dtype]
        h[at + 1] = a.ndim
        h[at + 2 : at + 2 + a.ndim] = a.shape
        at += 2 + MAX_RANK
    if at > HEADER_WORDS:
        raise ValueError(f"too many arrays in one message ({len(arrays)})")
    return h


def _parse(h: np.ndarray) -> list[tuple[np.dtype, tuple[int, ...]]]:
    out, at = [], 1
    for _ in range(int(h[0])):
        dt = np.dtype(DTYPES[int(h[at])])
        nd = int(h[at + 1])
        out.append((dt, tuple(int(x) for x in h[at + 2 : at + 2 + nd])))
        at += 2 + MAX_RANK
    return out


class Comm:
    """One process's end of a generation's group: typed sends and receives, traffic counts."""

    def __init__(self, pg, rank: int, size: int) -> None:
        self.pg, self.rank, self.size = pg, rank, size
        self._pending: list = []
        self.bytes: dict[str, int] = defaultdict(int)
        self.messages: dict[str, int] = defaultdict(int)

    def post(self, dst: int, kind: str, *arrays: np.ndarray) -> None:
        """Send ``arrays`` to ``dst`` (asynchronously; :meth:`flush` waits)."""
        arrays = tuple(np.ascontiguousarray(a) for a in arrays)
        head = torch.from_numpy(_header(arrays))
        payload = b"".join(a.tobytes() for a in arrays)
        try:
            self._pending.append((self.pg.send([head], dst, 0), head))
            if payload:
                body = torch.frombuffer(bytearray(payload), dtype=torch.uint8)
                self._pending.append((self.pg.send([body], dst, 0), body))
        except RuntimeError as exc:
            raise CommError(str(exc)) from None
        self.bytes[kind] += len(payload)
        self.messages[kind] += 1

    def recv(self, src: int) -> list[np.ndarray]:
        """The next message from ``src`` (blocking)."""
        head = torch.zeros(HEADER_WORDS, dtype=torch.int64)
        try:
            self.pg.recv([head], src, 0).wait()
            spec = _parse(head.numpy())
            total = sum(dt.itemsize * int(np.prod(shape)) for dt, shape in spec)
            body = torch.empty(total, dtype=torch.uint8)
            if total:
                self.pg.recv([body], src, 0).wait()
        except RuntimeError as exc:
            raise CommError(str(exc)) from None
        raw = body.numpy().tobytes()
        out, at = [], 0
        for dt, shape in spec:
            n = dt.itemsize * int(np.prod(shape))
            out.append(np.frombuffer(raw[at : at + n], dtype=dt).reshape(shape).copy())
            at += n
        return out

    def flush(self) -> None:
        """Wait until every posted send has left."""
        try:
            for work, _ in self._pending:
                work.wait()
        except RuntimeError as exc:
            raise CommError(str(exc)) from None
        finally:
            self._pending = []

    def abort(self) -> None:
        """Leave the group: its connections close, so peers blocked on this process fail."""
        self._pending = []
        for fn in ("abort", "shutdown"):
            try:
                getattr(self.pg, fn)()
                break
            except Exception:  # noqa: BLE001 - best effort: the group is already broken
                continue
        self.pg = None


def probe(comm: Comm, peer: int, *, first: bool, big_bytes: int = 4 << 20, rounds: int = 5):
    """Ping-pong with ``peer`` (both call it, ``first`` on one side): (one-way latency s of an
    8-byte message, one-way GB/s of a ``big_bytes`` message), the medians of ``rounds``."""
    import time

    out = []
    for nbytes in (8, big_bytes):
        buf = np.zeros(nbytes, dtype=np.uint8)
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            if first:
                comm.post(peer, "probe", buf)
                comm.recv(peer)
            else:
                comm.recv(peer)
                comm.post(peer, "probe", buf)
            comm.flush()
            times.append((time.perf_counter() - t0) / 2)
        out.append(float(np.median(times)))
    return out[0], big_bytes / out[1] / 1e9
