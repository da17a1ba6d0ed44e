"""The DRAM timing engine: Ramulator 2.1's controller and timing model, compiled with numba.

What it models (README §3-§5 of the reference data):

- Per node (channel, rank / pseudo channel, bank group, bank) and per command a *ready clock*;
  issuing a command raises the ready clocks of the following commands by the standard's
  constraint table (:mod:`nmp.memory.standards`), tFAW through a 4-deep issue history and
  rank switching through sibling rules. A command is ready when the clock has reached the ready
  clock of every node on its path down to its scope.
- Per channel a controller with a read and a write buffer, an *active* buffer (requests whose
  ACT has issued), a priority buffer (refresh) and FR-FCFS: first ready, then oldest. One
  command per cycle (GenericDDR) or a column and a row slot per cycle (HBM12). Write mode by
  watermarks, read forwarding and write coalescing from the write buffer, all-bank refresh every
  nREFI with PREab first, open or closed (auto-precharge) row policy.
- The frontend offers requests strictly in order, ``frontend_ratio`` per memory cycle; a refused
  request blocks the ones behind it.

It is event driven: when a cycle issues nothing and the frontend is blocked (or done), the state
cannot change before the earliest ready clock of any queued request's next command or the next
refresh, so the clock jumps there; a channel that cannot issue before a known cycle is skipped
until then (a request arriving meanwhile wakes it only if it can issue earlier, or if it flips
the write mode). The result is cycle-exact with ticking every cycle (a test checks it).

``engine.c`` (:mod:`nmp.memory.native`) computes the same model another way -- readiness per
bank and row-hit class rather than per request, exact wake times rather than lower bounds, each
channel on its own -- and is the driver's default where a C compiler is found. Every command
issues at the same cycle in both. This one is the reference: change both together; the test
``tests/memory/test_mem_native_engine.py`` compares every output of the two (the count of
evaluations aside) and a log of the commands.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

# the counter layout of simulate()'s ``cnt`` arrays (nmp.memory.counters)
from nmp.memory.counters import C_COAL, C_FWD, C_HIT_R, C_HIT_W, N_COUNTERS
from nmp.memory.standards import CMD, NCMD

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

    @nb.njit(cache=True)
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

# The loop below is one function on purpose: numba reference-counts array arguments of calls
# and array aliases with atomic operations, which cost more than the scheduling work itself.


@nb.njit(cache=True, boundscheck=False)
def simulate(
    q_ch,
    q_rank,
    q_bg,
    q_bank,
    q_row,
    q_wr,
    q_key,
    q_arr,
    params,
    tab_i,
    nxt,
    lat,
    win,
    log,
):
    """Replay requests (already decoded to global node ids; ``q_arr``: earliest cycle each may be
    offered, all 0 for a trace injected as fast as the frontend allows) and return
    ``(status, cycles, clk_end, counters_at_cycles, counters_end, arrive, depart, done,
    forwarded, rank_active_cycles, ticks)``. ``params``: the run's configuration, one record of
    :data:`nmp.memory.engine_params.ENGINE_PARAMS` (its fields named there). ``log`` (int64
    [M, 5]): the first M commands of channel 0 as (clock, command, rank node, bank node, row);
    M = 0 records nothing. The request arrays are only read: the driver shares one zeros array
    among fields that are 0 throughout and reuses its buffers between replays."""
    p = params[0]
    C = p.channels
    R = p.ranks
    G = p.bankgroups
    B = p.banks
    RQ = p.read_queue
    WQ = p.write_queue
    F = p.frontend_ratio
    nrefi = p.nrefi
    rl = p.read_latency
    dual = p.dual_issue != 0
    closed = p.closed_row != 0
    ref_on = p.refresh_on != 0
    drain = p.drain != 0
    skip_blocked = p.skip_blocked != 0
    jump = p.jump != 0
    rd_cmd = RDA if closed else RD
    wr_cmd = WRA if closed else WR
    wm_hi = p.wm_high
    wm_lo = p.wm_low

    n = q_ch.shape[0]
    NR = C * R
    NG = NR * G
    NB = NG * B
    AQ = R * G * B
    PQ = 64 * R
    QM = max(max(RQ, WQ), AQ)

    # ready clocks and issue histories of all nodes: channels, ranks, bank groups, banks
    o1 = C
    o2 = C + NR
    o3 = C + NR + NG
    NN = o3 + NB
    rdy = np.zeros((NN, NCMD), np.int64)
    hist = np.full((NN, NCMD, W), -1, np.int64)
    work = np.zeros((2 + R + G + G * B, 3), np.int64)
    open_row = np.full(NB, -1, np.int64)
    open_cnt = np.zeros(NR, np.int64)
    open_since = np.zeros(NR, np.int64)
    active_cycles = np.zeros(NR, np.int64)
    act_bank = np.zeros(NB, np.int64)
    act_rank = np.zeros(NR, np.int64)

    qb = np.zeros((C, 3, QM, NS), np.int64)
    bnd = np.zeros((C, 3, QM), np.int64)
    bnk = np.zeros((C, 3, QM), np.int64)
    qbf = qb.reshape(-1)
    bndf = bnd.reshape(-1)
    bnkf = bnk.reshape(-1)
    uns = U(NS)
    ql = np.zeros((C, 3), np.int64)
    pbuf = np.zeros((C, PQ), np.int64)
    plen = np.zeros(C, np.int64)
    wmode = np.zeros(C, np.bool_)
    next_ref = np.full(C, nrefi, np.int64)
    wake = np.zeros(C, np.int64)  # earliest cycle channel c could issue (state unchanged)

    arrive = np.full(n, -1, np.int64)
    depart = np.full(n, -1, np.int64)
    done = np.full(n, -1, np.int64)
    forwarded = np.zeros(n, np.bool_)
    stat_done = np.zeros(n, np.bool_)
    cnt = np.zeros(N_COUNTERS, np.int64)
    cnt_snap = np.zeros(N_COUNTERS, np.int64)

    clk = np.int64(0)
    nxt_req = 0
    cycles = np.int64(-1)
    status = 0
    nlog = 0
    ticks = 0
    maxlog = log.shape[0]
    nslots = 2 if dual else 1
    offers = 1  # one offer before the first memory tick, then F per memory tick
    checked = -1  # request already searched for in the write buffer, without a match
    issued_any = True

    while True:
        # ---- frontend: up to `offers` requests, strictly in order ----------------------
        accepted = False
        if nxt_req < n:
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
        offers = F

        if cycles < 0 and nxt_req == n:
            cycles = clk
            cnt_snap[:] = cnt
            if not drain:
                break
        if nxt_req == n:
            empty = True
            for c in range(C):
                if ql[c, 0] > 0 or ql[c, 1] > 0 or ql[c, 2] > 0:
                    empty = False
                    break
            if empty:
                break

        # ---- exact jump over cycles in which nothing can happen ------------------------
        if jump and not issued_any and not accepted:
            t_next = INF
            for c in range(C):
                if wake[c] < t_next:
                    t_next = wake[c]
            if nxt_req < n and clk < q_arr[nxt_req] < t_next:
                t_next = q_arr[nxt_req]
            if t_next >= INF:
                status = 1  # nothing can ever issue: a deadlock
                break
            if t_next > clk + 1:
                clk = t_next - 1

        clk += 1
        ticks += 1
        issued_any = False

        # ---- memory tick: every channel controller, in channel order -------------------
        for c in range(C):
            if ref_on and clk == next_ref[c]:
                next_ref[c] += nrefi
                for r in range(R):
                    if plen[c] < PQ:
                        pbuf[c, plen[c]] = r
                        plen[c] += 1
                wake[c] = clk
            if jump and clk < wake[c]:
                continue
            issued_c = False
            # earliest future ready clock among the commands this tick considered: if nothing
            # issues, nothing can change in this channel before it (or the next refresh)
            fut = next_ref[c] if ref_on else INF
            # slot 0: the only slot (GenericDDR) or the column slot (HBM12)
            # slot 1: the row slot (HBM12 only)
            for slot in range(nslots):
                want_col = dual and slot == 0
                want_row = dual and slot == 1
                sel_kind = -1  # K_RD, K_WR, K_ACT, or 3: the priority buffer head
                sel_pos = -1
                cmd = -1
                # (a) active buffer: the oldest ready column command
                if not want_row:
                    best_arr = INF
                    m = ql[c, K_ACT]
                    for w0 in range(0, m, 64):
                        # branch-free pass over the bounds: a mask of the slots whose bound
                        # the clock has reached (the only ones that can be ready)
                        due = U(0)
                        row = U((c * 3 + K_ACT) * QM + w0)
                        for x in range(U(0), U(min(m, w0 + 64) - w0)):
                            t = bndf[row + x]
                            d = t <= clk
                            due |= U(1 if d else 0) << x
                            fut = min(fut, INF if d else t)
                        while due != U(0):
                            i = w0 + np.int64(trailing_zeros(due))  # type: ignore[assignment]
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
                                sel_pos = i
                                sel_kind = K_ACT
                if sel_kind < 0:
                    if plen[c] > 0:
                        # (b) priority buffer head (refresh): never in the column slot
                        if want_col:
                            continue
                        rk = c * R + pbuf[c, 0]
                        cmd = PREAB if open_cnt[rk] > 0 else REFAB
                        t = max(rdy[c, cmd], rdy[o1 + rk, cmd])
                        if t > clk:
                            if t < fut:
                                fut = t
                            continue
                        if cmd == PREAB and act_rank[rk] > 0:
                            continue
                        sel_kind = 3
                    else:
                        # (c) write mode, then the read or the write buffer
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
                            # one rank: while the channel or the rank holds the column command
                            # back, no hit is ready -- their bounds become that clock at once
                            floor = INF
                            if R == 1 and not want_row:
                                floor = max(rdy[U(c), U(col_cmd)], rdy[U(o1 + c), U(col_cmd)])
                            if floor < INF and floor > clk:
                                rest = due
                                while rest != U(0):
                                    x = trailing_zeros(rest)
                                    rest &= rest - U(1)
                                    if (
                                        open_row[U(bnkf[row + x])]
                                        == qbf[(row + x) * uns + U(S_ROW)]
                                    ):
                                        bndf[row + x] = floor
                                        due &= ~(U(1) << x)
                                        fut = min(fut, floor)
                            while due != U(0):
                                i = w0 + np.int64(trailing_zeros(due))  # type: ignore[assignment]
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
                                    # the due slots of the same class (bank, hit or not) would
                                    # evaluate to the same t: set their bounds at once
                                    rest = due
                                    while rest != U(0):
                                        x = trailing_zeros(rest)
                                        rest &= rest - U(1)
                                        if bnkf[row + x] == bq and hit == (
                                            orow == qbf[(row + x) * uns + U(S_ROW)]
                                        ):
                                            bndf[row + x] = t
                                            due &= ~(U(1) << x)
                                    continue
                                closing = cc == PREPB or cc == RDA or cc == WRA  # noqa: SIM109
                                if closing and act_bank[U(bq)] > 0:
                                    if skip_blocked:
                                        continue
                                    stop = True
                                    break
                                cmd = cc
                                sel_pos = i
                                sel_kind = kind
                                stop = True
                                break
                            if stop:
                                break
                        if sel_kind < 0:
                            continue

                # ---- issue `cmd`: constraint rules on its path (README §3) -----------------
                if sel_kind == 3:
                    g = -1
                    bk = -1
                    q = -1
                else:
                    q = qb[c, sel_kind, sel_pos, S_Q]
                    rk = qb[c, sel_kind, sel_pos, S_RANK]
                    g = qb[c, sel_kind, sel_pos, S_BG]
                    bk = qb[c, sel_kind, sel_pos, S_BANK]
                    if not stat_done[q]:
                        stat_done[q] = True
                        orow = open_row[bk]
                        k = 0 if orow == q_row[q] else (2 if orow >= 0 else 1)
                        cnt[(C_HIT_W if q_wr[q] else C_HIT_R) + k] += 1
                # target nodes push `clk` into their issue history and raise the ready clocks
                # of the following commands; sibling nodes (other ranks, ...) get the sibling
                # rules. work rows: (flat node, level, sibling)
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
                cnt[cmd] += 1
                issued_any = True
                issued_c = True
                if c == 0 and nlog < maxlog:
                    log[nlog, 0] = clk
                    log[nlog, 1] = cmd
                    log[nlog, 2] = rk
                    log[nlog, 3] = bk
                    log[nlog, 4] = -1 if q < 0 else q_row[q]
                    nlog += 1

                # ---- state changes -------------------------------------------------------
                if sel_kind == 3:
                    if cmd == PREAB:
                        base = rk * G * B
                        for k in range(G * B):
                            open_row[base + k] = -1
                        for kk in range(2):
                            for i in range(ql[c, kk]):
                                bnd[c, kk, i] = 0
                        active_cycles[rk] += clk - open_since[rk]
                        open_cnt[rk] = 0
                    else:
                        for k in range(plen[c] - 1):
                            pbuf[c, k] = pbuf[c, k + 1]
                        plen[c] -= 1
                    continue
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
                    continue
                else:
                    # final column command: the request retires
                    if cmd == RDA or cmd == WRA:  # noqa: SIM109 (numba)
                        open_row[bk] = -1
                        open_cnt[rk] -= 1
                        if open_cnt[rk] == 0:
                            active_cycles[rk] += clk - open_since[rk]
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

            wake[c] = clk + 1 if issued_c else fut

    for rk in range(NR):
        if open_cnt[rk] > 0:
            active_cycles[rk] += clk - open_since[rk]
    return (
        status,
        cycles,
        clk,
        cnt_snap,
        cnt,
        arrive,
        depart,
        done,
        forwarded,
        active_cycles,
        ticks,
    )


@nb.njit(cache=True)
def decode_lines(
    addr, write, has_write, k, tx, tx_shift, pos, mask, R, G, B, out, wr, full, zero_arrival
):
    """One pass over the lines: each split into its ``k`` transactions (addr, addr + tx, ...),
    decoded as :func:`nmp.memory.mapping.decode_address` straight to the engine's global node
    ids (channel, rank, bank group, bank and row each occupy one bit range ``pos``/``mask`` of
    the transaction number). Fills ``out[i * m + j]`` (m = n * k transactions; i: channel,
    rank, bank group, bank, row, transaction key (address / tx_bytes), arrival 0; without
    ``full`` only bank group, bank, row and key; the arrival only with ``zero_arrival``) and
    ``wr[j]`` (the writes)."""
    n = addr.shape[0] * k
    p0, p1, p2, p3, p4 = pos[0], pos[1], pos[2], pos[3], pos[4]
    m0, m1, m2, m3, m4 = mask[0], mask[1], mask[2], mask[3], mask[4]
    for j in range(n):
        i = j // k if k > 1 else j
        a = addr[i] + np.uint64(j - i * k) * tx
        x = np.int64(a >> tx_shift)
        rank = ((x >> p0) & m0) * R + ((x >> p1) & m1)
        bg = rank * G + ((x >> p2) & m2)
        if full:
            out[j] = (x >> p0) & m0
            out[n + j] = rank
        if zero_arrival:
            out[6 * n + j] = 0
        out[2 * n + j] = bg
        out[3 * n + j] = bg * B + ((x >> p3) & m3)
        out[4 * n + j] = (x >> p4) & m4
        out[5 * n + j] = x
        wr[j] = 1 if has_write and write[i] else 0


@nb.njit(cache=True)
def read_sums(write, has_write, ks, arrive, depart, done, cycles):
    """One pass over the transactions of a run (``2 ** ks`` per line, ``write`` per line where
    ``has_write``), for :func:`nmp.memory.driver.replay` (``engine.c``'s ``read_sums_c``
    computes the same on the C engine's path): reads; reads whose data returned by ``cycles``
    and the sum of their latencies; reads served at all and the sum of theirs; the last done
    cycle."""
    reads = at_sum = served = served_sum = 0
    last = np.int64(0)
    for j in range(done.shape[0]):
        last = max(last, done[j])
        if has_write and write[j >> ks]:
            continue
        reads += 1
        d = depart[j]
        if d >= 0:
            served += 1
            served_sum += d - arrive[j]
            if d <= cycles:
                at_sum += d - arrive[j]
    return reads, at_sum, served, served_sum, last
