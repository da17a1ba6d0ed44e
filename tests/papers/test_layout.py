"""A paper is one folder: its claims, model and fixture together, naming no other paper's code.

Cheap checks of the layout (no model runs), so that a paper added by copying a folder cannot
quietly lean on another paper's folder or leave its fixture elsewhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

from nmp.validate.claims import PAPERS_DIR, load_claims, paper_files

PAPERS = sorted(p.parent.name for p in paper_files())
# the models several papers share: the package's top-level modules
SHARED = {f"nmp.papers.{p.stem}" for p in PAPERS_DIR.glob("*.py") if p.stem != "__init__"}


def test_every_folder_is_a_paper_with_its_fixture():
    folders = sorted(p.name for p in PAPERS_DIR.iterdir() if (p / "__init__.py").is_file())
    assert folders == PAPERS and len(PAPERS) >= 9
    for paper in PAPERS:
        assert (PAPERS_DIR / paper / "golden.json").is_file(), paper


def test_claims_name_their_own_folder_or_a_shared_model():
    """A claim's model and bound are in its paper's folder or a shared top-level module."""
    claims = load_claims()
    assert {c.paper for c in claims} == set(PAPERS)
    for c in claims:
        for ref in filter(None, (c.model, c.bound)):
            module = ref.split(":")[0]
            own = module.startswith(f"nmp.papers.{c.paper}.")
            assert own or module in SHARED, f"{c.id}: {ref} is outside its paper's folder"


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_no_paper_imports_another_papers_folder():
    for paper in PAPERS:
        others = tuple(f"nmp.papers.{p}" for p in PAPERS if p != paper)
        for path in (PAPERS_DIR / paper).glob("*.py"):
            bad = sorted(m for m in _imports(path) if m.startswith(others))
            assert not bad, f"{path}: imports {bad}"
