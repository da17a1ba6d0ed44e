"""The lazy command table of ``nmp`` (nmp/cli.py): ``nmp --help`` lists every command with the
help its module gives, without importing any; a command imports its own module only; and the
C engine's replay path imports neither numba nor scipy nor torch (issue 31: start-up), nor,
for a canonical trace, numpy (issue 43)."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nmp import cli

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "traces" / "emb_zipf_a0.8_r1m_rb64_p40.trace.gz"
MEMORY = ["--memory", "ddr4-3200aa", "--channels", "1", "--ranks", "1", "--mapping", "RoBaRaCoCh"]


def _registered(module: str) -> dict[str, str]:
    """The commands ``module.register`` adds, with their one-line help."""
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(module).register(sub)
    return {a.dest: a.help for a in sub._choices_actions}


@pytest.mark.parametrize("name", list(cli.command_table()))
def test_each_declared_command_is_what_its_module_registers(name) -> None:
    command = cli.command_table()[name]
    assert _registered(command.module) == {name: command.help}


def test_every_module_that_registers_a_command_declares_it() -> None:
    """A command module found by its ``register(sub)`` but not declared would be unreachable."""
    registers = {
        ".".join(("nmp", *p.relative_to(ROOT / "nmp").with_suffix("").parts))
        for p in (ROOT / "nmp").rglob("*.py")
        if "\ndef register(sub" in p.read_text(encoding="utf-8")
    }
    assert registers == {c.module for c in cli.command_table().values()}


def _run_python(code: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


PROBE = """
import contextlib, io, json, sys
from nmp.cli import main
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    try:
        rc = main({argv!r})
    except SystemExit as e:
        rc = e.code
threads = None
try:
    with open("/proc/self/status") as fh:
        threads = int(next(ln for ln in fh if ln.startswith("Threads:")).split()[1])
except OSError:
    pass
print(json.dumps({{"rc": rc, "out": buf.getvalue(), "modules": sorted(sys.modules),
                  "threads": threads}}))
"""


def _probe(argv: list[str], env: dict[str, str] | None = None) -> dict:
    return json.loads(_run_python(PROBE.format(argv=argv), env).splitlines()[-1])


def test_help_lists_every_command_and_imports_none() -> None:
    got = _probe(["--help"])
    assert got["rc"] == 0
    for name, command in cli.command_table().items():
        assert name in got["out"]
        assert command.help.split()[0] in got["out"]
        assert command.module not in got["modules"]
    assert "numpy" not in got["modules"]


def test_a_command_imports_only_its_own_module() -> None:
    got = _probe(["models", "--kind", "memory", "--json"])
    assert got["rc"] == 0
    assert "nmp.catalog" in got["modules"]
    others = [c.module for n, c in cli.command_table().items() if n != "models"]
    assert not set(others) & set(got["modules"])


def test_an_unknown_command_lists_the_commands(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["no-such-command"])
    assert e.value.code == 1  # usage errors exit 1 (nmp.cliargs)
    err = capsys.readouterr().err
    assert "invalid choice" in err and "replay" in err and "validate" in err


@pytest.mark.parametrize("json_out", [True, False], ids=["json", "table"])
def test_replay_on_the_c_engine_imports_no_numba_scipy_torch(json_out) -> None:
    from nmp.memory import native

    if not native.available():
        pytest.skip(f"the C engine is not built here: {native.unavailable_reason()}")
    argv = ["replay", str(TRACE), *MEMORY] + (["--json"] if json_out else [])
    got = _probe(argv)
    assert got["rc"] == 0
    if json_out:  # the replay ran: Ramulator 2's cycles of this trace (README)
        assert json.loads(got["out"])["cycles"] == 370874
    else:
        assert "370874" in got["out"]
    heavy = [m for m in got["modules"] if m.split(".")[0] in ("numba", "scipy", "torch")]
    assert heavy == []
    # a canonical trace on the C engine takes the path without numpy (nmp.memory.text_replay;
    # numpy's import was most of a replay's CPU time: issue 43)
    assert "numpy" not in got["modules"]


def test_replay_json_imports_no_rich_and_starts_no_blas_threads() -> None:
    """``nmp replay --json`` (issue 43: a replay that costs one core): no rich, no
    importlib.metadata, and numpy's BLAS on one thread (no thread pool spinning on the second
    core), unless the user set the count."""
    import os

    from nmp.memory import native

    if not native.available():
        pytest.skip(f"the C engine is not built here: {native.unavailable_reason()}")
    env = {k: v for k, v in os.environ.items() if k not in cli.BLAS_THREAD_VARS}
    env["NMP_ENGINE_THREADS"] = "1"
    got = _probe(["replay", str(TRACE), *MEMORY, "--json"], env)
    assert got["rc"] == 0 and json.loads(got["out"])["cycles"] == 370874
    loaded = {m.split(".")[0] for m in got["modules"]}
    assert "rich" not in loaded
    # nor what only a build of the engine's library needs (it is built: above)
    assert not {"importlib.metadata", "subprocess", "tempfile"} & set(got["modules"])
    # nor the progress display, which --json never shows
    assert "nmp.report.progress" not in got["modules"]
    # nor OpenSSL's hashlib for the library's key (the interpreter's own SHA-256 where it has one)
    import importlib.util

    if any(importlib.util.find_spec(m) for m in ("_sha256", "_sha2")):
        assert "_hashlib" not in got["modules"]
    if got["threads"] is not None:  # Linux: the process's threads, BLAS's included
        assert got["threads"] == 1
    # the user's choice stands
    env["OPENBLAS_NUM_THREADS"] = "2"
    code = PROBE.format(argv=["replay", str(TRACE), *MEMORY, "--json"]) + (
        "import os; print(os.environ.get('OMP_NUM_THREADS'))"
    )
    assert _run_python(code, env).splitlines()[-1] == "None"


def test_a_command_named_first_builds_only_its_own_parser(monkeypatch) -> None:
    """``nmp replay ...`` builds the replay parser alone (each other command's listing is a
    parser of its own: issue 43, start-up); its help is the same as beside the others, and
    ``nmp --help`` still lists every command (above)."""
    built: list[argparse.ArgumentParser] = []
    real = cli.build_parser

    def spy(*args, **kwargs):
        built.append(real(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(cli, "build_parser", spy)
    with pytest.raises(SystemExit):
        cli.main(["replay", "--help"])
    (choices,) = [a.choices for a in built[0]._actions if a.dest == "command"]
    assert list(choices) == ["replay"]
    full = real(("replay",))
    (listed,) = [a.choices for a in full._actions if a.dest == "command"]
    assert list(listed) == list(cli.command_table())
    assert choices["replay"].format_help() == listed["replay"].format_help()


def test_a_warm_replay_parses_no_toml(tmp_path) -> None:
    """The preset and its standard read back parsed from the cache (nmp.toml_cache) at the
    second replay: tomllib is not even imported."""
    import os

    from nmp.memory import native

    if not native.available():
        pytest.skip(f"the C engine is not built here: {native.unavailable_reason()}")
    env = {**os.environ, "NMP_CACHE_DIR": str(tmp_path)}
    argv = ["replay", str(TRACE), *MEMORY, "--json"]
    cold, warm = _probe(argv, env), _probe(argv, env)
    assert cold["out"] == warm["out"] and json.loads(warm["out"])["cycles"] == 370874
    assert "tomllib" in cold["modules"] and "tomllib" not in warm["modules"]
    assert not {"traceback", "pkgutil"} & set(warm["modules"])
