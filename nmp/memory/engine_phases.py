"""The phases of the numba DRAM engine's run (:func:`nmp.memory.engine.simulate`): the frontend's
offers, the picks of the active buffer, the refresh queue and the read or write buffer
(FR-FCFS), the constraint rules of an issued command and the state it changes. Each is compiled
on its own and called from `simulate`'s loop, which holds the state."""

from __future__ import annotations

from typing import Any

import numpy as np

from nmp.jit import njit

# the counter layout of simulate()'s ``cnt`` arrays (nmp.memory.counters)
from nmp.memory.counters import C_BANK_OPEN, C_COAL, C_FWD
from nmp.memory.standards import CMD

ACT, PREPB, PREAB, RD, WR, RDA, WRA, REFAB = (
    CMD["ACT"],
    CMD["PREpb"],
    CMD["PREab"],
    CMD["RD"],
    CMD["WR"],
    CMD["RDA"],
    CMD["WRA"],
    CMD["REFab"],
)
W = 4  # issue-history depth (largest constraint window: tFAW)
INF = np.int64(1) << 62
U = np.uint64  # unsigned indices: numba then skips its negative-index wraparound code

trailing_zeros: Any  # numba types it when compiling (mypy sees an intrinsic's typing signature)
try:  # numba's count-trailing-zeros intrinsic (one instruction)
    from numba.cpython.unsafe.numbers import trailing_zeros
except ImportError:  # pragma: no cover - an internal module; a portable fallback
    _DEBRUIJN = np.array(
        [((0x03F79D71B4CB0A89 << i) & ((1 << 64) - 1)) >> 58 for i in range(64)], np.int64
    )
    _CTZ = np.zeros(64, np.int64)
    _CTZ[_DEBRUIJN] = np.arange(64)

    @njit(cache=True)
    def trailing_zeros(x):
        low = x & (~x + U(1))
        return U(_CTZ[(low * U(0x03F79D71B4CB0A89)) >> U(58)])


# A queued request is one row of ``qb[c, kind, position]`` (kind: read, write or active buffer;
# positions in buffer order), its fields on one cache line. ``bnd[c, kind, position]`` is a lower
# bound on the cycle its next command becomes timing-ready: ready clocks only grow, so the bound
# holds until that command changes, i.e. until its bank opens or closes (the bounds of the
# bank's requests are then reset to 0). A scan first builds, branch-free, the mask of positions
# whose bound the clock has reached and recomputes the readiness of those only, in order.
# Two shortcuts spare most recomputations and change nothing that is issued: requests of one
# class (one bank, all hitting its open row or all not) have the same next command, so when one
# is found not ready, the due ones of its class get its bound at once; and with one rank per
# channel, while the channel's and the rank's ready clock of the column command is ahead of the
# clock, no row hit is ready, so the due hits get that clock as their bound unevaluated.
S_Q, S_BANK, S_ROW, S_RANK, S_BG, S_ARR, S_KEY, S_WR = range(8)
NS = 8  # one cache line of int64
K_RD, K_WR, K_ACT = 0, 1, 2

# The run's phases, each a function that `simulate`'s loop calls. The state is the arrays that
# `simulate` allocates; a phase returns the scalars it changes. A phase allocates nothing, so it
# is compiled without reference counting (`_nrt=False`: numba counts the references of array
# arguments and aliases with atomic operations, which cost more than the scheduling work
# itself), and LLVM inlines it into the loop (forceinline). By CPU time on the random_rw50_4g and
# emb_zipf_a0.8_r1m_rb64_p40 reference cases, against the one function they were cut from:
# inlined at numba's IR level instead (inline="always", reference counted) 3x slower; as calls
# without reference counting 1.3x slower (the arrays passed by value); as now, the same within
# the noise of a loaded machine.
_phase = njit(boundscheck=False, forceinline=True, _nrt=False)  # type: ignore[call-overload]


@_phase
def offer_requests(
    clk, nxt_req, offers, checked, requests, RQ, WQ, wm_hi, wm_lo, rd_cmd, wr_cmd, o1, o2, o3,
    qb, bnd, bnk, ql, plen, wmode, wake, open_row, rdy, arrive, depart, done, forwarded, cnt,
):  # fmt: skip
    """The frontend: up to ``offers`` requests, strictly in order, from ``nxt_req``; it stops at
    the first that has not arrived or whose buffer is full. Returns ``(nxt_req, checked,
    accepted)`` (``checked``: the request already searched for in the write buffer;
    ``requests``: simulate's request arrays, as a tuple: a call of over 30 arguments is one
    numba does not inline)."""
    q_ch, q_rank, q_bg, q_bank, q_row, q_wr, q_key, q_arr = requests
    n = q_ch.shape[0]
    accepted = False
    if nxt_req >= n:
        return nxt_req, checked, accepted
    for _ in range(offers):
        j = nxt_req
        if q_arr[j] > clk:
            break
        c = q_ch[j]
        key = q_key[j]
        kind = K_WR if q_wr[j] else K_RD
        hit = False
        if j != checked:
            for i in range(ql[c, K_WR]):
                if qb[c, K_WR, i, S_KEY] == key:
                    hit = True
                    break
            # while request j is refused nothing enters the write buffer, so no later
            # offer of j can find a match either: skip the search when offered again
            checked = j
        if hit:
            arrive[j] = clk
            if kind == K_RD:
                forwarded[j] = True
                cnt[C_FWD] += 1
                depart[j] = clk + 1
                done[j] = clk + 1
            else:
                cnt[C_COAL] += 1
                done[j] = clk
        else:
            p = ql[c, kind]
            if p >= (WQ if kind == K_WR else RQ):
                break
            qb[c, kind, p, S_Q] = j
            qb[c, kind, p, S_BANK] = q_bank[j]
            qb[c, kind, p, S_ROW] = q_row[j]
            qb[c, kind, p, S_RANK] = q_rank[j]
            qb[c, kind, p, S_BG] = q_bg[j]
            qb[c, kind, p, S_ARR] = clk
            qb[c, kind, p, S_KEY] = key
            qb[c, kind, p, S_WR] = q_wr[j]
            bnd[c, kind, p] = 0
            bnk[c, kind, p] = q_bank[j]
            ql[c, kind] = p + 1
            arrive[j] = clk
            if wake[c] > clk + 1:
                # the channel sleeps until wake[c] (nothing it holds can issue before):
                # only the new request, or the write mode its arrival flips, can
                # change that
                nwq = ql[c, K_WR]
                nrq = ql[c, K_RD]
                if plen[c] == 0 and (
                    (not wmode[c] and (nwq > wm_hi or nrq == 0))
                    or (wmode[c] and nwq < wm_lo and nrq != 0)
                ):
                    wake[c] = clk + 1
                else:
                    bq = q_bank[j]
                    orow = open_row[bq]
                    if orow == q_row[j]:
                        cc = wr_cmd if kind == K_WR else rd_cmd
                    else:
                        cc = ACT if orow < 0 else PREPB
                    t = max(
                        max(rdy[c, cc], rdy[o1 + q_rank[j], cc]),
                        max(rdy[o2 + q_bg[j], cc], rdy[o3 + bq, cc]),
                    )
                    bnd[c, kind, p] = t
                    if t < wake[c]:
                        wake[c] = max(t, clk + 1)
        accepted = True
        nxt_req += 1
        if nxt_req == n:
            break
    return nxt_req, checked, accepted


@_phase
def buffers_empty(ql):
    """Every buffer (read, write, active) of every channel empty?"""
    for c in range(ql.shape[0]):  # noqa: SIM110 (numba)
        if ql[c, 0] > 0 or ql[c, 1] > 0 or ql[c, 2] > 0:
            return False
    return True


@_phase
def next_event(clk, nxt_req, q_arr, wake):
    """The next cycle at which anything can happen: the earliest wake time of a channel, or the
    arrival of the next request (INF: never)."""
    t_next = INF
    for c in range(wake.shape[0]):
        if wake[c] < t_next:
            t_next = wake[c]
    if nxt_req < q_arr.shape[0] and clk < q_arr[nxt_req] < t_next:
        t_next = q_arr[nxt_req]
    return t_next


@_phase
def pick_active(c, clk, fut, QM, rd_cmd, wr_cmd, o1, o2, o3, qb, qbf, bndf, ql, rdy):
    """(a) The active buffer of channel c: the oldest ready column command. Returns
    ``(sel_kind, sel_pos, cmd, fut)`` (``sel_kind`` -1: none; ``fut``: lowered to the ready
    clocks of the requests found not ready)."""
    uns = U(NS)
    sel_kind = -1
    sel_pos = -1
    cmd = -1
    best_arr = INF
    m = ql[c, K_ACT]
    for w0 in range(0, m, 64):
        # branch-free pass over the bounds: a mask of the slots whose bound the clock has
        # reached (the only ones that can be ready)
        due = U(0)
        row = U((c * 3 + K_ACT) * QM + w0)
        for x in range(U(0), U(min(m, w0 + 64) - w0)):
            t = bndf[row + x]
            d = t <= clk
            due |= U(1 if d else 0) << x
            fut = min(fut, INF if d else t)
        while due != U(0):
            i = w0 + np.int64(trailing_zeros(due))
            due &= due - U(1)
            # an active-buffer request's row is open: its column command is next
            sb = (row + U(i - w0)) * uns  # flat index of the slot
            cc = wr_cmd if qbf[sb + U(S_WR)] else rd_cmd
            ucc = U(cc)
            t = rdy[U(c), ucc]
            t1 = rdy[U(o1 + qbf[sb + U(S_RANK)]), ucc]
            t2 = rdy[U(o2 + qbf[sb + U(S_BG)]), ucc]
            t3 = rdy[U(o3 + qbf[sb + U(S_BANK)]), ucc]
            t = max(max(t, t1), max(t2, t3))
            bndf[row + U(i - w0)] = t
            if t > clk:
                if t < fut:
                    fut = t
            elif qb[c, K_ACT, i, S_ARR] < best_arr:
                best_arr = qb[c, K_ACT, i, S_ARR]
                cmd = cc
                sel_pos = i  # type: ignore[assignment]
                sel_kind = K_ACT
    return sel_kind, sel_pos, cmd, fut


@_phase
def pick_refresh(c, clk, fut, R, o1, pbuf, open_cnt, act_rank, rdy):
    """(b) The priority buffer's head (refresh) of channel c: ``(ready, rank node, cmd, fut)``
    (PREab while a row of the rank is open, else REFab; not ready until its ready clock, nor a
    PREab while the rank's active buffer holds a request)."""
    rk = c * R + pbuf[c, 0]
    cmd = PREAB if open_cnt[rk] > 0 else REFAB
    t = max(rdy[c, cmd], rdy[o1 + rk, cmd])
    if t > clk:
        return False, rk, cmd, min(fut, t)
    return not (cmd == PREAB and act_rank[rk] > 0), rk, cmd, fut


@_phase
def pick_buffer(
    c, clk, fut, want_col, want_row, R, QM, wm_hi, wm_lo, rd_cmd, wr_cmd, skip_blocked,
    hold_hits, o1, o2, o3, qbf, bndf, bnkf, ql, wmode, open_row, act_bank, rdy,
):  # fmt: skip
    """(c) The write mode, then the read or the write buffer of channel c: the first ready
    request (FR-FCFS); dual issue: the column slot (``want_col``) looks at hits only, the row
    slot at misses. Returns ``(sel_kind, sel_pos, cmd, fut)`` as :func:`pick_active`."""
    uns = U(NS)
    sel_kind = -1
    sel_pos = -1
    cmd = -1
    if not wmode[c]:
        if ql[c, K_WR] > wm_hi or ql[c, K_RD] == 0:
            wmode[c] = True
    else:
        if ql[c, K_WR] < wm_lo and ql[c, K_RD] != 0:
            wmode[c] = False
    kind = K_WR if wmode[c] else K_RD
    col_cmd = wr_cmd if wmode[c] else rd_cmd
    m = ql[c, kind]
    stop = False
    for w0 in range(0, m, 64):
        due = U(0)
        row = U((c * 3 + kind) * QM + w0)
        for x in range(U(0), U(min(m, w0 + 64) - w0)):
            t = bndf[row + x]
            d = t <= clk
            due |= U(1 if d else 0) << x
            fut = min(fut, INF if d else t)
        # one rank: while the channel or the rank holds the column command back, no hit is
        # ready -- their bounds become that clock at once
        floor = INF
        if R == 1 and not want_row:
            floor = max(rdy[U(c), U(col_cmd)], rdy[U(o1 + c), U(col_cmd)])
        if floor < INF and floor > clk:
            rest = due
            while rest != U(0):
                x = trailing_zeros(rest)
                rest &= rest - U(1)
                if open_row[U(bnkf[row + x])] == qbf[(row + x) * uns + U(S_ROW)]:
                    bndf[row + x] = floor
                    due &= ~(U(1) << x)
                    fut = min(fut, floor)
        while due != U(0):
            i = w0 + np.int64(trailing_zeros(due))
            due &= due - U(1)
            sb = (row + U(i - w0)) * uns  # flat index of the slot
            bq = bnkf[row + U(i - w0)]
            orow = open_row[U(bq)]
            hit = orow == qbf[sb + U(S_ROW)]
            if hit:
                cc = col_cmd
                if want_row:
                    continue
            else:
                cc = ACT if orow < 0 else PREPB
                if want_col:
                    continue
            ucc = U(cc)
            t = rdy[U(c), ucc]
            t1 = rdy[U(o1 + qbf[sb + U(S_RANK)]), ucc]
            t2 = rdy[U(o2 + qbf[sb + U(S_BG)]), ucc]
            t3 = rdy[U(o3 + bq), ucc]
            t = max(max(t, t1), max(t2, t3))
            bndf[row + U(i - w0)] = t
            if t > clk:
                if t < fut:
                    fut = t
                # the due slots of the same class (bank, hit or not) would evaluate to the
                # same t: set their bounds at once
                rest = due
                while rest != U(0):
                    x = trailing_zeros(rest)
                    rest &= rest - U(1)
                    if bnkf[row + x] == bq and hit == (orow == qbf[(row + x) * uns + U(S_ROW)]):
                        bndf[row + x] = t
                        due &= ~(U(1) << x)
                continue
            closing = cc == PREPB or cc == RDA or cc == WRA  # noqa: SIM109
            if closing and (
                act_bank[U(bq)] > 0
                or (hold_hits and cc == PREPB and _holds_hit(c, kind, QM, m, bq, orow, qbf, bnkf))
            ):
                if skip_blocked:
                    continue
                stop = True
                break
            cmd = cc
            sel_pos = i  # type: ignore[assignment]
            sel_kind = kind
            stop = True
            break
        if stop:
            break
    return sel_kind, sel_pos, cmd, fut


@_phase
def _holds_hit(c, kind, QM, m, bq, orow, qbf, bnkf):
    """Whether buffer ``kind`` of channel c holds a request to bank ``bq``'s open row
    ``orow`` (``hold_hits``: the PRE of a miss there waits for it)."""
    uns = U(NS)
    base = U((c * 3 + kind) * QM)
    for x in range(U(0), U(m)):
        if bnkf[base + x] == bq and qbf[(base + x) * uns + U(S_ROW)] == orow:
            return True
    return False


@_phase
def apply_rules(
    c, clk, cmd, rk, g, bk, R, G, B, o1, o2, o3, tab_i, nxt, lat, win, work, rdy, hist
):  # fmt: skip
    """Issue ``cmd`` (at bank node ``bk`` of bank group ``g``; ``g`` < 0: an all-bank command
    of rank ``rk``): the constraint rules on its path (README §3). Target nodes push ``clk``
    into their issue history and raise the ready clocks of the following commands; sibling
    nodes (other ranks, ...) get the sibling rules. ``work`` rows: (flat node, level,
    sibling)."""
    nw = 0
    work[nw, 0] = c
    work[nw, 1] = 0
    work[nw, 2] = 0
    nw += 1
    if tab_i[3, 1, cmd] > tab_i[2, 1, cmd]:
        for rr in range(R):
            node = c * R + rr
            if node != rk:
                work[nw, 0] = o1 + node
                work[nw, 1] = 1
                work[nw, 2] = 1
                nw += 1
    work[nw, 0] = o1 + rk
    work[nw, 1] = 1
    work[nw, 2] = 0
    nw += 1
    if g < 0:
        # all-bank command: every bank group and bank of the rank is a target
        if tab_i[1, 2, cmd] > tab_i[0, 2, cmd] or tab_i[1, 3, cmd] > tab_i[0, 3, cmd]:
            for gg in range(G):
                gnode = rk * G + gg
                work[nw, 0] = o2 + gnode
                work[nw, 1] = 2
                work[nw, 2] = 0
                nw += 1
                for bb in range(B):
                    work[nw, 0] = o3 + gnode * B + bb
                    work[nw, 1] = 3
                    work[nw, 2] = 0
                    nw += 1
    else:
        if tab_i[3, 2, cmd] > tab_i[2, 2, cmd]:
            for gg in range(G):
                gnode = rk * G + gg
                if gnode != g:
                    work[nw, 0] = o2 + gnode
                    work[nw, 1] = 2
                    work[nw, 2] = 1
                    nw += 1
        work[nw, 0] = o2 + g
        work[nw, 1] = 2
        work[nw, 2] = 0
        nw += 1
        if tab_i[3, 3, cmd] > tab_i[2, 3, cmd]:
            for bb in range(B):
                bnode = g * B + bb
                if bnode != bk:
                    work[nw, 0] = o3 + bnode
                    work[nw, 1] = 3
                    work[nw, 2] = 1
                    nw += 1
        work[nw, 0] = o3 + bk
        work[nw, 1] = 3
        work[nw, 2] = 0
        nw += 1
    ucmd = U(cmd)
    for w in range(nw):
        node = U(work[w, 0])
        level = U(work[w, 1])
        if work[w, 2]:
            for i in range(U(tab_i[2, level, ucmd]), U(tab_i[3, level, ucmd])):
                t = clk + lat[i]
                if t > rdy[node, U(nxt[i])]:
                    rdy[node, U(nxt[i])] = t
            continue
        s0 = U(tab_i[0, level, ucmd])
        e0 = U(tab_i[1, level, ucmd])
        if s0 == e0:
            continue
        for k in range(W - 1, 0, -1):
            hist[node, ucmd, U(k)] = hist[node, ucmd, U(k - 1)]
        hist[node, ucmd, U(0)] = clk
        for i in range(s0, e0):
            past = hist[node, ucmd, U(win[i] - 1)]
            if past >= 0:
                t = past + lat[i]
                if t > rdy[node, U(nxt[i])]:
                    rdy[node, U(nxt[i])] = t


@_phase
def refresh_state(c, clk, cmd, rk, G, B, ql, bnd, pbuf, plen, open_row, open_cnt, open_since,
                   active_cycles, cnt):  # fmt: skip
    """After refresh command ``cmd`` on rank node ``rk``: PREab closes the rank's rows (the
    queued requests' bounds reset: their next command changes), REFab leaves the queue."""
    if cmd == PREAB:
        base = rk * G * B
        for k in range(G * B):
            open_row[base + k] = -1
        for kk in range(2):
            for i in range(ql[c, kk]):
                bnd[c, kk, i] = 0
        active_cycles[rk] += clk - open_since[rk]
        cnt[C_BANK_OPEN] += clk * open_cnt[rk]
        open_cnt[rk] = 0
    else:
        for k in range(plen[c] - 1):
            pbuf[c, k] = pbuf[c, k + 1]
        plen[c] -= 1


@_phase
def request_state(
    c, clk, cmd, sel_kind, sel_pos, q, rk, bk, rl, QM, q_row, q_wr, qb, qbf, bnd, bndf, bnk,
    bnkf, ql, open_row, open_cnt, open_since, active_cycles, act_bank, act_rank, depart, done,
    cnt,
):  # fmt: skip
    """After ``cmd`` for request ``q`` (in buffer ``sel_kind`` at ``sel_pos``; bank node ``bk``,
    rank node ``rk``): the bank opens or closes, the request moves to the active buffer (ACT),
    stays (PREpb) or retires (its column command)."""
    uns = U(NS)
    if cmd == ACT or cmd == PREPB or cmd == RDA or cmd == WRA:  # noqa: PLR1714, SIM109
        # the bank opens or closes: its queued requests get another next command
        for kk in range(2):
            for i in range(ql[c, kk]):
                if bnk[c, kk, i] == bk:
                    bnd[c, kk, i] = 0
    if cmd == ACT:
        open_row[bk] = q_row[q]
        if open_cnt[rk] == 0:
            open_since[rk] = clk
        open_cnt[rk] += 1
        cnt[C_BANK_OPEN] -= clk
        # leaves the read/write buffer for the active buffer
        a = ql[c, K_ACT]
        for f in range(NS):
            qb[c, K_ACT, a, f] = qb[c, sel_kind, sel_pos, f]
        bnd[c, K_ACT, a] = 0
        bnk[c, K_ACT, a] = bk
        ql[c, K_ACT] = a + 1
        act_bank[bk] += 1
        act_rank[rk] += 1
    elif cmd == PREPB:
        open_row[bk] = -1
        open_cnt[rk] -= 1
        if open_cnt[rk] == 0:
            active_cycles[rk] += clk - open_since[rk]
        cnt[C_BANK_OPEN] += clk
        return
    else:
        # final column command: the request retires
        if cmd == RDA or cmd == WRA:  # noqa: SIM109 (numba)
            open_row[bk] = -1
            open_cnt[rk] -= 1
            if open_cnt[rk] == 0:
                active_cycles[rk] += clk - open_since[rk]
            cnt[C_BANK_OPEN] += clk
        if q_wr[q]:
            done[q] = clk
        else:
            depart[q] = clk + rl
            done[q] = clk + rl
        if sel_kind == K_ACT:
            act_bank[bk] -= 1
            act_rank[rk] -= 1
    # remove the slot, keeping the buffer's order
    m = ql[c, sel_kind] - 1
    # (flat, unsigned indices: a plain forward copy the compiler can vectorize)
    row = U((c * 3 + sel_kind) * QM)
    for x in range(row + U(sel_pos), row + U(m)):
        bndf[x] = bndf[x + U(1)]
        bnkf[x] = bnkf[x + U(1)]
    for x in range((row + U(sel_pos)) * uns, (row + U(m)) * uns):
        qbf[x] = qbf[x + uns]
    ql[c, sel_kind] = m
