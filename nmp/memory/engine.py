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

import numpy as np

from nmp.jit import njit

# the counter layout of simulate()'s ``cnt`` arrays (nmp.memory.counters)
from nmp.memory.counters import C_BANK_OPEN, C_HIT_R, C_HIT_W, N_COUNTERS
from nmp.memory.engine_phases import (
    INF,
    K_ACT,
    NS,
    RD,
    RDA,
    S_BANK,
    S_BG,
    S_Q,
    S_RANK,
    WR,
    WRA,
    W,
    apply_rules,
    buffers_empty,
    next_event,
    offer_requests,
    pick_active,
    pick_buffer,
    pick_refresh,
    refresh_state,
    request_state,
)
from nmp.memory.standards import NCMD


@njit(cache=True, boundscheck=False)
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
    hold_hits = p.hold_hit_rows != 0 and skip_blocked  # (as the C engine: engine.c)
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
    requests = (q_ch, q_rank, q_bg, q_bank, q_row, q_wr, q_key, q_arr)

    while True:
        # ---- frontend: up to `offers` requests, strictly in order ----------------------
        accepted = False
        if nxt_req < n and q_arr[nxt_req] <= clk:
            nxt_req, checked, accepted = offer_requests(
                clk, nxt_req, offers, checked, requests, RQ, WQ, wm_hi, wm_lo, rd_cmd, wr_cmd, o1,
                o2, o3, qb, bnd, bnk, ql, plen, wmode, wake, open_row, rdy, arrive, depart, done,
                forwarded, cnt,
            )  # fmt: skip
        offers = F

        if cycles < 0 and nxt_req == n:
            cycles = clk
            cnt_snap[:] = cnt
            cnt_snap[C_BANK_OPEN] += clk * open_cnt.sum()  # the open banks close here
            if not drain:
                break
        if nxt_req == n and buffers_empty(ql):
            break

        # ---- exact jump over cycles in which nothing can happen ------------------------
        if jump and not issued_any and not accepted:
            t_next = next_event(clk, nxt_req, q_arr, wake)
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
                rk = -1
                if not want_row and ql[c, K_ACT] > 0:
                    sel_kind, sel_pos, cmd, fut = pick_active(
                        c, clk, fut, QM, rd_cmd, wr_cmd, o1, o2, o3, qb, qbf, bndf, ql, rdy
                    )
                if sel_kind < 0:
                    if plen[c] > 0:
                        if want_col:
                            continue  # refresh never issues in the column slot
                        ready, rk, cmd, fut = pick_refresh(
                            c, clk, fut, R, o1, pbuf, open_cnt, act_rank, rdy
                        )
                        if not ready:
                            continue
                        sel_kind = 3
                    else:
                        sel_kind, sel_pos, cmd, fut = pick_buffer(
                            c, clk, fut, want_col, want_row, R, QM, wm_hi, wm_lo, rd_cmd,
                            wr_cmd, skip_blocked, hold_hits, o1, o2, o3, qbf, bndf, bnkf, ql, wmode,
                            open_row, act_bank, rdy,
                        )  # fmt: skip
                        if sel_kind < 0:
                            continue

                # ---- issue `cmd` -------------------------------------------------------
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
                apply_rules(
                    c, clk, cmd, rk, g, bk, R, G, B, o1, o2, o3, tab_i, nxt, lat, win, work,
                    rdy, hist,
                )  # fmt: skip
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
                    refresh_state(
                        c, clk, cmd, rk, G, B, ql, bnd, pbuf, plen, open_row, open_cnt,
                        open_since, active_cycles, cnt,
                    )  # fmt: skip
                else:
                    request_state(
                        c, clk, cmd, sel_kind, sel_pos, q, rk, bk, rl, QM, q_row, q_wr, qb,
                        qbf, bnd, bndf, bnk, bnkf, ql, open_row, open_cnt, open_since,
                        active_cycles, act_bank, act_rank, depart, done, cnt,
                    )  # fmt: skip

            wake[c] = clk + 1 if issued_c else fut

    for rk in range(NR):
        if open_cnt[rk] > 0:
            active_cycles[rk] += clk - open_since[rk]
        cnt[C_BANK_OPEN] += clk * open_cnt[rk]
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


@njit(cache=True)
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


@njit(cache=True)
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
