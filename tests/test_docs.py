"""The documentation's relative links resolve: every file a markdown page links to exists, every
``#anchor`` names a heading of its page, and every page in docs/ is reachable from the README."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Folders that hold no documentation of the repository (environments, run outputs, builds).
SKIP_DIRS = {"reports", "build", "node_modules", "__pycache__"}
LINK = re.compile(r"!?\[[^\]]*\]\(([^()\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def markdown_files() -> list[Path]:
    return sorted(
        p
        for p in ROOT.rglob("*.md")
        if not any(part.startswith(".") or part in SKIP_DIRS for part in p.relative_to(ROOT).parts)
    )


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks (a link in a code block is not a link)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def links(path: Path) -> list[str]:
    return [m.group(1) for line in prose_lines(path.read_text()) for m in LINK.finditer(line)]


def github_anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated heading numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    anchors = set()
    for line in prose_lines(path.read_text()):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def is_external(target: str) -> bool:
    return re.match(r"^[a-z][a-z0-9+.-]*:", target) is not None


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in links(path):
        if is_external(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in github_anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    return broken


def test_the_docs_are_found() -> None:
    names = {str(p.relative_to(ROOT)) for p in markdown_files()}
    assert {"README.md", "docs/architecture.md", "data/README.md"} <= names


@pytest.mark.parametrize(
    "path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)).replace("/", "-")
)
def test_relative_links_resolve(path: Path) -> None:
    assert broken_links(path) == []


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    reached, todo = set(), [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        if page in reached:
            continue
        reached.add(page)
        for target in links(page):
            file_part = target.partition("#")[0]
            if file_part and not is_external(target):
                dest = (page.parent / file_part).resolve()
                if dest.suffix == ".md" and dest.exists():
                    todo.append(dest)
    orphans = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p not in reached)
    assert orphans == []


def test_the_link_checker_catches_a_broken_link(tmp_path: Path) -> None:
    """The checker itself: a missing file and a missing heading are both reported."""
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other page\n\n## A section (`x.y`)\n")
    page.write_text(
        "# Page\n[ok](other.md#a-section-xy) [gone](missing.md) [bad](other.md#nope)\n"
        "```\n[in code](not-checked.md)\n```\n[self](#page) [web](https://example.org)\n"
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#nope: no heading #nope in other.md",
    ]


def test_every_benchmark_script_is_documented() -> None:
    """docs/benchmarks.md names every script in benchmarks/ (what it measures, or what it helps),
    so that a script added there is not one a reader of the docs cannot find."""
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    missing = [
        p.name for p in sorted((ROOT / "benchmarks").glob("*.py")) if f"`{p.name}`" not in page
    ]
    assert not missing, f"docs/benchmarks.md does not name {missing}"
