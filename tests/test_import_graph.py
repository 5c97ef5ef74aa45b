"""moot's import graph has no circle and keeps its layers (docs/layers.toml): built from the source with ``ast``
(tests/import_graph.py), imports inside functions included, so a change that ties two packages together fails here
with the modules named."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.import_graph import module_graph, strongly_connected

ROOT = Path(__file__).resolve().parent.parent
GRAPH = module_graph(ROOT / "src")
LAYERS = tomllib.loads((ROOT / "docs" / "layers.toml").read_text(encoding="utf-8"))["layers"]


def layer_of(module: str) -> int | None:
    """The index of the layer whose longest name covers ``module`` (None: no layer names it)."""
    best: tuple[int, int] | None = None
    for index, layer in enumerate(LAYERS):
        for name in layer["modules"]:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > best[1]):
                best = (index, len(name))
    return best[0] if best is not None else None


def test_no_import_circle() -> None:
    circles = strongly_connected(GRAPH)
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)


def test_every_module_has_a_layer() -> None:
    assert [m for m in GRAPH if layer_of(m) is None] == []


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = [
        f"{a} ({LAYERS[layer_of(a)]['name']}) imports {b} ({LAYERS[layer_of(b)]['name']})"  # type: ignore[index]
        for a, targets in sorted(GRAPH.items())
        for b in sorted(targets)
        if layer_of(b) > layer_of(a)  # type: ignore[operator]
    ]
    assert upward == []


def test_the_check_sees_a_circle_and_an_upward_import(tmp_path: Path) -> None:
    """The graph the tests read does catch what they refuse: a planted circle and a planted upward import."""
    package = tmp_path / "moot"
    (package / "debate").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("from moot.debate import engine\n")
    (package / "debate" / "__init__.py").write_text("")
    (package / "debate" / "engine.py").write_text("def f():\n    import moot.errors\n")
    graph = module_graph(tmp_path)
    assert strongly_connected(graph) == [["moot.debate.engine", "moot.errors"]]
    assert layer_of("moot.errors") == 0 and layer_of("moot.debate.engine") == 4
