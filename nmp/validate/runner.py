"""Run the checks: the built-in ones (simulator, functional) and every published claim."""

from __future__ import annotations

import fnmatch
import functools
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nmp.errors import NmpError


@dataclass
class CheckResult:
    """One row of ``nmp validate``: what was compared, the two sides, and the verdict."""

    id: str
    source: str
    published: Any
    model: Any
    verdict: str
    group: str = "claim"  # simulator / functional / claim
    paper: str = ""
    figure: str = ""
    claim: str = ""
    kind: str = ""
    unit: str = ""
    explanation: str = ""
    detail: str = ""
    wall_s: float = 0.0  # not deterministic: kept out of --json

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("wall_s")
        return out


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
    prefix; ``claims_dir`` replaces the packaged claims folder."""
    # numpy: loaded when the command runs, not for `nmp --help`
    from nmp.validate.checks import BUILTIN_CHECKS
    from nmp.validate.claims import CLAIMS_DIR, load_claims

    tasks: list[tuple[str, Callable[[], list[CheckResult]]]] = [
        (name, functools.partial(_run_builtin, name, fn, quick, only))
        for name, fn in BUILTIN_CHECKS.items()
        # a pattern inside a check's prefix (dram.ramulator2.ddr5) runs it and keeps its rows
        if _selected(name, only) or any(p.startswith(name + ".") for p in only)
    ]
    tasks += [
        (c.id, functools.partial(_run_claim, c, quick))
        for c in load_claims(claims_dir or CLAIMS_DIR)
        if (c.quick or not quick) and _selected(c.id, only)
    ]
    return tasks


def run_validation(
    *,
    quick: bool = False,
    only: tuple[str, ...] = (),
    claims_dir: Path | None = None,
    advance: Callable[[], None] | None = None,
) -> list[CheckResult]:
    """Run :func:`plan_validation`'s checks; ``advance()`` is called after each. A check that
    raises is an "error" row; the others still run."""
    results: list[CheckResult] = []
    for _, run in plan_validation(quick=quick, only=only, claims_dir=claims_dir):
        results.extend(run())
        if advance:
            advance()
    return results


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
        r.wall_s = (time.perf_counter() - t0) / len(rows)
    return rows


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
    )
    try:
        value, row.detail = claim.evaluate(quick)
        row.model = value
        row.verdict = claim.verdict(value)
    except Exception as exc:  # an error row, as above
        err = _error_row(claim.id, exc)
        row.model, row.detail = err.model, err.detail
    if row.verdict != "agrees":
        row.explanation = claim.explanation
    row.wall_s = time.perf_counter() - t0
    return [row]
