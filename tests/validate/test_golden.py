"""Every model value of ``nmp validate --json`` against a recorded fixture.

One fixture per paper, in its folder (``nmp/papers/<paper>/golden.json``: adding a paper adds
its fixture beside its claims), and one for the built-in simulator / functional checks
(``golden/builtin.json``), each with the quick set (``nmp validate --quick``) and the full set
(``nmp validate``, where quick claims run at full size): both columns, both verdicts, the
bounds, the margins and the attribution of every check. A change to a headline figure is then
a visible diff, rewritten only in a commit that changes the model on purpose and says why in
its body:

    .venv/bin/python -m tests.validate.test_golden --write [paper ...]

CI time: the quick set shares its run with ``test_quick_validation_is_complete``; the full
set (every claim at full size, about 8 minutes of one core) is one test per claim, marked
slow, which CI runs too (two workers share them: :func:`full_set_cases`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.arch.test_golden import diffs

DATA = Path(__file__).parent / "golden"
PINNED = (
    "model_paper_setup",
    "verdict_paper_setup",
    "model_kit_defaults",
    "verdict_kit_defaults",
    "bound",
    "bound_kit_defaults",
    "exceeds_bound",
    "margin",
    "model_ceiling",
    "model_ceiling_kit_defaults",
)
BUILTIN = "builtin"
# Checks whose value is measured on the machine that runs them, not computed from the model:
# only their verdicts are pinned.
MEASURED = {
    "sc24.training-speedup-cpu-codec": "the CPU codec's throughput is timed (wall clock)",
}


def group_of(check_id: str) -> str:
    """The fixture a check belongs to: its paper, or the built-in checks."""
    head = check_id.split(".")[0]
    return BUILTIN if head in ("dram", "functional") else head


def groups() -> list[str]:
    from nmp.validate.claims import load_claims

    return [BUILTIN, *sorted({c.paper for c in load_claims()})]


def pinned(row: dict) -> dict:
    """The values of one ``--json`` row the fixture holds."""
    out = {k: row[k] for k in PINNED}
    out["moves"] = [
        [m["key"], m.get("alternative"), m["model_without"]] for m in row["setup_moves"]
    ]
    if row["id"] in MEASURED:
        out = {k: v for k, v in out.items() if k.startswith("verdict")}
    return out


def run_rows(group: str, *, quick: bool) -> list[dict]:
    from nmp.validate.runner import run_validation

    only = ("dram", "functional") if group == BUILTIN else (f"{group}.*",)
    rows = [r.to_json() for r in run_validation(quick=quick, only=only)]
    return json.loads(json.dumps(rows, default=float))


def by_group(rows: list[dict]) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for row in rows:
        out.setdefault(group_of(row["id"]), {})[row["id"]] = pinned(row)
    return out


def fixture_path(group: str) -> Path:
    """Where a group's fixture lives: the built-in checks' here, a paper's in its folder."""
    from nmp.validate.claims import PAPERS_DIR

    return DATA / f"{group}.json" if group == BUILTIN else PAPERS_DIR / group / "golden.json"


def fixture(group: str) -> dict:
    path = fixture_path(group)
    if not path.is_file():
        pytest.fail(
            f"no fixture {path}: write it with python -m tests.validate.test_golden --write"
        )
    return json.loads(path.read_text())


def check(group: str, mode: str, got: dict[str, dict]) -> None:
    want = fixture(group)[mode]
    found = diffs(want, got)
    assert not found, f"{group} ({mode}): " + "; ".join(found[:8])


def check_quick(rows: list[dict]) -> None:
    """The quick set's rows (one ``nmp validate --quick --json`` run) against the fixtures."""
    got = by_group(rows)
    for group in groups():
        check(group, "quick", got.get(group, {}))


def full_set_cases() -> list[str]:
    """The full set's tests: the built-in checks as one, every claim alone. A paper's claims
    in one test ran 230 s on a loaded 2-core runner (ReCross: three sweeps of about 50 s
    each), near the 300 s test timeout and the last test to end; one test a claim keeps each
    far from it, and the two workers share them out. (Kept on one worker by paper, with
    ``--dist loadgroup``, the claims took no less CPU: the long ones share no model runs.)"""
    from nmp.validate.claims import load_claims

    return [BUILTIN, *(c.id for c in load_claims())]


def run_claim_row(claim_id: str) -> dict:
    """One claim's ``--json`` row at full size (its id alone: ``--only`` would also run the
    claims it is a prefix of)."""
    from nmp.validate.runner import plan_validation

    (run,) = [run for i, run in plan_validation(only=(claim_id,)) if i == claim_id]
    (row,) = [r.to_json() for r in run()]
    return json.loads(json.dumps(row, default=float))


@pytest.mark.slow
@pytest.mark.parametrize("case", full_set_cases())
def test_golden_full_set(case: str) -> None:
    if case == BUILTIN:
        check(BUILTIN, "full", by_group(run_rows(BUILTIN, quick=False)).get(BUILTIN, {}))
        return
    group = group_of(case)
    want = fixture(group)["full"]
    assert case in want, f"{case}: not in {fixture_path(group)}"
    found = diffs(want[case], pinned(run_claim_row(case)))
    assert not found, f"{case} (full): " + "; ".join(found[:8])


@pytest.mark.parametrize("group", [g for g in groups() if g != BUILTIN])
def test_golden_full_set_holds_every_claim_once(group: str) -> None:
    """A fixture's full set names exactly its paper's claims (a removed claim leaves no row)."""
    from nmp.validate.claims import load_claims

    ids = {c.id for c in load_claims() if c.paper == group}
    assert set(fixture(group)["full"]) == ids


def write(selected: list[str]) -> None:
    for group in selected or groups():
        doc = {
            mode: by_group(run_rows(group, quick=mode == "quick")).get(group, {})
            for mode in ("quick", "full")
        }
        path = fixture_path(group)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        tmp.replace(path)
        print(f"wrote {path}")
    write_docs_table()


def write_docs_table() -> None:
    """docs/validation.md's generated section: the counts per paper and the full table, from
    the fixtures' full set (nmp.validate.docs_table)."""
    from nmp.config import project_root
    from nmp.validate.docs_table import replace_generated

    path = project_root() / "docs" / "validation.md"
    path.write_text(replace_generated(path.read_text(), fixtures_full()))
    print(f"wrote {path}")


def fixtures_full() -> dict[str, dict]:
    """Every claim row of the fixtures' full set, by id (the built-in checks left out)."""
    return {k: v for g in groups() if g != BUILTIN for k, v in fixture(g)["full"].items()}


if __name__ == "__main__" and "--write" in sys.argv:
    write([a for a in sys.argv[1:] if a != "--write"])
elif __name__ == "__main__" and "--docs" in sys.argv:
    write_docs_table()


# Model functions of the NMP papers' speed / throughput claims: each returns a first-principles
# bound (nmp.arch.first_principles) with its terms; an energy saving or a GPU gain returns the
# model's own ceiling instead (it rests on a model run, so it is never called a bound).
BOUNDED = {
    "speedup",
    "latency_speedup",
    "max_speedup",
    "mean_speedup",
    "faster_than_each",
    "variant_speedup",
    "ablation_speedup",
    "ablation_each_adds_speed",
    "end_to_end_floor",
}
MODEL_CEILING_ONLY = {"energy_saving_pct"}


SPEED_PAPERS = ("recross", "trim", "recnmp", "micro24", "recshard", "sc24")


def _papers() -> list[str]:
    """Every paper under nmp/papers/, a paper added there included."""
    from nmp.validate.claims import load_claims

    return sorted({c.paper for c in load_claims()})


@pytest.mark.parametrize("paper", _papers())
def test_every_speed_claim_states_its_bound(paper: str) -> None:
    """Every speed claim (the NMP papers', and those naming a ``bound`` function: GPU gains,
    sharding, compression) has a first-principles bound under both setups and says whether
    the published figure exceeds it; the model's own ceilings (energy) are reported as
    ``model_ceiling``, never as a bound."""
    from nmp.validate.claims import load_claims

    full = fixture(paper)["full"]
    claims = [c for c in load_claims() if c.paper == paper]
    for c in claims:
        row, fn = full[c.id], c.model.split(":")[1]
        if c.id in MEASURED:  # measured on the machine: only its verdicts are pinned
            continue
        if fn in BOUNDED or c.bound:
            assert row["bound"] is not None and row["bound_kit_defaults"] is not None, c.id
            assert isinstance(row["exceeds_bound"], bool), c.id
        elif fn in MODEL_CEILING_ONLY:
            assert row["bound"] is None and row["model_ceiling"] is not None, c.id
    if paper in SPEED_PAPERS:  # the shipped papers with speed claims: each has a bounded one
        assert any(c.model.split(":")[1] in BOUNDED or c.bound for c in claims)
