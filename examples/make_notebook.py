"""Write examples/notebook.ipynb (outputs cleared) from the cells below: `python examples/make_notebook.py`.

The notebook opens the committed store of the Du et al. replication as DataFrames (``moot.open``) and reproduces
docs/results.md's Du tables: each condition's accuracy and cost, and the paired comparisons against the single
agent (``moot.compare``). tests/test_notebook.py runs it in a Jupyter kernel and checks its figures against
docs/results.md.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    new_markdown_cell(
        "# A moot run as DataFrames\n"
        "\n"
        "Opens the stored run of the Du et al. replication (`runs/replicate/du.sqlite`, made by "
        "`moot run examples/replicate/du.toml`) read-only, and reproduces the Du section of "
        "[docs/results.md](../docs/results.md) from its results. Run it from `examples/` (Jupyter's folder for "
        'this file). `moot.frames.columns("results")` lists every column with its meaning.'
    ),
    new_code_cell(
        "from pathlib import Path\n"
        "\n"
        "import moot\n"
        "\n"
        'run = moot.open(Path("../runs/replicate/du.sqlite"))\n'
        "results = run.results()  # one row per condition x task x question x seed\n"
        'results[["condition", "task", "question", "answer", "gold", "correct", "calls", "cost", "agents", "rounds"]].head()'
    ),
    new_markdown_cell(
        "## Each condition: accuracy and what it used\n"
        "\n"
        "Accuracy with its Wilson 95% interval (one seed: the question is the unit), the calls and tokens one "
        "question's debate used (round 0 shared with another condition included), the calls paid (stored under "
        "the condition), and the results left unparsed or errored."
    ),
    new_code_cell(
        "from statsmodels.stats.proportion import proportion_confint\n"
        "\n"
        'results["tokens"] = results["prompt_tokens"] + results["completion_tokens"]\n'
        'paid = run.calls().groupby(["task", "condition"]).size().rename("paid_calls")\n'
        "table = (\n"
        '    results.groupby(["task", "condition"], sort=False)\n'
        "    .agg(\n"
        '        n=("question", "size"),\n'
        '        right=("correct", "sum"),\n'
        '        calls_per_q=("calls", "mean"),\n'
        '        tokens_per_q=("tokens", "mean"),\n'
        '        unparsed=("status", lambda s: int((s == "unparsed").sum())),\n'
        '        errors=("status", lambda s: int((s == "error").sum())),\n'
        "    )\n"
        "    .join(paid)\n"
        "    .reset_index()\n"
        ")\n"
        'table["accuracy"] = table["right"] / table["n"]\n'
        'table["low"], table["high"] = proportion_confint(table["right"], table["n"], method="wilson")\n'
        "table"
    ),
    new_markdown_cell("The same rows as docs/results.md prints them (moot rounds half up):"),
    new_code_cell(
        "from moot.analysis.formatting import fixed, p_value, percent\n"
        "\n"
        'for task, rows in table.groupby("task", sort=False):\n'
        '    print(f"### {task}")\n'
        '    print("| condition | n | moot, 95% CI | calls/q | tokens/q | paid calls | unparsed | errors |")\n'
        "    for r in rows.itertuples():\n"
        '        ci = f"{percent(r.accuracy)} [{fixed(100 * r.low, 1)}, {fixed(100 * r.high, 1)}]"\n'
        '        tokens = f"{int(fixed(r.tokens_per_q, 0)):,}"\n'
        "        cells = [r.condition, r.n, ci, fixed(r.calls_per_q, 1), tokens, r.paid_calls, r.unparsed, r.errors]\n"
        '        print("| " + " | ".join(map(str, cells)) + " |")'
    ),
    new_markdown_cell(
        "## Against the single agent, paired on the same questions\n"
        "\n"
        "`moot.compare` is `moot compare RUN A B` as a function: the same records, the same numbers (exact "
        "McNemar test, paired bootstrap interval of the difference, in points)."
    ),
    new_code_cell(
        'for arm in ("society", "vote"):\n'
        '    comparison = moot.compare(run, arm, "single")\n'
        "    for task, pair in comparison.pairs:\n"
        "        s = pair.accuracy\n"
        '        ci = f"{fixed(100 * s.difference, 1, sign=True)} [{fixed(100 * s.difference_ci.low, 1)}, {fixed(100 * s.difference_ci.high, 1)}]"\n'
        '        print(f"{task} | {arm} − single | {ci} | {s.a_only} / {s.b_only} | {p_value(s.mcnemar_p)}")'
    ),
    new_code_cell('moot.compare(run, "society", "single", task="arithmetic")  # the tables `moot compare` prints'),
]


def main() -> None:
    notebook = new_notebook(cells=CELLS)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    nbformat.validate(notebook)
    nbformat.write(notebook, Path(__file__).with_name("notebook.ipynb"))


if __name__ == "__main__":
    main()
