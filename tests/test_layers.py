"""Imports point down the layers of docs/architecture.md, and no package cycle exists.

Every ``import`` and ``from ... import`` of every module under ``nmp/`` is read with ``ast``,
at module level and inside functions alike (a function-level import is a dependency too, only a
later one). A module of package ``a`` may import from its own package or from a package of a
lower layer; never from a higher layer, nor from another package of its own layer.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path

import pytest

NMP = Path(__file__).resolve().parents[1] / "nmp"

# Top to bottom, as docs/architecture.md draws them. A name is a subpackage of nmp or a
# top-level module; "nmp" is the package's own __init__ (the public API, lazily loaded).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("cli", "catalog", "warmup"),
    ("papers",),
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
        "version",
        "plugins",
        "cliargs",
        "claim_setup",
        "toml_cache",
        "config_toml",
        "config_presets",
        "config_mapping",
        "config_overrides",
        "jit",
        "identity_cache",
        "nmp",
    ),
)
# the ground floor's modules import one another (downward inside it, checked for cycles)
GROUND = set(LAYERS[-1])
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}


@functools.lru_cache(maxsize=4096)
def _tree(path: Path) -> ast.Module:
    """A file's syntax tree, parsed once for every check of this module."""
    return ast.parse(path.read_text(), filename=str(path))


@functools.lru_cache(maxsize=4096)
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(_tree(path)))


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
    for node in _nodes(path):
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


def graph_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles a depth-first walk of ``graph`` (node -> successors) meets, in sorted order."""
    cycles: list[list[str]] = []
    state: dict[str, str] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def package_cycles(edges: list[tuple[str, int, str]]) -> list[list[str]]:
    """Cycles in the graph of units (packages and top-level modules)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for src, _, dst in edges:
        if unit(src) != unit(dst):
            graph[unit(src)].add(unit(dst))
    return graph_cycles(graph)


# ---------------------------------------------------------------------------------------------
# Ways around the import graph: each is rejected by name, so the layers above cannot be bypassed.

# Config keys and fields that name a registered variant: comparing one to a string literal is a
# stage testing a variant's name (ask the variant: a registry's object has the behaviour).
VARIANT_FIELDS = frozenset(
    {
        "policy",
        "cache_policy",
        "strategy",
        "sharder",
        "codec",
        "compress",
        "code",
        "optimizer",
        "dense_optimizer",
        "distribution",
        "backend",
        "executor",
        "fmt",
        "trace_format",
        "variant",
        "family",
        "salp",
        "interval",
        "standard",
        "dist",
        # a list of variants: ``"hybrid" in p["codecs"]`` tests a name as well
        "policies",
        "strategies",
        "sharders",
        "codecs",
        "codes",
        "optimizers",
        "backends",
        "executors",
        "distributions",
        "variants",
        "formats",
    }
)
# The one module that imports nmp modules by name (a registry's package walk).
NAME_IMPORTER = "nmp.registry"


def _root_lazy_names(root: Path) -> set[str]:
    """The names nmp/__init__ loads lazily (its ``_LAZY`` table's keys)."""
    init = root / "__init__.py"
    if not init.is_file():
        return set()
    for node in ast.parse(init.read_text()).body:
        value = getattr(node, "value", None)
        targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
        if isinstance(value, ast.Dict) and any(getattr(t, "id", "") == "_LAZY" for t in targets):
            return {k.value for k in value.keys if isinstance(k, ast.Constant)}
    return set()


def _nmp_literal(arg: ast.expr) -> str | None:
    """The module an ``import_module`` argument names, if it is a literal under nmp."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        text = arg.value
    elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        text = str(arg.values[0].value) + "{...}"
    else:
        return None
    return text if text == "nmp" or text.startswith("nmp.") else None


def _is_code_ref(value: ast.expr) -> bool:
    """A function or class reference (not a constant): ``run``, ``mod.Store``, a lambda."""
    if isinstance(value, ast.Lambda):
        return True
    if isinstance(value, ast.Tuple):
        return bool(value.elts) and all(_is_code_ref(v) for v in value.elts)
    # a bare name that is not a CONSTANT (an attribute is data more often: cfg.users)
    return isinstance(value, ast.Name) and not value.id.isupper()


def _code_table(node: ast.stmt) -> str | None:
    """The name of a module-level ``dict[str, Callable]`` table, if ``node`` defines one."""
    if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
        return None
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    name = ", ".join(getattr(t, "id", "?") for t in targets)
    if isinstance(node, ast.AnnAssign):
        text = ast.unparse(node.annotation)
        if text.startswith("dict[str,") and ("Callable" in text or "type[" in text):
            return name
    value = node.value
    if isinstance(value, ast.Dict) and value.keys:
        str_keys = all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys)
        if str_keys and all(_is_code_ref(v) for v in value.values):
            return name
    return None


def _field(expr: ast.expr) -> str | None:
    """The field an expression reads: ``spec.policy``, ``policy``, ``row["policy"]``,
    ``row.get("policy")``."""
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
        return str(expr.slice.value)
    if (
        isinstance(expr, ast.Call)
        and getattr(expr.func, "attr", None) == "get"
        and expr.args
        and isinstance(expr.args[0], ast.Constant)
    ):
        return str(expr.args[0].value)
    return None


def _strings(expr: ast.expr) -> list[str] | None:
    """The string literal(s) of ``"x"`` or ``("x", "y")``, else None."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, ast.Tuple | ast.List | ast.Set) and expr.elts:
        values = [e.value for e in expr.elts if isinstance(e, ast.Constant)]
        if len(values) == len(expr.elts) and all(isinstance(v, str) for v in values):
            return [str(v) for v in values]
    return None


def _name_test(node: ast.Compare) -> str | None:
    """``<variant field> == "name"`` (or !=, in, not in): the field and the names compared."""
    sides = [node.left, *node.comparators]
    for op, left, right in zip(node.ops, sides[:-1], sides[1:], strict=True):
        if not isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn):
            continue
        for field, lit in ((left, right), (right, left)):
            names = _strings(lit)
            key = _field(field)
            if names is not None and key in VARIANT_FIELDS:
                return f"{key} == {', '.join(repr(n) for n in names)}"
    return None


def _match_test(node: ast.Match) -> str | None:
    """``match <variant field>: case "name":``: the field and the names matched."""
    key = _field(node.subject)
    if key not in VARIANT_FIELDS:
        return None
    names = [
        p.value.value
        for case in node.cases
        for p in ast.walk(case.pattern)
        if isinstance(p, ast.MatchValue)
        and isinstance(p.value, ast.Constant)
        and isinstance(p.value.value, str)
    ]
    return f"{key} == {', '.join(repr(n) for n in names)}" if names else None


def file_bypasses(path: Path, root: Path = NMP, lazy: frozenset[str] = frozenset()) -> list[str]:
    """Every way ``path`` walks around the layer check (see :func:`bypasses`); ``lazy``: the
    root's lazy names."""
    module = module_name(path, root)
    tree = _tree(path)
    in_root = module == "nmp"
    bad = []
    for node in _nodes(path):
        found = None
        if isinstance(node, ast.Call):
            func = node.func
            fname = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if fname in ("import_module", "__import__") and node.args:
                target = _nmp_literal(node.args[0])
                if target and module != NAME_IMPORTER:
                    found = f"imports '{target}' by name (only {NAME_IMPORTER} does)"
        elif isinstance(node, ast.ImportFrom):
            if not in_root and node.level == 0 and node.module == "nmp":
                names = ", ".join(a.name for a in node.names)
                found = f"'from nmp import {names}' (import the submodule itself)"
        elif isinstance(node, ast.Import):
            if not in_root and any(a.name == "nmp" for a in node.names):
                found = "'import nmp' (the package never goes through its root)"
        elif isinstance(node, ast.Attribute):
            if not in_root and node.attr in lazy and getattr(node.value, "id", None) == "nmp":
                found = f"uses the lazy root name 'nmp.{node.attr}'"
        elif isinstance(node, ast.Compare):
            test = _name_test(node)
            if test:
                found = f"name test ({test})"
        elif isinstance(node, ast.Match):
            test = _match_test(node)
            if test:
                found = f"name test ({test})"
        if found:
            bad.append(f"{module}:{node.lineno}: {found}")  # type: ignore[attr-defined]
    for stmt in tree.body:
        table = _code_table(stmt)
        if table:
            bad.append(f"{module}:{stmt.lineno}: table name -> code '{table}' (make it a Registry)")
    return bad


def bypasses(root: Path = NMP) -> list[str]:
    """Literal ``import_module("nmp...")`` outside nmp/registry.py, ``from nmp import`` or
    ``import nmp`` inside the package, lazy root names used by the package, module-level
    ``dict[str, Callable]`` tables, and a variant's name compared to a string."""
    return list(_bypasses(root))


@functools.lru_cache(maxsize=8)
def _bypasses(root: Path) -> tuple[str, ...]:
    lazy = frozenset(_root_lazy_names(root))
    return tuple(m for p in sorted(root.rglob("*.py")) for m in file_bypasses(p, root, lazy))


def test_nothing_walks_around_the_layers():
    bad = bypasses()
    assert not bad, "ways around the layer check:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("src", "code", "words"),
    [
        (
            "validate/x.py",
            "def f():\n    from importlib import import_module\n"
            "    return import_module('nmp.train.measured')\n",
            "imports 'nmp.train.measured' by name",
        ),
        (
            "train/x.py",
            "import importlib\nmod = 'x'\nimportlib.import_module(f'nmp.train.{mod}')\n",
            "imports 'nmp.train.{...}' by name",
        ),
        ("memory/x.py", "from nmp import load_arch\n", "'from nmp import load_arch'"),
        ("memory/y.py", "import nmp\n", "'import nmp'"),
        ("memory/z.py", "import nmp.memory\nnmp.run_point\n", "lazy root name 'nmp.run_point'"),
        (
            "arch/x.py",
            "from typing import Callable\nT: dict[str, Callable] = {}\n",
            "table name -> code 'T'",
        ),
        (
            "cache/x.py",
            "from a import Lmdb, Sqlite\nBACKENDS = {'lmdb': Lmdb, 'sqlite': Sqlite}\n",
            "table name -> code 'BACKENDS'",
        ),
        (
            "arch/y.py",
            "def f(spec):\n    return spec.policy == 'host'\n",
            "name test (policy == 'host')",
        ),
        (
            "train/y.py",
            "def f(cfg):\n    return cfg.code in ('xor', 'float-sum')\n",
            "name test (code == 'xor', 'float-sum')",
        ),
        (
            "cache/y.py",
            "def f(rows):\n    return [r for r in rows if r['policy'] == 'evstore']\n",
            "name test (policy == 'evstore')",
        ),
        (
            "compress/x.py",
            "def f(p):\n    return 'hybrid' in p['codecs']\n",
            "name test (codecs == 'hybrid')",
        ),
        (
            "workload/x.py",
            "def f(spec):\n    match spec.distribution:\n        case 'zipf' | 'pareto':\n"
            "            return 1\n",
            "name test (distribution == 'zipf', 'pareto')",
        ),
    ],
)
def test_each_bypass_is_caught(tmp_path, src, code, words):
    """The checks themselves: each way around the layers, written into a file, fails them."""
    root = tmp_path / "nmp"
    (root / "__init__.py").parent.mkdir(parents=True, exist_ok=True)
    (root / "__init__.py").write_text("_LAZY = {'run_point': ('nmp.evaluate.point', 'x')}\n")
    path = root / src
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code)
    found = bypasses(root)
    assert any(words in v for v in found), found


def test_the_registry_module_may_import_by_name(tmp_path):
    root = tmp_path / "nmp"
    root.mkdir()
    (root / "registry.py").write_text("import importlib\nimportlib.import_module('nmp.x')\n")
    assert bypasses(root) == []


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


def file_edges(root: Path = NMP) -> list[tuple[str, int, str]]:
    """(module, line, imported module) with ``from pkg import sub`` read as importing the
    submodule ``pkg.sub`` (not the package's __init__)."""
    modules = {module_name(p, root) for p in root.rglob("*.py")}
    out = []
    for path in sorted(root.rglob("*.py")):
        src = module_name(path, root)
        package = src if path.name == "__init__.py" else src.rpartition(".")[0]
        for node in _nodes(path):
            if isinstance(node, ast.Import):
                out += [(src, node.lineno, a.name) for a in node.names if a.name in modules]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    dst = sub if sub in modules else target
                    if dst in modules and dst != src:
                        out.append((src, node.lineno, dst))
    return out


def module_cycles(edges: list[tuple[str, int, str]]) -> list[list[str]]:
    """Cycles between modules (files), function-level imports included."""
    graph: dict[str, set[str]] = defaultdict(set)
    for src, _, dst in edges:
        graph[src].add(dst)
    return graph_cycles(graph)


def test_no_cycle_between_files():
    """No two modules import each other, even through a function-level import (the C files:
    :func:`test_no_cycle_between_c_files`)."""
    assert module_cycles(file_edges()) == []


_C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_C_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# a function declared or defined at the start of a line: ``FORCE_INLINE int64_t ch_offer(``
_C_FUNCTION = re.compile(r"^(?:[A-Za-z_]\w*[ \t*]+)+([A-Za-z_]\w*)\s*\(", re.M)
_C_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def c_edges(root: Path = NMP) -> list[tuple[str, int, str]]:
    """(C file, line, file it depends on) for the C sources under ``root``: the files it
    includes, and for a header, the file whose functions it calls without a declaration in
    itself or in what it includes (a header that needs its includer's definitions)."""
    files = sorted(p for p in root.rglob("*") if p.suffix in (".c", ".h"))
    text = {p: _C_COMMENT.sub(lambda m: "\n" * m.group().count("\n"), p.read_text()) for p in files}
    name = {p: str(p.relative_to(root.parent)) for p in files}
    includes = {
        p: [(t[: m.start()].count("\n") + 1, p.parent / m.group(1)) for m in _C_INCLUDE.finditer(t)]
        for p, t in text.items()
    }
    declared = {p: set(_C_FUNCTION.findall(t)) for p, t in text.items()}

    def closure(p: Path, seen: set[Path]) -> set[Path]:
        for _, q in includes.get(p, []):
            if q in text and q not in seen:
                seen.add(q)
                closure(q, seen)
        return seen

    out = [(name[p], line, name[q]) for p in files for line, q in includes[p] if q in text]
    for h in (p for p in files if p.suffix == ".h"):
        known = set().union(*(declared[q] for q in closure(h, {h})))
        for m in _C_CALL.finditer(text[h]):
            owner = [c for c in files if c.suffix == ".c" and m.group(1) in declared[c]]
            if m.group(1) not in known and owner:
                line = text[h][: m.start()].count("\n") + 1
                out += [(name[h], line, name[c]) for c in owner]
    return out


def test_no_cycle_between_c_files():
    """The C engine's files include downward only: no header needs what the file that
    includes it defines (its declarations live in a header both include)."""
    assert module_cycles(c_edges()) == []


def test_a_cycle_between_c_files_is_caught(tmp_path):
    root = tmp_path / "nmp"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "e.c").write_text(
        '#include "t.h"\nstatic int step(int x)\n{\n    return x;\n}\n'
    )
    (root / "memory" / "t.h").write_text(
        "/* needs step() */\nstatic int run(void) { return step(1); }\n"
    )
    assert module_cycles(c_edges(root)) == [["nmp/memory/e.c", "nmp/memory/t.h", "nmp/memory/e.c"]]
    (root / "memory" / "s.h").write_text("static int step(int x);\n")
    (root / "memory" / "t.h").write_text(
        '#include "s.h"\nstatic int run(void) { return step(1); }\n'
    )
    assert module_cycles(c_edges(root)) == []


def test_a_cycle_between_files_is_caught(tmp_path):
    root = tmp_path / "nmp"
    (root / "arch").mkdir(parents=True)
    (root / "arch" / "a.py").write_text("from nmp.arch import b\n")
    (root / "arch" / "b.py").write_text("def f():\n    from nmp.arch.a import x\n")
    assert module_cycles(file_edges(root)) == [["nmp.arch.a", "nmp.arch.b", "nmp.arch.a"]]


def test_a_cycle_between_packages_is_caught():
    edges = [("nmp.memory.a", 1, "nmp.arch.b"), ("nmp.arch.b", 1, "nmp.memory.a")]
    assert package_cycles(edges) == [["arch", "memory", "arch"]]
