"""A paper's evaluated setup, as data: the ``[setup]`` section of its claims file.

Every claims file may state the setup its figures come from (memory, ranks, timing values, host
cache, baseline configuration, workload, skew, profile policy)::

    [setup]
    summary = "one line: the paper's evaluated system and workload"
    [[setup.values]]
    key = "arch.host.llc_mib"     # a dotted key this paper's claim-model functions understand
    value = 0
    source = "TRiM (MICRO'21) §5: ..."   # a citation; or instead:  chosen = "why this value"
    swept = "papers/recross-skew"        # optional: where a chosen value with leverage is swept

Every value carries exactly one of ``source`` (what the paper or a reference states) and
``chosen`` (what the paper leaves open, with the reason for the value). Each claim-model
function takes ``setup``: ``None`` runs it under the kit's own defaults, a mapping (key ->
value, :meth:`PaperSetup.mapping`) under the paper's setup; a key the function does not
understand is an error there. Nothing here ever adjusts a value to a claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nmp.errors import SpecError

_SETUP_KEYS = {"summary", "values"}
_VALUE_KEYS = {"key", "value", "source", "chosen", "swept"}


@dataclass(frozen=True)
class SetupValue:
    """One value of a paper's setup and where it comes from."""

    key: str
    value: Any
    source: str = ""  # a citation of the value
    chosen: str = ""  # or: why this value, where the paper leaves it open
    swept: str = ""  # where a chosen value with leverage is swept (a study name)

    @property
    def origin(self) -> str:
        return f"source: {self.source}" if self.source else f"chosen: {self.chosen}"

    def to_json(self) -> dict[str, Any]:
        out = {"key": self.key, "value": self.value}
        out.update({k: v for k in ("source", "chosen", "swept") if (v := getattr(self, k))})
        return out


class SetupMapping(dict):
    """A paper setup's key -> value, as claim-model functions take it; ``sourced`` names the
    keys a source states (the others are chosen). A first-principles bound takes a chosen
    resource at its most favourable value and a sourced one as stated."""

    sourced: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PaperSetup:
    """The setup a paper's figures come from: a one-line summary and its sourced values."""

    summary: str
    values: tuple[SetupValue, ...]

    def mapping(
        self, without: str | None = None, replace: tuple[str, Any] | None = None
    ) -> SetupMapping:
        """key -> value, as claim-model functions take it (``without``: all but that key;
        ``replace``: (key, value) put in for that key's), with ``sourced`` set."""
        out = SetupMapping({v.key: v.value for v in self.values if v.key != without})
        if replace is not None:
            out[replace[0]] = replace[1]
        out.sourced = frozenset(v.key for v in self.values if v.source and v.key in out)
        if replace is not None:
            out.sourced = out.sourced - {replace[0]}
        return out

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.summary, "values": [v.to_json() for v in self.values]}


def _text(raw: dict[str, Any], name: str, file: str, key: str) -> str:
    value = raw.get(name, "")
    if not isinstance(value, str):
        raise SpecError("must be text", file=file, key=f"{key}.{name}")
    return value.strip()


def check_table(raw: Any, allowed: set[str] | frozenset[str], file: str, key: str) -> None:
    """``raw`` is a table with no key outside ``allowed``, else a SpecError naming ``key``."""
    if not isinstance(raw, dict):
        raise SpecError("must be a table", file=file, key=key)
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise SpecError(f"unknown key(s) {', '.join(unknown)}", file=file, key=key)


def parse_setup(raw: Any, file: str) -> PaperSetup:
    """A ``[setup]`` table, checked: a summary, and values with a key, a value and exactly one
    of source / chosen; keys unique."""
    check_table(raw, _SETUP_KEYS, file, "setup")
    summary = _text(raw, "summary", file, "setup")
    if not summary:
        raise SpecError("missing: one line naming the evaluated system", file=file, key="setup")
    items = raw.get("values", [])
    if not isinstance(items, list):
        raise SpecError("must be an array of tables", file=file, key="setup.values")
    values: list[SetupValue] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        where = f"setup.values[{i}]"
        check_table(item, _VALUE_KEYS, file, where)
        key = item.get("key")
        if not isinstance(key, str) or not key:
            raise SpecError("missing: a dotted key", file=file, key=f"{where}.key")
        if key in seen:
            raise SpecError(f"duplicate setup key '{key}'", file=file, key=where)
        seen.add(key)
        if "value" not in item:
            raise SpecError("missing", file=file, key=f"{where}.value")
        source = _text(item, "source", file, where)
        chosen = _text(item, "chosen", file, where)
        if bool(source) == bool(chosen):
            raise SpecError(
                f"'{key}' needs exactly one of source (a citation) or chosen (why this value)",
                file=file,
                key=where,
            )
        values.append(
            SetupValue(key, item["value"], source, chosen, _text(item, "swept", file, where))
        )
    return PaperSetup(summary, tuple(values))


__all__ = ["PaperSetup", "SetupMapping", "SetupValue", "parse_setup"]
