"""Imports point down the layers of docs/architecture.md, and no package cycle exists.

Every ``import`` and ``from ... import`` of every module under ``nmp/`` is read with ``ast``,
at module level and inside functions alike (a function-level import is a dependency too, only a
later one). A module of package ``a`` may import from its own package or from a package of a
lower layer; never from a higher layer, nor from another package of its own layer.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

NMP = Path(__file__).resolve().parents[1] / "nmp"

# Top to bottom, as docs/architecture.md draws them. A name is a subpackage of nmp or a
# top-level module; "nmp" is the package's own __init__ (the public API, lazily loaded).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("cli", "catalog", "warmup"),
    ("cache",),
    ("train",),
    ("shard", "compress", "validate", "measure"),
    ("evaluate",),
    ("arch", "gpu", "reference"),
    ("memory", "workload", "rtl", "design", "parity_codes"),
    ("report", "guard", "config", "coding"),
    (
        "fileio",
        "units",
        "errors",
        "results",
        "registry",
        "plugins",
        "cliargs",
        "claim_setup",
        "nmp",
    ),
)
# the ground floor's modules import one another (downward inside it, checked for cycles)
GROUND = set(LAYERS[-1])
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}


def module_name(path: Path, root: Path = NMP) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def unit(module: str) -> str:
    """The layered unit of an nmp module: its subpackage or top-level module ("nmp": the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "nmp"


def imports_of(path: Path, root: Path = NMP) -> list[tuple[str, int]]:
    """(imported nmp module, line) for every import in the file, wherever it stands."""
    module = module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "nmp":  # from nmp import guard: the submodules named
                out += [(f"nmp.{alias.name}", node.lineno) for alias in node.names]
            else:
                out.append((target, node.lineno))
    return [(t, line) for t, line in out if t == "nmp" or t.startswith("nmp.")]


def _resolve(target: str) -> str:
    """``nmp.X`` where X is a name of nmp/__init__ (``__version__``) is the root itself."""
    parts = target.split(".")
    if len(parts) > 1 and parts[1] not in LAYER_OF:
        return "nmp"
    return target


def all_imports(root: Path = NMP) -> list[tuple[str, int, str]]:
    """(importing module, line, imported module) over the whole package."""
    return [
        (module_name(path, root), line, _resolve(target))
        for path in sorted(root.rglob("*.py"))
        for target, line in imports_of(path, root)
    ]


def violations(edges: list[tuple[str, int, str]]) -> list[str]:
    """Every import that points up, or sideways between packages of one layer."""
    bad = []
    for src, line, dst in edges:
        a, b = unit(src), unit(dst)
        if a == b or (a in GROUND and b in GROUND):
            continue
        if a not in LAYER_OF or b not in LAYER_OF:
            bad.append(f"{src}:{line} -> {dst}: {a if a not in LAYER_OF else b} is in no layer")
        elif LAYER_OF[b] <= LAYER_OF[a]:
            side = "sideways" if LAYER_OF[b] == LAYER_OF[a] else "upward"
            bad.append(f"{src}:{line} -> {dst}: {side} ({a} imports {b})")
    return bad


def package_cycles(edges: list[tuple[str, int, str]]) -> list[list[str]]:
    """Cycles in the graph of units (packages and top-level modules)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for src, _, dst in edges:
        if unit(src) != unit(dst):
            graph[unit(src)].add(unit(dst))
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_imports_point_down_the_layers():
    bad = violations(all_imports())
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_no_cycle_between_packages():
    assert package_cycles(all_imports()) == []


def test_every_package_and_module_has_a_layer():
    units = {unit(module_name(p)) for p in NMP.rglob("*.py")}
    assert units <= set(LAYER_OF), sorted(units - set(LAYER_OF))


@pytest.mark.parametrize(
    ("src", "code", "words"),
    [
        (
            "memory/x.py",
            "def f():\n    from nmp.arch import arch\n",
            "upward (memory imports arch)",
        ),
        ("arch/x.py", "from nmp.gpu import spec\n", "sideways (arch imports gpu)"),
        ("config.py", "from nmp import guard\n", "sideways (config imports guard)"),
        ("report/x.py", "from ..evaluate import store\n", "upward (report imports evaluate)"),
    ],
)
def test_an_upward_import_is_caught(tmp_path, src, code, words):
    """The check itself: an import added against the order fails it, even inside a function
    and in relative form."""
    path = tmp_path / "nmp" / src
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code)
    assert any(words in v for v in violations(all_imports(tmp_path / "nmp")))


def test_a_cycle_between_packages_is_caught():
    edges = [("nmp.memory.a", 1, "nmp.arch.b"), ("nmp.arch.b", 1, "nmp.memory.a")]
    assert package_cycles(edges) == [["arch", "memory", "arch"]]
