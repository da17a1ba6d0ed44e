"""Run the checks: the built-in ones (simulator, functional) and every published claim."""

from __future__ import annotations

import fnmatch
import functools
import re
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nmp.errors import NmpError
from nmp.validate.result import CHECK_PARTS, KIT_CHECKS, CheckResult

# A part's task id: the check's name, this mark, the part's name (``gpu.real@<record>``).
PART_MARK = "@"


def _selected(check_id: str, only: tuple[str, ...]) -> bool:
    return not only or any(fnmatch.fnmatch(check_id, p) or check_id.startswith(p) for p in only)


def _error_row(check_id: str, exc: BaseException) -> CheckResult:
    msg = str(exc) if isinstance(exc, NmpError) else f"{type(exc).__name__}: {exc}"
    return CheckResult(
        id=check_id,
        source="",
        published="",
        model=msg.splitlines()[0] if msg else type(exc).__name__,
        verdict="error",
        detail=traceback.format_exc(limit=3) if not isinstance(exc, NmpError) else "",
    )


def plan_validation(
    *, quick: bool = False, only: tuple[str, ...] = (), claims_dir: Path | None = None
) -> list[tuple[str, Callable[[], list[CheckResult]]]]:
    """The checks to run, in a stable order, each as (id, run): every built-in check, then every
    claim (with ``quick``, only claims marked quick). ``only`` keeps the ids that match a glob or
    prefix; ``claims_dir`` replaces the papers' folder (``nmp/papers``)."""
    # numpy: loaded when the command runs, not for `nmp --help`
    from nmp.validate.claims import PAPERS_DIR, load_claims

    tasks: list[tuple[str, Callable[[], list[CheckResult]]]] = []
    for name, fn in KIT_CHECKS.items():
        # a pattern inside a check's prefix (dram.ramulator2.ddr5) runs it and keeps its rows
        if not (_selected(name, only) or any(p.startswith(name + ".") for p in only)):
            continue
        parts = CHECK_PARTS.get(name)() if name in CHECK_PARTS else []
        tasks += [
            (
                f"{name}{PART_MARK}{part}",
                functools.partial(
                    _run_builtin, name, functools.partial(fn, part=part), quick, only
                ),
            )
            for part in parts
        ] or [(name, functools.partial(_run_builtin, name, fn, quick, only))]
    tasks += [
        (c.id, functools.partial(_run_claim, c, quick))
        for c in load_claims(claims_dir or PAPERS_DIR)
        if (c.quick or not quick) and _selected(c.id, only)
    ]
    return tasks


def group_of(check_id: str) -> str:
    """The group a check runs in: its paper (``recross`` of ``recross.speedup-vs-cpu``) or
    its built-in check's name; a part of a built-in check (``gpu.real@<record>``) is a group
    of its own (``gpu@<record>``). A group's checks share their model runs (cached per
    process), so a group never splits across workers; a check's parts share none."""
    head, mark, part = check_id.partition(PART_MARK)
    return head.split(".")[0] + mark + part


def _run_group(
    quick: bool, only: tuple[str, ...], claims_dir: Path | None, ids: tuple[str, ...]
) -> list[CheckResult]:
    """One group's checks, in a worker process (it plans again: tasks do not pickle)."""
    wanted = set(ids)
    rows: list[CheckResult] = []
    for check_id, run in plan_validation(quick=quick, only=only, claims_dir=claims_dir):
        if check_id in wanted:
            rows.extend(run())
    return rows


def run_validation(
    *,
    quick: bool = False,
    only: tuple[str, ...] = (),
    claims_dir: Path | None = None,
    advance: Callable[..., None] | None = None,
    jobs: int = 1,
) -> list[CheckResult]:
    """Run :func:`plan_validation`'s checks; ``advance(group, rows, seconds)`` is called
    after each group (a paper's claims, or one built-in check). A check that raises is an
    "error" row; the others still run. ``jobs`` > 1 runs the groups in that many processes;
    the rows come back in the plan's order either way, with the same values."""
    tasks = plan_validation(quick=quick, only=only, claims_dir=claims_dir)
    groups: dict[str, list[str]] = {}
    for check_id, _ in tasks:
        groups.setdefault(group_of(check_id), []).append(check_id)
    done: dict[str, list[CheckResult]] = {}
    if jobs <= 1 or len(groups) <= 1:
        runs = dict(tasks)
        for name, ids in groups.items():
            t0 = time.perf_counter()
            done[name] = [r for check_id in ids for r in runs[check_id]()]
            if advance:
                advance(name, done[name], time.perf_counter() - t0)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # spawn: a worker starts clean (no forked numba / engine threads)
        ctx = multiprocessing.get_context("spawn")
        t0 = time.perf_counter()
        with ProcessPoolExecutor(max_workers=min(jobs, len(groups)), mp_context=ctx) as pool:
            # the longest groups first (the papers with model runs), so they start at once
            futures = {
                pool.submit(_run_group, quick, only, claims_dir, tuple(ids)): name
                for name, ids in sorted(groups.items(), key=lambda kv: -len(kv[1]))
            }
            for fut in as_completed(futures):
                name = futures[fut]
                done[name] = fut.result()
                if advance:
                    advance(name, done[name], time.perf_counter() - t0)
    return [r for name in groups for r in done[name]]


def _run_builtin(
    name: str, fn: Callable, quick: bool, only: tuple[str, ...] = ()
) -> list[CheckResult]:
    t0 = time.perf_counter()
    try:
        rows = fn(quick)
    except Exception as exc:  # one failing check must not hide the others
        rows = [_error_row(name, exc)]
    if not _selected(name, only):
        rows = [r for r in rows if _selected(r.id, only)]
    for r in rows:
        r.mirror_columns()
        r.wall_s = (time.perf_counter() - t0) / len(rows)
    return rows


def _evaluate(claim: Any, quick: bool, setup: dict[str, Any] | None) -> tuple[Any, str]:
    """(the claim's Evaluation, its verdict) under ``setup``; an error becomes the value's
    text with verdict "error"."""
    # the claims' modules: loaded when the command runs, not for `nmp --help`
    from nmp.validate.claims import Evaluation

    try:
        ev = claim.evaluate(quick, setup)
        return ev, claim.verdict(ev)
    except Exception as exc:  # one failing column must not hide the other
        err = _error_row(claim.id, exc)
        return Evaluation(err.model, err.detail), "error"


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "holds" if value else "does not hold"
    return f"{value:.4g}" if isinstance(value, int | float) else str(value)


def _move(paper: Any, other: Any, margin_paper: Any, margin_other: Any, scale: float) -> float:
    """How far ``other`` lies from the paper-setup value (0: not at all): relative to
    ``scale`` for numbers, a flip (1) or the change of margin for orderings."""
    if isinstance(paper, bool) or isinstance(other, bool):
        if paper != other:
            return 1.0
        if margin_paper is None or margin_other is None:
            return 0.0
        return abs(margin_paper - margin_other)
    if not isinstance(paper, int | float) or not isinstance(other, int | float):
        return 0.0
    return abs(other - paper) / scale


def swept_alternatives(key: str, study: str, paper_value: Any) -> list[Any]:
    """The values the study ``study`` (a sweep or sensitivity file) gives setup key ``key``
    (a ``designs.<preset>.`` prefix dropped), other than the paper's: its axis values, linked
    steps' values, or an assumption's low and high. Empty when the study does not name it."""
    # the sweep files: loaded when the command runs, not for `nmp --help`
    from nmp.config import load_toml
    from nmp.evaluate.sweep import find_sweep

    names = {key}
    if key.startswith("designs."):
        names.add(key.split(".", 2)[2])
    data = load_toml(find_sweep(study))
    found: list[Any] = []

    def take(value: Any) -> None:
        if isinstance(value, dict):
            for k in names & set(value):
                found.append(value[k])
        elif isinstance(value, list):
            for v in value:
                take(v)

    def flat(table: Any, prefix: str = "") -> dict[str, Any]:
        """An axes table with TOML's dotted keys (workload.alpha = [...]) as dotted names."""
        out: dict[str, Any] = {}
        for k, v in table.items() if isinstance(table, dict) else []:
            if isinstance(v, dict):
                out.update(flat(v, f"{prefix}{k}."))
            else:
                out[f"{prefix}{k}"] = v
        return out

    designs = data.get("designs", {})
    for axes in (
        data.get("axes", {}),
        designs.get("axes", {}) if isinstance(designs, dict) else {},
    ):
        for k, v in flat(axes).items():
            take(v if k not in names else [{k: x} for x in v])
    params = data.get("params", {})
    for item in params.get("assumptions", []) if isinstance(params, dict) else []:
        for side in ("low", "high"):
            take(item.get(side, {}))
    out: list[Any] = []
    for v in found:
        if v != paper_value and v not in out:
            out.append(v)
    return out


def extremes(values: list[Any]) -> list[Any]:
    """The lowest and highest of numeric alternatives (every one when they are not all
    numbers): the ends of the study's range bound what it sweeps in between."""
    nums = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(values) <= 2 or len(nums) != len(values):
        return list(values)
    return [min(nums), max(nums)]


def attribute(claim: Any, quick: bool, paper: Any) -> list[dict[str, Any]]:
    """Each setup value set back to the kit's default, and a chosen value also to the
    alternatives its ``swept`` study names (:func:`extremes`: the lowest and highest; the
    study sweeps the rest) with the others at the paper's: the figure it then gives, largest
    move first (values that move nothing are left out). The alternatives are run for the
    claims of the quick set (the headline figures); a claim along a whole curve (full set
    only) keeps the reset to the kit's default: its alternatives would run every step again."""
    # the claims' modules: loaded when the command runs, not for `nmp --help`
    from nmp.validate.claims import published_low

    if claim.setup is None or not isinstance(paper.value, bool | int | float):
        return []
    scale = abs(paper.value) if not isinstance(paper.value, bool) else 1.0
    if claim.kind == "value":
        scale = max(scale, abs(published_low(claim.published)), 1e-12)
    moves = []
    for item in claim.setup.values:
        trials: list[tuple[Any, Any]] = [(None, claim.setup.mapping(without=item.key))]
        if item.chosen and item.swept and claim.quick:
            alts = extremes(swept_alternatives(item.key, item.swept, item.value))
            trials += [(alt, claim.setup.mapping(replace=(item.key, alt))) for alt in alts]
        for alt, mapping in trials:
            ev, verdict = _evaluate(claim, quick, mapping)
            if verdict == "error":
                continue
            score = _move(paper.value, ev.value, paper.margin, ev.margin, scale)
            if score > 1e-9:
                move = {"key": item.key, "paper_value": item.value, "model_without": ev.value,
                        "verdict": verdict, "move": score}  # fmt: skip
                if alt is not None:
                    move["alternative"] = alt
                    move["swept"] = item.swept
                moves.append(move)
    return sorted(moves, key=lambda m: -m["move"])


def _bound_note(claim: Any, bound: float | None) -> str:
    # the claims' modules: loaded when the command runs, not for `nmp --help`
    from nmp.validate.claims import exceeds_bound, published_low

    over = exceeds_bound(claim.kind, claim.published, bound)
    if over is None or bound is None:
        return ""
    need = 1.0 if claim.kind == "ordering" else published_low(claim.published)
    if over:
        return (
            f"the published {_fmt(need)}{claim.unit} is {need / bound:.2f}x the first-principles "
            f"bound {_fmt(bound)}{claim.unit}"
        )
    return f"the published figure is within the first-principles bound ({_fmt(bound)}{claim.unit})"


# The placeholders an explanation may hold: every number in it is rendered from the row.
PLACEHOLDERS = (
    "published",
    "model",
    "kit",
    "bound",
    "bound_kit",
    "model_ceiling",
    "binding",
    "design_ceiling",
    "baseline_ceiling",
    "detail",
    "detail_kit",
    "moved",
    "verdict",
    "verdict_kit",
)


def _side(terms: dict[str, Any] | None, side: str) -> dict[str, Any]:
    """The design's or baseline's part of a ratio's ``bound_terms`` (the lowest step's for a
    curve), or {}."""
    if not terms:
        return {}
    if side not in terms and isinstance(terms.get("lowest"), dict):
        terms = terms["lowest"]
    out = terms.get(side)
    return out if isinstance(out, dict) else {}


def explanation_values(row: CheckResult) -> dict[str, str]:
    """The placeholder values of ``row`` (text), as :data:`PLACEHOLDERS` names them."""
    # the report's formatting: loaded when the command runs, not for `nmp --help`
    from nmp.validate.report import fmt_value, moved_text

    def mlps(side: str) -> str:
        v = _side(row.bound_terms, side).get("lookups_per_s")
        return f"{v / 1e6:.0f} M lookups/s" if isinstance(v, int | float) else "-"

    return {
        "published": fmt_value(row.published, row.unit),
        "model": fmt_value(row.model_paper_setup, row.unit),
        "kit": fmt_value(row.model_kit_defaults, row.unit),
        "bound": fmt_value(row.bound, row.unit) or "-",
        "bound_kit": fmt_value(row.bound_kit_defaults, row.unit) or "-",
        "model_ceiling": fmt_value(row.model_ceiling, row.unit) or "-",
        "binding": str(_side(row.bound_terms, "design").get("binding", "-")),
        "design_ceiling": mlps("design"),
        "baseline_ceiling": mlps("baseline"),
        "detail": row.detail.strip(),
        "detail_kit": row.detail_kit_defaults.strip(),
        "moved": moved_text(row) or "no setup value",
        "verdict": row.verdict_paper_setup,
        "verdict_kit": row.verdict_kit_defaults,
    }


def render_explanation(text: str, row: CheckResult) -> str:
    """``text`` with its ``{placeholder}`` s filled from ``row`` (an unknown one stays)."""
    values = explanation_values(row)
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), text)


def _run_claim(claim: Any, quick: bool) -> list[CheckResult]:
    t0 = time.perf_counter()
    row = CheckResult(
        id=claim.id,
        source=claim.source,
        published=claim.published,
        model=None,
        verdict="error",
        paper=claim.paper_title,
        figure=claim.figure,
        claim=claim.claim,
        kind=claim.kind,
        unit=claim.unit,
        setup_stated=claim.setup is not None,
        sensitivity=claim.sensitivity,
        input=claim.input,
    )
    kit, row.verdict_kit_defaults = _evaluate(claim, quick, None)
    if claim.setup is not None:
        paper, row.verdict_paper_setup = _evaluate(claim, quick, claim.setup.mapping())
    else:
        paper, row.verdict_paper_setup = kit, row.verdict_kit_defaults
    row.model_paper_setup, row.model_kit_defaults = paper.value, kit.value
    row.detail_kit_defaults = kit.detail
    row.model, row.verdict, row.detail = paper.value, row.verdict_paper_setup, paper.detail
    row.margin = paper.margin
    row.bound, row.bound_kit_defaults = paper.bound, kit.bound
    row.bound_terms, row.bound_terms_kit_defaults = paper.bound_terms, kit.bound_terms
    row.model_ceiling, row.model_ceiling_kit_defaults = paper.model_ceiling, kit.model_ceiling
    row.model_ceiling_detail = paper.model_ceiling_detail
    if paper.bound is not None and row.verdict_paper_setup != "error":
        # the claims' modules: loaded when the command runs, not for `nmp --help`
        from nmp.validate.claims import exceeds_bound

        row.exceeds_bound = exceeds_bound(claim.kind, claim.published, paper.bound)
        row.bound_note = _bound_note(claim, paper.bound)
        row.bound_detail = paper.bound_detail
    if row.verdict_paper_setup != "error" and not quick:
        # attribution runs the claim once per setup value and alternative: the full run gives
        # it; `--quick` (CI's smoke run) leaves it out
        row.setup_moves = attribute(claim, quick, paper)
        row.moved_most_by = row.setup_moves[0] if row.setup_moves else None
    if {row.verdict_paper_setup, row.verdict_kit_defaults} - {"agrees"}:
        row.explanation = render_explanation(claim.explanation, row)
    row.wall_s = time.perf_counter() - t0
    return [row]
