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
refresh, so the clock jumps there. The result is cycle-exact with ticking every cycle.
"""

from __future__ import annotations

import numba as nb
import numpy as np

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

# Counter layout of the ``counters`` arrays returned by simulate().
C_HIT_R, C_MISS_R, C_CONF_R, C_HIT_W, C_MISS_W, C_CONF_W, C_FWD, C_COAL = range(NCMD, NCMD + 8)
N_COUNTERS = NCMD + 8


# Fields of a buffer slot: one cache line per queued request, no indirection in the scans.
S_Q, S_BANK, S_ROW, S_RANK, S_BG, S_ARR, S_KEY, S_WR = range(8)
NS = 8


@nb.njit(cache=True)
def _put(buf, c, p, j, qi, q_key, clk):
    buf[c, p, S_Q] = j
    buf[c, p, S_BANK] = qi[j, 0]
    buf[c, p, S_ROW] = qi[j, 1]
    buf[c, p, S_RANK] = qi[j, 2]
    buf[c, p, S_BG] = qi[j, 3]
    buf[c, p, S_ARR] = clk
    buf[c, p, S_KEY] = q_key[j]
    buf[c, p, S_WR] = qi[j, 4]


@nb.njit(cache=True)
def _remove(buf, c, pos, length):
    """Remove slot ``pos`` of a buffer holding ``length`` entries, keeping the order."""
    for k in range(pos, length - 1):
        for f in range(NS):
            buf[c, k, f] = buf[c, k + 1, f]


@nb.njit(cache=True)
def _update_timing(c, rk, g, b, cmd, clk, R, G, B, off, rdy, hist, tab_i, nxt, lat, win, work):
    """Apply the constraint rules of ``cmd`` issued at ``clk`` on the path (channel ``c``, rank
    node ``rk``, bank-group node ``g``, bank node ``b``; ``g < 0`` for an all-bank command):
    target nodes push ``clk`` into their issue history and raise the ready clocks of the
    following commands; sibling nodes (other ranks, ...) get the sibling rules.
    ``rdy``/``hist`` hold all nodes, level L's node k at row ``off[L] + k``."""
    start = tab_i[0]
    end = tab_i[1]
    sstart = tab_i[2]
    send = tab_i[3]
    # work rows: (flat node, level, sibling)
    nw = 0
    work[nw, 0] = c
    work[nw, 1] = 0
    work[nw, 2] = 0
    nw += 1
    if send[1, cmd] > sstart[1, cmd]:
        for rr in range(R):
            node = c * R + rr
            if node != rk:
                work[nw, 0] = off[1] + node
                work[nw, 1] = 1
                work[nw, 2] = 1
                nw += 1
    work[nw, 0] = off[1] + rk
    work[nw, 1] = 1
    work[nw, 2] = 0
    nw += 1
    if g < 0:
        # all-bank command: every bank group and bank of the rank is a target
        if end[2, cmd] > start[2, cmd] or end[3, cmd] > start[3, cmd]:
            for gg in range(G):
                gnode = rk * G + gg
                work[nw, 0] = off[2] + gnode
                work[nw, 1] = 2
                work[nw, 2] = 0
                nw += 1
                for bb in range(B):
                    work[nw, 0] = off[3] + gnode * B + bb
                    work[nw, 1] = 3
                    work[nw, 2] = 0
                    nw += 1
    else:
        if send[2, cmd] > sstart[2, cmd]:
            for gg in range(G):
                gnode = rk * G + gg
                if gnode != g:
                    work[nw, 0] = off[2] + gnode
                    work[nw, 1] = 2
                    work[nw, 2] = 1
                    nw += 1
        work[nw, 0] = off[2] + g
        work[nw, 1] = 2
        work[nw, 2] = 0
        nw += 1
        if send[3, cmd] > sstart[3, cmd]:
            for bb in range(B):
                bnode = g * B + bb
                if bnode != b:
                    work[nw, 0] = off[3] + bnode
                    work[nw, 1] = 3
                    work[nw, 2] = 1
                    nw += 1
        work[nw, 0] = off[3] + b
        work[nw, 1] = 3
        work[nw, 2] = 0
        nw += 1
    for w in range(nw):
        node = work[w, 0]
        level = work[w, 1]
        if work[w, 2]:
            for i in range(sstart[level, cmd], send[level, cmd]):
                t = clk + lat[i]
                if t > rdy[node, nxt[i]]:
                    rdy[node, nxt[i]] = t
            continue
        s = start[level, cmd]
        e = end[level, cmd]
        if s == e:
            continue
        for k in range(W - 1, 0, -1):
            hist[node, cmd, k] = hist[node, cmd, k - 1]
        hist[node, cmd, 0] = clk
        for i in range(s, e):
            past = hist[node, cmd, win[i] - 1]
            if past >= 0:
                t = past + lat[i]
                if t > rdy[node, nxt[i]]:
                    rdy[node, nxt[i]] = t


@nb.njit(cache=True)
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
    wm,
    tab_i,
    nxt,
    lat,
    win,
    log,
):
    """Replay requests (already decoded to global node ids; ``q_arr``: earliest cycle each may be
    offered, all 0 for a trace injected as fast as the frontend allows) and return
    ``(status, cycles, clk_end, counters_at_cycles, counters_end, arrive, depart, done,
    forwarded, rank_active_cycles)``. ``params``: C, R, G, B, RQ, WQ, F, nREFI, read_latency,
    dual_issue, closed_row, refresh_on, drain, skip_blocked, jump. ``wm``: high and low
    write-buffer thresholds (entries). ``log`` (int64 [M, 5]): the first M commands of channel 0
    as (clock, command, rank node, bank node, row); M = 0 records nothing."""
    C = params[0]
    R = params[1]
    G = params[2]
    B = params[3]
    RQ = params[4]
    WQ = params[5]
    F = params[6]
    nrefi = params[7]
    rl = params[8]
    dual = params[9] != 0
    closed = params[10] != 0
    ref_on = params[11] != 0
    drain = params[12] != 0
    skip_blocked = params[13] != 0
    jump = params[14] != 0
    rd_cmd = RDA if closed else RD
    wr_cmd = WRA if closed else WR
    wm_hi = wm[0]
    wm_lo = wm[1]

    n = q_ch.shape[0]
    # one row per request (bank node, row, rank node, bank-group node, write), copied into a
    # buffer slot when the request is accepted
    qi = np.empty((n, 5), np.int64)
    for j in range(n):
        qi[j, 0] = q_bank[j]
        qi[j, 1] = q_row[j]
        qi[j, 2] = q_rank[j]
        qi[j, 3] = q_bg[j]
        qi[j, 4] = q_wr[j]
    NR = C * R
    NG = NR * G
    NB = NG * B
    AQ = R * G * B
    PQ = 64 * R

    # ready clocks and issue histories of all nodes: channels, ranks, bank groups, banks
    off = np.array([0, C, C + NR, C + NR + NG], np.int64)
    o1 = off[1]
    o2 = off[2]
    o3 = off[3]
    rdy = np.zeros((C + NR + NG + NB, NCMD), np.int64)
    hist = np.full((C + NR + NG + NB, NCMD, W), -1, np.int64)
    work = np.zeros((2 + R + G + G * B, 3), np.int64)
    open_row = np.full(NB, -1, np.int64)
    open_cnt = np.zeros(NR, np.int64)
    open_since = np.zeros(NR, np.int64)
    active_cycles = np.zeros(NR, np.int64)
    act_bank = np.zeros(NB, np.int64)
    act_rank = np.zeros(NR, np.int64)

    rbuf = np.zeros((C, RQ, NS), np.int64)
    rlen = np.zeros(C, np.int64)
    wbuf = np.zeros((C, WQ, NS), np.int64)
    wlen = np.zeros(C, np.int64)
    abuf = np.zeros((C, AQ, NS), np.int64)
    alen = np.zeros(C, np.int64)
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

    # ---- frontend: one offer before the first memory tick -------------------------------
    accepted = False
    if n > 0 and q_arr[0] <= 0:
        j = 0
        c = q_ch[j]
        ok = False
        if q_wr[j] == 0:
            if rlen[c] < RQ:
                _put(rbuf, c, rlen[c], j, qi, q_key, 0)
                rlen[c] += 1
                arrive[j] = 0
                ok = True
        else:
            if wlen[c] < WQ:
                _put(wbuf, c, wlen[c], j, qi, q_key, 0)
                wlen[c] += 1
                arrive[j] = 0
                ok = True
        if ok:
            nxt_req = 1
            accepted = True

    issued_any = True
    while True:
        if cycles < 0 and nxt_req == n:
            cycles = clk
            cnt_snap[:] = cnt
            if not drain:
                break
        if nxt_req == n:
            empty = True
            for c in range(C):
                if rlen[c] > 0 or wlen[c] > 0 or alen[c] > 0:
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
            nslots = 2 if dual else 1
            for slot in range(nslots):
                want_col = dual and slot == 0
                want_row = dual and slot == 1
                sel_q = -1
                sel_cmd = -1
                sel_src = -1  # 0 active, 1 priority, 2 read, 3 write
                sel_pos = -1
                # (a) active buffer: the oldest ready column command
                if not want_row:
                    best_arr = INF
                    for i in range(alen[c]):
                        q = abuf[c, i, S_Q]
                        # an active-buffer request's row is open: its column command is next
                        cmd = wr_cmd if abuf[c, i, S_WR] else rd_cmd
                        t = rdy[c, cmd]
                        t1 = rdy[o1 + abuf[c, i, S_RANK], cmd]
                        t2 = rdy[o2 + abuf[c, i, S_BG], cmd]
                        t3 = rdy[o3 + abuf[c, i, S_BANK], cmd]
                        t = max(max(t, t1), max(t2, t3))
                        if t > clk:
                            if t < fut:
                                fut = t
                        elif abuf[c, i, S_ARR] < best_arr:
                            best_arr = abuf[c, i, S_ARR]
                            sel_q = q
                            sel_cmd = cmd
                            sel_pos = i
                            sel_src = 0
                if sel_q < 0:
                    if plen[c] > 0:
                        # (b) priority buffer head (refresh): never in the column slot
                        if want_col:
                            continue
                        r = pbuf[c, 0]
                        rk = c * R + r
                        cmd = PREAB if open_cnt[rk] > 0 else REFAB
                        t = rdy[c, cmd]
                        if rdy[o1 + rk, cmd] > t:
                            t = rdy[o1 + rk, cmd]
                        if t > clk:
                            if t < fut:
                                fut = t
                            continue
                        if cmd == PREAB and act_rank[rk] > 0:
                            continue
                        _update_timing(
                            c, rk, -1, -1, cmd, clk, R, G, B, off, rdy, hist, tab_i, nxt, lat,
                            win, work,
                        )  # fmt: skip
                        cnt[cmd] += 1
                        issued_any = True
                        issued_c = True
                        if c == 0 and nlog < maxlog:
                            log[nlog, 0] = clk
                            log[nlog, 1] = cmd
                            log[nlog, 2] = rk
                            log[nlog, 3] = -1
                            log[nlog, 4] = -1
                            nlog += 1
                        if cmd == PREAB:
                            base = rk * G * B
                            for k in range(G * B):
                                open_row[base + k] = -1
                            active_cycles[rk] += clk - open_since[rk]
                            open_cnt[rk] = 0
                        else:
                            for k in range(plen[c] - 1):
                                pbuf[c, k] = pbuf[c, k + 1]
                            plen[c] -= 1
                        continue
                    # (c) write mode, then the read or the write buffer
                    if not wmode[c]:
                        if wlen[c] > wm_hi or rlen[c] == 0:
                            wmode[c] = True
                    else:
                        if wlen[c] < wm_lo and rlen[c] != 0:
                            wmode[c] = False
                    use_w = wmode[c]
                    blen = wlen[c] if use_w else rlen[c]
                    buf = wbuf if use_w else rbuf
                    col_cmd = wr_cmd if use_w else rd_cmd
                    for i in range(blen):
                        q = buf[c, i, S_Q]
                        bq = buf[c, i, S_BANK]
                        orow = open_row[bq]
                        if orow == buf[c, i, S_ROW]:
                            cmd = col_cmd
                            if want_row:
                                continue
                        else:
                            cmd = ACT if orow < 0 else PREPB
                            if want_col:
                                continue
                        t = rdy[c, cmd]
                        t1 = rdy[o1 + buf[c, i, S_RANK], cmd]
                        t2 = rdy[o2 + buf[c, i, S_BG], cmd]
                        t3 = rdy[o3 + bq, cmd]
                        t = max(max(t, t1), max(t2, t3))
                        if t > clk:
                            if t < fut:
                                fut = t
                            continue
                        closing = cmd == PREPB or cmd == RDA or cmd == WRA  # noqa: SIM109 (numba)
                        if closing and act_bank[bq] > 0:
                            if skip_blocked:
                                continue
                            break
                        sel_q = q
                        sel_cmd = cmd
                        sel_pos = i
                        sel_src = 3 if use_w else 2
                        break
                    if sel_q < 0:
                        continue

                # ---- issue sel_cmd for request sel_q -----------------------------------
                q = sel_q
                cmd = sel_cmd
                bk = qi[q, 0]
                rk = qi[q, 2]
                if not stat_done[q]:
                    stat_done[q] = True
                    orow = open_row[bk]
                    k = 0 if orow == q_row[q] else (2 if orow >= 0 else 1)
                    cnt[(C_HIT_W if q_wr[q] else C_HIT_R) + k] += 1
                _update_timing(
                    c, rk, qi[q, 3], bk, cmd, clk, R, G, B, off, rdy, hist, tab_i, nxt, lat,
                    win, work,
                )  # fmt: skip
                cnt[cmd] += 1
                issued_any = True
                issued_c = True
                if c == 0 and nlog < maxlog:
                    log[nlog, 0] = clk
                    log[nlog, 1] = cmd
                    log[nlog, 2] = rk
                    log[nlog, 3] = bk
                    log[nlog, 4] = q_row[q]
                    nlog += 1
                if cmd == ACT:
                    open_row[bk] = q_row[q]
                    if open_cnt[rk] == 0:
                        open_since[rk] = clk
                    open_cnt[rk] += 1
                    # leaves the read/write buffer for the active buffer
                    src = rbuf if sel_src == 2 else wbuf
                    for f in range(NS):
                        abuf[c, alen[c], f] = src[c, sel_pos, f]
                    alen[c] += 1
                    if sel_src == 2:
                        _remove(rbuf, c, sel_pos, rlen[c])
                        rlen[c] -= 1
                    else:
                        _remove(wbuf, c, sel_pos, wlen[c])
                        wlen[c] -= 1
                    act_bank[bk] += 1
                    act_rank[rk] += 1
                elif cmd == PREPB:
                    open_row[bk] = -1
                    open_cnt[rk] -= 1
                    if open_cnt[rk] == 0:
                        active_cycles[rk] += clk - open_since[rk]
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
                    if sel_src == 0:
                        _remove(abuf, c, sel_pos, alen[c])
                        alen[c] -= 1
                        act_bank[bk] -= 1
                        act_rank[rk] -= 1
                    elif sel_src == 2:
                        _remove(rbuf, c, sel_pos, rlen[c])
                        rlen[c] -= 1
                    else:
                        _remove(wbuf, c, sel_pos, wlen[c])
                        wlen[c] -= 1

            wake[c] = clk + 1 if issued_c else fut

        # ---- frontend: up to F offers, strictly in order -------------------------------
        accepted = False
        if nxt_req < n:
            for _ in range(F):
                j = nxt_req
                if q_arr[j] > clk:
                    break
                c = q_ch[j]
                ok = False
                if q_wr[j] == 0:
                    for i in range(wlen[c]):
                        if wbuf[c, i, S_KEY] == q_key[j]:
                            ok = True
                            break
                    if ok:
                        forwarded[j] = True
                        cnt[C_FWD] += 1
                        arrive[j] = clk
                        depart[j] = clk + 1
                        done[j] = clk + 1
                    elif rlen[c] < RQ:
                        _put(rbuf, c, rlen[c], j, qi, q_key, clk)
                        rlen[c] += 1
                        arrive[j] = clk
                        wake[c] = clk + 1
                        ok = True
                else:
                    for i in range(wlen[c]):
                        if wbuf[c, i, S_KEY] == q_key[j]:
                            ok = True
                            break
                    if ok:
                        cnt[C_COAL] += 1
                        arrive[j] = clk
                        done[j] = clk
                    elif wlen[c] < WQ:
                        _put(wbuf, c, wlen[c], j, qi, q_key, clk)
                        wlen[c] += 1
                        arrive[j] = clk
                        wake[c] = clk + 1
                        ok = True
                if not ok:
                    break
                accepted = True
                nxt_req += 1
                if nxt_req == n:
                    break

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
