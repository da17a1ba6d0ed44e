"""Model functions of SC'24's published claims (``nmp/validate/claims/sc24.toml``).

Each computes its value from the model: ratios and CPU throughputs measured on the all-to-all
chunks of one batch of real lookups (:mod:`nmp.compress.pooled`), step times from
:mod:`nmp.compress.speedup`. Shared work is cached so the claims of one setup share one run.
The accuracy claim needs the trainer and lives in :mod:`nmp.train.alltoall` (imports point down).
"""

from __future__ import annotations

import functools

from nmp.compress.codec import make_codec
from nmp.compress.measure import measure
from nmp.compress.network import load_network
from nmp.compress.pooled import alltoall_chunks, pooled_batch
from nmp.compress.speedup import codec_rates, step_times
from nmp.compress.study import step_setup
from nmp.plugins import claim_model


@functools.cache
def _measured(workload: str, nodes: int, codec: str, eb: float, seed: int = 0) -> dict:
    chunks = alltoall_chunks(pooled_batch(workload, seed=seed), nodes)
    return measure(
        make_codec(codec),
        [c for _, _, c in chunks],
        eb,
        tables=[t for t, _, _ in chunks],
        repeats=3,
    )


@claim_model
def training_speedup(
    *,
    quick: bool,
    workload: str,
    nodes: int,
    network: str,
    codec: str = "hybrid",
    eb: float = 0.03,
    codec_gbps: str | float = "measured",
) -> dict:
    """Modeled step speedup of compressed over uncompressed training."""
    m = _measured(workload, nodes, codec, eb)
    setup = step_setup(workload, nodes)
    comp, decomp = codec_rates(codec_gbps, (m["compress_gbps"], m["decompress_gbps"]))
    net = load_network(network)
    st = step_times(setup, net, ratio=m["ratio"], comp_gbps=comp, decomp_gbps=decomp)
    return {
        "value": st["speedup_modeled"],
        "detail": (
            f"{workload}, {nodes} nodes, {net.name}: {codec} eb {eb} ratio {m['ratio']:.2f}, "
            f"codec {comp:.2f}/{decomp:.2f} GB/s ({codec_gbps}), all-to-all "
            f"{100 * st['alltoall_share']:.0f}% of the uncompressed step, "
            f"a2a speedup {st['comm_speedup_modeled']:.3f} (paper formula "
            f"{st['comm_speedup_paper_formula']:.3f})"
        ),
    }


@claim_model
def ratio_higher(
    *, quick: bool, workload: str, nodes: int, better: str, worse: str, eb: float = 0.03
) -> dict:
    """Whether codec ``better`` compresses the all-to-all more than ``worse``."""
    a = _measured(workload, nodes, better, eb)["ratio"]
    b = _measured(workload, nodes, worse, eb)["ratio"]
    return {
        "value": a > b,
        "detail": f"{workload}, {nodes} nodes, eb {eb}: {better} {a:.2f}x vs {worse} {b:.2f}x",
    }
