"""Text from users and docstrings reaches the console as written: rich reads ``[...]`` as
markup, so an unescaped ``[r, k]`` vanished from a table and a ``[/s]`` raised MarkupError."""

from __future__ import annotations

from nmp.cli import main as nmp_main
from nmp.evaluate.study import print_study_rows
from nmp.report.console import make_console

TRICKY = "rows [r, k] per [/s] at [bold]"


def test_a_study_prints_its_name_description_rows_and_folder_as_written(capsys):
    summary = {
        "sweep": "study [/x]",
        "description": TRICKY,
        "rows": [{"label [/c]": TRICKY, "value": 1.5}],
        "run_dir": "runs/[/y]",
    }
    print_study_rows(summary, make_console())
    out = capsys.readouterr().out
    for text in ("study [/x]", TRICKY, "label [/c]", "runs/[/y]/report.md"):
        assert text in out


def test_registry_descriptions_keep_their_brackets(capsys):
    """The Reed-Solomon generators' docstrings start 'Parity rows ``[r, k]``'."""
    assert nmp_main(["models", "--registries"]) == 0
    assert "Parity rows ``[r, k]``" in capsys.readouterr().out
