"""What ``benchmarks/peers.py`` prints after its cases: the ratios per standard and peer (peer
time / nmp time; > 1: nmp is faster), each tool's throughput beside them, where each standard's
median lies among its cases, the ratio's factors (the run's channel-cycles per command, the
peer's cost per channel-cycle, nmp's per command), and the README's trace on its own."""

from __future__ import annotations

import statistics

# Issue 43's target for the engine in process: at least this many times Ramulator 2's speed,
# the median over a standard's cases (printed against, never used to choose anything)
IN_PROCESS_TARGET = 60.0

METRICS = ("whole_wall", "whole_cpu", "whole_free", "in_wall", "in_cpu")
# "free": the wall time less the time the process waited for a CPU that other processes held
# (Linux's run_delay): what the wall clock gives where a core is free, on a shared machine.
# Not in process: over a replay of 10-20 ms the wait read there exceeded the wall time on some
# HBM2 cases (2-core VM), so it is not a measure at that scale; the CPU time is.
METRIC_NAMES = {
    "whole_wall": "whole process, wall",
    "whole_cpu": "whole process, CPU",
    "whole_free": "whole, wall - wait",
    "in_wall": "in process, wall",
    "in_cpu": "in process, CPU",
}
README_CASE = "emb_zipf_a0.8_r1m_rb64_p40@ddr4_1r"  # the README's replay: trace and memory


def _range(values: list[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}x" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}-{hi:{fmt}}x"


def ratio_cells(sel: list[dict], peer: str, metric: str, rounds: int) -> str:
    """The median over the cases of peer / nmp: per round (its range over the rounds) and of
    each tool's best time."""
    per_round = [
        statistics.median(r[peer][metric][k] / r["nmp"][metric][k] for r in sel)
        for k in range(rounds)
    ]
    best = statistics.median(min(r[peer][metric]) / min(r["nmp"][metric]) for r in sel)
    fmt = ".2f" if metric.startswith("whole") else ".1f"
    return f"{_range(per_round, fmt):>13s} {best:{fmt}}x"


def throughput(sel: list[dict], tool: str, metric: str, rounds: int) -> str:
    """The tool's requests per second over the cases, per round: its range."""
    n = sum(r["requests"] for r in sel)
    per_round = [n / sum(r[tool][metric][k] for r in sel) for k in range(rounds)]
    lo, hi = min(per_round), max(per_round)
    unit, scale = ("M", 1e6) if lo >= 1e6 else ("k", 1e3)
    return f"{lo / scale:.2f}-{hi / scale:.2f} {unit}/s"


def summarize(rows: list[dict], peers: list, rounds: int, totals: dict[str, int]) -> None:
    """Per standard and overall, per peer and measure: the ratio (peer time / nmp time; > 1:
    nmp is faster), with each tool's throughput beside it. ``totals``: the reference's cases
    per standard; a run of fewer (``--quick``, ``--filter``) says so, since a subset's median
    is not the standard's (the quick set's two HBM2 cases are among the engine's best)."""
    print(
        f"\nratios (peer time / nmp time; > 1: nmp is faster): the median over the cases, its "
        f"range over {rounds} round(s) and of the best times; each tool's requests/s beside"
    )
    groups = sorted({r["standard"] for r in rows}) + ["all"]
    totals = {**totals, "all": sum(totals.values())}
    ran = {g: sum(1 for r in rows if g in ("all", r["standard"])) for g in groups}
    subsets = [g for g in groups if ran[g] < totals.get(g, 0)]
    if subsets:
        print(
            "  cases n/N: n of the reference's N cases of the standard ran; the median is that "
            "subset's, not the standard's (all of them: no --quick, no --filter)"
        )
    for peer in peers:
        print(f"\n{peer.name}")
        print(
            f"  {'standard':8s} {'cases':>5s} {'measure':23s} {'ratio: rounds':>13s} {'best':>6s}"
            f"  {'nmp':>17s}  {peer.name:>17s}"
        )
        for group in groups:
            sel = [r for r in rows if (group == "all" or r["standard"] == group) and peer.name in r]
            if not sel:
                continue
            for metric in METRICS:
                n = f"{len(sel)}/{totals[group]}" if group in subsets else str(len(sel))
                print(
                    f"  {group:8s} {n:>5s} {METRIC_NAMES[metric]:23s}"
                    f" {ratio_cells(sel, peer.name, metric, rounds)}"
                    f"  {throughput(sel, 'nmp', metric, rounds):>17s}"
                    f"  {throughput(sel, peer.name, metric, rounds):>17s}"
                )
        median_cases(rows, peer.name, groups[:-1])
        ratio_factors(rows, peer.name, groups[:-1])
    readme = [r for r in rows if r["id"] == README_CASE]
    if readme:
        r = readme[0]
        print(f"\nthe README's replay ({README_CASE}, {r['requests']} requests), per round:")
        for peer in (p for p in peers if p.name in r):
            for metric in ("whole_wall", "whole_cpu", "whole_free"):
                ratios = [
                    a / b for a, b in zip(r[peer.name][metric], r["nmp"][metric], strict=True)
                ]
                print(
                    f"  {METRIC_NAMES[metric]:23s} nmp {min(r['nmp'][metric]):.3f}-"
                    f"{max(r['nmp'][metric]):.3f} s, {peer.name} {min(r[peer.name][metric]):.3f}-"
                    f"{max(r[peer.name][metric]):.3f} s: {_range(ratios, '.2f')}, median "
                    f"{statistics.median(ratios):.2f}x"
                )
                print(f"    {'rounds':21s} {' '.join(f'{x:.2f}' for x in ratios)}")


def in_process_ratio(row: dict, peer: str) -> float:
    """One case's in-process ratio by CPU time, of each tool's best round (peer / nmp)."""
    return min(row[peer]["in_cpu"]) / min(row["nmp"]["in_cpu"])


def _by_standard(rows: list[dict], peer: str, groups: list[str]):
    """Each standard of ``groups`` with its rows that ``peer`` ran, where it has any."""
    for group in groups:
        sel = [r for r in rows if r["standard"] == group and peer in r]
        if sel:
            yield group, sel


def median_cases(rows: list[dict], peer: str, groups: list[str]) -> None:
    """Per standard, where its in-process median (CPU, best times) lies: the case (two, for an
    even count) at the median, and the cases below :data:`IN_PROCESS_TARGET` with the speed-up
    each would need. A standard's median moves only where the cases around it move: a case
    far above or below it can gain or lose any amount without changing it."""
    print(
        f"  where the median lies, in process by CPU (best times); below {IN_PROCESS_TARGET:g}x"
        f", the speed-up each case needs:"
    )
    for group, sel in _by_standard(rows, peer, groups):
        ranked = sorted((in_process_ratio(r, peer), r["id"]) for r in sel)
        # (an even count's median is the mean of the two middle cases: both named)
        mid = ranked[(len(ranked) - 1) // 2 : len(ranked) // 2 + 1]
        at = " and ".join(f"{name} {x:.1f}x" for x, name in mid)
        below = [(x, name) for x, name in ranked if x < IN_PROCESS_TARGET]
        need = ", ".join(f"{name} {IN_PROCESS_TARGET / x:.2f}x" for x, name in below) or "none"
        print(f"  {group:8s} median at {at};", end=" ")
        print(f"{len(below)} of {len(sel)} below: {need}")


def case_factors(row: dict, peer: str) -> tuple[float, float, float]:
    """One case's in-process ratio (CPU, best times) as the product of three factors:
    channel-cycles per command (the run's), the peer's ns per channel-cycle and 1 / nmp's ns
    per command. A peer that steps every channel every cycle pays per channel-cycle (more
    where its queues are full); an engine that evaluates a channel only where a command can
    issue pays per command: where the memory is busy nearly every cycle (few channel-cycles
    per command, HBM2's eight channels), there is little idle time for it to skip, and the
    ratio is lower at the same cost per command."""
    per_cmd = row["channel_cycles"] / row["commands"]
    peer_ns = min(row[peer]["in_cpu"]) / row["channel_cycles"] * 1e9
    nmp_ns = min(row["nmp"]["in_cpu"]) / row["commands"] * 1e9
    return per_cmd, peer_ns, nmp_ns


def ratio_factors(rows: list[dict], peer: str, groups: list[str]) -> None:
    """Per standard, the medians over its cases of :func:`case_factors`, and the cost per
    command nmp would need for :data:`IN_PROCESS_TARGET` at its median case's other two
    factors (the lower of the two middle cases for an even count; the three medians do not
    multiply back to the median ratio: each is its own case's)."""
    print(
        f"  the ratio's factors, in process by CPU (best times), medians over the cases: "
        f"channel-cycles per command x {peer} ns per channel-cycle / nmp ns per command"
    )
    for group, sel in _by_standard(rows, peer, groups):
        factors = [case_factors(r, peer) for r in sel]
        per_cmd, peer_ns, nmp_ns = (statistics.median(f[k] for f in factors) for k in range(3))
        ranked = sorted(zip((in_process_ratio(r, peer) for r in sel), factors, strict=True))
        _, (m_cmd, m_peer, m_nmp) = ranked[(len(ranked) - 1) // 2]
        need_ns = m_cmd * m_peer / IN_PROCESS_TARGET
        print(
            f"  {group:8s} {per_cmd:6.2f} ch-cycles/cmd x {peer_ns:7.1f} ns / {nmp_ns:6.1f} ns;"
            f" {IN_PROCESS_TARGET:g}x at the median case needs nmp at {need_ns:.1f} ns per "
            f"command (now {m_nmp:.1f}: x{m_nmp / need_ns:.2f})"
        )
