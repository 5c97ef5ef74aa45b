"""Start-up benchmark (run by hand): the wall time of `moot --help` and `moot runs`, process start to exit.

Each command runs in a fresh process several times (the first run warms the file cache and is not
counted); printed are the median, the fastest and the slowest wall time, and the median CPU time (user +
system) of the process, which a machine busy with other work inflates less. `moot runs` lists a folder
holding one small run of the scripted backend, made first. The target is under half a second each.

    python benchmarks/startup.py              # 5 timed repetitions
    python benchmarks/startup.py --repeat 10
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# the installed `moot` script beside this interpreter, as a user types it (else python -m moot)
SCRIPT = Path(sys.executable).with_name("moot")
MOOT = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "moot"]


def timed(args: list[str]) -> tuple[float, float]:
    """The wall and CPU (user + system) seconds of one `moot ARGS` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([*MOOT, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions of each command")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder) / "smoke.sqlite"
        config = Path(folder) / "smoke.toml"
        config.write_text(
            'name = "startup"\n[[tasks]]\nname = "arithmetic"\ncount = 2\n'
            '[agent]\nbackend = { kind = "scripted", model = "numbers" }\n'
            '[[conditions]]\nname = "society"\nprotocol = "society"\n'
        )
        subprocess.run([*MOOT, "run", str(config), "--output", str(run)], check=True, stdout=subprocess.DEVNULL)
        commands = {"moot --help": ["--help"], "moot runs": ["runs", folder]}
        print(f"{'command':<12} {'median':>8} {'fastest':>8} {'slowest':>8} {'CPU':>8}  ({options.repeat} runs each)")
        for name, command in commands.items():
            timed(command)  # warm-up, not counted
            walls, cpus = zip(*(timed(command) for _ in range(options.repeat)))
            print(
                f"{name:<12} {statistics.median(walls):>7.3f}s {min(walls):>7.3f}s {max(walls):>7.3f}s "
                f"{statistics.median(cpus):>7.3f}s"
            )


if __name__ == "__main__":
    main()
