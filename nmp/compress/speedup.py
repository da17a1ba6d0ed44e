"""Step time of model-parallel DLRM training with and without all-to-all compression.

One training step on ``N`` nodes (tables owned round-robin, the batch split in ``N`` sample
slices; see :mod:`nmp.compress.pooled`):

- compute: the node's embedding gather for its own tables over the whole batch and the sparse
  update (3x the pooled rows' bytes: read forward, read + write backward) at ``hbm_gbps``, and
  the dense MLP + interaction for its ``B/N`` samples (forward + backward = 3x the forward
  FLOPs) at ``device_tflops``. Peak rates (the named assumption): the compute time is a lower
  bound, so the all-to-all's share and the speedup are upper bounds.
- two all-to-alls of the pooled vectors (forward embeddings, backward gradients), each node
  sending ``ceil(T/N) * B/N * dim * 4`` bytes to each peer, timed by the network model;
- with compression: the sender compresses what it sends (at ``comp_gbps``), the wire carries
  ``1/CR`` of it, the receiver decompresses what it receives (at ``decomp_gbps``), serially.

:func:`paper_comm_speedup` is SC'24's model of the communication speedup,
``1 / (1/CR + BW (1/T_comp + 1/T_decomp))``; with zero latency and the pairwise algorithm the
network model's all-to-all speedup equals it exactly, and the latency term is where they part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from nmp.compress.network import NetworkSpec
from nmp.errors import NmpError

# NVIDIA A100 Tensor Core GPU datasheet: 19.5 TFLOP/s FP32 (non-tensor-core) peak; HBM2 at
# 1,555 GB/s on the 40 GB part (PAPERS.md "GPU embedding stage").
A100_FP32_TFLOPS = 19.5
A100_HBM_GBPS = 1555.0

# GPU codec throughputs with sources, (compress, decompress) GB/s of uncompressed data. The
# paper's own GPU compressor's throughput is not in the sources found; cuSZp2 is a GPU
# error-bounded compressor of the same family (quantization + fast lossless encoding).
# Named assumption: DLRM's chunks (tens of KB per message) reach the average throughput that
# cuSZp2 reports on large HPC datasets; small kernels would in fact run slower.
GPU_CODECS: dict[str, tuple[float, float, str]] = {
    "cuszp2-a100": (
        332.42,
        513.04,
        "Huang et al., cuSZp2 (SC'24), abstract: average 332.42 / 513.04 GB/s end-to-end "
        "compression / decompression on an NVIDIA A100",
    ),
}


def codec_rates(setting: str | float, measured: tuple[float, float]) -> tuple[float, float]:
    """(compress, decompress) GB/s for a throughput setting: "measured" (this CPU), a GPU
    codec of :data:`GPU_CODECS`, or one number for both directions."""
    if setting == "measured":
        return measured
    if isinstance(setting, str):
        if setting not in GPU_CODECS:
            known = ", ".join(["measured", *GPU_CODECS])
            raise NmpError(f"unknown codec throughput '{setting}' (known: {known}, or GB/s)")
        return GPU_CODECS[setting][:2]
    return float(setting), float(setting)


@dataclass(frozen=True)
class StepSetup:
    nodes: int
    batch: int  # global batch
    num_tables: int
    dim: int
    pooling: float  # mean lookups per bag
    bottom: tuple[int, ...]  # bottom MLP widths after the 13 dense inputs
    top: tuple[int, ...]  # top MLP widths after the interaction (ends at 1)
    device_tflops: float = A100_FP32_TFLOPS
    hbm_gbps: float = A100_HBM_GBPS

    @property
    def tables_per_node(self) -> int:
        return math.ceil(self.num_tables / self.nodes)

    @property
    def samples_per_node(self) -> float:
        return self.batch / self.nodes

    def bytes_per_peer(self) -> float:
        """Bytes one node sends to one peer in one all-to-all (float32 pooled vectors)."""
        return self.tables_per_node * self.samples_per_node * self.dim * 4.0

    def mlp_flops_per_sample(self) -> float:
        def dense(sizes: tuple[int, ...]) -> float:
            return sum(2.0 * a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))

        n = self.num_tables + 1
        inter_in = self.dim + n * (n - 1) // 2
        bmm = 2.0 * n * n * self.dim
        return dense((13, *self.bottom)) + bmm + dense((inter_in, *self.top))

    def compute_ns(self) -> float:
        flops = 3.0 * self.mlp_flops_per_sample() * self.samples_per_node
        emb_bytes = 3.0 * self.tables_per_node * self.batch * self.pooling * self.dim * 4.0
        return 1e9 * (flops / (self.device_tflops * 1e12) + emb_bytes / (self.hbm_gbps * 1e9))


def step_times(
    setup: StepSetup,
    net: NetworkSpec,
    *,
    ratio: float,
    comp_gbps: float,
    decomp_gbps: float,
) -> dict[str, float]:
    """Step times (ns) without and with compression, the speedups, and SC'24's formula."""
    m = setup.bytes_per_peer()
    n = setup.nodes
    sent = m * (n - 1)
    a2a_u = net.alltoall_ns(n, m)
    codec_ns = 1e9 * (sent / (comp_gbps * 1e9) + sent / (decomp_gbps * 1e9)) if n > 1 else 0.0
    a2a_c = net.alltoall_ns(n, m / ratio) + codec_ns
    compute = setup.compute_ns()
    step_u = compute + 2.0 * a2a_u
    step_c = compute + 2.0 * a2a_c
    return {
        "compute_ns": compute,
        "alltoall_ns_uncompressed": a2a_u,
        "alltoall_ns_compressed": a2a_c,
        "alltoall_share": 2.0 * a2a_u / step_u if step_u else 0.0,
        "step_time_ns_uncompressed": step_u,
        "step_time_ns_compressed": step_c,
        "speedup_modeled": step_u / step_c if step_c else 1.0,
        "comm_speedup_modeled": a2a_u / a2a_c if a2a_c else 1.0,
        "comm_speedup_paper_formula": paper_comm_speedup(
            ratio, net.bytes_per_s, comp_gbps * 1e9, decomp_gbps * 1e9
        ),
    }


def paper_comm_speedup(ratio: float, bw: float, t_comp: float, t_decomp: float) -> float:
    """SC'24: ``1 / (1/CR + BW (1/T_comp + 1/T_decomp))`` (all rates in the same unit)."""
    return 1.0 / (1.0 / ratio + bw * (1.0 / t_comp + 1.0 / t_decomp))
