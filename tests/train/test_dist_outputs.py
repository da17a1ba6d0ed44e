"""A reused --run-dir: an earlier run's results are removed before the run, and a result that
is not JSON is named (it was merged into the run's results, or an internal JSONDecodeError)."""

from __future__ import annotations

import pytest

from nmp.errors import NmpError
from nmp.train.dist.launch import _clear_outputs, _read_result


def test_an_earlier_runs_outputs_go_and_nothing_else(tmp_path) -> None:
    (tmp_path / "result").mkdir()
    (tmp_path / "final").mkdir()
    (tmp_path / "result" / "server-9.json").write_text("{}")
    (tmp_path / "final" / "server-9.npz").write_bytes(b"x")
    (tmp_path / "result" / "notes.txt").write_text("the user's")
    (tmp_path / "spec.json").write_text("{}")
    _clear_outputs(tmp_path)
    assert sorted(p.name for p in (tmp_path / "result").iterdir()) == ["notes.txt"]
    assert not list((tmp_path / "final").iterdir())
    assert (tmp_path / "spec.json").exists()


@pytest.mark.parametrize("text", ["garbage{", "[1, 2]", ""])
def test_a_result_that_is_no_object_is_named(tmp_path, text) -> None:
    path = tmp_path / "server-0.json"
    path.write_text(text)
    with pytest.raises(NmpError, match="not a result this run wrote") as err:
        _read_result(path)
    assert err.value.file == str(path)
    path.write_text('{"steps": 5}')
    assert _read_result(path) == {"steps": 5}
