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


@nb.njit(cache=True)
def _apply_target(rdy, hist, node, level, cmd, clk, start, end, nxt, lat, win):
    s = start[level, cmd]
    e = end[level, cmd]
    if s == e:
        return
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
def _apply_sibling(rdy, node, level, cmd, clk, sstart, send, nxt, lat):
    for i in range(sstart[level, cmd], send[level, cmd]):
        t = clk + lat[i]
        if t > rdy[node, nxt[i]]:
            rdy[node, nxt[i]] = t


@nb.njit(cache=True)
def _update_timing(
    c, rk, g, b, cmd, clk, R, G, B, rdy0, rdy1, rdy2, rdy3, h0, h1, h2, h3, tab_i, nxt, lat, win
):
    start = tab_i[0]
    end = tab_i[1]
    sstart = tab_i[2]
    send = tab_i[3]
    scope = tab_i[4]
    _apply_target(rdy0, h0, c, 0, cmd, clk, start, end, nxt, lat, win)
    if send[1, cmd] > sstart[1, cmd]:
        for rr in range(R):
            node = c * R + rr
            if node != rk:
                _apply_sibling(rdy1, node, 1, cmd, clk, sstart, send, nxt, lat)
    _apply_target(rdy1, h1, rk, 1, cmd, clk, start, end, nxt, lat, win)
    if scope[0, cmd] == 1:
        # All-bank command: every bank group and bank of the rank is a target.
        if end[2, cmd] > start[2, cmd] or end[3, cmd] > start[3, cmd]:
            for gg in range(G):
                gnode = rk * G + gg
                _apply_target(rdy2, h2, gnode, 2, cmd, clk, start, end, nxt, lat, win)
                for bb in range(B):
                    _apply_target(rdy3, h3, gnode * B + bb, 3, cmd, clk, start, end, nxt, lat, win)
        return
    if send[2, cmd] > sstart[2, cmd]:
        for gg in range(G):
            gnode = rk * G + gg
            if gnode != g:
                _apply_sibling(rdy2, gnode, 2, cmd, clk, sstart, send, nxt, lat)
    _apply_target(rdy2, h2, g, 2, cmd, clk, start, end, nxt, lat, win)
    if send[3, cmd] > sstart[3, cmd]:
        for bb in range(B):
            bnode = g * B + bb
            if bnode != b:
                _apply_sibling(rdy3, bnode, 3, cmd, clk, sstart, send, nxt, lat)
    _apply_target(rdy3, h3, b, 3, cmd, clk, start, end, nxt, lat, win)


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
    wm_hi = wm[0]
    wm_lo = wm[1]

    n = q_ch.shape[0]
    # one row per request (bank node, row, rank node, bank-group node, write, arrive): the
    # scans below read one cache line per queued request
    qi = np.empty((n, 6), np.int64)
    for j in range(n):
        qi[j, 0] = q_bank[j]
        qi[j, 1] = q_row[j]
        qi[j, 2] = q_rank[j]
        qi[j, 3] = q_bg[j]
        qi[j, 4] = q_wr[j]
        qi[j, 5] = -1
    NR = C * R
    NG = NR * G
    NB = NG * B
    AQ = R * G * B
    PQ = 64 * R

    rdy0 = np.zeros((C, NCMD), np.int64)
    rdy1 = np.zeros((NR, NCMD), np.int64)
    rdy2 = np.zeros((NG, NCMD), np.int64)
    rdy3 = np.zeros((NB, NCMD), np.int64)
    h0 = np.full((C, NCMD, W), -1, np.int64)
    h1 = np.full((NR, NCMD, W), -1, np.int64)
    h2 = np.full((NG, NCMD, W), -1, np.int64)
    h3 = np.full((NB, NCMD, W), -1, np.int64)
    open_row = np.full(NB, -1, np.int64)
    open_cnt = np.zeros(NR, np.int64)
    open_since = np.zeros(NR, np.int64)
    active_cycles = np.zeros(NR, np.int64)
    act_bank = np.zeros(NB, np.int64)
    act_rank = np.zeros(NR, np.int64)

    rbuf = np.zeros((C, RQ), np.int64)
    rlen = np.zeros(C, np.int64)
    wbuf = np.zeros((C, WQ), np.int64)
    wlen = np.zeros(C, np.int64)
    abuf = np.zeros((C, AQ), np.int64)
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
                rbuf[c, rlen[c]] = j
                rlen[c] += 1
                arrive[j] = 0
                qi[j, 5] = 0
                ok = True
        else:
            if wlen[c] < WQ:
                wbuf[c, wlen[c]] = j
                wlen[c] += 1
                arrive[j] = 0
                qi[j, 5] = 0
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
                        q = abuf[c, i]
                        bq = qi[q, 0]
                        # an active-buffer request's row is open: its column command is next
                        cmd = (WRA if closed else WR) if qi[q, 4] else (RDA if closed else RD)
                        t = rdy0[c, cmd]
                        t1 = rdy1[qi[q, 2], cmd]
                        t2 = rdy2[qi[q, 3], cmd]
                        t3 = rdy3[bq, cmd]
                        t = max(max(t, t1), max(t2, t3))
                        if t > clk:
                            if t < fut:
                                fut = t
                        elif qi[q, 5] < best_arr:
                            best_arr = qi[q, 5]
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
                        t = rdy0[c, cmd]
                        if rdy1[rk, cmd] > t:
                            t = rdy1[rk, cmd]
                        if t > clk:
                            if t < fut:
                                fut = t
                            continue
                        if cmd == PREAB and act_rank[rk] > 0:
                            continue
                        _update_timing(
                            c, rk, -1, -1, cmd, clk, R, G, B, rdy0, rdy1, rdy2, rdy3,
                            h0, h1, h2, h3, tab_i, nxt, lat, win,
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
                    col_cmd = (WRA if closed else WR) if use_w else (RDA if closed else RD)
                    for i in range(blen):
                        q = buf[c, i]
                        bq = qi[q, 0]
                        orow = open_row[bq]
                        if orow == qi[q, 1]:
                            cmd = col_cmd
                            if want_row:
                                continue
                        else:
                            cmd = ACT if orow < 0 else PREPB
                            if want_col:
                                continue
                        t = rdy0[c, cmd]
                        t1 = rdy1[qi[q, 2], cmd]
                        t2 = rdy2[qi[q, 3], cmd]
                        t3 = rdy3[bq, cmd]
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
                bk = q_bank[q]
                rk = q_rank[q]
                if not stat_done[q]:
                    stat_done[q] = True
                    orow = open_row[bk]
                    k = 0 if orow == q_row[q] else (2 if orow >= 0 else 1)
                    cnt[(C_HIT_W if q_wr[q] else C_HIT_R) + k] += 1
                _update_timing(
                    c, rk, q_bg[q], bk, cmd, clk, R, G, B, rdy0, rdy1, rdy2, rdy3,
                    h0, h1, h2, h3, tab_i, nxt, lat, win,
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
                    if sel_src == 2:
                        for k in range(sel_pos, rlen[c] - 1):
                            rbuf[c, k] = rbuf[c, k + 1]
                        rlen[c] -= 1
                    else:
                        for k in range(sel_pos, wlen[c] - 1):
                            wbuf[c, k] = wbuf[c, k + 1]
                        wlen[c] -= 1
                    abuf[c, alen[c]] = q
                    alen[c] += 1
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
                        for k in range(sel_pos, alen[c] - 1):
                            abuf[c, k] = abuf[c, k + 1]
                        alen[c] -= 1
                        act_bank[bk] -= 1
                        act_rank[rk] -= 1
                    elif sel_src == 2:
                        for k in range(sel_pos, rlen[c] - 1):
                            rbuf[c, k] = rbuf[c, k + 1]
                        rlen[c] -= 1
                    else:
                        for k in range(sel_pos, wlen[c] - 1):
                            wbuf[c, k] = wbuf[c, k + 1]
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
                        if q_key[wbuf[c, i]] == q_key[j]:
                            ok = True
                            break
                    if ok:
                        forwarded[j] = True
                        cnt[C_FWD] += 1
                        arrive[j] = clk
                        depart[j] = clk + 1
                        done[j] = clk + 1
                    elif rlen[c] < RQ:
                        rbuf[c, rlen[c]] = j
                        rlen[c] += 1
                        arrive[j] = clk
                        qi[j, 5] = clk
                        wake[c] = clk + 1
                        ok = True
                else:
                    for i in range(wlen[c]):
                        if q_key[wbuf[c, i]] == q_key[j]:
                            ok = True
                            break
                    if ok:
                        cnt[C_COAL] += 1
                        arrive[j] = clk
                        done[j] = clk
                    elif wlen[c] < WQ:
                        wbuf[c, wlen[c]] = j
                        wlen[c] += 1
                        arrive[j] = clk
                        qi[j, 5] = clk
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
