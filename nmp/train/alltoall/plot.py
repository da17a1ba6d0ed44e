"""The SC'24 study's AUC plot: AUC change against the error bound, per workload."""

from __future__ import annotations

from typing import Any

from nmp.train.alltoall.bounds import EB_SCHEDULES

PLOTTED_CODEC = "hybrid"  # chosen: SC'24's own codec, the one its accuracy figure shows


def plot_auc(rows: list[dict[str, Any]], path: Any) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nmp.compress.study import save_png

    fig, ax = plt.subplots(figsize=(6, 4))
    for wl in dict.fromkeys(r["workload"] for r in rows):
        sel = [
            r
            for r in rows
            if r["workload"] == wl
            and r["codec"] == PLOTTED_CODEC
            and EB_SCHEDULES.get(r["eb_schedule"]).holds_base
        ]
        sel.sort(key=lambda r: r["eb"])
        ax.errorbar(
            [r["eb"] for r in sel],
            [r["auc_change"] for r in sel],
            yerr=[r["auc_change_noise95"] for r in sel],
            marker="o",
            capsize=3,
            label=wl,
        )
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set(xlabel="relative error bound (hybrid, table-wise)", ylabel="AUC change (95% noise)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save_png(fig, path)
    plt.close(fig)
