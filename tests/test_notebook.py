"""examples/notebook.ipynb runs in a real Jupyter kernel and reproduces docs/results.md's Du tables from the committed
store: each condition's accuracy and cost, and the paired comparisons against the single agent."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import install
from nbclient import NotebookClient

ROOT = Path(__file__).parent.parent
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"
STORE = ROOT / "runs" / "replicate" / "du.sqlite"
RESULTS = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
# docs/results.md's columns that come from the results (the paper's figures and the frontier do not)
MEASURED = ["condition", "n", "moot, 95% CI", "calls/q", "tokens/q", "paid calls", "unparsed", "errors"]


def _section(text: str, heading: str) -> str:
    """The ``## heading...`` section of a Markdown text, up to the next ``## ``."""
    start = text.index("\n## " + heading)
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _tables(text: str) -> list[list[dict[str, str]]]:
    """Every Markdown table of ``text`` as rows of column -> cell."""
    tables, header = [], None
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header, rows = cells, []
            elif not set("".join(cells)) <= set("-:"):
                rows.append(dict(zip(header, cells)))
        elif header is not None:
            tables.append(rows)
            header = None
    return tables


def documented() -> tuple[dict[str, list[list[str]]], list[list[str]]]:
    """From docs/results.md's Du section: per task, its condition table's measured cells; and every paired row
    against single as [task, difference, moot CI, only A / only B right, exact p]."""
    du = _section(RESULTS, "Du et al. 2024")
    conditions: dict[str, list[list[str]]] = {}
    pairs: list[list[str]] = []
    for part in du.split("\n### ")[1:]:
        task = part.split()[0]
        tables = _tables(part)
        first = next(t for t in tables if t and "moot, 95% CI" in t[0] and "condition" in t[0])
        conditions[task] = [[row[c] for c in MEASURED] for row in first]
        against = next(t for t in tables if t and "difference (points)" in t[0])
        pairs += [
            [task, r["difference (points)"], r["moot, 95% CI"], r["only A / only B right"], r["exact p"]]
            for r in against
        ]
    return conditions, pairs


def _printed(notebook: nbformat.NotebookNode) -> str:
    return "".join(o["text"] for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "stream")


def test_the_notebook_is_committed_without_outputs() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)
    assert any("moot.open(" in c.source for c in code) and any("moot.compare(" in c.source for c in code)


def test_the_notebook_reproduces_the_du_tables_of_the_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conditions, pairs = documented()
    assert set(conditions) == {"arithmetic", "gsm8k"} and len(pairs) == 4  # the document parsed as expected
    # this interpreter's kernel (its venv's moot), whatever kernels the machine has installed
    install(kernel_name="python3", prefix=str(tmp_path))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share" / "jupyter"))
    before = hashlib.sha256(STORE.read_bytes()).hexdigest()

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()

    printed = _printed(notebook)
    shown: dict[str, list[list[str]]] = {}
    task = ""
    for line in printed.splitlines():
        if line.startswith("### "):
            task = line.removeprefix("### ")
        elif line.startswith("| ") and not line.startswith("| condition"):
            shown.setdefault(task, []).append([c.strip() for c in line.strip().strip("|").split("|")])
    assert shown == conditions
    compared = [
        [c.strip() for c in line.split("|")] for line in printed.splitlines() if re.match(r"^\w+ \| \w+ − single", line)
    ]
    assert sorted(compared) == sorted(pairs)
    assert hashlib.sha256(STORE.read_bytes()).hexdigest() == before  # the committed store is only read
    # the last cell shows moot compare's tables
    last = notebook.cells[-1].outputs[0]["data"]["text/markdown"]
    documented_p = next(p[4] for p in pairs if p[:2] == ["arithmetic", "society − single"])
    assert "society vs single on arithmetic: accuracy" in last and f"| exact McNemar p | {documented_p} |" in last
