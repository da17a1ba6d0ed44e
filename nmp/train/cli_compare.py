"""``nmp train --compare``: every recovery strategy on the same failures, one table (or with
``--seeds N``, one row per strategy over N seeds; ``--until-plateau`` sets the steps where
the held-out AUC stops gaining)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from nmp.cliargs import json_text


def compare(
    args: argparse.Namespace,
    cfg,
    failures: list,
    step_progress: Callable[[argparse.Namespace, int], AbstractContextManager[Any]],
) -> int:
    """Run and print the comparison (``step_progress``: the CLI's progress over the steps)."""
    from nmp.train.compare import default_failures, print_table, run_compare

    if args.until_plateau:
        from dataclasses import replace

        from nmp.train.seeds import plateau_steps

        steps, curve = plateau_steps(cfg, cfg.plateau_every, cfg.plateau_gain)
        cfg = replace(cfg, steps=steps)
        if not args.json:
            print(
                f"criterion: held-out AUC gain < {cfg.plateau_gain} per {cfg.plateau_every} "
                f"steps -> {steps} steps (AUC every {cfg.plateau_every} steps: "
                + ", ".join(f"{a:.4f}" for a in curve)
                + ")"
            )
        from nmp.train.failures import check_schedule

        failures = check_schedule(failures, cfg.steps, cfg.nodes)  # against the new steps
    if not failures:
        failures = default_failures(cfg)
    if args.seeds is not None:
        from nmp.train.seeds import print_seed_table, run_seeds

        with step_progress(args, cfg.steps) as on_step:
            rows = run_seeds(cfg, failures, args.seeds, on_step=on_step)
        if args.json:
            print(json_text(rows))
        else:
            print_seed_table(
                rows,
                f"nmp train --compare --seeds {args.seeds}: {cfg.workload} (rows capped at "
                f"{cfg.max_rows}), {cfg.steps} steps, seeds {cfg.seed}..."
                f"{cfg.seed + args.seeds - 1}, {rows[0]['eval_samples']} held-out samples "
                "per seed",
            )
        return 0
    with step_progress(args, cfg.steps) as on_step:
        rows = run_compare(cfg, failures, on_step=on_step)
    if args.json:
        print(json_text(rows))
    else:
        where = ", ".join(f"node {f.node} at step {f.step} ({f.phase})" for f in failures)
        print_table(
            rows,
            f"nmp train --compare: {cfg.workload} (rows capped at {cfg.max_rows}), "
            f"{cfg.steps} steps, seed {cfg.seed}, {cfg.nodes} nodes, ecrec code {cfg.code} "
            f"r={cfg.parities}, arch {cfg.arch}; failures: {where}",
        )
    return 0
