"""Published claims as data, and the verdict of a model value against one.

One TOML file per paper in ``nmp/validate/claims/``::

    [paper]
    id = "recshard"
    title = "RecShard (Sethi et al., ASPLOS'22)"
    citation = "..."

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
    model = "nmp.shard.claims:step_speedup"
    args = { baseline = "size" }
    quick = true                        # part of `nmp validate --quick`
    explanation = "the named assumption behind a difference"

The ``model`` function is called as ``fn(quick=..., **args)`` and returns the model's value (a
bool for an ordering, a number for a value) or ``{"value": ..., "detail": "..."}``. It computes
the value from the model; nothing here ever adjusts a model to a claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmp.config import load_toml
from nmp.errors import SpecError
from nmp.plugins import load_claim_model

CLAIMS_DIR = Path(__file__).parent / "claims"
KINDS = ("ordering", "value")
VERDICTS = ("agrees", "within band", "disagrees", "error")
DEFAULT_TOLERANCE = 0.10

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
    "model",
    "args",
    "quick",
    "explanation",
}
_REQUIRED = ("id", "source", "claim", "kind", "published", "model")


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
    args: dict[str, Any] = field(default_factory=dict)
    quick: bool = False
    explanation: str = ""
    file: str = ""

    def evaluate(self, quick: bool) -> tuple[Any, str]:
        """The model's value for this claim and a detail line (the setup it ran)."""
        fn = load_claim_model(self.model, file=self.file, key=f"{self.id}.model")
        out = fn(quick=quick, **self.args)
        detail = ""
        if isinstance(out, dict):
            if "value" not in out:
                raise SpecError(f"{self.model} returned a dict without 'value'", file=self.file)
            detail = str(out.get("detail", ""))
            out = out["value"]
        if hasattr(out, "item"):  # numpy scalar
            out = out.item()
        return out, detail

    def verdict(self, value: Any) -> str:
        """agrees / within band / disagrees for the model's ``value``."""
        return verdict(self.kind, self.published, value, self.tolerance, self.band)


def verdict(
    kind: str,
    published: Any,
    value: Any,
    tolerance: float = DEFAULT_TOLERANCE,
    band: tuple[float, float] | None = None,
) -> str:
    """An ordering agrees when the model says it holds; a value agrees within ``tolerance``
    (relative) of the published number, or inside a published range ``[lo, hi]``; otherwise it
    is "within band" inside ``band``, else "disagrees"."""
    if kind == "ordering":
        if not isinstance(value, bool):
            raise SpecError(f"an ordering claim needs a bool from its model, got {value!r}")
        return "agrees" if value else "disagrees"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SpecError(f"a value claim needs a finite number from its model, got {value!r}")
    if isinstance(published, list | tuple):
        lo, hi = published
        if lo <= value <= hi:
            return "agrees"
    elif published == 0:
        if abs(value) <= tolerance:
            return "agrees"
    elif abs(value / published - 1.0) <= tolerance:
        return "agrees"
    if band is not None and band[0] <= value <= band[1]:
        return "within band"
    return "disagrees"


def _check_claim(raw: dict[str, Any], i: int, file: str) -> None:
    key = f"claims[{i}]"
    if not isinstance(raw, dict):
        raise SpecError("must be a table", file=file, key=key)
    unknown = sorted(set(raw) - _CLAIM_KEYS)
    if unknown:
        raise SpecError(f"unknown key(s) {', '.join(unknown)}", file=file, key=key)
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
    tol = raw.get("tolerance", DEFAULT_TOLERANCE)
    if not isinstance(tol, int | float) or tol < 0:
        raise SpecError("must be a number >= 0", file=file, key=f"{key}.tolerance")
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
    if paper["id"] != path.stem:
        raise SpecError(f"must equal the file name '{path.stem}'", file=file, key="paper.id")
    extra = sorted(set(data) - {"paper", "claims"})
    if extra:
        raise SpecError(f"unknown key(s) {', '.join(extra)}", file=file)
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
                args=dict(raw.get("args", {})),
                quick=bool(raw.get("quick", False)),
                explanation=raw.get("explanation", ""),
                file=file,
            )
        )
    return claims


def load_claims(folder: Path = CLAIMS_DIR) -> list[Claim]:
    """Every claim of every paper file in ``folder``; ids must be unique."""
    claims: list[Claim] = []
    seen: dict[str, str] = {}
    for path in sorted(Path(folder).glob("*.toml")):
        for claim in load_claim_file(path):
            if claim.id in seen:
                raise SpecError(
                    f"duplicate claim id (also in {seen[claim.id]})", file=str(path), key=claim.id
                )
            seen[claim.id] = str(path)
            claims.append(claim)
    return claims
