"""Nothing is read from a folder another user could have written: NMP_HOME's presets and a
resumed run's plan and results (both were read from a folder of mode 0777)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nmp.errors import NmpError
from nmp.fileio import others_can_write

ROOT = Path(__file__).resolve().parents[1]


def test_a_folder_all_may_write_into_is_untrusted_unless_sticky(tmp_path) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    for mode, untrusted in ((0o755, False), (0o775, False), (0o777, True), (0o1777, False)):
        folder.chmod(mode)
        assert (others_can_write(folder) is not None) == untrusted, oct(mode)
    assert others_can_write(tmp_path / "missing") is None


def test_nmp_home_that_all_may_write_into_is_refused(tmp_path, monkeypatch) -> None:
    from nmp.config import project_root

    home = tmp_path / "home"
    home.mkdir()
    shutil.copytree(ROOT / "models" / "memory", home / "models" / "memory")
    (home / "workloads").mkdir()
    monkeypatch.setenv("NMP_HOME", str(home))
    assert project_root() == home
    (home / "models").chmod(0o777)
    with pytest.raises(NmpError, match=r"presets are not read from .*models: every user"):
        project_root()


def test_a_run_folder_all_may_write_into_is_not_resumed(tmp_path) -> None:
    from nmp.evaluate.run_folder import check_run_dir

    run = tmp_path / "r"
    run.mkdir()
    (run / "plan.json").write_text("{}")
    check_run_dir(run, resume=True)
    run.chmod(0o777)
    with pytest.raises(NmpError, match="not resumed from .*every user may write"):
        check_run_dir(run, resume=True)
