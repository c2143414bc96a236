"""``sdcrisk recommend`` with the default ``auto`` on census_income_kdd: CPU, wall and memory.

Draws 50,000 records of ``../shared/data/census_income_kdd`` (``DataFrame.sample(n=50_000,
random_state=0)``, written once to a temporary CSV) and runs, in a fresh process each::

    python -m sdcrisk recommend SAMPLE.csv --keys age,sex,race,marital_stat,education,
        citizenship,major_occupation_code,country_of_birth_self --population-size 299285
        --target 50 --format json --out OUT.json [--workers 1]

once in this process's order (``--workers 1``: serial) and once with the CLI's default (all
CPUs from 5,000 records), and prints per run the CPU seconds of the process and its workers
(user + system), the wall seconds, the peak RSS of the largest process (MB) and the load
average before and after; then whether the two JSON outputs give the same plans. ``--src``
runs another checkout's sources (for before/after figures); ``--records``/``--keys`` change
the case (``--keys 6``: the first six keys).

Run::

    python benchmarks/bench_recommend.py
    python benchmarks/bench_recommend.py --src /path/to/other/checkout/src --records 10000 --keys 6
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / ".." / "shared" / "data" / "census_income_kdd" / "census_income_kdd.csv.gz"
KEYS = ["age", "sex", "race", "marital_stat", "education", "citizenship",
        "major_occupation_code", "country_of_birth_self"]


def run(src: Path, sample: Path, keys: list[str], out: Path, workers: int | None) -> dict:
    cmd = [sys.executable, "-m", "sdcrisk", "recommend", str(sample), "--keys", ",".join(keys),
           "--population-size", "299285", "--target", "50", "--format", "json",
           "--out", str(out)]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    load = os.getloadavg()[0]
    _, wall, cpu, after = run_timed(cmd, src)
    return {"cpu_s": cpu, "wall_s": wall, "peak_rss_mb": after.ru_maxrss / 1024,
            "load_before": load, "load_after": os.getloadavg()[0]}


def run_timed(cmd: list[str], src: Path):
    """Run ``cmd`` with ``src`` on PYTHONPATH: (the finished process, wall s, CPU s of the
    child, the children's rusage after it); SystemExit with its stderr if it failed."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"recommend failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, wall, cpu, after


def plans(path: Path) -> list:
    d = json.loads(path.read_text(encoding="utf-8"))
    return [d["objective_before"], [{k: v for k, v in p.items()} for p in d["plans"]]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=str(HERE.parent / "src"),
                    help="the sources to run (default: this checkout's)")
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--keys", type=int, default=8, help="the first KEYS of the 8 key variables")
    ap.add_argument("--only", choices=["serial", "parallel"], help="run one of the two")
    args = ap.parse_args()
    if not DATA.exists():
        raise SystemExit(f"needs {DATA}")
    import pandas as pd

    keys = KEYS[:args.keys]
    with tempfile.TemporaryDirectory() as tmp:
        sample = Path(tmp) / f"kdd_{args.records}.csv"
        pd.read_csv(DATA).sample(n=args.records, random_state=0).to_csv(sample, index=False)
        outs = {}
        print(f"recommend auto, census_income_kdd {args.records:,} records x {len(keys)} keys, "
              f"sources {args.src}")
        for label, workers in (("serial", 1), ("parallel", None)):
            if args.only not in (None, label):
                continue
            outs[label] = Path(tmp) / f"{label}.json"
            r = run(Path(args.src), sample, keys, outs[label], workers)
            print(f"{label:<9} cpu {r['cpu_s']:7.1f} s  wall {r['wall_s']:7.1f} s  peak RSS "
                  f"{r['peak_rss_mb']:6.0f} MB  load {r['load_before']:.2f} -> "
                  f"{r['load_after']:.2f}", flush=True)
        if len(outs) == 2:
            same = plans(outs["serial"]) == plans(outs["parallel"])
            print(f"serial and parallel plans identical: {same}")
        for label, path in outs.items():
            d = json.loads(path.read_text(encoding="utf-8"))
            best = next((p for p in d["plans"] if p["reached"]), None)
            print(f"{label}: tau2 before {d['objective_before']:.6g}, {len(d['plans'])} plans, "
                  f"best {best['kind'] if best else None} "
                  f"{best.get('key') if best else ''} objective "
                  f"{best['objective_after'] if best else float('nan'):.6g}")


if __name__ == "__main__":
    main()
