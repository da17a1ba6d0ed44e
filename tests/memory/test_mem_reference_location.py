"""Where the shared reference data is found: $NMP_SHARED, beside the checkout, or beside the
local checkout a scratch clone was made from."""

from __future__ import annotations

import nmp.reference as ref


def _checkout(path, origin_url=None):
    (path / ".git").mkdir(parents=True)
    cfg = "[core]\n\tbare = false\n"
    if origin_url is not None:
        cfg += f'[remote "origin"]\n\turl = {origin_url}\n\tfetch = +refs/heads/*\n'
    (path / ".git" / "config").write_text(cfg)
    return path


def test_env_then_beside_then_origin(tmp_path, monkeypatch):
    work = tmp_path / "work"
    (work / "shared").mkdir(parents=True)
    main = _checkout(work / "main")
    clone = _checkout(tmp_path / "scratch" / "clone", origin_url=f"{main}/.")
    monkeypatch.delenv("NMP_SHARED", raising=False)

    monkeypatch.setattr(ref, "project_root", lambda: main)
    assert ref.shared_dir() == work / "shared"

    monkeypatch.setattr(ref, "project_root", lambda: clone)
    assert ref.shared_dir() == work / "shared"
    assert ref.dram_reference_dir() == work / "shared" / "reference" / "dram"

    monkeypatch.setenv("NMP_SHARED", str(tmp_path / "elsewhere"))
    assert ref.shared_dir() == tmp_path / "elsewhere"


def test_remote_origin_or_none_names_the_place_beside(tmp_path, monkeypatch):
    monkeypatch.delenv("NMP_SHARED", raising=False)
    clone = _checkout(tmp_path / "a" / "clone", origin_url="https://example.org/nmp.git")
    monkeypatch.setattr(ref, "project_root", lambda: clone)
    assert ref.shared_dir() == tmp_path / "a" / "shared"
    bare = tmp_path / "b" / "plain"
    bare.mkdir(parents=True)
    monkeypatch.setattr(ref, "project_root", lambda: bare)
    assert ref.shared_dir() == tmp_path / "b" / "shared"


def test_the_repository_copy_comes_first(monkeypatch):
    """Issue 25: a clone from anywhere has the calibration cases (data/reference/dram)."""
    monkeypatch.delenv("NMP_SHARED", raising=False)
    found = ref.dram_reference_dir()
    assert found == ref.project_root() / "data" / "reference" / "dram"
    assert (found / "cases.json").is_file()
    assert len(list((found / "traces").glob("*.trace.gz"))) == 26
