"""Tutorial 4: train a DLRM whose tables live in the modeled memory, and fail a node.

The trainer is functional (torch): tables are striped with parity over memory nodes. A node
fails mid-training; the `ecrec` strategy rebuilds it from parity and ends bit-identical to a
failure-free run, while `none` (no recovery) loses the node's rows. An AUC difference is only
meaningful beside its noise: on 256 held-out samples two runs' AUCs differ by a few hundredths
by chance, so `none` may even come out above failure-free; the line says whether the change is
inside the 95 % noise band (`nmp.train.rows.auc_change`).

Run: .venv/bin/python examples/04_train_with_failures.py   (about 20-40 s)
"""

import nmp
from nmp.train.rows import auc_change

# A small configuration: 8 tables of at most 400 rows, tiny MLPs, 80 steps.
cfg = nmp.TrainConfig(
    steps=80,
    max_tables=8,
    max_rows=400,
    bottom=(16,),
    top=(16,),
    eval_batches=4,
    batch=64,
    cost_sample=10_000,  # time the hardware on one step only (enough for a tutorial)
)
clean = nmp.run_training(cfg, "failure-free", [])
failure = [nmp.Failure(step=40, node=1)]
for strategy in ("ecrec", "none"):
    run = nmp.run_training(cfg, strategy, failure)
    same = run.final_state_sha256 == clean.final_state_sha256
    change, noise = auc_change(run, clean)
    verdict = "inside the noise" if abs(change) <= noise else "beyond the noise"
    print(f"{strategy:6s} AUC {run.metrics['auc']:.4f} (failure-free {clean.metrics['auc']:.4f}: "
          f"change {change:+.4f}, noise ±{noise:.4f}, {verdict}); "
          f"final state identical to failure-free: {same}")  # fmt: skip
