"""The locality section of a report, and the locality study's plots.

Input is plain data built by :mod:`nmp.evaluate.locality` (this package does not import the
evaluator): ``workloads`` (which locality each workload ran), ``hit_rates`` (per point, every
cache's share), ``scan`` (a skew scan and its crossovers) and ``fit`` (the measured locality's
histograms, published, fitted and drawn). Every part is optional.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

RATE_ORDER = ("llc", "l1", "l2", "rank cache", "replicas")


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f} %"


def _rates(rates: dict[str, float]) -> str:
    if not rates:
        return "none (no cache or hot-row store)"
    keys = sorted(rates, key=lambda k: (RATE_ORDER.index(k) if k in RATE_ORDER else 99, k))
    return ", ".join(f"{k} {_pct(rates[k])}" for k in keys)


def _crossing_text(entry: dict[str, Any]) -> str:
    crossings = entry["crossings"]
    if not crossings:
        side = "ahead" if entry["ratio"][0] >= 1.0 else "behind"
        return f"no crossover: {side} at every skew scanned"
    return "; ".join(
        f"crosses at alpha {c['alpha']:.2f} "
        f"({'ahead' if c['ahead_below'] == 'design' else 'behind'} below, "
        f"{'behind' if c['ahead_below'] == 'design' else 'ahead'} above)"
        for c in crossings
    )


def scan_markdown(scan: dict[str, Any]) -> list[str]:
    """The crossovers of a skew scan: a table per reference (the host, then each GPU)."""
    ref = scan["reference"]
    alphas = ", ".join("uniform" if a == 0 else f"{a:g}" for a in scan["alphas"])
    out = [
        f"Skew scan on `{scan['workload']}`'s tables: Zipf exponents {alphas}, and the measured "
        f"locality `{scan['locality']}`, which sits at **alpha {scan['equivalent_alpha']:.2f}** on "
        f"the Zipf axis (its hottest {scan['head_fraction']:.0%} of each table's rows take "
        f"{_pct(scan['head_share'])} of the lookups, as Zipf {scan['equivalent_alpha']:.2f}'s do). "
        "A crossover is where a design's lookups/s equals the reference's (log-linear between "
        "two scanned exponents).",
        "",
    ]
    refs = [ref, *[g for g in scan["gpus"] if g != ref]]
    for r in refs:
        ahead = [d["design"] for d in scan["designs"]
                 if r in d["versus"] and d["versus"][r]["ratio_at_measured"] >= 1.0]  # fmt: skip
        behind = [d["design"] for d in scan["designs"]
                  if r in d["versus"] and d["versus"][r]["ratio_at_measured"] < 1.0]  # fmt: skip
        out += [
            f"At the measured locality (run as such, not read off the Zipf axis) "
            f"{', '.join(ahead) or 'no design'} {'is' if len(ahead) == 1 else 'are'} faster than "
            f"`{r}`; {', '.join(behind) or 'none'} slower.",
            "",
            f"Against `{r}`:",
            "",
            f"| design | crossover | lookups/s over {r}'s at the measured locality "
            "| hit rates at the measured locality |",
            "|---|---|---:|---|",
        ]
        for d in scan["designs"]:
            entry = d["versus"].get(r)
            if entry is None:
                continue
            out.append(
                f"| {d['design']} | {_crossing_text(entry)} | "
                f"{entry['ratio_at_measured']:.2f}x | {_rates(d['hit_rates_at_measured'])} |"
            )
        out.append("")
    here = next((d for d in scan["designs"] if d["design"] == ref), None)
    if here is not None:
        own = _rates(here["hit_rates_at_measured"])
        out.append(f"`{ref}`'s own hit rates at the measured locality: {own}.")
    return out


def fit_markdown(fit: dict[str, Any]) -> list[str]:
    d = fit["distance"]
    rows = [
        ["fitted classes (expected)", *d["fitted"]],
        *([name, *dist] for name, dist in d.items() if name != "fitted"),
    ]
    out = [
        f"The generator against the published histograms of `{fit['locality']}` ({fit['source']}): "
        f"one batch of {fit['lookups']:,} lookups (the measured batch's per table) on a table of "
        f"{fit['table_rows']:,} rows (the fitted classes' size). Total-variation distance "
        "(0: equal, 1: disjoint):",
        "",
        "| draws | share of lookups by reuse | share of rows by reuse |",
        "|---|---:|---:|",
    ]
    out += [f"| {r[0]} | {r[1]:.3f} | {r[2]:.3f} |" for r in rows]
    return out


MAX_RATE_ROWS = 60  # points listed; a larger sweep's hit rates are in summary.json


def hit_rate_markdown(points: list[dict[str, Any]]) -> list[str]:
    if len(points) > MAX_RATE_ROWS:
        return [f"Hit rates of the {len(points)} points: summary.json, key locality.hit_rates."]
    out = [
        "Every design's caches and hot-row stores, beside the host's: the share of the lookups "
        "(host and GPU: of the cache lines) each serves. Caches at steady state, warmed by the "
        "batches before the timed one; TRiM's replicas and ReCross's partition come from an "
        "access profile of other batches (for ReCross, the share each level serves: its "
        "partition puts the hottest rows on the level with the most bandwidth per row).",
        "",
        "| workload | design | hit rates (share of the lookups each serves) |",
        "|---|---|---|",
    ]
    for p in points:
        axes = ", ".join(f"{k.split('.', 1)[1]}={v}" for k, v in p["axes"].items())
        label = p["design"] + (f" [{axes}]" if axes else "")
        out.append(f"| {p['workload']} | {label} | {_rates(p['hit_rates'])} |")
    return out


def locality_markdown(loc: dict[str, Any]) -> list[str]:
    """The ``## Locality`` section: which locality each workload ran, the hit rates, the
    crossovers and the generator's fit, as far as ``loc`` has them."""
    out = ["## Locality", ""]
    if loc.get("workloads"):
        out += ["| workload | locality | source |", "|---|---|---|"]
        out += [f"| {w['workload']} | {w['locality']} | {w['source']} |" for w in loc["workloads"]]
        out.append("")
    if loc.get("scan"):
        out += [*scan_markdown(loc["scan"]), ""]
    if loc.get("hit_rates"):
        out += [*hit_rate_markdown(loc["hit_rates"]), ""]
    if loc.get("fit"):
        out += [*fit_markdown(loc["fit"]), ""]
    return out[:-1] if out[-1] == "" else out


# --- plots -----------------------------------------------------------------------------------


def plot_crossover(scan: dict[str, Any], path: Path) -> None:
    """lookups/s of every design along the Zipf axis (0 = uniform), the measured locality
    marked at its equivalent exponent (its own points drawn there)."""
    # matplotlib: loaded on use (start-up time)
    from nmp.report.plots import plt, save_png, stable_colors, stable_markers

    names = [d["design"] for d in scan["designs"]]
    colors, markers = stable_colors(names), stable_markers(names)
    fig, ax = plt.subplots(figsize=(8.0, 5.0))
    for d in scan["designs"]:
        name = d["design"]
        ax.plot(
            scan["alphas"], d["lookups_per_s"], marker=markers[name], color=colors[name], label=name
        )
        ax.scatter([scan["equivalent_alpha"]], [d["measured_lookups_per_s"]], marker="*", s=140,
                   color=colors[name], edgecolors="black", zorder=5)  # fmt: skip
    ax.axvline(scan["equivalent_alpha"], color="grey", linestyle="--", linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("Zipf exponent of the lookups (0 = uniform); star: measured locality")
    ax.set_ylabel("lookups/s")
    ax.set_title(
        f"{scan['workload']} tables: throughput against skew "
        f"(measured {scan['locality']} at alpha {scan['equivalent_alpha']:.2f})"
    )
    ax.legend(loc="best", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    save_png(fig, path)


def plot_fit(fit: dict[str, Any], path: Path) -> None:
    """Published, fitted and drawn reuse histograms (lookups and rows by reuse factor)."""
    import numpy as np

    from nmp.report.plots import plt, save_png

    fig, axes = plt.subplots(1, 2, figsize=(12.0, 4.5))
    for panel, (ax, upper, title) in enumerate(
        zip(
            axes,
            (fit["lookup_upper"], fit["unique_upper"]),
            ("share of lookups by the reuse of their row", "share of distinct rows by reuse"),
            strict=True,
        )
    ):
        labels = [str(u) for u in upper] + [f">{upper[-1]}"]
        x = np.arange(len(labels))
        series = [("published", fit["published"][panel], "black")]
        series.append(("fitted classes", fit["fitted"][panel], "tab:blue"))
        colors = {"generator": "tab:green", "zipf 1.05": "tab:red", "uniform": "tab:grey"}
        series += [(n, v[panel], colors.get(n, "tab:purple")) for n, v in fit["drawn"].items()]
        width = 0.8 / len(series)
        for i, (name, values, color) in enumerate(series):
            ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=name, color=color)
        ax.set_xticks(x, labels, rotation=60, fontsize=7)
        ax.set_xlabel("reuse factor in the batch (upper bound of the bin)")
        ax.set_title(title, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("share")
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"{fit['locality']}: published vs the generator ({fit['lookups']:,} lookups on "
        f"{fit['table_rows']:,} rows)",
        fontsize=11,
    )
    save_png(fig, path)


__all__ = ["locality_markdown", "plot_crossover", "plot_fit"]
