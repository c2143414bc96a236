"""Start-up of the command line as a whole process (issue 20 item 6).

Runs ``python -m sdcrisk assess example:uk_census2011 --keys region,sex,age_band
--population-size 56075912 --method nb`` ``--runs`` times (default 5) in fresh processes with
this checkout's sources first on PYTHONPATH, and prints the median wall seconds and the
median CPU seconds (user + system; on a shared machine wall time follows the load, CPU time
does not). Then it runs the command once under ``python -X importtime`` and prints the
packages whose imports cost most (cumulative microseconds of the top-level imports, and the
slowest modules by their own time).

Run::

    python benchmarks/bench_startup.py
    python benchmarks/bench_startup.py --runs 9 --top 15
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMAND = ["-m", "sdcrisk", "assess", "example:uk_census2011", "--keys",
           "region,sex,age_band", "--population-size", "56075912", "--method", "nb"]


def _env() -> dict:
    src = HERE.parent / "src"
    return {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def timed_run() -> tuple[float, float]:
    out = subprocess.run(["/usr/bin/time", "-f", "%e %U %S", sys.executable, *COMMAND],
                         env=_env(), capture_output=True, text=True, check=True)
    wall, user, system = map(float, out.stderr.strip().splitlines()[-1].split())
    return wall, user + system


def import_costs(top: int) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    out = subprocess.run([sys.executable, "-X", "importtime", *COMMAND], env=_env(),
                         capture_output=True, text=True, check=True)
    rows = []
    for line in out.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), len(m.group(3)), m.group(4)))
    tops = sorted(((cum, name) for _, cum, depth, name in rows if depth == 1), reverse=True)
    own = sorted(((self_, name) for self_, _, _, name in rows), reverse=True)
    return tops[:top], own[:top]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--top", type=int, default=12)
    args = p.parse_args(argv)
    timed_run()  # warm the file cache and numba's on-disk cache
    runs = [timed_run() for _ in range(args.runs)]
    walls, cpus = zip(*runs, strict=True)
    print(f"load average {os.getloadavg()[0]:.1f}; {args.runs} runs")
    print(f"wall seconds: median {statistics.median(walls):.2f} "
          f"(min {min(walls):.2f}, max {max(walls):.2f})")
    print(f"CPU seconds (user + system): median {statistics.median(cpus):.2f} "
          f"(min {min(cpus):.2f}, max {max(cpus):.2f})")
    tops, own = import_costs(args.top)
    print("\ntop-level imports, cumulative ms:")
    for us, name in tops:
        print(f"  {us / 1000:8.1f}  {name}")
    print("\nmodules by own import time, ms:")
    for us, name in own:
        print(f"  {us / 1000:8.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
