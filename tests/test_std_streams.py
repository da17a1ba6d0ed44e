"""Standard output that cannot be written: closed (``nmp models --json >&-``: a traceback
``'NoneType' object has no attribute 'isatty'``) or full (``> /dev/full``: the error did not
name it, and ``--help``/``--version`` exited 0 having printed nothing). Each is one line
``nmp: error: standard output: ...`` and exit status 1."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

NMP = [sys.executable, "-m", "nmp"]


def _run(argv: list[str], **kwargs: object) -> tuple[int, str]:
    proc = subprocess.run([*NMP, *argv], stderr=subprocess.PIPE, timeout=120, check=False, **kwargs)
    return proc.returncode, proc.stderr.decode()


@pytest.mark.parametrize("argv", [["models", "--json"], ["--help"]], ids=["json", "help"])
def test_a_closed_standard_output_is_one_line_error(argv: list[str]) -> None:
    code, err = _run(argv, preexec_fn=lambda: os.close(1))
    assert code == 1, err
    assert err.splitlines() == [
        "nmp: error: standard output: it is closed (nothing can be printed)"
    ]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize(
    "argv",
    [["models", "--json"], ["models"], ["--help"], ["--version"]],
    ids=["json", "table", "help", "version"],
)
def test_a_full_standard_output_is_named(argv: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        code, err = _run(argv, stdout=full)
    assert code == 1, err
    assert err.splitlines() == ["nmp: error: standard output: No space left on device"], err


def test_a_closed_standard_error_still_exits_1() -> None:
    proc = subprocess.run(
        [*NMP, "models", "--nosuch"],
        stdout=subprocess.PIPE,
        preexec_fn=lambda: os.close(2),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1


def test_main_in_process_with_no_stdout(monkeypatch, capsys) -> None:
    from nmp.cli import main

    monkeypatch.setattr(sys, "stdout", None)
    assert main(["models", "--json"]) == 1
    assert sys.stdout is None
    assert "standard output" in capsys.readouterr().err


def test_json_output_is_strict_json_or_a_named_error() -> None:
    """--json printed Infinity/NaN (``arch.rank.clock_mhz=1e-300``), which no JSON reader
    accepts: the document is strict JSON, or the error names where a value is not finite."""
    from nmp.cliargs import json_text
    from nmp.errors import NmpError

    assert json_text({"a": [1.5, None]}, indent=None) == '{"a": [1.5, null]}'
    for bad, where in (
        ({"latency_ns": float("inf")}, "latency_ns"),
        ({"rows": [{"x": 1.0}, {"x": float("nan")}]}, "rows.1.x"),
    ):
        with pytest.raises(NmpError, match=f"the result's {where} is (inf|nan)"):
            json_text(bad)


def test_run_json_never_prints_infinity(capsys) -> None:
    from nmp.cli import main

    argv = ["run", "--arch", "recnmp", "--workload", "recross-eval", "--json"]
    code = main([*argv, "--set", "arch.rank.clock_mhz=1e-300"])
    captured = capsys.readouterr()
    assert "Infinity" not in captured.out and "NaN" not in captured.out
    assert code == 1
    assert captured.err.strip().splitlines()[-1].startswith("nmp: error: "), captured.err
