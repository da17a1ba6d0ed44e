"""`nmp validate`'s core: claims files, verdicts, the runner and the CLI."""

from __future__ import annotations

import json
import sys
import types

import pytest

from nmp.cli import main
from nmp.errors import SpecError
from nmp.plugins import CLAIM_MODELS, claim_model, reference
from nmp.validate.claims import load_claim_file, load_claims, verdict
from nmp.validate.runner import run_validation

PAPER = '[paper]\nid = "toy"\ntitle = "Toy (2026)"\ncitation = "nowhere"\n'


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

    mod.ordering, mod.value, mod.broken, mod.calls = ordering, value, broken, calls
    monkeypatch.setitem(sys.modules, "nmp._toy_models", mod)
    for fn in (ordering, value, broken):
        fn.__module__ = mod.__name__
        claim_model(fn)
    yield mod
    for fn in (ordering, value, broken):
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
    path = tmp_path / "toy.toml"
    path.write_text(PAPER + text)
    with pytest.raises(SpecError, match=match) as err:
        load_claim_file(path)
    assert "toy.toml" in str(err.value)


def test_paper_id_is_the_file_name_and_ids_are_unique(tmp_path):
    (tmp_path / "other.toml").write_text(PAPER + _claim())
    with pytest.raises(SpecError, match="paper.id"):
        load_claims(tmp_path)
    (tmp_path / "other.toml").unlink()
    (tmp_path / "toy.toml").write_text(PAPER + _claim() + _claim())
    with pytest.raises(SpecError, match="duplicate claim id"):
        load_claims(tmp_path)


def test_runner_evaluates_claims_and_keeps_going_after_an_error(tmp_path, toy_models):
    (tmp_path / "toy.toml").write_text(
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
    (tmp_path / "toy.toml").write_text(PAPER + _claim(model='"nmp._toy_models:nothing"'))
    (row,) = run_validation(quick=True, only=("toy",), claims_dir=tmp_path)
    assert row.verdict == "error" and "unknown claim model 'nmp._toy_models:nothing'" in row.model


def test_a_claim_may_only_name_nmp_functions(tmp_path):
    (tmp_path / "toy.toml").write_text(PAPER + _claim(model='"os:system"'))
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
        if r["group"] != "claim":
            assert r["verdict"] == "agrees", r
        elif r["verdict"] != "agrees":
            assert r["explanation"], f"{r['id']} disagrees without an explanation"
    assert {r["group"] for r in rows} >= {"simulator", "functional"}
