"""Tutorial 1: replay a memory trace on a modeled DRAM system.

nmp's DRAM engine reproduces Ramulator 2.1's cycle counts exactly (56 calibration cases in
data/reference/dram). Here we replay the README's embedding trace on one DDR4-3200 channel,
then the same requests on two ranks, and build a trace of our own from addresses.

Run: .venv/bin/python examples/01_replay_a_trace.py   (a few seconds)
"""

from pathlib import Path

import numpy as np

import nmp

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "traces" / "emb_zipf_a0.8_r1m_rb64_p40.trace.gz"

# 1. A memory preset: DDR4-3200AA, one channel, one rank, Ramulator's RoBaRaCoCh mapping.
spec = nmp.load_memory("ddr4-3200aa", channels=1, ranks=1, mapping="RoBaRaCoCh")
print(f"{spec.name}: {spec.org.channels} channel, peak {spec.peak_bandwidth_gbps:.1f} GB/s")

# 2. Replay the trace (one line = one 64-B read). `cycles` is Ramulator 2's figure: memory
#    cycles until the last request was accepted (370874 for this trace, as Ramulator measured).
stats = nmp.replay(TRACE, spec)
print(f"cycles {stats.cycles}, row hits/misses/conflicts {stats.row_hits}/{stats.row_misses}/"
      f"{stats.row_conflicts}, bandwidth {stats.bandwidth_gbps:.2f} GB/s")  # fmt: skip

# 3. The embedding lookups are random rows: most accesses conflict in the row buffer. A second
#    rank doubles the banks that can hold rows open.
two = nmp.replay(TRACE, nmp.load_memory("ddr4-3200aa", channels=1, ranks=2))
print(f"two ranks: {two.cycles} cycles ({stats.cycles / two.cycles:.2f}x faster)")

# 4. Requests from addresses: a sequential stream of 4096 lines streams through open rows.
seq = nmp.make_requests(np.arange(4096, dtype=np.uint64) * 64)
s = nmp.replay(seq, spec)
print(f"sequential stream: row hit rate {s.row_hits / s.requests:.1%}, "
      f"{s.bandwidth_gbps:.2f} GB/s of {spec.peak_bandwidth_gbps:.1f}")  # fmt: skip
