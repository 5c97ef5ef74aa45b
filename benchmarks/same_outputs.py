"""Record what moot prints and writes for the published stores, to show a refactoring changes no byte.

Run by hand before and after a change that should not change behaviour, then diff the two folders:

    python benchmarks/same_outputs.py --stores /tmp/stores --out /tmp/before   # on the old tree
    python benchmarks/same_outputs.py --stores /tmp/stores --out /tmp/after    # on the new tree
    diff -r /tmp/before /tmp/after && echo same

STORES is a frozen copy of runs/replicate/ (a store being written by a run would differ between the
two recordings). The script copies this tree's tracked files into a scratch folder, puts the stores
under its runs/replicate/, and runs each command there with this tree's src/ first on the import
path: `moot results` (every file it writes under docs/), then report, compare (plain, split by a
single agent, and at equal budget in each unit), rounds, readers, export, runs, protocols, tasks,
backends and extensions. Each command's stdout, stderr and exit status go to OUT/NAME.txt; the
regenerated docs/results/ and the report's Markdown and figures go beside them. HTML reports embed
nothing time-dependent and are compared too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (name, arguments); STORE/... is a path under the scratch folder's runs/replicate/.
# fmt: off
COMMANDS: list[tuple[str, list[str]]] = [
    ("results", ["results"]),
    ("results-check", ["results", "--check"]),
    ("report-du", ["report", "STORE/du.sqlite", "--md", "OUT/report-du.md", "--html", "OUT/report-du.html"]),
    ("report-across", ["report", "STORE/across.sqlite", "--md", "OUT/report-across.md", "--no-html",
                       "--figures", "OUT/figures-across", "--resamples", "2000"]),
    ("report-dar-strict", ["report", "STORE/dar.sqlite", "--no-html", "--reader", "strict", "--resamples", "2000"]),
    ("report-zhu", ["report", "STORE/zhu.sqlite", "--no-html", "--resamples", "2000"]),
    ("report-stopping", ["report", "STORE/stopping.sqlite", "--no-html", "--resamples", "2000"]),
    ("report-math", ["report", "STORE/math.sqlite", "--no-html", "--resamples", "2000"]),
    ("compare-du", ["compare", "STORE/du.sqlite", "society", "single"]),
    ("compare-across", ["compare", "STORE/across.sqlite", "mad-m2", "dar"]),
    ("compare-across-single", ["compare", "STORE/across.sqlite", "society", "single", "--reader", "paper"]),
    ("budget-tokens", ["compare", "STORE/across.sqlite", "society", "--budget", "tokens"]),
    ("budget-completion", ["compare", "STORE/across.sqlite", "dar", "--budget", "completion"]),
    ("budget-calls", ["compare", "STORE/across.sqlite", "mad-m2", "--budget", "calls"]),
    ("budget-missing-prices", ["compare", "STORE/across.sqlite", "society", "--budget", "cost"]),
    ("rounds-du", ["rounds", "STORE/du.sqlite"]),
    ("readers", ["readers", "--help"]),
    ("export-du", ["export", "STORE/du.sqlite", "--format", "csv", "--out", "OUT/export-du.csv"]),
    ("runs", ["runs", "STORE"]),
    ("protocols", ["protocols"]),
    ("components", ["protocols", "components"]),
    ("protocols-show", ["protocols", "show", "dar"]),
    ("tasks", ["tasks"]),
    ("backends", ["backends"]),
    ("extensions", ["extensions"]),
    ("gate-help", ["gate", "train", "--help"]),
    ("run-dry", ["run", "examples/replicate/across.toml", "--dry-run"]),
    ("run-bad", ["run", "--task", "nonesuch", "--dry-run"]),
]
# fmt: on


def scratch_tree(stores: Path) -> Path:
    """A copy of this tree's tracked files, with the frozen stores under runs/replicate/."""
    work = Path(tempfile.mkdtemp(prefix="moot-same-"))
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, work / name)
    target = work / "runs" / "replicate"
    target.mkdir(parents=True, exist_ok=True)
    for store in sorted(stores.glob("*.sqlite")):
        shutil.copy2(store, target / store.name)
    return work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=Path, required=True, help="a frozen copy of runs/replicate/")
    parser.add_argument("--out", type=Path, required=True, help="folder to write (must not exist)")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    out.mkdir(parents=True)
    work = scratch_tree(args.stores.resolve())
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "160", "NO_COLOR": "1", "TERM": "dumb"}
    for name, arguments in COMMANDS:
        argv = [a.replace("STORE", str(work / "runs" / "replicate")).replace("OUT", str(out)) for a in arguments]
        done = subprocess.run([sys.executable, "-m", "moot", *argv], cwd=work, env=env, capture_output=True, text=True)
        text = done.stdout + "\n--- stderr\n" + done.stderr + f"\n--- exit {done.returncode}\n"
        (out / f"{name}.txt").write_text(text.replace(str(out), "OUT"))
        print(f"{name}: exit {done.returncode}", flush=True)
    shutil.copytree(work / "docs" / "results", out / "docs-results")
    shutil.copy2(work / "docs" / "results.md", out / "results.md")
    for written in out.rglob("*"):  # reports name their store by its path in the scratch folder
        if written.suffix in (".md", ".html", ".csv", ".json", ".txt"):
            written.write_text(written.read_text().replace(str(work), "WORK"))
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
