"""One row of ``nmp validate`` (:class:`CheckResult`) and the kit's own checks
(:data:`KIT_CHECKS`).

A check of the kit against a reference it computes or has on file registers itself with
:func:`builtin` under the prefix of its rows' ids (``dram.ramulator2`` gives
``dram.ramulator2.ddr4``, ...), in whatever package it lives: the trainer's check against real
processes (:mod:`nmp.train.measured`) registers from ``nmp.train``, above this package, and
:data:`KIT_CHECKS` finds it by its decorator (no import of ``nmp.train`` by name here).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from nmp.registry import Registry


@dataclass
class CheckResult:
    """One row of ``nmp validate``: what was compared, the two sides, and the verdict.

    A claim is computed twice: under the paper's setup (``model_paper_setup``,
    ``verdict_paper_setup``: the like-with-like comparison) and under the kit's own defaults
    (``model_kit_defaults``, ``verdict_kit_defaults``: its realistic physics, such as the host's
    LLC). ``model``, ``verdict`` and ``detail`` mirror the paper-setup column (a file without a
    ``[setup]`` has only the kit's: both columns hold it). A simulator or functional check has
    one value: both columns hold it too."""

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
    model_paper_setup: Any = None
    verdict_paper_setup: str = ""
    model_kit_defaults: Any = None
    verdict_kit_defaults: str = ""
    detail_kit_defaults: str = ""
    setup_stated: bool = False  # whether the paper's file states its setup
    # a speed claim: its first-principles upper bound on the figure under each setup (stated
    # resources only, no model run), whether the published figure exceeds the paper-setup
    # one, the arithmetic and each term; and the model's own ceiling (reported, not judged)
    bound: float | None = None
    bound_kit_defaults: float | None = None
    exceeds_bound: bool | None = None
    bound_note: str = ""
    bound_detail: str = ""
    bound_terms: dict[str, Any] | None = None
    bound_terms_kit_defaults: dict[str, Any] | None = None
    model_ceiling: float | None = None
    model_ceiling_kit_defaults: float | None = None
    model_ceiling_detail: str = ""
    margin: float | None = None  # an ordering: by how much it holds under the paper's setup
    # which setup value moves the paper-setup figure most when set back to the kit's default
    moved_most_by: dict[str, Any] | None = None
    setup_moves: list[dict[str, Any]] = field(default_factory=list)
    sensitivity: str = ""  # the study that sweeps the chosen values the figure rests on
    input: str = ""  # why the claimed value is an input of the model
    wall_s: float = 0.0  # not deterministic: kept out of --json

    def mirror_columns(self) -> None:
        """One value for both setups (a check that has no setup of its own)."""
        self.model_paper_setup = self.model_kit_defaults = self.model
        self.verdict_paper_setup = self.verdict_kit_defaults = self.verdict
        self.detail_kit_defaults = self.detail

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("wall_s")
        return out


#: The kit's own checks by id prefix; listed by module, then in each module's order.
KIT_CHECKS: Registry[Callable[..., list[CheckResult]]] = Registry(
    "kit check", package="nmp", marker=r'^@builtin\("', order=lambda fn: fn.__module__
)


#: A kit check's independent parts (``parts() -> names``), by the check's name: a check listed
#: here runs as one task per part (``fn(quick, part)``), so that ``nmp validate --jobs`` spreads
#: its parts over processes. No part shares a model run with another.
CHECK_PARTS: Registry[Callable[[], list[str]]] = Registry(
    "kit check parts", package="nmp", marker=r'^@builtin\("[^"]+", parts='
)


def builtin(name: str, *, parts: Callable[[], list[str]] | None = None) -> Callable:
    """Decorator: ``nmp validate`` runs this check (``fn(quick) -> rows``) as ``name``. With
    ``parts`` (a function naming the check's independent parts, such as one per recorded
    file), it runs as one task per part, ``fn(quick, part)``, and as one task ``fn(quick)``
    when there is no part (the check's "not run" row)."""
    if parts is not None:
        CHECK_PARTS.register(parts, name=name)
    return KIT_CHECKS.register(name=name)
