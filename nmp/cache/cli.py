"""``nmp cache``: an embedding cache for inference in front of a real key-value store.

    nmp cache --workload criteo-kaggle --policy evstore --l1-mb 1 --l2-dtype int8 [--json]
    nmp cache --workload criteo-kaggle --policy lru --l1-mb 4 --requests 40000 --no-accuracy
    nmp cache --workload criteo-kaggle --index-file my_lookups.npz --policy lfu
    nmp cache --request-model users --users 50000 --user-locality 0.8 --policy groupscore
    nmp cache --request-file requests.tsv --policy lru    # one request per line, see below

Requests: the workload generator draws every table's key independently (--request-model
independent, the default); --request-model users draws users whose histories hold related rows
in every table (nmp/cache/users.py); --request-file reads a user request file (text: per line a
user, then the comma-separated rows of each table, tab-separated; nmp/cache/requestfile.py) and
--save-requests FILE writes the generated requests in that format.

Prints per-key hit rate (per layer), perfect hit rate per request, modeled average / p90
latency per request, memory, the backend's measured lookups/s and the AUC change of inference
served through the cache (a DLRM trained briefly on the synthetic teacher).
"""

from __future__ import annotations

import argparse

from nmp.cache.kvstore import BACKENDS
from nmp.cache.policy import names
from nmp.cliargs import json_text
from nmp.errors import NmpError
from nmp.fileio import check_writable_output

# The `nmp cache` command: nmp.cli reads this literal without importing the module
# (name, place in `nmp --help`, one-line help; nmp.cli.command_table).
NMP_COMMAND = {
    "name": "cache",
    "order": 7,
    "help": "embedding cache for inference (LRU, LFU, groupScore, EVStore) over a real store",
}


NO_BACKEND = "none"  # --backend none: no key-value store measured (not a backend)


def _run(args: argparse.Namespace) -> int:
    # numba: loaded on use (start-up time)
    from nmp.cache.serve import CacheConfig, run_cache, save_requests

    if args.save_requests:  # refused before the work, not after it (a link, a device, a pipe)
        check_writable_output(args.save_requests)
    if args.alpha is not None and not args.alpha > 0:  # (0 in a config keeps the workload's)
        raise NmpError(f"--alpha must be > 0, got {args.alpha:g} (leave it out: the workload's)")
    fields = {
        "workload": args.workload,
        "reuse": args.reuse,
        "alpha": args.alpha,
        "policy": args.policy,
        "l1_mb": args.l1_mb,
        "l2_mb": args.l2_mb,
        "l2_dtype": args.l2_dtype,
        "l3_mb": args.l3_mb,
        "l3_bound": args.l3_bound,
        "requests": args.requests,
        "warmup": args.warmup,
        "seed": args.seed,
        "memory": args.memory,
        "ssd_read_us": args.ssd_read_us,
        "backend": "" if args.backend == NO_BACKEND else args.backend,
        "index_file": args.index_file,
        "request_file": args.request_file,
        "request_model": args.request_model,
        "users": args.users,
        "user_history": args.user_history,
        "user_locality": args.user_locality,
        "user_alpha": args.user_alpha,
        "train_steps": args.train_steps,
    }
    cfg = CacheConfig(**{k: v for k, v in fields.items() if v is not None})
    if args.no_accuracy:
        cfg = CacheConfig(**{**cfg.__dict__, "accuracy": False})
    if args.request_file:  # read whole: its size is checked before it is read
        from nmp.cache.requestfile import request_file_estimate
        from nmp.guard import check

        check(request_file_estimate(args.request_file), args.max_memory)
    elif args.index_file:  # bounded as it is read, by the sizes it declares (both: refused)
        from nmp.cache.serve import workload_spec
        from nmp.guard import cache_estimate, check
        from nmp.workload.indexfile import index_file_estimate, index_file_lookups

        check(index_file_estimate(args.index_file), args.max_memory)
        # what a run over its lookups allocates (a 583 KB npz of 75 M lookups peaked at
        # 4-6 GB before its stream was guarded), from the sizes its headers declare
        dim = max(t.dim for t in workload_spec(cfg).tables)
        lookups = index_file_lookups(args.index_file)
        check(cache_estimate(lookups, dim, "--index-file"), args.max_memory)
    if args.save_requests:
        save_requests(cfg, args.save_requests)
    # loaded on use (start-up time)
    from nmp.report.progress import activity

    with activity(f"cache study: {cfg.requests:,} requests on {cfg.workload}", quiet=args.json):
        row = run_cache(cfg, max_memory=args.max_memory)
    if args.json:
        print(json_text(row))
        return 0
    _print(row)
    return 0


def _print(r: dict) -> None:
    print(
        f"nmp cache: {r['workload']} ({r['source']}), policy {r['policy']}, "
        f"{r['requests']} requests / {r['lookups']} lookups measured"
    )
    print(
        f"  layers: L1 {r['l1_mb']:.3g} MiB fp32 ({r['l1_entries']} rows), L2 {r['l2_mb']:.3g} MiB "
        f"{r['l2_dtype']} ({r['l2_entries']} rows), L3 {r['l3_mb']:.3g} MiB "
        f"({r['l3_entries']} key->key entries; {r['l3_keys_with_substitute']} keys have a "
        f"substitute)"
    )
    print(
        f"  per-key hit rate {r['hit_rate']:.4f} (L1 {r['l1_hit_rate']:.4f}, L2 "
        f"{r['l2_hit_rate']:.4f}, L3 {r['l3_hit_rate']:.4f}); perfect hit rate "
        f"{r['perfect_hit_rate']:.4f} (if lookups hit independently: "
        f"{r['perfect_if_independent']:.4f})"
    )
    print(
        f"  modeled latency per request: avg {r['avg_latency_us']:.2f} us, p90 "
        f"{r['p90_latency_us']:.2f} us (all in DRAM: {r['all_dram_avg_latency_us']:.2f} us); "
        f"tiers L1 {r['tier_l1_ns']:.1f} ns, L2 {r['tier_l2_ns']:.1f} ns, L3 "
        f"{r['tier_l3_ns']:.1f} ns, SSD {r['tier_ssd_us']:.0f} us"
    )
    print(
        f"  memory {r['memory_bytes'] / 2**20:.3g} MiB of a {r['table_bytes'] / 2**30:.3g} GiB "
        f"table ({100 * r['memory_reduction']:.2f} % less)"
    )
    if "backend_lookups_per_s" in r and r["backend_lookups_per_s"] is None:
        print(f"  backend {r['backend']}: no lookup reached it (every request hit the cache)")
    elif "backend_lookups_per_s" in r:
        print(
            f"  backend {r['backend']} (measured here, file in page cache): "
            f"{r['backend_lookups_per_s']:.0f} lookups/s, {r['backend_lookup_us']:.2f} us per "
            f"lookup, p90 {r['backend_request_p90_us']:.1f} us per request's misses"
        )
    if r.get("auc_change") is not None:
        print(
            f"  AUC change {r['auc_change']:+.5f} (95 % CI {r['auc_change_ci_lo']:+.5f} .. "
            f"{r['auc_change_ci_hi']:+.5f}; exact AUC {r['auc_exact']:.4f}, "
            f"{r['acc_samples']} samples; L2 served {100 * r['acc_l2_share']:.1f} %, L3 "
            f"{100 * r['acc_l3_share']:.1f} % of their lookups)"
        )


def register(sub: argparse._SubParsersAction) -> None:
    # numpy: loaded on use (start-up time)
    from nmp.cache.quant import L2_FORMATS
    from nmp.cache.request_models import REQUEST_MODELS
    from nmp.cliargs import input_file
    from nmp.workload import REUSE_LEVELS

    p = sub.add_parser(
        "cache",
        help=str(NMP_COMMAND["help"]),
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workload", help="workload preset (default criteo-kaggle)")
    p.add_argument(
        "--reuse", choices=tuple(REUSE_LEVELS), help="access pattern: a hot-set reuse level"
    )
    p.add_argument("--alpha", type=float, help="access pattern: Zipf exponent")
    p.add_argument("--policy", choices=names(), help="replacement policy (default evstore)")
    p.add_argument("--l1-mb", type=float, help="L1 (fp32 rows) MiB (default 1)")
    p.add_argument("--l2-mb", type=float, help="L2 (low-precision rows) MiB")
    p.add_argument("--l2-dtype", choices=L2_FORMATS.names(), help="L2 precision (default int8)")
    p.add_argument("--l3-mb", type=float, help="L3 (substitute keys) MiB")
    p.add_argument("--l3-bound", type=float, help="L3 relative distance bound (default 0.5)")
    p.add_argument("--requests", type=int, help="measured requests (default 40000)")
    p.add_argument("--warmup", type=int, help="warm-up requests before them (default 20000)")
    p.add_argument("--seed", type=int, help="seed of the generated requests (default 0)")
    p.add_argument("--memory", help="host DRAM preset for tier latency (default ddr4-3200aa)")
    p.add_argument("--ssd-read-us", type=float, help="modeled SSD read latency (default 80)")
    p.add_argument(
        "--backend",
        type=lambda name: name or NO_BACKEND,  # "" (before: no backend) is none
        choices=(*BACKENDS.names(), NO_BACKEND),
        help="key-value store measured for the miss path (default lmdb; none: no measurement)",
    )
    p.add_argument(
        "--index-file", type=input_file, help="a .npz index file (nmp.workload) as the requests"
    )
    p.add_argument(
        "--request-file", type=input_file, help="a user request file (text) as the requests"
    )
    p.add_argument(
        "--request-model",
        choices=REQUEST_MODELS.names(),
        help="how generated requests are drawn (default independent): "
        + "; ".join(f"{name}: {m.description}" for name, m in REQUEST_MODELS.items()),
    )
    p.add_argument("--users", type=int, help="users generator: number of users (default 50000)")
    p.add_argument("--user-history", type=int, help="users: history rows per table (default 4)")
    p.add_argument(
        "--user-locality", type=float, help="users: share of lookups from the history (0.8)"
    )
    p.add_argument("--user-alpha", type=float, help="users: Zipf exponent of user activity")
    p.add_argument("--save-requests", help="write the requests served to this request file")
    p.add_argument("--train-steps", type=int, help="DLRM training steps for the AUC change")
    p.add_argument("--no-accuracy", action="store_true", help="skip the AUC change (faster)")
    from nmp.guard import add_argument

    add_argument(p)
    p.add_argument("--json", action="store_true", help="print the result row as JSON")
    p.set_defaults(func=_run)
