"""Published claims as data, and the verdicts of the model's values against one.

A paper is one folder, ``nmp/papers/<paper>/`` (:data:`PAPERS_DIR`): its ``claims.toml``
(claims and setup, below), the ``model.py`` (and ``bounds.py``) whose functions answer them and
its golden fixture ``golden.json`` (``tests/validate/test_golden.py``). Validate finds the papers
by globbing ``*/claims.toml`` there: it never imports ``nmp.papers`` (a higher layer); a claim's
``model`` string is resolved when the claim runs (:func:`nmp.plugins.load_claim_model`).
``claims.toml``::

    [paper]
    id = "recshard"
    title = "RecShard (Sethi et al., ASPLOS'22)"
    citation = "..."

    [setup]                             # the setup the paper's figures come from (setup.py)
    summary = "..."
    [[setup.values]]
    key = "arch.host.llc_mib"
    value = 0
    source = "..."                      # or chosen = "why"

    [[claims]]
    id = "recshard.step-vs-size"        # unique over all files, "<paper>.<slug>"
    figure = "Fig. 9"                   # where in the paper
    source = "Sethi et al., §6.2"       # citation of the claim ("[secondary]" for notes)
    claim = "RecShard's step is faster than size-based greedy sharding"
    kind = "ordering"                   # or "value"
    published = "recshard < size"       # text for an ordering; a number (or [lo, hi]) for a value
    unit = "x"                          # value claims
    tolerance = 0.10                    # value: |model / published - 1| <= tolerance -> agrees
    band = [1.5, 4.0]                   # value: inside -> "within band", else "disagrees"
    margin = 0.05                       # ordering: agrees only when it holds by this much
    input = "why the value is an input" # the model copies this figure: verdict "input"
    sensitivity = "papers/sensitivity-x"  # the study that sweeps the chosen values it rests on
    model = "nmp.papers.recshard.model:step_speedup"
    args = { baseline = "size" }
    bound = "nmp.papers.recshard.bounds:throughput_gain"  # optional: its own bound (below)
    quick = true                        # part of `nmp validate --quick`
    explanation = "the named assumption behind a difference"

The ``model`` function is called as ``fn(quick=..., setup=..., **args)`` (``setup``: None for
the kit's defaults, the paper's setup mapping otherwise) and returns the model's value (a bool
for an ordering, a number for a value) or a dict: ``value``, ``detail`` (the setup it ran),
``margin`` (an ordering: by how much it holds, relative; negative when it does not), ``bound``
(a speed claim: its first-principles upper bound on the figure, computed from the stated
resources with no model run) with ``bound_terms`` (each term's arithmetic) and
``bound_detail``, and ``model_ceiling`` / ``model_ceiling_detail`` (the model's own ceiling,
reported, never judged). A ``bound`` returned without ``bound_terms`` is read as a model
ceiling. It computes from the model; nothing here ever adjusts a model to a claim.

A claim's ``bound`` names a function of its own (``fn(quick=..., setup=..., **args)``, in a
``bounds.py`` beside the paper's model, e.g. :mod:`nmp.papers.recshard.bounds`) that
returns ``bound``, ``bound_terms`` and ``bound_detail`` from the stated resources alone: it
never calls the model, so the bound is the same whatever the model answers (a test stubs the
model out). It replaces any ``bound`` the model returns, which then stays the model's ceiling.

Verdicts (docs/validation-rules.md), in this order: a value *agrees* within ``tolerance`` of
the published number (or inside a published range), else is *within band* inside ``band``;
only then, where the published figure is above the first-principles ``bound``, *exceeds
bound*; else *disagrees*. An ordering *agrees* when it holds by at least ``margin``, is
*within band* when it holds by less, *exceeds bound* when it does not hold and its bound is
below 1, else *disagrees*. A claim marked ``input`` is reported as *input* whatever its
value.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmp.config import load_toml
from nmp.errors import SpecError
from nmp.plugins import load_claim_model
from nmp.units import is_finite_number, is_number
from nmp.validate.setup import PaperSetup, check_table, parse_setup

# the papers' folders, found as files: validate sits below nmp.papers and never imports it
PAPERS_DIR = Path(__file__).resolve().parents[1] / "papers"
CLAIMS_FILE = "claims.toml"
KINDS = ("ordering", "value")
VERDICTS = ("agrees", "within band", "disagrees", "exceeds bound", "input", "error")
DEFAULT_TOLERANCE = 0.10
# An ordering agrees only when it holds by this much (relative): a 0.1 % lead is noise, not a
# finding (chosen; a claim may set its own ``margin``).
DEFAULT_MARGIN = 0.05

_PAPER_KEYS = {"id", "title", "citation"}
_CLAIM_KEYS = {
    "id",
    "figure",
    "source",
    "claim",
    "kind",
    "published",
    "unit",
    "tolerance",
    "band",
    "margin",
    "input",
    "sensitivity",
    "model",
    "bound",
    "args",
    "quick",
    "explanation",
}
_REQUIRED = ("id", "source", "claim", "kind", "published", "model")


@dataclass(frozen=True)
class Evaluation:
    """What a claim-model function answered under one setup."""

    value: Any
    detail: str = ""
    margin: float | None = None  # an ordering: by how much it holds (relative)
    bound: float | None = None  # a speed claim: its first-principles upper bound on the figure
    bound_detail: str = ""  # the bound's arithmetic
    bound_terms: dict[str, Any] | None = None  # each term of the bound, with its arithmetic
    model_ceiling: float | None = None  # the model's own ceiling on the figure (not a bound)
    model_ceiling_detail: str = ""


@dataclass(frozen=True)
class Claim:
    """One published claim, where it was published, and the model function that answers it."""

    id: str
    paper: str
    paper_title: str
    source: str
    claim: str
    kind: str
    published: Any
    model: str
    figure: str = ""
    unit: str = ""
    tolerance: float = DEFAULT_TOLERANCE
    band: tuple[float, float] | None = None
    margin: float = DEFAULT_MARGIN
    input: str = ""  # why the claimed value is an input of the model (verdict "input")
    sensitivity: str = ""  # the study sweeping the chosen values the figure rests on
    args: dict[str, Any] = field(default_factory=dict)
    bound: str = ""  # the function of the first-principles bound ("module:function"), if any
    quick: bool = False
    explanation: str = ""
    file: str = ""
    setup: PaperSetup | None = None  # the paper's setup (its file's [setup])

    def evaluate(self, quick: bool, setup: dict[str, Any] | None = None) -> Evaluation:
        """The model's answer under ``setup`` (None: the kit's defaults)."""
        fn = load_claim_model(self.model, file=self.file, key=f"{self.id}.model")
        kwargs = dict(self.args)
        if "setup" in kwargs or not takes_setup(fn):
            # a model that predates paper setups (or names an argument 'setup' itself): it
            # runs the kit's defaults only, so its file may not state a setup
            if setup is not None:
                raise SpecError(
                    f"{self.model} takes no paper setup ('setup' keyword), but the paper "
                    "states one",
                    file=self.file,
                    key=f"{self.id}.model",
                )
        else:
            kwargs["setup"] = setup
        out = fn(quick=quick, **kwargs)
        if self.bound:
            out = self._with_bound(out, quick, setup)
        if not isinstance(out, dict):
            return Evaluation(_plain(out))
        if "value" not in out:
            raise SpecError(f"{self.model} returned a dict without 'value'", file=self.file)
        margin, bound, terms = out.get("margin"), out.get("bound"), out.get("bound_terms")
        ceiling, ceiling_detail = out.get("model_ceiling"), out.get("model_ceiling_detail", "")
        if bound is not None and terms is None:
            # a "bound" without its terms rests on a model run: the model's own ceiling
            ceiling, ceiling_detail = bound, out.get("bound_detail", "")
            bound = None
        return Evaluation(
            _plain(out["value"]),
            str(out.get("detail", "")),
            None if margin is None else float(margin),
            None if bound is None else float(bound),
            str(out.get("bound_detail", "")) if bound is not None else "",
            dict(terms) if bound is not None and terms is not None else None,
            None if ceiling is None else float(ceiling),
            str(ceiling_detail),
        )

    def _with_bound(self, out: Any, quick: bool, setup: dict[str, Any] | None) -> dict[str, Any]:
        """The model's answer with the bound of the claim's ``bound`` function (no model run);
        a bound the model gave becomes its ceiling (unless it names one)."""
        fn = load_claim_model(self.bound, file=self.file, key=f"{self.id}.bound")
        got = fn(quick=quick, setup=setup, **self.args)
        if not isinstance(got, dict) or "bound" not in got or "bound_terms" not in got:
            raise SpecError(
                f"{self.bound} must return a dict with 'bound' and 'bound_terms'",
                file=self.file,
                key=f"{self.id}.bound",
            )
        out = dict(out) if isinstance(out, dict) else {"value": out}
        if "bound" in out and "model_ceiling" not in out:
            out["model_ceiling"] = out["bound"]
            out["model_ceiling_detail"] = out.get("bound_detail", "")
        out["bound"] = float(got["bound"])
        out["bound_terms"] = got["bound_terms"]
        out["bound_detail"] = str(got.get("bound_detail", ""))
        return out

    def verdict(self, ev: Evaluation | Any) -> str:
        """The verdict of the model's answer (an :class:`Evaluation` or a bare value)."""
        if not isinstance(ev, Evaluation):
            ev = Evaluation(ev)
        if self.input:
            check_value(self.kind, ev.value)
            return "input"
        return verdict(
            self.kind,
            self.published,
            ev.value,
            self.tolerance,
            self.band,
            margin=ev.margin,
            min_margin=self.margin,
            bound=ev.bound,
        )


def takes_setup(fn: Any) -> bool:
    """Whether a claim-model function accepts the ``setup`` keyword."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "setup" or p.kind is p.VAR_KEYWORD for p in params)


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value  # numpy scalar


def check_value(kind: str, value: Any) -> None:
    """A SpecError when ``value`` is not what a claim of ``kind`` needs from its model."""
    if kind == "ordering":
        if not isinstance(value, bool):
            raise SpecError(f"an ordering claim needs a bool from its model, got {value!r}")
    elif not is_finite_number(value):
        raise SpecError(f"a value claim needs a finite number from its model, got {value!r}")


def published_low(published: Any) -> float:
    """The smallest figure a value claim publishes (the low end of a range)."""
    return float(published[0] if isinstance(published, list | tuple) else published)


def exceeds_bound(kind: str, published: Any, bound: float | None) -> bool | None:
    """Whether the published figure is above the first-principles bound (None: no bound). An
    ordering "faster" needs a ratio above 1."""
    if bound is None:
        return None
    need = 1.0 if kind == "ordering" else published_low(published)
    return bool(need > bound)


def verdict(
    kind: str,
    published: Any,
    value: Any,
    tolerance: float = DEFAULT_TOLERANCE,
    band: tuple[float, float] | None = None,
    *,
    margin: float | None = None,
    min_margin: float = DEFAULT_MARGIN,
    bound: float | None = None,
) -> str:
    """An ordering agrees when the model says it holds by at least ``min_margin`` (a model that
    reports no ``margin`` is judged on its bool alone) and is "within band" when it holds by
    less; a value agrees within ``tolerance`` (relative) of the published number, or inside a
    published range ``[lo, hi]``; otherwise it is "within band" inside ``band``. Band and
    agreement come first: only a claim that neither agrees nor lies in its band, and whose
    published figure is above the first-principles ``bound``, "exceeds bound" (the figure
    needs more than the stated resources allow); the rest "disagrees"."""
    check_value(kind, value)
    if kind == "ordering":
        if value:
            return "agrees" if margin is None or margin >= min_margin else "within band"
    elif isinstance(published, list | tuple):
        lo, hi = published
        if lo <= value <= hi:
            return "agrees"
    elif published == 0:
        if abs(value) <= tolerance:
            return "agrees"
    elif abs(value / published - 1.0) <= tolerance:
        return "agrees"
    if kind == "value" and band is not None and band[0] <= value <= band[1]:
        return "within band"
    if exceeds_bound(kind, published, bound):
        return "exceeds bound"
    return "disagrees"


def _check_claim(raw: dict[str, Any], i: int, file: str) -> None:
    key = f"claims[{i}]"
    check_table(raw, _CLAIM_KEYS, file, key)
    for name in _REQUIRED:
        if name not in raw:
            raise SpecError("missing", file=file, key=f"{key}.{name}")
    if raw["kind"] not in KINDS:
        raise SpecError(f"must be one of {', '.join(KINDS)}", file=file, key=f"{key}.kind")
    pub = raw["published"]
    if raw["kind"] == "value":
        ok = isinstance(pub, int | float) and not isinstance(pub, bool)
        ok = ok or (
            isinstance(pub, list)
            and len(pub) == 2
            and all(isinstance(v, int | float) for v in pub)
            and pub[0] <= pub[1]
        )
        if not ok:
            raise SpecError(
                "a value claim needs a number or [lo, hi]", file=file, key=f"{key}.published"
            )
    elif not isinstance(pub, str):
        raise SpecError(
            "an ordering claim states its order as text", file=file, key=f"{key}.published"
        )
    band = raw.get("band")
    if band is not None and not (isinstance(band, list) and len(band) == 2 and band[0] <= band[1]):
        raise SpecError("must be [lo, hi] with lo <= hi", file=file, key=f"{key}.band")
    for name, default in (("tolerance", DEFAULT_TOLERANCE), ("margin", DEFAULT_MARGIN)):
        value = raw.get(name, default)
        if not is_number(value) or value < 0:
            raise SpecError("must be a number >= 0", file=file, key=f"{key}.{name}")
    for name in ("input", "sensitivity", "explanation", "bound"):
        if not isinstance(raw.get(name, ""), str):
            raise SpecError("must be text", file=file, key=f"{key}.{name}")
    if not isinstance(raw.get("args", {}), dict):
        raise SpecError("must be a table", file=file, key=f"{key}.args")


def load_claim_file(path: Path) -> list[Claim]:
    """The claims of one paper's file, checked (the model functions are resolved when run)."""
    file = str(path)
    data = load_toml(path)
    paper = data.get("paper")
    if not isinstance(paper, dict) or "id" not in paper:
        raise SpecError("needs a [paper] table with an id", file=file, key="paper")
    unknown = sorted(set(paper) - _PAPER_KEYS)
    if unknown:
        raise SpecError(f"unknown key(s) {', '.join(unknown)}", file=file, key="paper")
    folder = path.parent.name
    if paper["id"] != folder:
        raise SpecError(f"must equal its folder's name '{folder}'", file=file, key="paper.id")
    extra = sorted(set(data) - {"paper", "setup", "claims"})
    if extra:
        raise SpecError(f"unknown key(s) {', '.join(extra)}", file=file)
    setup = parse_setup(data["setup"], file) if "setup" in data else None
    claims = []
    for i, raw in enumerate(data.get("claims", [])):
        _check_claim(raw, i, file)
        band = raw.get("band")
        claims.append(
            Claim(
                id=raw["id"],
                paper=paper["id"],
                paper_title=str(paper.get("title", paper["id"])),
                source=raw["source"],
                claim=raw["claim"],
                kind=raw["kind"],
                published=raw["published"],
                model=raw["model"],
                figure=raw.get("figure", ""),
                unit=raw.get("unit", ""),
                tolerance=float(raw.get("tolerance", DEFAULT_TOLERANCE)),
                band=tuple(band) if band is not None else None,
                margin=float(raw.get("margin", DEFAULT_MARGIN)),
                input=raw.get("input", "").strip(),
                sensitivity=raw.get("sensitivity", "").strip(),
                args=dict(raw.get("args", {})),
                bound=raw.get("bound", "").strip(),
                quick=bool(raw.get("quick", False)),
                explanation=raw.get("explanation", ""),
                file=file,
                setup=setup,
            )
        )
    return claims


def paper_files(folder: Path = PAPERS_DIR) -> list[Path]:
    """The claims file of every paper folder in ``folder`` (``<paper>/claims.toml``), by name."""
    return sorted(Path(folder).glob(f"*/{CLAIMS_FILE}"))


def load_claims(folder: Path = PAPERS_DIR) -> list[Claim]:
    """Every claim of every paper folder in ``folder``; ids must be unique."""
    claims: list[Claim] = []
    seen: dict[str, str] = {}
    for path in paper_files(folder):
        for claim in load_claim_file(path):
            if claim.id in seen:
                raise SpecError(
                    f"duplicate claim id (also in {seen[claim.id]})", file=str(path), key=claim.id
                )
            seen[claim.id] = str(path)
            claims.append(claim)
    return claims
