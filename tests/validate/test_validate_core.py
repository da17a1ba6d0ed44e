"""`nmp validate`'s core: claims files, verdicts, the runner and the CLI."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from nmp.cli import main
from nmp.errors import SpecError
from nmp.plugins import CLAIM_MODELS, claim_model, reference
from nmp.validate.claims import load_claim_file, load_claims, verdict
from nmp.validate.runner import run_validation

PAPER = '[paper]\nid = "toy"\ntitle = "Toy (2026)"\ncitation = "nowhere"\n'


def _paper(root: Path, name: str = "toy") -> Path:
    """The claims file of paper folder ``name`` under ``root`` (``<name>/claims.toml``)."""
    (root / name).mkdir(exist_ok=True)
    return root / name / "claims.toml"


def _claim(**kw) -> str:
    base = {
        "id": '"toy.a"',
        "source": '"Toy §1"',
        "claim": '"a is faster than b"',
        "kind": '"ordering"',
        "published": '"a < b"',
        "model": '"nmp._toy_models:ordering"',
        "quick": "true",
    }
    base.update(kw)
    return "[[claims]]\n" + "".join(f"{k} = {v}\n" for k, v in base.items())


@pytest.fixture
def toy_models(monkeypatch):
    """Registered model functions in a module under nmp (a data file may only name nmp's
    registered functions)."""
    mod = types.ModuleType("nmp._toy_models")
    calls = []

    def ordering(*, quick, holds=True):
        calls.append(quick)
        return holds

    def value(*, quick, x=2.0):
        return {"value": x, "detail": f"quick={quick}"}

    def broken(*, quick):
        raise RuntimeError("model exploded")

    def setup_value(*, quick, setup=None, base=2.0):
        """2.0 under the kit's defaults; the setup's values multiply it (llc halves it)."""
        setup = dict(setup or {})
        x = base * setup.pop("scale", 1.0) / (2.0 if setup.pop("llc", 0) else 1.0)
        if setup:
            raise SpecError(f"unknown setup key {next(iter(setup))}")
        return {"value": x, "detail": f"setup={setup}", "bound": 3.0, "bound_detail": "3 by hand",
                "bound_terms": {"hand": "3 = 1 + 2"}}  # fmt: skip

    def value_with_ceiling(*, quick):
        """A 'bound' without terms: the model's own ceiling, not judged."""
        return {"value": 0.5, "bound": 0.6, "bound_detail": "from a model run"}

    def setup_ordering(*, quick, setup=None):
        lead = 0.02 if setup else 0.2
        return {"value": True, "margin": lead}

    def own_bound(*, quick, setup=None, **args):
        """A claim's own bound function: 4 under the paper's setup, 5 under the kit's."""
        b = 4.0 if setup else 5.0
        return {"bound": b, "bound_terms": {"arithmetic": f"{b} by hand"}, "bound_detail": "hand"}

    mod.ordering, mod.value, mod.broken, mod.calls = ordering, value, broken, calls
    mod.setup_value, mod.setup_ordering = setup_value, setup_ordering
    mod.value_with_ceiling, mod.own_bound = value_with_ceiling, own_bound
    monkeypatch.setitem(sys.modules, "nmp._toy_models", mod)
    fns = (ordering, value, broken, setup_value, setup_ordering, value_with_ceiling, own_bound)
    for fn in fns:
        fn.__module__ = mod.__name__
        claim_model(fn)
    yield mod
    for fn in fns:
        CLAIM_MODELS.unregister(reference(fn))


def test_verdicts():
    assert verdict("ordering", "a < b", True) == "agrees"
    assert verdict("ordering", "a < b", False) == "disagrees"
    assert verdict("value", 2.0, 2.15) == "agrees"  # within the 10 % default tolerance
    assert verdict("value", 2.0, 2.5) == "disagrees"
    assert verdict("value", 2.0, 2.5, band=(1.5, 3.0)) == "within band"
    assert verdict("value", [10, 20], 15.0) == "agrees"  # a published range
    assert verdict("value", [10, 20], 25.0, band=(5, 30)) == "within band"
    assert verdict("value", 0.0, 0.05) == "agrees"
    with pytest.raises(SpecError, match="bool"):
        verdict("ordering", "a < b", 1.0)
    with pytest.raises(SpecError, match="finite number"):
        verdict("value", 2.0, float("nan"))


def test_verdict_rules_margin_bound_and_input():
    # an ordering agrees only with a margin (5 % by default), "within band" below it
    assert verdict("ordering", "a < b", True, margin=0.06) == "agrees"
    assert verdict("ordering", "a < b", True, margin=0.01) == "within band"
    assert verdict("ordering", "a < b", True, margin=0.01, min_margin=0.0) == "agrees"
    assert verdict("ordering", "a < b", True) == "agrees"  # a model that reports no margin
    # a published figure above the model's bound is its own finding
    assert verdict("value", 2.5, 0.9, band=(1.25, 5.0), bound=1.3) == "exceeds bound"
    assert verdict("value", 2.5, 1.3, band=(1.25, 5.0), bound=3.0) == "within band"
    assert verdict("value", [2.0, 2.5], 1.0, bound=1.9) == "exceeds bound"  # the range's low end
    assert verdict("value", 2.5, 2.4, bound=2.4) == "agrees"  # within tolerance comes first
    assert verdict("ordering", "a > b", False, bound=0.9) == "exceeds bound"
    assert verdict("ordering", "a > b", False, bound=1.1) == "disagrees"
    # band before bound: inside the band, a published figure above the bound stays in band
    assert verdict("value", 2.5, 1.3, band=(1.25, 5.0), bound=1.2) == "within band"


def test_a_bound_without_terms_is_the_models_ceiling(tmp_path, toy_models):
    text = PAPER + _claim(
        id='"toy.c"', kind='"value"', published="2.0", unit='"x"',
        model='"nmp._toy_models:value_with_ceiling"',
    )  # fmt: skip
    _paper(tmp_path, "toy").write_text(text)
    (row,) = run_validation(quick=True, only=("toy",), claims_dir=tmp_path)
    assert row.bound is None and row.exceeds_bound is None and row.verdict == "disagrees"
    assert row.model_ceiling == 0.6


SETUP = """[setup]
summary = "toy system"
[[setup.values]]
key = "scale"
value = 1.5
source = "Toy §2"
[[setup.values]]
key = "llc"
value = 1
chosen = "the toy's baseline is DRAM-bound"
"""


@pytest.mark.parametrize(
    ("setup", "match"),
    [
        (SETUP.replace('source = "Toy §2"', ""), "needs exactly one of source"),
        (SETUP.replace('source = "Toy §2"', 'source = "a"\nchosen = "b"'), "exactly one of"),
        (SETUP.replace('key = "llc"', 'key = "scale"'), "duplicate setup key"),
        (SETUP.replace("value = 1\n", ""), "setup.values\\[1\\].value"),
        (SETUP.replace('summary = "toy system"', 'colour = "red"'), "unknown key"),
        (SETUP.replace('source = "Toy §2"', 'source = "Toy"\nwhy = "x"'), "unknown key"),
    ],
)
def test_bad_setups_name_the_key(tmp_path, setup, match):
    path = _paper(tmp_path)
    path.write_text(PAPER + setup + _claim())
    with pytest.raises(SpecError, match=match):
        load_claim_file(path)


def test_both_columns_bound_and_attribution(tmp_path, toy_models):
    _paper(tmp_path, "toy").write_text(
        PAPER
        + SETUP
        + _claim(
            id='"toy.v"',
            kind='"value"',
            published="1.5",
            unit='"x"',
            band="[1.0, 2.5]",
            model='"nmp._toy_models:setup_value"',
        )
        + _claim(id='"toy.o"', model='"nmp._toy_models:setup_ordering"')
        + _claim(id='"toy.i"', model='"nmp._toy_models:setup_ordering"', input='"copied"')
    )
    by_id = {r.id: r for r in run_validation(quick=False, only=("toy",), claims_dir=tmp_path)}
    v = by_id["toy.v"]
    # paper setup: 2.0 x 1.5 / 2 = 1.5 (agrees); kit defaults: 2.0 (within band)
    assert (v.model_paper_setup, v.verdict_paper_setup) == (1.5, "agrees")
    assert (v.model_kit_defaults, v.verdict_kit_defaults) == (2.0, "within band")
    assert (v.model, v.verdict) == (v.model_paper_setup, v.verdict_paper_setup)
    assert (
        v.bound == 3.0
        and v.exceeds_bound is False
        and "within the first-principles bound" in v.bound_note
        and v.bound_terms == {"hand": "3 = 1 + 2"}
    )
    # each value back at the kit's default: llc gives 3.0 (moves 1.5), scale gives 1.0 (0.5)
    assert [m["key"] for m in v.setup_moves] == ["llc", "scale"]
    assert v.moved_most_by["model_without"] == 3.0
    o = by_id["toy.o"]
    assert (o.verdict_paper_setup, o.verdict_kit_defaults) == ("within band", "agrees")
    assert o.margin == 0.02
    assert by_id["toy.i"].verdict == "input" and by_id["toy.i"].model_kit_defaults is True
    doc = by_id["toy.v"].to_json()
    for key in ("published", "model_paper_setup", "model_kit_defaults", "verdict_paper_setup",
                "verdict_kit_defaults", "bound", "exceeds_bound", "model", "verdict"):  # fmt: skip
        assert key in doc


def test_quick_runs_leave_attribution_out_and_a_bound_function_replaces_the_models(
    tmp_path, toy_models
):
    """``--quick`` attributes nothing (the full run does); a claim's ``bound`` function gives
    the bound under each setup, and the model's own bound becomes its ceiling."""
    _paper(tmp_path, "toy").write_text(
        PAPER
        + SETUP
        + _claim(
            id='"toy.v"',
            kind='"value"',
            published="4.5",
            unit='"x"',
            model='"nmp._toy_models:setup_value"',
            bound='"nmp._toy_models:own_bound"',
        )
    )
    (v,) = run_validation(quick=True, only=("toy",), claims_dir=tmp_path)
    assert v.setup_moves == [] and v.moved_most_by is None
    assert (v.bound, v.bound_kit_defaults) == (4.0, 5.0)
    assert v.bound_terms == {"arithmetic": "4.0 by hand"}
    assert v.model_ceiling == 3.0  # the model's "bound" without its own bound function
    # 1.5 is outside 4.5's tolerance and no band: the published 4.5 is above the bound 4
    assert v.verdict_paper_setup == "exceeds bound"


def test_a_file_without_setup_has_one_value_in_both_columns(tmp_path, toy_models):
    _paper(tmp_path, "toy").write_text(PAPER + _claim())
    (row,) = run_validation(quick=True, only=("toy",), claims_dir=tmp_path)
    assert row.setup_stated is False
    assert row.model_paper_setup is row.model_kit_defaults is True
    assert row.verdict_paper_setup == row.verdict_kit_defaults == "agrees"
    # a model without a setup argument cannot honour a paper's setup: an error, not a silent
    # kit-defaults value in the paper's column
    _paper(tmp_path, "toy").write_text(PAPER + SETUP + _claim())
    (row,) = run_validation(quick=True, only=("toy",), claims_dir=tmp_path)
    assert row.verdict_paper_setup == "error" and "takes no paper setup" in row.model_paper_setup
    assert row.verdict_kit_defaults == "agrees"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (_claim(kind='"guess"'), "key 'claims\\[0\\].kind'"),
        (_claim(kind='"value"'), "number or \\[lo, hi\\]"),
        (_claim(colour='"red"'), "unknown key\\(s\\) colour"),
        (_claim().replace('model = "nmp._toy_models:ordering"\n', ""), "claims\\[0\\].model"),
        (_claim(band="[3, 1]"), "claims\\[0\\].band"),
    ],
)
def test_bad_claim_files_name_the_key(tmp_path, text, match):
    path = _paper(tmp_path)
    path.write_text(PAPER + text)
    with pytest.raises(SpecError, match=match) as err:
        load_claim_file(path)
    assert "toy/claims.toml" in str(err.value)


def test_paper_id_is_the_folder_name_and_ids_are_unique(tmp_path):
    _paper(tmp_path, "other").write_text(PAPER + _claim())
    with pytest.raises(SpecError, match="paper.id"):
        load_claims(tmp_path)
    _paper(tmp_path, "other").unlink()
    _paper(tmp_path, "toy").write_text(PAPER + _claim() + _claim())
    with pytest.raises(SpecError, match="duplicate claim id"):
        load_claims(tmp_path)


def test_runner_evaluates_claims_and_keeps_going_after_an_error(tmp_path, toy_models):
    _paper(tmp_path, "toy").write_text(
        PAPER
        + _claim()
        + _claim(id='"toy.b"', args="{ holds = false }", explanation='"assumption X"')
        + _claim(
            id='"toy.c"',
            kind='"value"',
            published="2.0",
            unit='"x"',
            model='"nmp._toy_models:value"',
        )
        + _claim(id='"toy.d"', model='"nmp._toy_models:broken"')
        + _claim(id='"toy.e"', model='"nmp._toy_models:ordering"', quick="false")
    )
    rows = run_validation(quick=True, only=("toy",), claims_dir=tmp_path)
    by_id = {r.id: r for r in rows}
    assert set(by_id) == {"toy.a", "toy.b", "toy.c", "toy.d"}  # toy.e is not quick
    assert by_id["toy.a"].verdict == "agrees" and by_id["toy.a"].explanation == ""
    assert by_id["toy.b"].verdict == "disagrees" and by_id["toy.b"].explanation == "assumption X"
    assert by_id["toy.c"].model == 2.0 and by_id["toy.c"].detail == "quick=True"
    assert by_id["toy.d"].verdict == "error" and "model exploded" in by_id["toy.d"].model
    assert toy_models.calls == [True, True]
    full = run_validation(quick=False, only=("toy.e",), claims_dir=tmp_path)
    assert [r.id for r in full] == ["toy.e"] and toy_models.calls[-1] is False


def test_unknown_model_function_is_an_error_row(tmp_path, toy_models):
    _paper(tmp_path, "toy").write_text(PAPER + _claim(model='"nmp._toy_models:nothing"'))
    (row,) = run_validation(quick=True, only=("toy",), claims_dir=tmp_path)
    assert row.verdict == "error" and "unknown claim model 'nmp._toy_models:nothing'" in row.model


def test_a_claim_may_only_name_nmp_functions(tmp_path):
    _paper(tmp_path, "toy").write_text(PAPER + _claim(model='"os:system"'))
    (row,) = run_validation(quick=True, only=("toy",), claims_dir=tmp_path)
    assert row.verdict == "error" and "only functions of the nmp package" in row.model


def test_packaged_claims_load_with_unique_ids_and_resolvable_models():
    from nmp.plugins import load_claim_model

    claims = load_claims()
    for c in claims:
        assert callable(load_claim_model(c.model, file=c.file, key=c.id))
        assert c.source and c.claim


def test_cli_dram_rows_json(tmp_path, capsys):
    rc = main(["validate", "--only", "dram", "--json", "--out", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    rows = out["checks"]
    assert {r["id"] for r in rows} == {
        "dram.ramulator2.ddr4",
        "dram.ramulator2.ddr5",
        "dram.ramulator2.hbm2",
        "dram.dramsim3-energy.ddr4",
        "dram.dramsim3-energy.hbm2",
        "dram.drampower-energy.ddr4",
        "dram.drampower-energy.ddr5",
    }
    for r in rows:
        assert {"id", "source", "published", "model", "verdict"} <= set(r)
        assert r["verdict"] == "agrees", r
    (run,) = tmp_path.glob("validate-*")
    assert "## Simulators" in (run / "report.md").read_text()
    assert json.loads((run / "checks.json").read_text())["checks"] == rows


def test_only_selects_rows_inside_a_builtin_check(tmp_path, capsys):
    rc = main(["validate", "--only", "dram.ramulator2.ddr5", "--json", "--out", str(tmp_path)])
    assert rc == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)["checks"]] == [
        "dram.ramulator2.ddr5"
    ]
    rc = main(["validate", "--only", "functional.parity.*", "--json", "--out", str(tmp_path)])
    ids = [r["id"] for r in json.loads(capsys.readouterr().out)["checks"]]
    assert rc == 0 and ids == ["functional.parity.recross", "functional.parity.trim-g"]


def test_cli_no_match_is_an_error(tmp_path, capsys):
    assert main(["validate", "--only", "no-such-check", "--out", str(tmp_path)]) == 1
    assert "no check matches" in capsys.readouterr().err


def test_quick_validation_is_complete(tmp_path, capsys):
    """The CI run of `nmp validate --quick`: every built-in check agrees, every quick claim
    runs, and every claim the model does not agree with says why."""
    rc = main(["validate", "--quick", "--json", "--out", str(tmp_path)])
    rows = json.loads(capsys.readouterr().out)["checks"]
    errors = [(r["id"], r["model"]) for r in rows if r["verdict"] == "error"]
    assert not errors
    assert rc == 0
    for r in rows:
        if r["group"] == "real-gpu":  # measured beside modeled; a miss is reported, explained
            assert r["verdict"] in ("agrees", "disagrees", "reported"), r
            assert r["verdict"] != "disagrees" or r["explanation"], r
        elif r["group"] != "claim":
            assert r["verdict"] == "agrees", r
        elif r["verdict"] != "agrees":
            assert r["explanation"], f"{r['id']} disagrees without an explanation"
    assert {r["group"] for r in rows} >= {"simulator", "functional"}
    # The H200 run recorded in nmp/gpu/data/ is judged, row by row: never "not run" again.
    real = {r["id"].split(".")[1] for r in rows if r["group"] == "real-gpu"}
    assert {"real", "latency"} <= real
    from tests.validate.test_golden import check_quick

    check_quick(rows)  # every model value of the quick set, pinned (test_golden.py)


def test_every_swept_setup_value_names_a_sweep_that_checks(capsys):
    """A chosen setup value with leverage names the study that sweeps it (``swept``): the
    study exists under workloads/sweeps and passes ``nmp evaluate --check``."""
    swept = {
        v.swept for c in load_claims() if c.setup is not None for v in c.setup.values if v.swept
    }
    assert "papers/host-llc" in swept  # the host LLC moves every speedup over the host
    root = Path(__file__).resolve().parents[2] / "workloads" / "sweeps"
    for name in sorted(swept):
        assert (root / f"{name}.toml").is_file(), f"setup value swept by missing study {name}"
    assert main(["evaluate", "papers/host-llc", "--check"]) == 0
    assert "24 points" in capsys.readouterr().out


def test_parallel_groups_give_the_same_rows():
    """`--jobs`: the groups run in worker processes and come back in the plan's order, with the
    same values as one process."""
    only = ("dram.ramulator2.ddr5", "functional.parity.*", "recross.area-vs-trim-b")
    one = [r.to_json() for r in run_validation(quick=True, only=only)]
    two = [r.to_json() for r in run_validation(quick=True, only=only, jobs=2)]
    assert [r["id"] for r in one] == [
        "dram.ramulator2.ddr5",
        "functional.parity.recross",
        "functional.parity.trim-g",
        "recross.area-vs-trim-b",
    ]
    assert one == two


def test_a_check_in_parts_is_a_task_and_a_group_per_part(monkeypatch, tmp_path):
    """A kit check with parts (gpu.real: one per recorded measurement) plans one task and one
    group per part, so that `--jobs` runs the parts side by side; each part runs its own
    record alone, and the rows keep their ids and order. Without a record: one task, whose
    row says "not run"; an unreadable record, one error row."""
    from nmp.gpu import compare
    from nmp.validate.runner import PART_MARK, group_of, plan_validation

    stems = [path.stem for path in compare.record_paths()]
    assert len(stems) >= 2
    tasks = plan_validation(quick=True, only=("gpu.real",))
    assert [check_id for check_id, _ in tasks] == [f"gpu.real{PART_MARK}{s}" for s in stems]
    assert len({group_of(check_id) for check_id, _ in tasks}) == len(stems)
    assert group_of(f"gpu.real{PART_MARK}{stems[0]}") == f"gpu{PART_MARK}{stems[0]}"
    assert group_of("gpu.real.x.baseline") == group_of("gpu.latency") == "gpu"  # rows: as before
    monkeypatch.setattr(compare.compare_record, "__defaults__", (lambda rec, e: 100.0,))
    first = tasks[0][1]()
    variants = compare.load_records()[0][1]["variants"]
    assert [r.id for r in first] == [f"gpu.real.{stems[0]}.{v}" for v in variants]
    rows = run_validation(quick=True, only=("gpu.real",))
    want = [f"gpu.real.{s}.{v}" for s, rec in compare.load_records() for v in rec["variants"]]
    assert [r.id for r in rows] == want
    # an unreadable record is its own part's one error row; the other parts run
    bad = tmp_path / "measured-kernels-zz-broken.json"
    bad.write_text("{not json")
    paths = compare.record_paths()
    monkeypatch.setattr(compare, "record_paths", lambda data_dir=None: [*paths[:1], bad])
    rows = run_validation(quick=True, only=("gpu.real",))
    assert [r.verdict for r in rows if r.verdict == "error"] == ["error"]
    assert "measured-kernels-zz-broken.json" in next(r.model for r in rows if r.verdict == "error")
    assert sum(r.id.startswith(f"gpu.real.{stems[0]}.") for r in rows) == len(variants)
    monkeypatch.setattr(compare, "record_paths", lambda data_dir=None: [])
    ((check_id, run),) = plan_validation(quick=True, only=("gpu.real",))
    assert check_id == "gpu.real" and [r.verdict for r in run()] == ["not run"]


def test_summary_fits_a_screen_and_a_log_gets_a_line_per_stage(tmp_path, capsys):
    """Not on a terminal: a progress line per finished group on stderr; on stdout a summary of
    counts per paper and where the full table is (the table itself goes to report.md)."""
    rc = main(["validate", "--only", "dram", "functional.parity.*", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert rc == 0
    stages = [line for line in err.splitlines() if line.startswith("validate [")]
    assert len(stages) == 2 and "dram: 7 checks (7 agrees)" in err
    (run,) = tmp_path.glob("validate-*")
    assert str(run / "report.md") in out.replace("\n", "")
    assert "built-in" in out and len(out.splitlines()) < 40
    assert "## Counts per paper" in (run / "report.md").read_text()
    with pytest.raises(SystemExit) as refused:  # refused as the flag is parsed
        main(["validate", "--only", "dram", "--jobs", "-1", "--out", str(tmp_path)])
    assert refused.value.code == 1
