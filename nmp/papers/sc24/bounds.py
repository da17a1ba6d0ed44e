"""First-principles bounds of SC'24's training speedup (``claims.toml`` beside this file): ``bound``
functions as :mod:`nmp.validate.claims` describes them; they read presets and the workload,
never the model.

A step is its compute plus two all-to-alls (forward and backward); compression can at most
remove the all-to-alls (Amdahl). The most favourable legitimate choices: the compute at the
A100's peak FLOP/s and HBM bandwidth (the smallest compute, so the largest share of the step
is communication), a compression ratio without limit and a codec that costs nothing. The
all-to-all is the network preset's own arithmetic of its stated link bandwidth and latency.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from nmp.compress.network import load_network
from nmp.compress.study import step_setup
from nmp.plugins import claim_model


@claim_model
def training_speedup(
    *,
    quick: bool,
    workload: str,
    nodes: int,
    network: str,
    setup: Mapping[str, Any] | None = None,
    **_codec: Any,
) -> dict[str, Any]:
    """(compute at peak + 2 x uncompressed all-to-all) / compute at peak. ``setup``'s compute
    utilization is not used: the bound takes the peak whatever the setup says (the model's
    ceiling keeps the setup's)."""
    step = replace(step_setup(workload, nodes), utilization=1.0)
    net = load_network(network)
    per_peer = step.bytes_per_peer()
    compute_ns = step.compute_ns()
    a2a_ns = net.alltoall_ns(nodes, per_peer)
    bound = (compute_ns + 2.0 * a2a_ns) / compute_ns
    flops = 3.0 * step.mlp_flops_per_sample() * step.samples_per_node
    emb_bytes = 3.0 * step.tables_per_node * step.batch * step.pooling * step.dim * 4.0
    how = (
        f"(compute {compute_ns / 1e3:.1f} us + 2 x all-to-all {a2a_ns / 1e3:.1f} us) / compute "
        f"{compute_ns / 1e3:.1f} us = {bound:.3g}x"
    )
    terms = {
        "bound": bound,
        "arithmetic": how,
        "compute_ns": {
            "value": compute_ns,
            "arithmetic": f"{flops:.4g} FLOP / {step.device_tflops} TFLOP/s + {emb_bytes:.4g} B "
            f"/ {step.hbm_gbps} GB/s = {compute_ns:.1f} ns (forward + backward: 3x the forward; "
            f"{step.samples_per_node:g} samples and {step.tables_per_node} tables per node)",
        },
        "alltoall_ns": {
            "value": a2a_ns,
            "arithmetic": f"{net.algorithm} all-to-all of {per_peer:.4g} B per peer over "
            f"{nodes} nodes at {net.bytes_per_s / 1e9:.4g} GB/s, {net.latency_us} us latency "
            f"({net.name}) = {a2a_ns:.1f} ns",
        },
        "choices": [
            "compute at the A100's peak FLOP/s and HBM bandwidth (most favourable: the least "
            "compute; alternative: a measured DLRM step's share of peak, the kit's default)",
            "a compression ratio without limit and a codec that costs nothing (most favourable; "
            "alternative: the measured ratio and codec throughput, the model's)",
        ],
    }
    return {"bound": bound, "bound_terms": terms, "bound_detail": how}
