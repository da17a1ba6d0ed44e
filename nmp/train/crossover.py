"""Where ECRec overtakes checkpointing and CPR: a sweep of one setup's leverage parameters.

Each parameter (total table rows, storage bandwidth per server, server MTBF, servers, the
step time of the system the parity work is set against, the servers' NIC, the restart time a
rolled-back job pays per failure, and CPR's two chosen values: its bound on the portion of lost
samples and its full-save period) is scaled over a log grid around the setup's value, the
others held; at each point the closed-form
expected overhead (:func:`nmp.train.extrapolate.expected`, the mean of the Monte-Carlo draws) of
checkpointing (its best interval), CPR (MFU) and ECRec is computed. A crossover is where ECRec's
overhead minus the other's changes sign (interpolated on the log grid). Output: a table and one
PNG with a panel per parameter.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from nmp.fileio import atomic_write_bytes
from nmp.registry import Registry
from nmp.train.extrapolate import DeploymentSpec, expected, row_labels, step_costs

SCALES = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8, 16)
SERVERS = (3, 4, 5, 8, 12, 16, 24, 32)
FULL_EVERY = (1, 2, 4, 8, 16, 32)  # every save full, ..., one in 32


def _table_rows(dep: DeploymentSpec) -> int:
    return dep.table_rows or step_costs(dep).rows_total


@dataclass(frozen=True)
class Axis:
    """One swept deployment parameter: its grid, its value at the setup, how it is drawn."""

    name: str
    grid: Callable[[DeploymentSpec], list[Any]]
    setup_value: Callable[[DeploymentSpec], float]
    integer_ticks: bool = False  # a count (servers): ticks at the grid's own values


def _step_ms(dep: DeploymentSpec) -> float:
    from nmp.train.extrapolate import _model

    return dep.step_ms or _model(dep).step_ns / 1e6


def _field(name: str) -> Callable[[DeploymentSpec], float]:
    return lambda dep: getattr(dep, name)


#: The swept parameters (``sweep``'s rows), in this order.
PARAMS: Registry[Axis] = Registry("crossover parameter")
PARAMS.register(
    Axis(
        "table_rows",
        lambda dep: [max(1, round(_table_rows(dep) * s)) for s in SCALES],
        _table_rows,
    )
)
PARAMS.register(
    Axis(
        "storage_gbps",
        lambda dep: [dep.storage_gbps * s for s in SCALES],
        _field("storage_gbps"),
    )
)
PARAMS.register(
    Axis(
        "server_mtbf_hours",
        lambda dep: [dep.server_mtbf_hours * s for s in SCALES],
        _field("server_mtbf_hours"),
    )
)
PARAMS.register(
    Axis("servers", lambda dep: [n for n in SERVERS if n > dep.r], _field("servers"), True)
)
PARAMS.register(
    Axis("step_ms", lambda dep: [_step_ms(dep) * 2.0**e for e in range(-2, 11)], _step_ms)
)
PARAMS.register(
    Axis(
        "network_gbps",
        lambda dep: [dep.network_gbps * s for s in SCALES] if dep.network_gbps else [],
        _field("network_gbps"),
    )
)
# The restart a failure costs the strategies that roll the job back (checkpoint, CPR; ECRec
# and none keep training): chosen in every setup (one minute), and most of CPR's overhead there
# (docs/studies.md, "Chosen values of the sharding, cache and training models").
PARAMS.register(
    Axis(
        "restart_s",
        lambda dep: [dep.restart_s * s for s in SCALES] if dep.restart_s else [],
        _field("restart_s"),
    )
)

# CPR's two chosen values (config.py: a 2 % bound on the portion of lost samples, every 4th save
# full; the paper leaves both to the user). On the ecrec setup x0.5 and x2 move CPR-MFU's
# overhead by +33 % / -17 % and +25 % / -8 % (docs/studies.md); the bound sets CPR's save
# interval (2 x bound x servers x MTBF).
PARAMS.register(
    Axis(
        "cpr_pls",
        lambda dep: [dep.cpr_pls * s for s in SCALES if dep.cpr_pls * s < 1.0],
        _field("cpr_pls"),
    )
)
PARAMS.register(
    Axis("cpr_full_every", lambda dep: list(FULL_EVERY), _field("cpr_full_every"), True)
)


def _setup_value(dep: DeploymentSpec, param: str) -> float:
    return PARAMS.get(param).setup_value(dep)


def _overheads(dep: DeploymentSpec) -> dict[str, float]:
    rows = {r["strategy"]: r["overhead_pct"] for r in expected(dep)}
    own = row_labels("checkpoint", dep)  # its rows, one per interval (not a prefix of a name)
    ckpt = min(v for k, v in rows.items() if k in own)
    return {"checkpoint": ckpt, "cpr-mfu": rows["cpr-mfu"], "ecrec": rows["ecrec"]}


def _crossing(xs: list[float], diff: np.ndarray) -> float | None:
    """First x where ``diff`` changes sign (log-linear interpolation), else None."""
    for i in range(len(xs) - 1):
        a, b = diff[i], diff[i + 1]
        if a == 0:
            return float(xs[i])
        if a * b < 0:
            la, lb = math.log(xs[i]), math.log(xs[i + 1])
            return float(math.exp(la + (lb - la) * a / (a - b)))
    return None


def sweep(dep: DeploymentSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(points, crossovers): every grid point's overheads, and per parameter and rival where
    ECRec's overhead crosses the rival's."""
    points, crossings = [], []
    for param, axis in PARAMS.items():
        xs = axis.grid(dep)
        if not xs:
            continue
        vals = [_overheads(replace(dep, **{param: x})) for x in xs]
        for x, v in zip(xs, vals, strict=True):
            points.append({"parameter": param, "value": x, **{f"{k}_pct": o for k, o in v.items()}})
        base = _overheads(dep)
        for rival in ("checkpoint", "cpr-mfu"):
            diff = np.array([v["ecrec"] - v[rival] for v in vals])
            cross = _crossing(xs, diff)
            crossings.append(
                {
                    "setup": dep.name,
                    "parameter": param,
                    "rival": rival,
                    "setup_value": _setup_value(dep, param),
                    "crossover_value": cross,
                    "ecrec_wins_at_setup": bool(base["ecrec"] < base[rival]),
                    "ecrec_wins_above": None if cross is None else bool(diff[-1] < 0),
                    "range": [xs[0], xs[-1]],
                }
            )
    return points, crossings


def plot(
    dep: DeploymentSpec,
    points: list[dict[str, Any]],
    crossings,
    path: Path,
    marks: Sequence[dict[str, Any]] = (),
) -> Path:
    """One panel per parameter; black: the setup's value; dotted grey: a crossover; dashed
    green: the setup's ``marks`` (configurations its source names)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    params = [p for p in PARAMS if any(q["parameter"] == p for q in points)]
    rows = max(1, -(-len(params) // 3))
    fig, axes = plt.subplots(rows, 3, figsize=(14, 3.75 * rows), squeeze=False)
    for ax in axes.ravel()[len(params) :]:
        ax.axis("off")
    for ax, param in zip(axes.ravel(), params, strict=False):
        pts = [p for p in points if p["parameter"] == param]
        xs = [p["value"] for p in pts]
        for name, style in (("checkpoint", "o-"), ("cpr-mfu", "s--"), ("ecrec", "^-")):
            ax.plot(xs, [p[f"{name}_pct"] for p in pts], style, label=name, ms=4)
        for c in crossings:
            if c["parameter"] == param and c["crossover_value"] is not None:
                ax.axvline(c["crossover_value"], color="grey", lw=0.8, ls=":")
        ax.axvline(_setup_value(dep, param), color="k", lw=0.8)
        for m in marks:
            if m["parameter"] == param:
                ax.axvline(m["value"], color="tab:green", lw=0.8, ls="--")
                ax.annotate(
                    m["label"],
                    (m["value"], 0.98),
                    xycoords=("data", "axes fraction"),
                    rotation=90,
                    va="top",
                    ha="right",
                    fontsize=7,
                    color="tab:green",
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(param)
        if PARAMS.get(param).integer_ticks:
            from matplotlib.ticker import NullFormatter, ScalarFormatter

            ax.set_xticks(xs)
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylabel("expected training-time overhead %")
        ax.grid(alpha=0.3, which="both")
    axes[0, 0].legend()
    fig.suptitle(
        f"Setup {dep.name}: where ECRec overtakes checkpointing and CPR "
        "(black: the setup's value; dotted: a crossover; dashed: configurations of the setup's "
        "source)"
    )
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return path


def print_crossings(crossings: list[dict[str, Any]], dep: DeploymentSpec, plot_path) -> None:
    from rich.table import Table

    from nmp.report.console import make_console

    t = Table(
        title=f"Crossovers of ECRec on setup {dep.name} (plot: {plot_path})", title_justify="left"
    )
    for col in ("parameter", "rival", "setup value", "ECRec wins at setup", "crossover", "range"):
        t.add_column(col, justify="left" if col in ("parameter", "rival") else "right")
    for c in crossings:
        cross = c["crossover_value"]
        where = "none in range"
        if cross is not None:
            side = "above" if c["ecrec_wins_above"] else "below"
            where = f"{cross:.4g} (ECRec wins {side})"
        t.add_row(
            c["parameter"],
            c["rival"],
            f"{c['setup_value']:.4g}",
            "yes" if c["ecrec_wins_at_setup"] else "no",
            where,
            f"{c['range'][0]:.3g} .. {c['range'][1]:.3g}",
        )
    make_console().print(t)
