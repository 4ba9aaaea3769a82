"""The package map of DESIGN.md, enforced on the source: which package may import which, no
import of another package's private modules, and a sorted, complete ``__all__`` everywhere.

Imports are read from the syntax tree (every ``import`` / ``from … import`` in a module,
including those inside functions), so a lazy import cannot slip past the table.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "choiceaudit"

#: package → the choiceaudit packages it may import (DESIGN.md's table). ``errors``,
#: ``files``, ``entry_points`` (and ``net``, which imports ``errors``) are leaves every layer
#: may use; ``cli`` may import everything.
LEAVES = {"entry_points", "errors", "files", "net"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "files": set(),
    "net": set(),
    "entry_points": set(),
    "types": set(),
    "stats": {"types"},
    "scorers": {"types"},
    "metrics": {"types", "stats"},
    "instruments": {"types", "stats", "scorers", "metrics"},
    "gate": {"types", "stats", "metrics"},
    "store": {"types"},
    "human": {"types", "instruments", "store"},
    "audit": {"types", "scorers", "instruments", "metrics", "gate", "stats", "store", "human"},
    "report": {"types", "store", "instruments", "metrics", "gate"},
    "serve": {"types", "scorers"},
    "api": {"*"},
    "cli": {"*"},
}


def _package(module: str) -> str:
    """``choiceaudit.instruments.meaning._plan`` → ``instruments.meaning``; other packages are
    their first component (``store._run`` → ``store``)."""
    parts = module.split(".")[1:]
    if not parts:
        return ""
    if parts[0] == "instruments" and len(parts) > 1 and not parts[1].startswith("_"):
        return f"instruments.{parts[1]}"
    return parts[0]


def _layer(package: str) -> str:
    return package.split(".")[0]


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append((".".join(parts), path))
    return out


def _imports(path: Path, module: str) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            for alias in node.names:  # `from choiceaudit.x import _private_module`
                found.append((node.lineno, f"{target}.{alias.name}"))
    return [(line, name) for line, name in found if name.split(".")[0] == "choiceaudit"]


def _is_module(name: str) -> bool:
    parts = name.split(".")
    base = SRC.parent.joinpath(*parts)
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def test_every_import_follows_the_package_table() -> None:
    violations = []
    for module, path in _modules():
        source = _package(module)
        layer = _layer(source)
        if not source or layer in ("cli", "api"):
            continue
        allowed = ALLOWED[layer] | LEAVES
        for line, target in _imports(path, module):
            if not _is_module(target) or target == "choiceaudit":
                continue
            dest = _package(target)
            dest_layer = _layer(dest)
            if dest_layer == layer and dest_layer != "instruments":
                continue
            if dest == source:
                continue
            if layer == "instruments" and dest == "instruments":
                continue  # the base package every instrument declares itself with
            if dest_layer not in allowed:
                violations.append(
                    f"{path.relative_to(SRC.parent)}:{line}: {source} imports {target}"
                )
    assert not violations, "\n".join(violations)


def test_no_package_imports_another_packages_private_modules() -> None:
    violations = []
    for module, path in _modules():
        source = _package(module)
        for line, target in _imports(path, module):
            if not _is_module(target):
                continue
            dest = _package(target)
            private = any(p.startswith("_") for p in target.split(".")[1:])
            if private and dest != source:
                violations.append(
                    f"{path.relative_to(SRC.parent)}:{line}: {source} imports {target}"
                )
    assert not violations, "\n".join(violations)


def test_stats_imports_only_numpy_and_scipy() -> None:
    third_party: set[str] = set()
    for module, path in _modules():
        if _package(module) != "stats":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                third_party.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                third_party.add(node.module.split(".")[0])
    import sys

    assert third_party - set(sys.stdlib_module_names) <= {"numpy", "scipy", "choiceaudit"}


def _isort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps: SCREAMING_CASE constants, then CamelCase, then the rest,
    each alphabetically."""
    if len(name) > 1 and name.upper() == name:
        return 0, name
    return (1 if name[0].isupper() else 2), name


PUBLIC_MODULES = [m for m, _ in _modules() if not any(p.startswith("_") for p in m.split("."))]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_module_has_a_sorted_complete_all(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert list(exported) == sorted(exported, key=_isort_key), f"{name}.__all__ is not sorted"
    assert len(set(exported)) == len(exported)
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names {attr!r}, which it lacks"


@pytest.mark.parametrize(
    ("name", "most"),
    [("choiceaudit.instruments.meaning", 21), ("choiceaudit.instruments.signalling", 18)],
)
def test_instruments_export_entry_points_not_internals(name: str, most: int) -> None:
    assert len(importlib.import_module(name).__all__) <= most


def _names_a_backend(node: ast.expr) -> bool:
    """``backend_of(spec)``, ``parse_model_spec(spec).backend``, ``desc["backend"]``, …"""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name == "backend_of":
                return True
        if isinstance(sub, ast.Attribute) and sub.attr == "backend":
            return True
        if isinstance(sub, ast.Constant) and sub.value == "backend":
            return True
    return False


def _backend_comparisons(tree: ast.AST, names: set[str]) -> list[int]:
    """Lines comparing a backend (by name) with a literal backend name or another call."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        literals = [
            e
            for o in operands
            for e in (o.elts if isinstance(o, ast.Tuple | ast.List | ast.Set) else [o])
            if isinstance(e, ast.Constant) and e.value in names
        ]
        if any(_names_a_backend(o) for o in operands) and (
            literals or any(isinstance(o, ast.Call) for o in operands)
        ):
            lines.append(node.lineno)
    return lines


def _backend_names() -> set[str]:
    from choiceaudit.scorers import BACKENDS

    return {b.name for b in BACKENDS}


def test_no_code_outside_scorers_compares_a_backend_name() -> None:
    # What a backend reads, returns and batches is its declared Capabilities; a name match
    # elsewhere is how a causal LM behind a server came to be asked another task.
    names = _backend_names()
    violations: list[str] = []
    for module, path in _modules():
        if _layer(_package(module)) == "scorers":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(SRC.parent)
        violations.extend(f"{rel}:{line}" for line in _backend_comparisons(tree, names))
    assert not violations, "backend names compared outside scorers:\n" + "\n".join(violations)


@pytest.mark.parametrize(
    ("text", "caught"),
    [
        ('backend_of(spec) == "hf"', True),
        ('scorers.backend_of(m) != "openai"', True),
        ('parse_model_spec(s).backend in ("hf", "openai")', True),
        ('desc["backend"] == "hf"', True),
        ('capabilities_of(m).reads == "menu"', False),
        ('base == "cosine"', False),
    ],
)
def test_the_backend_check_catches_the_forms_it_forbids(text: str, caught: bool) -> None:
    assert bool(_backend_comparisons(ast.parse(text), _backend_names())) is caught


# A reader of the code has no tracker: a comment or docstring says why in words, so a citation
# of a work item ("issue 12, item 5") is refused wherever the code is read. Upstream projects'
# bug references (another project's issue tracker, named with the project) are not ours.
_WORK_ITEM = re.compile(r"\b[Ii]ssues? \d+")


def _work_item_citations(text: str) -> list[int]:
    return [
        number
        for number, line in enumerate(text.splitlines(), start=1)
        if _WORK_ITEM.search(line) and "vllm issue" not in line.lower()
    ]


def test_no_comment_or_docstring_cites_a_work_item() -> None:
    root = SRC.parents[1]
    found = [
        f"{path.relative_to(root)}:{line}"
        for folder in ("src", "tests", "benchmarks")
        for path in sorted((root / folder).rglob("*.py"))
        if path.name != "test_architecture.py"
        for line in _work_item_citations(path.read_text(encoding="utf-8"))
    ]
    assert not found, "work-item citations (say why in words instead):\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("text", "caught"),
    [
        ('"""Vectors as returned (issue 12, item 5)."""', True),
        ("# Issue 3: fp32 batching", True),
        ("# prefix caching: vllm issue 42019", False),
        ("# item 4 wins at slot 0", False),
    ],
)
def test_the_work_item_check_catches_what_it_refuses(text: str, caught: bool) -> None:
    assert bool(_work_item_citations(text)) is caught


# --- private imports from tests/ and benchmarks/ ------------------------------------------
#
# Tests and benchmarks use the public names. The one exception is a package's own tests: the
# files under ``tests/<P>/`` (the folder mirroring ``choiceaudit.<P>``, the package as
# ``_package`` names it) are the white-box tests of that package's private modules, so they may
# import them, exactly as the package's own modules may; the package's file boundaries move
# whenever a module is split, and its tests should not have to move with them. Even there, a
# name the package exports is imported from the package. Everything else is a violation unless
# it is on ``PRIVATE_IMPORTS`` below, which may only shrink: an entry no longer needed fails too.
ROOT = SRC.parents[1]

#: file (relative to the repository) → the private modules it may still import, each with why.
PRIVATE_IMPORTS: dict[str, set[str]] = {}


def _test_package(path: Path) -> str:
    """``tests/instruments/signalling/test_x.py`` → ``instruments.signalling``; a benchmark or a
    file directly under ``tests/`` mirrors no package (``""``)."""
    rel = path.relative_to(ROOT)
    if rel.parts[0] != "tests" or len(rel.parts) < 3:
        return ""
    return _package(".".join(["choiceaudit", *rel.parts[1:-1]]))


def _private_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) for every import that reaches a private module or name of
    choiceaudit; ``name`` is the name imported from it (``None`` for ``import a._b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, None) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.extend((node.lineno, node.module, a.name) for a in node.names)
    return [
        (line, module, name)
        for line, module, name in found
        if module.split(".")[0] == "choiceaudit"
        and any(p.startswith("_") for p in [*module.split(".")[1:], *([name] if name else [])])
    ]


def _exported_by(package: str) -> set[str]:
    """The package's ``__all__``, read from its source (importing it would load torch)."""
    init = SRC.joinpath(*package.split("."), "__init__.py")
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def _private_import_findings(path: Path) -> tuple[list[str], set[str]]:
    """The violations in ``path`` (not excused by the package rule or the allowlist), and the
    private modules it imports from outside its own package (what the allowlist must excuse)."""
    rel = str(path.relative_to(ROOT))
    own = _test_package(path)
    violations: list[str] = []
    foreign: set[str] = set()
    for line, module, name in _private_imports(path):
        target = f"{module}.{name}" if name and _is_module(f"{module}.{name}") else module
        dest = _package(target)
        if dest == own:
            if name and name in _exported_by(dest):
                violations.append(f"{rel}:{line}: import {name} from choiceaudit.{dest}")
            continue
        foreign.add(target)
        if target not in PRIVATE_IMPORTS.get(rel, set()):
            violations.append(f"{rel}:{line}: {target} (private to {dest})")
    return violations, foreign


def _test_and_benchmark_files() -> list[Path]:
    return sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")])


def test_tests_and_benchmarks_import_public_names() -> None:
    violations: list[str] = []
    needed: dict[str, set[str]] = {}
    for path in _test_and_benchmark_files():
        found, foreign = _private_import_findings(path)
        violations.extend(found)
        needed[str(path.relative_to(ROOT))] = foreign
    stale = [
        f"{rel}: {module}"
        for rel, modules in PRIVATE_IMPORTS.items()
        for module in sorted(modules - needed.get(rel, set()))
    ]
    assert not violations, "private imports (use the public name):\n" + "\n".join(
        sorted(set(violations))
    )
    assert not stale, "allowlist entries no longer needed (remove them):\n" + "\n".join(stale)


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("tests/scorers/test_x.py", "scorers"),
        ("tests/instruments/signalling/test_x.py", "instruments.signalling"),
        ("tests/instruments/test_x.py", "instruments"),
        ("tests/test_x.py", ""),
        ("benchmarks/bench_x.py", ""),
    ],
)
def test_a_test_folder_mirrors_one_package(rel: str, expected: str) -> None:
    assert _test_package(ROOT / rel) == expected


# --- every public name a public module defines is in its __all__ -------------------------
#
# httpx-style: a public module's surface is exactly its ``__all__``. A name counts as defined by
# the module when the module binds it at top level (a function, class or assignment) or
# re-exports it from a private module of its own package (how a package builds its surface);
# what it imports from elsewhere (typing, another package) is that module's name, not its own.


def _defined_public_names(module: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = _package(module)
    names: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If | ast.Try):  # `if TYPE_CHECKING:` imports of lazy names
            stack.extend([*node.body, *node.orelse])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            private = any(p.startswith("_") for p in node.module.split(".")[1:])
            if private and _package(node.module) == own:
                names.update(
                    a.asname or a.name
                    for a in node.names
                    if not _is_module(f"{node.module}.{a.name}")
                )
    return {n for n in names if not n.startswith("_") and n != "__getattr__"}


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_module_all_lists_every_public_name_it_defines(name: str) -> None:
    path = dict(_modules())[name]
    exported = set(importlib.import_module(name).__all__)
    missing = sorted(_defined_public_names(name, path) - exported)
    assert not missing, f"{name} defines public names its __all__ lacks: {missing}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(): ...\nclass C: ...\nX = 1\nY: int = 2\n_z = 3", {"f", "C", "X", "Y"}),
        ("from choiceaudit.scorers._fake import FakeScorer", {"FakeScorer"}),
        ("from choiceaudit.types import Query\nfrom typing import Any", set()),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from choiceaudit.scorers._hf import HFScorer",
            {"HFScorer"},
        ),
    ],
)
def test_the_all_check_counts_what_a_module_defines(
    source: str, expected: set[str], tmp_path: Path
) -> None:
    path = tmp_path / "__init__.py"
    path.write_text(source, encoding="utf-8")
    assert _defined_public_names("choiceaudit.scorers", path) == expected


# --- function length ---------------------------------------------------------------------
#
# A function over 100 lines (from its ``def`` to its last line) is more than a reader holds at
# once: its steps become functions of their own, and typer options shared or long become
# module-level ``Annotated`` aliases.
MAX_FUNCTION_LINES = 100


def _length(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from ``def`` to the function's last line, less its docstring: a docstring's
    runnable example documents the one idea, it is not a second one."""
    length = (node.end_lineno or node.lineno) - node.lineno + 1
    first = node.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        length -= (first.end_lineno or first.lineno) - first.lineno + 1
    return length


def _long_functions(path: Path, root: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(root)}:{node.lineno}: {node.name} is {length} lines"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := _length(node)) > MAX_FUNCTION_LINES
    ]


def test_no_function_in_src_is_over_100_lines() -> None:
    long = [line for p in sorted(SRC.rglob("*.py")) for line in _long_functions(p, SRC.parent)]
    assert not long, "functions over 100 lines:\n" + "\n".join(long)


def test_the_length_check_counts_from_def_to_the_last_line_less_the_docstring(
    tmp_path: Path,
) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    path = tmp_path / "probe.py"
    path.write_text(f"def fits():\n{body}", encoding="utf-8")  # 100 lines
    assert _long_functions(path, tmp_path) == []
    path.write_text(f"async def over():\n{body}    return x0\n", encoding="utf-8")
    assert _long_functions(path, tmp_path) == ["probe.py:1: over is 101 lines"]
    documented = f'def fits():\n    """An example:\n\n    >>> fits()\n    """\n{body}'
    path.write_text(documented, encoding="utf-8")
    assert _long_functions(path, tmp_path) == []


#: A module is read whole by whoever changes it; past this length it is split by what it does.
MAX_MODULE_LINES = 500


def test_no_module_in_src_is_over_500_lines() -> None:
    long = [
        f"{p.relative_to(SRC.parent)}: {n} lines"
        for p in sorted(SRC.rglob("*.py"))
        if (n := len(p.read_text("utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, "modules over 500 lines:\n" + "\n".join(long)


def test_no_statement_is_kept_out_of_the_formatter() -> None:
    """The formatter lays out every statement (``make test`` checks it): a statement packed
    onto one line behind a formatter-off comment hides its length from the size limits above,
    which are there to show a module or a function holding a second idea."""
    marker = "fmt: " + "skip"  # spelled in two parts so this file does not match itself
    off = "fmt: " + "off"
    packed = [
        f"{p.relative_to(ROOT)}:{n}"
        for folder in ("src", "tests", "benchmarks")
        for p in sorted((ROOT / folder).rglob("*.py"))
        for n, line in enumerate(p.read_text("utf-8").splitlines(), 1)
        if marker in line or off in line
    ]
    assert not packed, "statements kept out of the formatter:\n" + "\n".join(packed)


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of a module graph: its strongly connected components of more than one
    module (Tarjan's algorithm, iterative), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_no_import_circle_inside_a_package() -> None:
    """Within a package no module imports, however indirectly, one that imports it back:
    every import counts, inside functions and under ``TYPE_CHECKING`` too, since a deferred
    import hides a circle rather than removing it."""
    edges: dict[str, set[str]] = {}
    for module, path in _modules():
        package = _package(module)
        edges[module] = {
            name
            for _, name in _imports(path, module)
            if name != module and _is_module(name) and _package(name) == package
        }
    assert _circles(edges) == []


def test_the_circle_check_finds_circles_and_only_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": {"g"}, "g": set()}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _circles({"x": {"y"}, "y": {"x"}, "z": {"x"}}) == [["x", "y"]]
    assert _circles({"p": {"q"}, "q": set()}) == []
