"""The README's commands run as written, so that it cannot drift from the CLI.

Every ``$ nmp ...`` line of a code block in README.md is parsed by the real command-line parser
and run; the output lines the README shows under it must appear in what it prints. A command
too long for the test suite runs in a smaller form (``SMALLER``: the flags it changes, and why);
its README form is still parsed. The set-up commands are dry-run by ``make -n``, and every flag
that the command table names must exist on its command. ``$ nmp`` lines in docs/ are parsed.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nmp.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# README command -> the flags its test run sets (value None: a switch), replacing the README's
# value of the same flag or added to it. Each names why the full command is too long here.
SMALLER: dict[str, dict[str, str | None]] = {
    # the whole default sweep is `make evaluate` (14 points + 14 what-ifs, 47 s of CPU);
    # --check loads every preset and resolves every point, where a README/CLI drift would show
    "nmp evaluate": {"--check": None},
    # --quick runs every built-in check and quick claim (about a minute); one check here
    "nmp validate --quick": {"--only": "dram.ramulator2.ddr4"},
    # 600 steps x 6 strategies (20 s); 60 steps run every strategy through the same failure
    "nmp train --compare": {"--steps": "60"},
}
# Commands that write a run folder: the test points them at a temporary folder.
OUT_FLAG = {"evaluate": "--out", "validate": "--out"}


def code_blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def shell_commands(path: Path) -> list[tuple[str, list[str]]]:
    """Each ``$ `` line of the page's code blocks, with the output lines shown under it."""
    found: list[tuple[str, list[str]]] = []
    for block in code_blocks(path.read_text()):
        shown: list[str] | None = None  # output lines of the block's latest command
        for line in block:
            if line.startswith("$ "):
                shown = []
                found.append((line[2:].strip(), shown))
            elif shown is not None and line.strip():
                shown.append(line.rstrip())
    return found


def readme_commands() -> dict[str, list[str]]:
    return dict(shell_commands(README))


def with_flags(argv: list[str], flags: dict[str, str | None]) -> list[str]:
    """``argv`` with each flag's value replaced (or the flag added)."""
    argv = list(argv)
    for flag, value in flags.items():
        if flag in argv:
            if value is not None:
                argv[argv.index(flag) + 1] = value
        else:
            argv += [flag] if value is None else [flag, value]
    return argv


def parse(argv: list[str]) -> None:
    """The real parser accepts ``argv`` (argparse exits on an unknown flag or a bad choice)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(
            f"nmp {shlex.join(argv)}: rejected by the parser ({exc.code}): {err.getvalue()}"
        )


def command_id(command: str) -> str:
    return re.sub(r"[^\w.-]+", "_", command.removeprefix("nmp "))[:50]


def test_the_readme_has_a_tour() -> None:
    commands = readme_commands()
    assert len(commands) >= 6
    subcommands = {shlex.split(c)[1] for c in commands}
    assert {"replay", "run", "evaluate", "validate", "train"} <= subcommands
    assert all(c.startswith("nmp ") for c in commands)


def test_every_smaller_form_names_a_readme_command() -> None:
    assert set(SMALLER) <= set(readme_commands())


@pytest.mark.slow
@pytest.mark.parametrize("command", list(readme_commands()), ids=command_id)
def test_readme_command_runs(command: str, tmp_path: Path) -> None:
    argv = shlex.split(command)[1:]
    parse(argv)
    small = command in SMALLER
    run = with_flags(argv, SMALLER.get(command, {}))
    if argv[0] in OUT_FLAG:
        run = with_flags(run, {OUT_FLAG[argv[0]]: str(tmp_path)})
    parse(run)
    env = dict(os.environ, COLUMNS="200")
    proc = subprocess.run(
        [sys.executable, "-m", "nmp", *run],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    if not small:
        printed = {line.rstrip() for line in proc.stdout.splitlines()}
        missing = [line for line in readme_commands()[command] if line not in printed]
        assert missing == [], proc.stdout[-5000:]


def test_setup_commands_are_make_targets() -> None:
    block = next(b for b in code_blocks(README.read_text()) if b and b[0].startswith("make "))
    targets = [line.split("#")[0].split()[1] for line in block]
    assert targets == ["evaluate", "test"]
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    for target in targets:
        proc = subprocess.run([make, "-n", target], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def command_table() -> list[str]:
    """The ``nmp ...`` synopses of the README's command table."""
    text = README.read_text()
    table = text[text.index("## Commands") :].split("\n## ")[0]
    rows = [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| `nmp ")]
    return [s for row in rows for s in re.findall(r"`(nmp [^`]+)`", row)]


def help_text(words: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([*words, "--help"])
    return out.getvalue()


@pytest.mark.parametrize("synopsis", command_table(), ids=command_id)
def test_command_table_flags_exist(synopsis: str) -> None:
    words = synopsis.split()[1:]
    sub = words[:2] if words[0] == "rtl" else words[:1]
    text = help_text(sub)
    flags = set(re.findall(r"(?<![\w-])--[a-z][\w-]*", synopsis))
    assert flags, synopsis
    missing = sorted(f for f in flags if not re.search(rf"(?<![\w-]){f}(?![\w-])", text))
    assert missing == [], f"{synopsis}: not options of nmp {' '.join(sub)}"


DOC_COMMANDS = [
    (page.name, command)
    for page in sorted((ROOT / "docs").glob("*.md"))
    for command, _ in shell_commands(page)
    if command.startswith("nmp ")
]


@pytest.mark.parametrize("page,command", DOC_COMMANDS, ids=[command_id(c) for _, c in DOC_COMMANDS])
def test_docs_commands_parse(page: str, command: str) -> None:
    parse(shlex.split(command)[1:])


def _counts(cell: str) -> dict[str, int]:
    """'18 agrees, 14 within band, 5 input' -> {'agrees': 18, 'within band': 14, 'input': 5}"""
    return {k: int(n) for n, k in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", cell.strip())}


def test_the_readmes_claim_counts_are_validations():
    """The README's verdict counts under the papers' setups are docs/validation.md's table
    (which the golden fixtures write), in all and for the three near-memory papers."""
    table = (ROOT / "docs" / "validation.md").read_text()
    rows = {
        cells[1].strip(): _counts(cells[3])
        for line in table.splitlines()
        if line.startswith("| ") and len(cells := line.split("|")) > 4
    }
    text = " ".join(README.read_text().split())
    m = re.search(
        r"under the papers' setups: (\d+) agree, (\d+) within band, (\d+) exceed their bound, "
        r"(\d+) disagree, (\d+) are inputs; of the (\d+) near-memory claims \(ReCross, TRiM, "
        r"RecNMP\): (\d+), (\d+), (\d+), (\d+) and (\d+)\.",
        text,
    )
    assert m, "the README's sentence with the claim counts changed shape"
    kinds = ("agrees", "within band", "exceeds bound", "disagrees", "input")
    every = rows["all papers"]
    assert [int(x) for x in m.groups()[:5]] == [every.get(k, 0) for k in kinds]
    near = [sum(rows[p].get(k, 0) for p in ("recross", "trim", "recnmp")) for k in kinds]
    assert [int(x) for x in m.groups()[6:]] == near
