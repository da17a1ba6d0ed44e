"""The SC'24 study: compression ratio, codec throughput and modeled speedup of the embedding
all-to-all over error bound, network and node count (``workloads/sweeps/papers/sc24-*.toml``).

Ratios and throughputs are measured here on the all-to-all chunks of real lookups
(:mod:`nmp.compress.pooled`); the step times come from :mod:`nmp.compress.speedup` at the
measured CPU throughput and at each assumed codec throughput of ``codec_gbps`` (a GPU codec's
throughput is not in the sources found, so it is a swept switch), beside the break-even
throughput above which compression pays, and at each compute utilization of
``compute_utilization`` (a measured step's, :data:`nmp.compress.speedup.MEASURED_STEPS`, or a
number; 1.0 is peak compute, the upper bound of the all-to-all's share). The AUC half of the
study needs the trainer and is added by :func:`nmp.train.alltoall.study.run_study`.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np

from nmp.compress.codec import codec_names, make_codec
from nmp.compress.measure import measure
from nmp.compress.network import load_network
from nmp.compress.pooled import alltoall_chunks, pooled_batch, size_class
from nmp.compress.quantizer import code_entropy_bits, quantize
from nmp.compress.speedup import (
    DEFAULT_UTILIZATION,
    GPU_CODECS,
    StepSetup,
    codec_rates,
    step_times,
    utilization_of,
)
from nmp.errors import NmpError
from nmp.fileio import atomic_write_bytes, atomic_write_text
from nmp.workload import load_workload

DEFAULTS: dict[str, Any] = {
    "workloads": ["dlrm-benchmark", "criteo-terabyte"],
    "codecs": ["quant", "quant-zstd", "quant-lz4", "quant-vlz", "hybrid", "zstd", "lz4"],
    "eb": [0.01, 0.03, 0.05],
    "nodes": [2, 4, 8, 16],
    "networks": ["ethernet-100g", "infiniband-hdr-200g", "infiniband-ndr-400g", "nvlink3-a100"],
    "codec_gbps": ["measured", "cuszp2-a100"],
    "compute_utilization": [DEFAULT_UTILIZATION],
    "seed": 0,
    "repeats": 3,
    # the codec the speedup plot shows where the study runs it, else the first one. Chosen:
    # the paper's own (SC'24's hybrid).
    "main_codec": "hybrid",
}


def _param(params: dict[str, Any], key: str) -> Any:
    value = params.get(key, DEFAULTS[key])
    if isinstance(DEFAULTS[key], list) and not isinstance(value, list):
        value = [value]
    return value


def check_params(params: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(params) - set(DEFAULTS) - {"train"})
    if unknown:
        raise NmpError(f"params.{unknown[0]}: unknown key (known: {', '.join(DEFAULTS)}, train)")
    p = {k: _param(params, k) for k in DEFAULTS}
    for key, least in (("seed", 0), ("repeats", 1)):
        value = p[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise NmpError(f"params.{key}: {value!r} must be an integer >= {least}")
    known = codec_names()
    for c in p["codecs"]:
        if c not in known:
            raise NmpError(f"params.codecs: unknown codec '{c}' (known: {', '.join(known)})")
    if p["main_codec"] not in known:
        raise NmpError(
            f"params.main_codec: unknown codec {p['main_codec']!r} (known: {', '.join(known)})"
        )
    for e in p["eb"]:
        if not isinstance(e, (int, float)) or not 0 < e <= 1:
            raise NmpError(f"params.eb: {e!r} is not in (0, 1]")
    for n in p["nodes"]:
        if not isinstance(n, int) or n < 2:
            raise NmpError(f"params.nodes: {n!r} must be an integer >= 2")
    for g in p["codec_gbps"]:
        if g not in ("measured", *GPU_CODECS) and not (isinstance(g, (int, float)) and g > 0):
            raise NmpError(
                f"params.codec_gbps: {g!r} must be 'measured', one of {list(GPU_CODECS)} "
                "or a positive number"
            )
    for u in p["compute_utilization"]:
        try:
            utilization_of(u)
        except NmpError as exc:
            raise NmpError(f"params.compute_utilization: {exc}") from None
    for w in p["workloads"]:
        wl = load_workload(w)
        if not (wl.mlp_bottom and wl.mlp_top):
            raise NmpError(
                f"params.workloads: workload '{w}' gives no MLP widths (mlp_bottom, mlp_top in "
                "its file)"
            )
    p["networks"] = [load_network(n) for n in p["networks"]]
    return p


def ratio_rows(p: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Measured ratio and throughput per (workload, codec, eb, nodes); per-table ratios too."""
    rows, tables = [], []
    for wl in p["workloads"]:
        pb = pooled_batch(wl, seed=p["seed"])
        for nodes in p["nodes"]:
            chunks = alltoall_chunks(pb, nodes)
            data = [c for _, _, c in chunks]
            ids = [t for t, _, _ in chunks]
            for codec_name in p["codecs"]:
                codec = make_codec(codec_name)
                for eb in p["eb"]:
                    m = measure(codec, data, eb, tables=ids, repeats=p["repeats"])
                    row = {"workload": wl, "codec": codec_name, "eb": eb, "nodes": nodes, **m}
                    if codec.lossy:  # what an ideal order-0 entropy coder (Huffman) could reach
                        row["entropy_bound_ratio"] = entropy_bound_ratio(data, eb)
                    rows.append(row)
                    if nodes == max(p["nodes"]) and eb == 0.03 or len(p["eb"]) == 1:
                        tables += _table_rows(wl, pb, codec_name, eb, nodes, chunks)
    return rows, tables


def entropy_bound_ratio(chunks: list[np.ndarray], eb: float) -> float:
    """Raw bytes over the order-0 entropy of each chunk's quantization codes: the ratio of an
    ideal per-chunk Huffman/arithmetic coder of the codes (no repeats exploited)."""
    bits = sum(code_entropy_bits(quantize(c, eb).codes) * c.size for c in chunks)
    raw_bits = 32.0 * sum(c.size for c in chunks)
    return raw_bits / bits if bits else float("inf")


def _table_rows(wl, pb, codec_name, eb, nodes, chunks) -> list[dict[str, Any]]:
    out = []
    codec: Any = make_codec(codec_name)  # hybrid: its per-table choice is read below
    for t in range(len(pb.pooled)):
        mine = [c for tt, _, c in chunks if tt == t]
        m = measure(codec, mine, eb, tables=[t] * len(mine), repeats=1)
        row = {
            "workload": wl,
            "codec": codec_name,
            "eb": eb,
            "nodes": nodes,
            "table": t,
            "rows": pb.table_rows[t],
            "kind": size_class(pb.table_rows[t]),
            "ratio": m["ratio"],
        }
        if hasattr(codec, "choice"):  # a codec that chooses per table (hybrid) says what it chose
            row["hybrid_choice"] = codec.choice.get(t, "")
            row["repeat_fraction"] = codec.analysis.get(t, {}).get("repeat_fraction")
        out.append(row)
    return out


def step_setup(workload: str, nodes: int) -> StepSetup:
    """The step of ``workload``'s preset (global batch, tables, pooling) and MLPs on ``nodes``."""
    spec = load_workload(workload)
    bottom, top = spec.mlp_bottom, spec.mlp_top
    return StepSetup(
        nodes=nodes,
        batch=spec.batch,
        num_tables=len(spec.tables),
        dim=spec.tables[0].dim,
        pooling=spec.mean_pooling,
        bottom=bottom,
        top=top,
    )


def speedup_rows(p: dict[str, Any], ratios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for r, net, g, u in itertools.product(
        ratios, p["networks"], p["codec_gbps"], p["compute_utilization"]
    ):
        setup = dataclasses.replace(
            step_setup(r["workload"], r["nodes"]), utilization=utilization_of(u)
        )
        comp, decomp = codec_rates(g, (r["compress_gbps"], r["decompress_gbps"]))
        st = step_times(setup, net, ratio=r["ratio"], comp_gbps=comp, decomp_gbps=decomp)
        # Codec throughput (both ways equal) at which the all-to-all breaks even.
        gain = 1.0 - 1.0 / r["ratio"]
        breakeven = 2.0 * net.link_gbps / 8.0 / gain if gain > 0 else float("inf")
        rows.append(
            {
                "workload": r["workload"],
                "codec": r["codec"],
                "eb": r["eb"],
                "nodes": r["nodes"],
                "network": net.name,
                "link_gbps": net.link_gbps,
                "codec_gbps": g,
                "utilization_setting": u,
                "ratio": r["ratio"],
                "breakeven_codec_gbps": breakeven,
                **st,
            }
        )
    return rows


def write_table(path: Path, rows: list[dict[str, Any]]) -> None:
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols)
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(path, buf.getvalue())


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, default=float) + "\n" for r in rows))


def save_png(fig, path: Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    atomic_write_bytes(path, buf.getvalue())


def plot_ratio(rows: list[dict[str, Any]], path: Path, nodes: int) -> None:
    # matplotlib: loaded on use (start-up time)
    import matplotlib

    matplotlib.use("Agg")
    # matplotlib: loaded on use (start-up time)
    import matplotlib.pyplot as plt

    wls = sorted({r["workload"] for r in rows})
    fig, axes = plt.subplots(1, len(wls), figsize=(5.5 * len(wls), 4), squeeze=False)
    for ax, wl in zip(axes[0], wls, strict=True):
        for codec in dict.fromkeys(r["codec"] for r in rows):
            pts = sorted(
                (r["eb"], r["ratio"])
                for r in rows
                if r["workload"] == wl and r["codec"] == codec and r["nodes"] == nodes
            )
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=codec)
        ax.set(title=f"{wl}, {nodes} nodes", xlabel="relative error bound", ylabel="ratio")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    save_png(fig, path)
    plt.close(fig)


def plot_speedup(rows: list[dict[str, Any]], path: Path, codec: str, eb: float) -> None:
    # matplotlib: loaded on use (start-up time)
    import matplotlib

    matplotlib.use("Agg")
    # matplotlib: loaded on use (start-up time)
    import matplotlib.pyplot as plt

    wls = sorted({r["workload"] for r in rows})
    fig, axes = plt.subplots(1, len(wls), figsize=(5.5 * len(wls), 4), squeeze=False)
    for ax, wl in zip(axes[0], wls, strict=True):
        sel = [r for r in rows if r["workload"] == wl and r["codec"] == codec and r["eb"] == eb]
        utils = list(dict.fromkeys(r["compute_utilization"] for r in sel))
        for nodes in sorted({r["nodes"] for r in sel}):
            for g, u in itertools.product(dict.fromkeys(r["codec_gbps"] for r in sel), utils):
                pts = sorted(
                    (r["link_gbps"], r["speedup_modeled"])
                    for r in sel
                    if r["nodes"] == nodes
                    and r["codec_gbps"] == g
                    and r["compute_utilization"] == u
                )
                style = "-" if g == "measured" else "--"
                name = {"measured": "CPU measured"}.get(g, g if isinstance(g, str) else f"{g} GB/s")
                lab = f"{nodes} nodes, codec {name}"
                if len(utils) > 1:
                    lab += f", compute at {100 * u:.0f} %"
                ax.plot(*zip(*pts, strict=True), style, marker="o", label=lab)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log")
        ax.set(title=f"{wl}: {codec}, eb {eb}", xlabel="link Gb/s", ylabel="step speedup")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    save_png(fig, path)
    plt.close(fig)


def run_ratio_speedup(params: dict[str, Any], out_dir: Path) -> dict[str, list[Any]]:
    """The compression half of the study: writes ratios.csv, tables.csv, speedup.csv, plots."""
    p = check_params(params)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ratios, tables = ratio_rows(p)
    speed = speedup_rows(p, ratios)
    write_table(out_dir / "ratios.csv", ratios)
    write_table(out_dir / "tables.csv", tables)
    write_table(out_dir / "speedup.csv", speed)
    nodes = max(p["nodes"])
    plot_ratio(ratios, out_dir / "ratio.png", nodes)
    main_codec = p["main_codec"] if p["main_codec"] in p["codecs"] else p["codecs"][0]
    main_eb = 0.03 if 0.03 in p["eb"] else p["eb"][0]
    plot_speedup(speed, out_dir / "speedup.png", main_codec, main_eb)
    return {"ratios": ratios, "tables": tables, "speedup": speed, "main": [main_codec, main_eb]}


def run_study(params: dict[str, Any], *, out_dir: Path, jobs: int = 1) -> list[dict[str, Any]]:
    """Custom-study entry without the training half (ratio + speedup only)."""
    res = run_ratio_speedup(params, out_dir)
    rows = res["speedup"]
    write_table(Path(out_dir) / "results.csv", rows)
    write_jsonl(Path(out_dir) / "results.jsonl", rows)
    atomic_write_text(Path(out_dir) / "report.md", report_markdown(res, []))
    return rows


def _md(header: list[str], lines: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cells) + " |" for cells in lines]
    return out


def report_markdown(res: dict[str, Any], auc_rows: list[dict[str, Any]]) -> str:
    ratios, speed, tables = res["ratios"], res["speedup"], res["tables"]
    codec, eb = res["main"]
    nodes = max(r["nodes"] for r in ratios)
    lines = [
        "# SC'24 study: lossy compression of the embedding all-to-all",
        "",
        "Ratios and CPU throughputs measured on the all-to-all chunks of one batch of real",
        "lookups pooled through EmbeddingBag on DLRM-initialised tables (nmp.compress.pooled);",
        "step times from nmp.compress.speedup (A100 compute at the swept fraction of peak,",
        "alpha-beta all-to-all); `bound (no a2a)`: the speedup if compression removed both",
        "all-to-alls.",
        "The AUC part trains (nmp train, tables capped at train.max_rows, pooling at",
        "train.max_pooling, synthetic teacher) and its `ratio_in_training` is measured on the",
        "values as they train.",
        "",
        f"## Compression ratio at {nodes} nodes",
        "",
    ]
    ebs = sorted({r["eb"] for r in ratios})
    for wl in dict.fromkeys(r["workload"] for r in ratios):
        lines += [f"### {wl}", ""]
        body = []
        for c in dict.fromkeys(r["codec"] for r in ratios):
            sel = {
                r["eb"]: r
                for r in ratios
                if r["workload"] == wl and r["codec"] == c and r["nodes"] == nodes
            }
            any_r = next(iter(sel.values()))
            body.append(
                [c]
                + [f"{sel[e]['ratio']:.2f}" for e in ebs]
                + [f"{any_r['compress_gbps']:.2f}", f"{any_r['decompress_gbps']:.2f}"]
                + [f"{max(s['max_error_over_bound'] for s in sel.values()):.4f}"]
            )
        ent = {
            r["eb"]: r["entropy_bound_ratio"]
            for r in ratios
            if r["workload"] == wl and r["nodes"] == nodes and "entropy_bound_ratio" in r
        }
        if ent:
            body.append(["(order-0 entropy bound)"] + [f"{ent[e]:.2f}" for e in ebs] + ["", "", ""])
        lines += _md(
            ["codec", *[f"ratio eb={e}" for e in ebs], "comp GB/s", "decomp GB/s", "max err/eb"],
            body,
        )
        lines.append("")
    if tables:
        lines += ["## Ratio per table kind", ""]
        kinds: dict[tuple, list[float]] = {}
        for t in tables:
            kinds.setdefault((t["workload"], t["codec"], t["kind"]), []).append(t["ratio"])
        lines += _md(
            ["workload", "codec", "table kind", "tables", "mean ratio"],
            [[w, c, k, str(len(v)), f"{np.mean(v):.2f}"] for (w, c, k), v in kinds.items()],
        )
        lines.append("")
    lines += [f"## Modeled step speedup ({codec}, eb {eb})", ""]
    body = []
    for r in speed:
        if r["codec"] == codec and r["eb"] == eb:
            body.append(
                [
                    r["workload"],
                    str(r["nodes"]),
                    r["network"],
                    str(r["codec_gbps"]),
                    f"{100 * r['compute_utilization']:.1f}",
                    f"{r['ratio']:.2f}",
                    f"{100 * r['alltoall_share']:.1f}",
                    f"{r['comm_speedup_modeled']:.3f}",
                    f"{r['comm_speedup_paper_formula']:.3f}",
                    f"{r['speedup_modeled']:.3f}",
                    f"{r['speedup_bound']:.3f}",
                    f"{r['breakeven_codec_gbps']:.1f}",
                ]
            )
    lines += _md(
        [
            "workload",
            "nodes",
            "network",
            "codec GB/s",
            "compute % of peak",
            "ratio",
            "a2a % of step",
            "a2a speedup",
            "paper formula",
            "step speedup",
            "bound (no a2a)",
            "break-even GB/s",
        ],
        body,
    )
    if auc_rows:
        lines += ["", "## AUC change against uncompressed training", ""]
        lines += _md(
            list(auc_rows[0].keys()),
            [
                [f"{v:.4f}" if isinstance(v, float) else str(v) for v in r.values()]
                for r in auc_rows
            ],
        )
    lines += ["", "Plots: ratio.png, speedup.png" + (", auc.png" if auc_rows else ""), ""]
    return "\n".join(lines)
