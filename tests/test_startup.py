"""Start-up: `moot --help` and `moot runs` load no heavy library, and a `moot run` of a protocol that needs no
model library (society on arithmetic, scripted backend) loads none of torch, transformers,
sentence-transformers, sympy or scipy. Checked in a fresh interpreter, by the modules it imported, never
by timing (benchmarks/startup.py times them by hand)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# never loaded by a debate that needs no model library (the embeddings extra brings torch, and sympy with it)
MODEL_LIBRARIES = ["torch", "transformers", "sentence_transformers", "sympy", "scipy"]
# nor, by the commands that only list, analysis, plotting, data and backend libraries or moot's own config,
# protocol and task code
LISTING_LIBRARIES = [
    *MODEL_LIBRARIES,
    *("numpy", "statsmodels", "sklearn", "matplotlib", "jinja2", "datasets", "pyarrow", "chess", "openai"),
    *("llama_cpp", "moot.runner.config", "moot.debate.protocols", "moot.tasks"),
]
EXPERIMENT = """
name = "startup"
[[tasks]]
name = "arithmetic"
count = 2
[agent]
backend = { kind = "scripted", model = "numbers" }
[[conditions]]
name = "society"
protocol = "society"
"""
# runs the commands one after the other in one interpreter; after each, the watched modules it has loaded
PROBE = """
import json, sys
from moot.cli import app

watched, commands = json.loads(sys.argv[1]), json.loads(sys.argv[2])
loaded = [[m for m in watched if m in sys.modules]]
for args in commands:
    try:
        app(args, prog_name="moot")
    except SystemExit as exc:
        assert not exc.code, (args, exc.code)
    loaded.append([m for m in watched if m in sys.modules])
print("LOADED " + json.dumps(loaded))
"""


def probe(commands: list[list[str]], cwd: Path) -> tuple[list[list[str]], str]:
    """The watched modules loaded after importing moot.cli and after each command, and the output."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(LISTING_LIBRARIES), json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("LOADED "))
    return json.loads(line.removeprefix("LOADED ")), done.stdout


def test_help_runs_and_a_scripted_run_load_no_heavy_library(tmp_path: Path) -> None:
    experiment, output = tmp_path / "startup.toml", tmp_path / "startup.sqlite"
    experiment.write_text(EXPERIMENT)
    (imported, helped, ran), out = probe([["--help"], ["run", str(experiment), "--output", str(output)]], tmp_path)
    assert imported == helped == [] and "Usage: moot" in out
    assert output.is_file() and "society" in out
    # `moot run` loads the config, protocol and task code it runs, but no model library
    assert not set(ran) & set(MODEL_LIBRARIES), ran

    (imported, listed), out = probe([["runs", str(tmp_path)]], tmp_path)
    assert imported == listed == [] and "startup" in out and "2/2" in out  # the run is listed, complete
