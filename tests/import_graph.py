"""moot's import graph, read from the source with ``ast`` (nothing is imported): which modules import which,
and the import circles (strongly connected components) among them.

An edge A -> B means running A can import B: every ``import`` / ``from ... import`` in A counts, those inside
functions and methods included (they run when called), those under ``if TYPE_CHECKING:`` excluded (they never
run). Importing ``pkg.sub`` also runs ``pkg/__init__.py``, so each parent package of an imported module is an
edge too, except the importer's own packages: they were imported before it ran. Imports by string (``importlib.import_module``, lazy exports) are not seen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path


def _module_files(root: Path, package: str) -> dict[str, Path]:
    """Module name -> file, for every .py file under ``root / package`` (``__init__.py`` names its package)."""
    modules: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``<anything>.TYPE_CHECKING`` (``typing.TYPE_CHECKING``)."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _runtime_imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node`` that can run, skipping the bodies of ``if TYPE_CHECKING:`` blocks
    (their ``else:`` branches do run)."""
    stack: list[ast.AST] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Import | ast.ImportFrom):
            yield current
            continue
        if isinstance(current, ast.If) and _is_type_checking(current.test):
            stack.extend(current.orelse)
            continue
        stack.extend(ast.iter_child_nodes(current))


def _resolve_base(module: str, is_package: bool, node: ast.ImportFrom) -> str | None:
    """The absolute module a ``from ... import`` names (relative imports resolved against ``module``); None when
    a relative import climbs above the top package."""
    if node.level == 0:
        return node.module
    # a package's own __init__ is level 1's anchor; a plain module's anchor is the package holding it
    anchor = module.split(".") if is_package else module.split(".")[:-1]
    climb = node.level - 1
    if climb > len(anchor) - 1:
        return None
    base = anchor[: len(anchor) - climb]
    if node.module:
        base = base + node.module.split(".")
    return ".".join(base)


def _with_parents(name: str) -> list[str]:
    """``a.b.c`` -> ``[a, a.b, a.b.c]``: a module and the packages whose ``__init__`` importing it runs."""
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def module_graph(root: Path, package: str = "moot") -> dict[str, set[str]]:
    """The import graph of ``package``, whose folder is ``root / package`` (``src`` for moot): every module ->
    the modules of the package it can import at run time, parent packages included, itself excluded."""
    files = _module_files(root, package)
    graph: dict[str, set[str]] = {name: set() for name in files}
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: list[str] = []
        for node in _runtime_imports(tree):
            if isinstance(node, ast.Import):
                targets.extend(alias.name for alias in node.names)
                continue
            base = _resolve_base(module, is_package, node)
            if base is None:
                continue
            targets.append(base)
            # `from pkg import sub` where pkg/sub is a module imports that module; a plain name adds nothing more
            targets.extend(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        # a module's own packages are imported before it runs (importing pkg.mod runs pkg/__init__.py first), so
        # an import that reaches one of them through its parents imports nothing new: no edge
        own = set(_with_parents(module))
        for target in targets:
            for name in _with_parents(target):
                if name in files and name not in own:
                    graph[module].add(name)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of more than one module (Tarjan's algorithm, iterative
    so deep graphs don't hit the recursion limit), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph.get(start, ()))))]
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components, key=lambda c: (-len(c), c))


def module_lines(root: Path, package: str = "moot") -> dict[str, int]:
    """Lines per module of ``package`` (folder ``root / package``): where the big modules are."""
    return {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in _module_files(root, package).items()
    }
