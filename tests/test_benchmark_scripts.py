"""Every script in benchmarks/ that runs on its own reads its flags with argparse, so that
``--help`` prints its usage and an unknown flag stops it, instead of running the whole
benchmark (first_run.py, compress.py and train.py once ignored both)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _runs_on_its_own(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
        for node in tree.body
    )


def _parses_flags(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("parse_args", "parse_known_args")
        for node in ast.walk(tree)
    )


def test_every_runnable_benchmark_reads_its_flags():
    scripts = sorted((ROOT / "benchmarks").glob("*.py"))
    runnable = {p.name: ast.parse(p.read_text()) for p in scripts}
    runnable = {name: tree for name, tree in runnable.items() if _runs_on_its_own(tree)}
    assert {"train.py", "first_run.py", "compress.py", "peers.py"} <= set(runnable)
    missing = [name for name, tree in runnable.items() if not _parses_flags(tree)]
    assert not missing, f"benchmarks without argparse (--help would run them): {missing}"
