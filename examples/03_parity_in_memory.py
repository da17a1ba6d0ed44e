"""Tutorial 3: keep embedding tables recoverable with parity maintained inside the memory.

Erasure codes work on raw bytes, so recovery is bit-exact for any float. First the code alone
(XOR and Reed-Solomon over GF(2^8)), then an NMP architecture that updates its parity in place
(parity ^= old XOR new) and rebuilds a lost memory node from the survivors.

Run: .venv/bin/python examples/03_parity_in_memory.py   (about 10 s)
"""

import numpy as np

import nmp

rng = np.random.default_rng(0)

# 1. The codes: 4 data shards + 2 parity shards survive any two losses.
code = nmp.ReedSolomonCode(4, 2)
data = rng.standard_normal((4, 256)).astype(np.float32).view(np.uint8)
parity = code.encode(data)
shards = np.concatenate([data, parity])
recovered = code.decode(shards, erased=[1, 4])  # a data shard and a parity shard lost
assert np.array_equal(recovered[:4], data)
print("Reed-Solomon 4+2: two lost shards rebuilt bit for bit")

# 2. In memory: ReCross with its parity configuration, on a small workload.
arch = nmp.load_arch("recross")
arch.bind(nmp.load_workload("recross-eval", {"batch": 4, "rows": 5000, "num_tables": 2}))
dim = arch.tables[0].dim
rows = rng.integers(0, arch.tables[0].rows, size=256)
new_values = rng.standard_normal((rows.size, dim)).astype(np.float32)
op = arch.parity_update(rows, new_values, table=0)  # writes rows, updates parity in place
print(f"256 row updates with parity: {op.t_ns / 1e3:.1f} us modeled, parity consistent: "
      f"{arch.parity_consistent(0)}")  # fmt: skip

# 3. Lose a node: its rows come back from the other nodes' data and parity.
lost_rows, values = arch.recover_node(0, table=0)
assert np.array_equal(values, arch.store.read(0, lost_rows))
print(f"node 0 lost: {lost_rows.size} rows recovered, bit-identical")
