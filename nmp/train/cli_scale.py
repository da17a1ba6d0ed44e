"""``nmp train --extrapolate`` and ``--crossover``: the papers' deployments priced at scale.

Apart from :mod:`nmp.train.cli` because these paths load no trainer: a setup file and the
flags, checked (and the run's memory bounded) before the scale model loads torch.
"""

from __future__ import annotations

from nmp.cliargs import json_text
from nmp.errors import NmpError


def failures_blame(args, dep) -> tuple[str, str | None]:
    """(key, file) of the input that makes an extrapolation's failures many: the servers above
    their default, the MTBF below its default or the horizon above its default, whichever
    factor is largest, named as the flag when one was given, else as the setup file's key (a
    tiny MTBF in a setup file once blamed --servers, a long horizon the MTBF)."""
    from nmp.train.deployment import DeploymentSpec
    from nmp.train.setup import setup_path

    default = DeploymentSpec()
    factors = {
        "servers": dep.servers / default.servers,
        "server_mtbf_hours": default.server_mtbf_hours / dep.server_mtbf_hours,
        "horizon_hours": dep.horizon_hours / default.horizon_hours,  # (a setup's key alone)
    }
    field = max(factors, key=factors.__getitem__)
    if getattr(args, field, None) is not None or not args.setup:
        return "--" + field.replace("_", "-"), None
    return f"values.{field}", str(setup_path(args.setup))


def deployment(args):
    from dataclasses import replace

    from nmp.train.deployment import DeploymentSpec
    from nmp.train.setup import load_setup

    dep = load_setup(args.setup)[0] if args.setup else DeploymentSpec()
    kw = {}
    for flag in ("servers", "server_mtbf_hours", "storage_gbps", "arch", "trials"):
        value = getattr(args, flag)
        if value is not None:
            kw[flag] = value
    if args.seed is not None:
        kw["seed"] = args.seed
    dep = replace(dep, **kw)
    try:
        dep.validate()
    except NmpError as exc:  # a value given as a flag: the flag named (--storage-gbps 0)
        if exc.key and exc.key in kw:
            raise NmpError(exc.message, key="--" + exc.key.replace("_", "-")) from None
        raise
    import nmp.guard as guard
    from nmp.train.setup import setup_path
    from nmp.workload import load_workload

    failures = dep.trials * dep.horizon_hours * dep.servers / dep.server_mtbf_hours
    key, file = failures_blame(args, dep)
    spec = load_workload(dep.workload)
    step_lookups = (dep.batch or spec.batch) * spec.lookups_per_sample
    # the step's batch: the setup's batch where it sets one, else its workload's
    step_key = "values.batch" if dep.batch else "values.workload"
    estimate = guard.extrapolation_estimate(
        dep.trials, failures, failures_key=key, step_lookups=step_lookups, step_key=step_key
    )
    if estimate.key == key and file:
        estimate = replace(estimate, file=file)
    elif estimate.key == step_key and args.setup:
        estimate = replace(estimate, file=str(setup_path(args.setup)))
    guard.check(estimate, args.max_memory)
    return dep


def extrapolate(args) -> int:
    dep = deployment(args)  # the setup and flags checked before torch loads (a minute if busy)
    from nmp.train.extrapolate import monte_carlo
    from nmp.train.extrapolate_report import print_extrapolation

    if args.crossover:
        from nmp.cliargs import check_out_folder
        from nmp.train.crossover import plot, print_crossings, sweep

        # a bad --out fails before the sweep, not after it
        out = check_out_folder("." if args.out is None else args.out) / f"crossover-{dep.name}.png"
        points, crossings = sweep(dep)
        from nmp.train.setup import load_marks

        plot(dep, points, crossings, out, load_marks(args.setup) if args.setup else [])
        if args.json:
            print(
                json_text(
                    {"plot": str(out), "crossovers": crossings, "points": points}, indent=None
                )
            )
        else:
            print_crossings(crossings, dep, out)
        return 0
    rows = monte_carlo(dep)
    if args.json:
        from nmp.train.extrapolate_report import closing_note

        closing_note(rows, dep)  # adds each strategy's schedule and verdict to its row
        print(json_text(rows))
    else:
        print_extrapolation(rows, dep)
    return 0
