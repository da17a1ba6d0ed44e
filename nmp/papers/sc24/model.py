"""Model functions of SC'24's published claims (``claims.toml`` beside this file).

Each computes its value from the model: ratios and CPU throughputs measured on the all-to-all
chunks of one batch of real lookups (:mod:`nmp.compress.pooled`), step times from
:mod:`nmp.compress.speedup`. Shared work is cached so the claims of one setup share one run.
The accuracy claim trains the CPU-sized DLRM on compressed and uncompressed all-to-alls
(:mod:`nmp.train.trainer`); the setup key describes the step's timing, which training does not
see: it is checked there, and the experiment is the same under both columns.

Setup key (``setup``; None = the kit's defaults): ``compute.utilization``, the achieved
fraction of the GPU's peak FLOP/s and HBM bandwidth in the step's compute. The kit's default is
the fraction a published DLRM training step achieved (:data:`nmp.compress.speedup.
MEASURED_STEPS`); 1.0 is compute at peak, the idealization under which the all-to-all's share
of the step, and so the speedup, is largest.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from nmp.claim_setup import resolve_setup
from nmp.compress.codec import make_codec
from nmp.compress.measure import measure
from nmp.compress.network import load_network
from nmp.compress.pooled import alltoall_chunks, pooled_batch
from nmp.compress.speedup import DEFAULT_UTILIZATION, codec_rates, step_times, utilization_of
from nmp.compress.study import step_setup
from nmp.plugins import claim_model, reference


def setup_defaults() -> dict[str, Any]:
    return {"compute.utilization": utilization_of(DEFAULT_UTILIZATION)}


def _values(setup: Mapping[str, Any] | None, fn: str) -> dict[str, Any]:
    return resolve_setup(setup, setup_defaults(), model=f"{__name__}:{fn}")


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
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """Modeled step speedup of compressed over uncompressed training. ``bound``: the speedup
    if compression removed both all-to-alls entirely (Amdahl), at the same compute."""
    u = utilization_of(_values(setup, "training_speedup")["compute.utilization"])
    m = _measured(workload, nodes, codec, eb)
    step = replace(step_setup(workload, nodes), utilization=u)
    comp, decomp = codec_rates(codec_gbps, (m["compress_gbps"], m["decompress_gbps"]))
    net = load_network(network)
    st = step_times(step, net, ratio=m["ratio"], comp_gbps=comp, decomp_gbps=decomp)
    c_us, a_us = st["compute_ns"] / 1e3, st["alltoall_ns_uncompressed"] / 1e3
    return {
        "value": st["speedup_modeled"],
        "bound": st["speedup_bound"],
        "bound_detail": f"(compute {c_us:.1f} us + 2 x all-to-all {a_us:.1f} us) / compute "
        f"{c_us:.1f} us = {st['speedup_bound']:.3g}x: compression cannot remove more than the "
        f"all-to-alls (compute at {100 * u:.1f} % of the A100's peak FLOP/s and HBM bandwidth)",
        "detail": (
            f"{workload}, {nodes} nodes, {net.name}: {codec} eb {eb} ratio {m['ratio']:.2f}, "
            f"codec {comp:.2f}/{decomp:.2f} GB/s ({codec_gbps}), compute at {100 * u:.1f} % "
            f"of peak, all-to-all {100 * st['alltoall_share']:.0f}% of the uncompressed step, "
            f"a2a speedup {st['comm_speedup_modeled']:.3f} (paper formula "
            f"{st['comm_speedup_paper_formula']:.3f})"
        ),
    }


@claim_model
def ratio_higher(
    *,
    quick: bool,
    workload: str,
    nodes: int,
    better: str,
    worse: str,
    eb: float = 0.03,
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """Whether codec ``better`` compresses the all-to-all more than ``worse`` (the ratio does
    not depend on the compute: the setup is checked only)."""
    _values(setup, "ratio_higher")
    a = _measured(workload, nodes, better, eb)["ratio"]
    b = _measured(workload, nodes, worse, eb)["ratio"]
    return {
        "value": a > b,
        "margin": a / b - 1.0,
        "detail": f"{workload}, {nodes} nodes, eb {eb}: {better} {a:.2f}x vs {worse} {b:.2f}x",
    }


@claim_model
def accuracy_claim(
    *,
    quick: bool,
    workload: str,
    codec: str,
    eb: float,
    eb_schedule: str,
    steps: int,
    setup: Mapping[str, Any] | None = None,
) -> dict:
    """Is compressed training's AUC change within the noise of the held-out set (Hanley-McNeil,
    95 %)? ``quick`` runs a third of the steps; the setup is checked, not used (see above)."""
    resolve_setup(setup, setup_defaults(), model=reference(accuracy_claim))
    n = max(30, steps // 3) if quick else steps
    return dict(_trained_accuracy(workload, codec, eb, eb_schedule, n))


# The setup is checked, not used, so the validation's evaluations of this claim under other
# setups (its attribution: three evaluations) train the same two models: trained once (the
# full claim: 60 s of two trainings a time on the 2-core VM, three times).
@functools.lru_cache(maxsize=4)
def _trained_accuracy(workload: str, codec: str, eb: float, eb_schedule: str, n: int) -> dict:
    from nmp.train.alltoall.report import compression_summary
    from nmp.train.config import TrainConfig
    from nmp.train.rows import auc_change
    from nmp.train.trainer import run

    cfg = TrainConfig(workload=workload, steps=n)
    base = run(cfg, "none", [])
    res = run(replace(cfg, compress=codec, eb=eb, eb_schedule=eb_schedule), "none", [])
    change, noise = auc_change(res, base)
    ratio = compression_summary(res)["compression_ratio"]
    return {
        "value": bool(change is not None and noise is not None and abs(change) <= noise),
        "detail": (
            f"{workload}, {n} steps, {cfg.nodes} nodes, {codec} eb {eb} ({eb_schedule}): AUC "
            f"{res.metrics['auc']:.4f} vs {base.metrics['auc']:.4f}, change {change:+.4f} "
            f"(noise ±{noise:.4f}), ratio {ratio:.2f} in training"
        ),
    }
