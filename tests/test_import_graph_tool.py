"""tests/import_graph.py on small synthetic packages (``toy``) written to a temporary folder."""

from __future__ import annotations

from pathlib import Path

from tests.import_graph import module_graph, module_lines, strongly_connected


def write(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: source}`` under ``root``; every folder of the package gets an ``__init__.py``."""
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    for folder in {(root / relative).parent for relative in files}:
        init = folder / "__init__.py"
        if not init.exists():
            init.write_text("", encoding="utf-8")
    return root


def graph_of(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    return module_graph(write(tmp_path, files), package="toy")


def test_import_inside_a_function_counts(tmp_path: Path) -> None:
    graph = graph_of(
        tmp_path,
        {
            "toy/a.py": "class A:\n    def m(self):\n        from toy.b import thing\n        return thing\n",
            "toy/b.py": "thing = 1\n",
        },
    )
    assert graph["toy.a"] == {"toy.b"}  # toy itself is imported before toy.a runs: no edge


def test_import_under_type_checking_does_not_count(tmp_path: Path) -> None:
    graph = graph_of(
        tmp_path,
        {
            "toy/a.py": (
                "import typing\nfrom typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from toy.b import thing\n"
                "if typing.TYPE_CHECKING:\n    import toy.c\n"
                "else:\n    import toy.d\n"
            ),
            "toy/b.py": "thing = 1\n",
            "toy/c.py": "",
            "toy/d.py": "",
        },
    )
    assert graph["toy.a"] == {"toy.d"}  # the else branch runs


def test_relative_imports_resolve(tmp_path: Path) -> None:
    graph = graph_of(
        tmp_path,
        {
            "toy/sub/a.py": "from .b import x\nfrom .. import top\n",
            "toy/sub/b.py": "x = 1\n",
            "toy/sub/__init__.py": "from . import a\n",
            "toy/top.py": "",
        },
    )
    assert graph["toy.sub.a"] == {"toy.sub.b", "toy.top"}  # its own packages toy and toy.sub ran before it
    assert graph["toy.sub"] == {"toy.sub.a"}  # a package is no edge of its own


def test_from_package_import_submodule_is_an_edge_to_the_submodule(tmp_path: Path) -> None:
    graph = graph_of(
        tmp_path,
        {
            "toy/a.py": "from toy.pkg import sub, NAME\n",
            "toy/pkg/__init__.py": "NAME = 1\n",
            "toy/pkg/sub.py": "",
            "toy/pkg/other.py": "",
            "outside.py": "",
        },
    )
    assert graph["toy.a"] == {"toy.pkg", "toy.pkg.sub"}
    assert set(graph) == {"toy", "toy.a", "toy.pkg", "toy.pkg.sub", "toy.pkg.other"}


def test_imports_outside_the_package_are_dropped(tmp_path: Path) -> None:
    graph = graph_of(tmp_path, {"toy/a.py": "import os\nimport json.decoder\nfrom toy.missing import x\n"})
    assert graph["toy.a"] == set()


def test_three_module_cycle_is_one_component(tmp_path: Path) -> None:
    graph = graph_of(
        tmp_path,
        {
            "toy/a.py": "from toy import b\n",
            "toy/b.py": "def f():\n    import toy.c\n",
            "toy/c.py": "from .a import x\n",
            "toy/d.py": "import toy.a\n",
        },
    )
    assert strongly_connected(graph) == [["toy.a", "toy.b", "toy.c"]]


def test_dag_has_no_component(tmp_path: Path) -> None:
    graph = graph_of(
        tmp_path,
        {
            "toy/a.py": "import toy.b\nimport toy.c\n",
            "toy/b.py": "import toy.c\n",
            "toy/c.py": "import os\n",
        },
    )
    assert strongly_connected(graph) == []


def test_components_are_sorted_largest_first() -> None:
    graph = {"x": {"y"}, "y": {"x"}, "p": {"q"}, "q": {"r"}, "r": {"p"}, "s": {"s"}}
    assert strongly_connected(graph) == [["p", "q", "r"], ["x", "y"]]


def test_deep_chain_needs_no_recursion() -> None:
    n = 5000
    graph = {str(i): {str(i + 1)} for i in range(n)} | {str(n): {"0"}}
    assert [len(c) for c in strongly_connected(graph)] == [n + 1]


def test_module_lines(tmp_path: Path) -> None:
    write(tmp_path, {"toy/a.py": "x = 1\ny = 2\n", "toy/b.py": ""})
    assert module_lines(tmp_path, package="toy") == {"toy": 0, "toy.a": 2, "toy.b": 0}


def test_a_parent_package_is_an_edge_only_for_a_module_outside_it(tmp_path: Path) -> None:
    """Importing toy.pkg.sub from toy.a runs toy/pkg/__init__.py (an edge to toy.pkg); from toy.pkg.other it
    does not: toy.pkg ran before toy.pkg.other could. So a package that re-exports its modules is no circle."""
    graph = graph_of(
        tmp_path,
        {
            "toy/a.py": "import toy.pkg.sub\n",
            "toy/pkg/__init__.py": "from toy.pkg.other import NAME\n",
            "toy/pkg/other.py": "from toy.pkg.sub import x\nNAME = 1\n",
            "toy/pkg/sub.py": "x = 1\n",
        },
    )
    assert graph["toy.a"] == {"toy.pkg", "toy.pkg.sub"}
    assert graph["toy.pkg.other"] == {"toy.pkg.sub"}
    assert strongly_connected(graph) == []
