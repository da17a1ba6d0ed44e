"""The EVStore study: policies x L1 size x Zipf exponent x request model, EVStore's L2 precision
and L3 distance bound, and the users generator's parameters, with plots.

Runner of ``workloads/sweeps/papers/evstore-*.toml`` (``nmp evaluate papers/evstore-cache``):
every policy at every L1 size and request model (L2 at the default dtype where the policy has
one), then each policy that is a whole cache design (EVStore) at every L2 dtype, then (where
"users" is a request model) every policy at ``dtype_l1_mb`` for each number of users x
locality of the users generator (its parameters are chosen: swept because they set how often
a whole request hits), then (``layer_splits``) each layered policy with its bytes at
``dtype_l1_mb`` split otherwise between its layers, beside every single-layer policy given the
same bytes as its L1, at every request model, each a full :func:`nmp.cache.serve.run_cache`
(the DLRM is trained once per process and shared). Writes
``report.md``, ``results.csv``, ``results.jsonl`` and three PNGs (hit rates, latency, AUC
change) into the run folder; files go to a temporary name first.
Points run one after another (``jobs`` is accepted and ignored: a point takes seconds, and the
trained model is shared in this process).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from nmp.cache import policy as policies
from nmp.cache.quant import L2_FORMATS
from nmp.cache.request_models import REQUEST_MODELS
from nmp.cache.serve import CacheConfig, run_cache, workload_spec
from nmp.errors import NmpError
from nmp.fileio import atomic_write_bytes, atomic_write_text
from nmp.plugins import study_runner
from nmp.units import is_finite_number


def layered_policies() -> list[str]:
    """The registered policies that are whole cache designs (a low-precision L2 and an L3 of
    their own: EVStore): the study sweeps their L2 precision and L3 bound."""
    return [n for n in policies.names() if policies.get(n).l2_per_l1 > 0]


_DEFAULTS = {
    "workload": "criteo-kaggle",
    # Zipf exponents: the preset's is chosen (the sources give none) and sets how often a whole
    # request hits, so it is a switch of the study. 0 = the preset's.
    "alphas": [0.0],
    "policies": ["lru", "lfu", "groupscore", "evstore"],
    "l1_mb": [0.25, 0.5, 1.0, 2.0, 4.0],
    "l2_dtypes": ["fp16", "int8", "int4"],
    "dtype_l1_mb": 1.0,
    "requests": 40_000,
    "warmup": 20_000,
    # L3's relative distance bounds: the first applies to every point, the others are run on
    # EVStore at dtype_l1_mb (the bound sets how many keys have a substitute: a switch).
    "l3_bounds": [0.5],
    # Request models (nmp.cache.request_models): every point at each; the first number of users
    # and locality serve them, the others are swept at dtype_l1_mb on each model with users.
    "request_models": ["independent"],
    "users": [CacheConfig.users],
    "user_localities": [CacheConfig.user_locality],
    # [L2 bytes per L1 byte, L3 bytes per L1 byte] of a layered policy (EVStore's default split,
    # [1, 0.25], is chosen: nmp/cache/evstore.py): each split is run at the total its default
    # split gives at dtype_l1_mb (2.25 MiB), beside the single-layer policies at that total.
    "layer_splits": [],
    "accuracy": True,
    "train_steps": 300,
    "seed": 0,
    "backend": "lmdb",
}
COLUMNS = (
    "alpha", "request_model", "users", "user_locality", "policy", "l1_mb", "l2_mb", "l2_dtype",
    "l3_mb", "l3_bound", "hit_rate", "l1_hit_rate",
    "l2_hit_rate", "l3_hit_rate", "perfect_hit_rate", "perfect_if_independent",
    "avg_latency_us", "p90_latency_us", "memory_bytes", "memory_reduction", "auc_change",
    "auc_change_ci_lo", "auc_change_ci_hi", "backend_lookups_per_s", "layer_split",
)  # fmt: skip


def check_params(params: dict) -> dict:
    unknown = sorted(set(params) - set(_DEFAULTS))
    if unknown:
        raise NmpError(f"params.{unknown[0]}: unknown (known: {', '.join(_DEFAULTS)})")
    p = {**_DEFAULTS, **params}
    lists = ("alphas", "policies", "l1_mb", "l2_dtypes", "l3_bounds", "request_models")
    for key in (*lists, "users", "user_localities", "layer_splits"):
        if not isinstance(p[key], list):
            raise NmpError(f"params.{key} must be a list, got {p[key]!r}")
    # the first alpha, bound, number of users and locality serve every point
    for key in ("alphas", "policies", "l3_bounds", "request_models", "users", "user_localities"):
        if not p[key]:
            raise NmpError(f"params.{key} must not be empty")
    for m in p["request_models"]:
        if m not in REQUEST_MODELS:
            raise NmpError(f"params.request_models: {REQUEST_MODELS.unknown_message(m)}")
    if any(isinstance(u, bool) or not isinstance(u, int) or u < 1 for u in p["users"]):
        raise NmpError(f"params.users: integers >= 1, got {p['users']!r}")
    if any(not isinstance(x, int | float) or not 0 <= x <= 1 for x in p["user_localities"]):
        raise NmpError(f"params.user_localities: numbers in [0, 1], got {p['user_localities']!r}")
    for name in p["policies"]:
        policies.get(name)
    for d in p["l2_dtypes"]:
        if d not in L2_FORMATS:
            raise NmpError(f"params.l2_dtypes: {L2_FORMATS.unknown_message(d)}")
    for split in p["layer_splits"]:
        if (
            not isinstance(split, list)
            or len(split) != 2
            or any(not is_finite_number(x) or x < 0 for x in split)
        ):
            raise NmpError(
                f"params.layer_splits: pairs [L2 per L1, L3 per L1] of numbers >= 0, got {split!r}"
            )
    if not p["l1_mb"] or any(not is_finite_number(x) or not x > 0 for x in p["l1_mb"]):
        raise NmpError("params.l1_mb: a non-empty list of sizes > 0")
    for key in ("alphas", "l3_bounds"):
        if any(not is_finite_number(x) or x < 0 for x in p[key]):
            raise NmpError(f"params.{key}: numbers >= 0, got {p[key]!r}")
    if not is_finite_number(p["dtype_l1_mb"]) or not p["dtype_l1_mb"] > 0:
        raise NmpError(f"params.dtype_l1_mb: a size > 0, got {p['dtype_l1_mb']!r}")
    for key, least in (("requests", 1), ("warmup", 0), ("train_steps", 1), ("seed", 0)):
        if isinstance(p[key], bool) or not isinstance(p[key], int) or p[key] < least:
            raise NmpError(f"params.{key}: an integer >= {least}, got {p[key]!r}")
    if not isinstance(p["accuracy"], bool):
        raise NmpError(f"params.accuracy: true or false, got {p['accuracy']!r}")
    for key in ("workload", "backend"):
        if not isinstance(p[key], str):
            raise NmpError(f"params.{key}: a name, got {p[key]!r}")
    for cfg in configs_of(p):  # every point's own checks (sizes, counts, the backend)
        try:
            cfg.check()
        except NmpError as exc:
            raise NmpError(f"params: {exc.message}") from None
    return p


def configs(params: dict) -> list[CacheConfig]:
    return configs_of(check_params(params))


def configs_of(p: dict) -> list[CacheConfig]:
    """The study's points, of parameters :func:`check_params` completed."""
    common = {
        "workload": p["workload"],
        "requests": p["requests"],
        "warmup": p["warmup"],
        "accuracy": p["accuracy"],
        "train_steps": p["train_steps"],
        "seed": p["seed"],
        "backend": p["backend"],
    }
    common |= {"users": p["users"][0], "user_locality": float(p["user_localities"][0])}
    out = [
        CacheConfig(
            policy=name, l1_mb=mb, alpha=a, l3_bound=p["l3_bounds"][0], request_model=m, **common
        )
        for m in p["request_models"]
        for a in p["alphas"]
        for name in p["policies"]
        for mb in p["l1_mb"]
    ]
    first = {"alpha": p["alphas"][0], "request_model": p["request_models"][0]}
    for name in layered_policies():
        for d in p["l2_dtypes"]:
            for b in p["l3_bounds"]:
                cfg = CacheConfig(
                    policy=name, l1_mb=p["dtype_l1_mb"], l2_dtype=d, l3_bound=b, **first, **common
                )
                if cfg not in out:
                    out.append(cfg)
    for model in p["request_models"]:
        if not REQUEST_MODELS.get(model).has_users:
            continue
        for u in p["users"]:
            for loc in p["user_localities"]:
                for name in p["policies"]:
                    cfg = CacheConfig(
                        # (the AUC change does not depend on the request model: not repeated)
                        **{**common, "users": u, "user_locality": float(loc), "accuracy": False},
                        policy=name,
                        l1_mb=p["dtype_l1_mb"],
                        alpha=p["alphas"][0],
                        l3_bound=p["l3_bounds"][0],
                        request_model=model,
                    )
                    if cfg not in out:
                        out.append(cfg)
    out += split_configs(p, common, out)
    return out


def split_total_mb(name: str, l1_mb: float) -> float:
    """The bytes (MiB) of all of ``name``'s layers at its default split with ``l1_mb`` of L1."""
    pol = policies.get(name)
    return l1_mb * (1.0 + pol.l2_per_l1 + pol.l3_per_l1)


def split_layers(total_mb: float, split: list[float]) -> tuple[float, float, float]:
    """(L1, L2, L3) MiB: ``total_mb`` split as 1 : split[0] : split[1]."""
    l1 = total_mb / (1.0 + split[0] + split[1])
    return l1, split[0] * l1, split[1] * l1


def split_configs(p: dict, common: dict, done: list[CacheConfig]) -> list[CacheConfig]:
    """``layer_splits``: every layered policy at each split of its default bytes at
    ``dtype_l1_mb``, and every single-layer policy with those bytes as its L1, at each request
    model (the first alpha, bound, users and locality)."""
    out: list[CacheConfig] = []
    if not p["layer_splits"]:
        return out
    layered = [n for n in p["policies"] if n in layered_policies()]
    flat = [n for n in p["policies"] if n not in layered]
    for m in p["request_models"]:
        at = {"alpha": p["alphas"][0], "l3_bound": p["l3_bounds"][0], "request_model": m}
        for name in layered:
            total = split_total_mb(name, p["dtype_l1_mb"])
            for split in p["layer_splits"]:
                l1, l2, l3 = split_layers(total, split)
                out.append(CacheConfig(policy=name, l1_mb=l1, l2_mb=l2, l3_mb=l3, **at, **common))
            for base in flat:
                cfg = CacheConfig(policy=base, l1_mb=total, **at, **common)
                if cfg not in done and cfg not in out:
                    out.append(cfg)
    return out


def _effective_alpha(cfg: CacheConfig) -> float:
    spec = workload_spec(cfg)
    skew = spec.skew_alpha
    return 0.0 if skew is None else float(skew)


@study_runner
def run_study(params: dict, *, out_dir: Path, jobs: int = 1) -> list[dict]:
    """EVStore: cache policies x L1 size x skew x request model, L2 precision, L3 bound."""
    out_dir = Path(out_dir)
    rows = []
    for cfg in configs(params):
        r = run_cache(cfg)
        r.pop("config")
        r["alpha"] = _effective_alpha(cfg)
        r["l3_bound"] = cfg.l3_bound
        users = REQUEST_MODELS.get(cfg.request_model).has_users
        r["users"] = cfg.users if users else None
        r["user_locality"] = cfg.user_locality if users else None
        l2, l3 = cfg.l2_mb, cfg.l3_mb
        r["layer_split"] = (
            f"{l2 / cfg.l1_mb:.4g}:{l3 / cfg.l1_mb:.4g}"
            if l2 is not None and l3 is not None and cfg.l1_mb > 0
            else None
        )
        rows.append(r)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(out_dir / "results.csv", buf.getvalue())
    atomic_write_text(out_dir / "results.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    _plots(rows, out_dir)
    atomic_write_text(out_dir / "report.md", _report(rows, check_params(params)))
    return [{k: r.get(k) for k in COLUMNS} for r in rows]


def _plots(rows: list[dict], out_dir: Path) -> None:
    # matplotlib: loaded on use (start-up time)
    import matplotlib

    matplotlib.use("Agg")
    # matplotlib: loaded on use (start-up time)
    import matplotlib.pyplot as plt

    default_dtype = CacheConfig().l2_dtype
    # the main grid: the default L2 dtype, and the users generator's first parameters
    first_users = next(((r["users"], r["user_locality"]) for r in rows if r["users"]), None)
    sized = [
        {**r, "series": (r["alpha"], r["request_model"])}
        for r in rows
        if r["l2_dtype"] == default_dtype
        and not r.get("layer_split")
        and (r["users"] is None or (r["users"], r["user_locality"]) == first_users)
    ]
    alphas = list(dict.fromkeys(r["series"] for r in sized))
    fig, axes = plt.subplots(len(alphas), 2, figsize=(10, 4 * len(alphas)), squeeze=False)
    fig2, ax2 = plt.subplots(figsize=(8, 5))
    names = list(dict.fromkeys(r["policy"] for r in sized))
    colour = {n: f"C{i}" for i, n in enumerate(names)}
    markers = ("o", "s", "^", "v", "D")
    for row_axes, series in zip(axes, alphas, strict=True):
        at = [r for r in sized if r["series"] == series]
        a, model = series
        for name in dict.fromkeys(r["policy"] for r in at):
            pts = sorted((r for r in at if r["policy"] == name), key=lambda r: r["memory_bytes"])
            x = [r["memory_bytes"] / 2**20 for r in pts]
            row_axes[0].plot(x, [r["hit_rate"] for r in pts], marker="o", label=name)
            row_axes[1].plot(x, [r["perfect_hit_rate"] for r in pts], marker="o", label=name)
            tag = f"{name} a={a:g} {model}"
            # one colour per policy, one marker per alpha; p90 dashed in the same colour
            style: dict[str, Any] = {
                "color": colour[name],
                "marker": markers[alphas.index(series) % len(markers)],
            }
            ax2.plot(x, [r["avg_latency_us"] for r in pts], label=f"{tag} avg", **style)
            ax2.plot(x, [r["p90_latency_us"] for r in pts], ls="--", label=f"{tag} p90", **style)
        for ax, what in zip(row_axes, ("per-key hit rate", "perfect hit rate"), strict=True):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("cache memory, all layers (MiB)")
            ax.set_ylabel(f"{what} (Zipf alpha {a:g}, {model})")
            ax.grid(alpha=0.3)
        row_axes[0].legend()
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("cache memory, all layers (MiB)")
    ax2.set_ylabel("modeled latency per request (us)")
    ax2.legend(fontsize=6, ncol=2)
    ax2.grid(alpha=0.3)
    layered = set(layered_policies())
    acc = [r for r in rows if r["policy"] in layered and r.get("auc_change") is not None]
    fig3, ax3 = plt.subplots(figsize=(max(5.5, 0.55 * len(acc) + 1.5), 4.5))
    for i, r in enumerate(acc):
        lo, hi = r["auc_change_ci_lo"], r["auc_change_ci_hi"]
        ax3.errorbar(
            [i], [r["auc_change"]], yerr=[[r["auc_change"] - lo], [hi - r["auc_change"]]],
            fmt="o", capsize=4,
        )  # fmt: skip
    ax3.set_xticks(range(len(acc)), [_acc_label(r) for r in acc], rotation=90, fontsize=7)
    ax3.axhline(0, color="k", lw=0.5)
    ax3.set_ylabel("AUC change (served - exact), 95 % CI")
    for f, name in ((fig, "hit_rates.png"), (fig2, "latency.png"), (fig3, "auc_change.png")):
        f.tight_layout()
        b = io.BytesIO()
        f.savefig(b, format="png", dpi=110)
        plt.close(f)
        atomic_write_bytes(out_dir / name, b.getvalue())


def _acc_label(r: dict) -> str:
    return f"{r['l2_dtype']} L1 {r['l1_mb']:g} MiB a={r['alpha']:g} b={r['l3_bound']:g}"


def _split_note(p: dict) -> str:
    if not p["layer_splits"]:
        return ""
    splits = ", ".join(f"{a:g}:{b:g}" for a, b in p["layer_splits"])
    return (
        f"Layer splits (L2 : L3 bytes per L1 byte; column layer_split): {splits}, each at the "
        f"bytes of the policy's default split at L1 {p['dtype_l1_mb']:g} MiB, beside the "
        "single-layer policies with the same bytes as their L1.\n\n"
    )


def _report(rows: list[dict], p: dict) -> str:
    head = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n"

    def cell(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    body = "".join("| " + " | ".join(cell(r.get(k)) for k in COLUMNS) + " |\n" for r in rows)
    return (
        f"# EVStore study: {p['workload']}\n\n"
        f"{p['requests']} measured requests after {p['warmup']} warm-up requests (seed "
        f"{p['seed']}); L3 bounds {p['l3_bounds']}; AUC change from a DLRM trained "
        f"{p['train_steps']} steps on the synthetic teacher (see nmp/cache/accuracy.py).\n\n"
        "Per-key hit rate counts lookups served from memory; the perfect hit rate counts "
        "requests whose every lookup hit. Latency is modeled (nmp/cache/tiers.py): DRAM rows "
        "through nmp.memory, one SSD read per request with any miss.\n\n"
        f"Request models {p['request_models']}: `independent` draws every table's key on its "
        "own (the workload generator); `users` draws users whose histories hold related rows "
        f"in every table (nmp/cache/users.py; users {p['users']}, localities "
        f"{p['user_localities']}, the first of each in the main grid, the others at L1 "
        f"{p['dtype_l1_mb']:g} MiB; history {CacheConfig.user_history} rows per table).\n\n"
        + _split_note(p)
        + f"{head}{body}\n![hit rates](hit_rates.png)\n![latency](latency.png)\n"
        "![AUC change](auc_change.png)\n"
    )
