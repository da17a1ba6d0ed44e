"""Step time of model-parallel DLRM training with and without all-to-all compression.

One training step on ``N`` nodes (tables owned round-robin, the batch split in ``N`` sample
slices; see :mod:`nmp.compress.pooled`):

- compute: the node's embedding gather for its own tables over the whole batch and the sparse
  update (3x the pooled rows' bytes: read forward, read + write backward) at ``hbm_gbps``, and
  the dense MLP + interaction for its ``B/N`` samples (forward + backward = 3x the forward
  FLOPs) at ``device_tflops``, both at ``utilization`` of those peaks. At utilization 1 (peak
  rates) the compute time is a lower bound, so the all-to-all's share and the speedup are upper
  bounds; the kit's default utilization is the one a published DLRM training step achieved
  (:data:`MEASURED_STEPS`: the step's work at peak over its measured time).
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
    utilization: float = 1.0  # achieved fraction of both peaks (1: peak rates)

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
        if not 0.0 < self.utilization <= 1.0:
            raise NmpError(f"compute utilization must be in (0, 1], got {self.utilization}")
        flops = 3.0 * self.mlp_flops_per_sample() * self.samples_per_node
        emb_bytes = 3.0 * self.tables_per_node * self.batch * self.pooling * self.dim * 4.0
        peak_ns = 1e9 * (flops / (self.device_tflops * 1e12) + emb_bytes / (self.hbm_gbps * 1e9))
        return peak_ns / self.utilization


@dataclass(frozen=True)
class MeasuredStep:
    """A published, measured DLRM training step: its work at the GPU's peak rates over the
    measured time is the fraction of peak the step achieved (all of the step's time counted as
    compute, so a lower bound of the compute's own utilization)."""

    step: StepSetup  # the measured system's configuration and its GPU's peaks
    measured_ms: float
    source: str

    def utilization(self) -> float:
        return self.step.compute_ns() / (self.measured_ms * 1e6)


# The kit's default compute utilization, calibrated against (not fitted to any SC'24 figure):
MEASURED_STEPS: dict[str, MeasuredStep] = {
    "sok-v100-fp32": MeasuredStep(
        StepSetup(
            nodes=8,
            batch=65536,
            num_tables=26,
            dim=128,
            pooling=1.0,
            bottom=(512, 256, 128),
            top=(1024, 1024, 512, 256, 1),
            device_tflops=15.7,
            hbm_gbps=900.0,
        ),  # fmt: skip
        measured_ms=16.42,
        source="NVIDIA-Merlin/HugeCTR, sparse_operation_kit/documents/tutorials/DLRM_Benchmark/"
        "README.md: DLRM (MLPerf sizes: dim 128, bottom 512-256-128, top 1024-1024-512-256-1, "
        "26 one-hot tables) on Criteo Terabyte, 8 x V100, global batch 65,536, FP32 (no AMP), "
        "5.55 ms on 8 x A100 with TF32 and 16.42 ms on 8 x V100 per iteration; V100 SXM2 peaks "
        "15.7 TFLOP/s FP32 and 900 GB/s HBM2 (NVIDIA V100 datasheet). The V100 row is used: "
        "it has no TF32, so its peak is the FP32 one the model charges",
    ),
}
DEFAULT_UTILIZATION = "sok-v100-fp32"


def utilization_of(setting: str | float) -> float:
    """The compute utilization a setting names: a :data:`MEASURED_STEPS` key, or a number."""
    if isinstance(setting, str):
        if setting not in MEASURED_STEPS:
            known = ", ".join(MEASURED_STEPS)
            raise NmpError(f"unknown compute utilization '{setting}' (known: {known}, or 0..1)")
        return MEASURED_STEPS[setting].utilization()
    value = float(setting)
    if not 0.0 < value <= 1.0:
        raise NmpError(f"compute utilization must be in (0, 1], got {value}")
    return value


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
        "compute_utilization": setup.utilization,
        "alltoall_ns_uncompressed": a2a_u,
        "alltoall_ns_compressed": a2a_c,
        "alltoall_share": 2.0 * a2a_u / step_u if step_u else 0.0,
        "step_time_ns_uncompressed": step_u,
        "step_time_ns_compressed": step_c,
        "speedup_modeled": step_u / step_c if step_c else 1.0,
        # no compression can do better than removing both all-to-alls (Amdahl)
        "speedup_bound": step_u / compute if compute else float("inf"),
        "comm_speedup_modeled": a2a_u / a2a_c if a2a_c else 1.0,
        "comm_speedup_paper_formula": paper_comm_speedup(
            ratio, net.bytes_per_s, comp_gbps * 1e9, decomp_gbps * 1e9
        ),
    }


def paper_comm_speedup(ratio: float, bw: float, t_comp: float, t_decomp: float) -> float:
    """SC'24: ``1 / (1/CR + BW (1/T_comp + 1/T_decomp))`` (all rates in the same unit)."""
    return 1.0 / (1.0 / ratio + bw * (1.0 / t_comp + 1.0 / t_decomp))
