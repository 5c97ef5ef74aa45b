"""moot's import graph (run by hand; the numbers go into the issue notes on import circles).

Reads src/moot with ``ast`` (imports nothing) and prints the import circles (strongly connected components of
the graph, largest first, with their members), the number of edges, and the modules over 600 lines. What
counts as an edge is in tests/import_graph.py.

    python benchmarks/import_graph.py
    python benchmarks/import_graph.py --lines 400
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the helper lives in tests/

from tests.import_graph import module_graph, module_lines, strongly_connected

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=600, help="list the modules longer than this")
    args = parser.parse_args()
    root = REPO / "src"
    graph = module_graph(root)
    components = strongly_connected(graph)
    print(f"{len(graph)} modules, {sum(len(targets) for targets in graph.values())} edges")
    print(
        f"{len(components)} import circles (strongly connected components), "
        f"{sum(len(c) for c in components)} modules in them"
    )
    for i, component in enumerate(components, 1):
        print(f"\n[{i}] {len(component)} modules:")
        for name in component:
            print(f"    {name}")
    lines = module_lines(root)
    big = sorted(((n, name) for name, n in lines.items() if n > args.lines), reverse=True)
    print(f"\n{len(big)} modules over {args.lines} lines:")
    for n, name in big:
        print(f"  {n:6d}  {name}")


if __name__ == "__main__":
    main()
