"""``sdcrisk recommend`` before and after the fit cache: CPU, wall, fits, and the same plans.

Two real files, each a 5% Bernoulli sample (``numpy.random.default_rng(0).random(N) < 0.05``,
as in the data sets' ground truth) with the KS8 keys of its README:

* ``adult``: ../shared/data/uci_adult (2,443 records; N = 48,842), ``--target 150``;
* ``kdd``: ../shared/data/census_income_kdd (14,915 records; N = 299,285), ``--target 1500``.

For each case and method it runs, in a fresh process each, with ``--workers 1``::

    python -m sdcrisk recommend SAMPLE.csv --keys KS8 --population-size N --target T
        --method METHOD --format json --out OUT.json

once with the sources ``--before`` (another checkout's ``src``) and once with this
checkout's, and prints the CPU seconds (user + system, worker processes included), the wall
seconds, the number of estimator fits (top-level ``Estimator.fit`` calls in the command's own
process, the file's own included) and whether the JSON outputs are equal to the first run's
(every field: plans, merges, suppressions, objective values, paths, measures, settings; but
``settings.ran``, where they ran). ``--parallel`` adds a run of this checkout with the CLI's
default workers (every CPU from 5,000 records, from 1,000 re-fitting auto); ``--target``
replaces the cases' targets.

Run::

    python benchmarks/bench_recommend_cache.py --before /path/to/before/src
    python benchmarks/bench_recommend_cache.py --before OTHER/src --cases kdd --methods nb \
        --target 500
    python benchmarks/bench_recommend_cache.py --cases adult --methods auto --parallel
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_recommend import run_timed

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / ".." / "shared" / "data"
CASES = {
    "adult": ("uci_adult/uci_adult.csv.gz", 48_842, 150,
              ["age", "sex", "race", "marital_status", "education", "native_country",
               "workclass", "occupation"]),
    "kdd": ("census_income_kdd/census_income_kdd.csv.gz", 299_285, 1500,
            ["age", "sex", "race", "marital_stat", "education", "citizenship",
             "major_occupation_code", "country_of_birth_self"]),
}
#: runs the CLI counting the top-level estimator fits (a meta-estimator's candidates not
#: counted again), printed last on stderr
WRAP = """
import sys
from sdcrisk.estimators import _base
orig, depth, fits = _base.Estimator.fit, [0], [0]
def fit(self, *a, **k):
    depth[0] += 1
    fits[0] += depth[0] == 1
    try:
        return orig(self, *a, **k)
    finally:
        depth[0] -= 1
_base.Estimator.fit = fit
from sdcrisk.cli import main
rc = main(sys.argv[1:])
print(f"FITS {fits[0]}", file=sys.stderr)
sys.exit(rc)
"""


def sample(case: str, tmp: Path) -> tuple[Path, list[str], int, float]:
    import pandas as pd

    rel, n_pop, target, keys = CASES[case]
    frame = pd.read_csv(DATA / rel)
    keep = np.random.default_rng(0).random(len(frame)) < 0.05
    path = tmp / f"{case}.csv"
    frame.loc[keep, keys].to_csv(path, index=False)
    return path, keys, n_pop, target


def run(src: Path, data: Path, keys, n_pop, target, method, out: Path,
        extra: list[str]) -> dict:
    cmd = [sys.executable, "-c", WRAP, "recommend", str(data), "--keys", ",".join(keys),
           "--population-size", str(n_pop), "--target", str(target), "--method", method,
           "--format", "json", "--out", str(out), *extra]
    done, wall, cpu, _ = run_timed(cmd, src)
    fits = int(done.stderr.strip().splitlines()[-1].split()[1])
    return {"cpu_s": cpu, "wall_s": wall, "fits": fits, "load": os.getloadavg()[0]}


def differences(a, b, where="") -> list[str]:
    """Paths at which two JSON trees differ (exactly: floats bit for bit)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a.keys() ^ b.keys())}"]
        return [d for k in a for d in differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} != {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", help="sources to compare with (another checkout's src)")
    ap.add_argument("--after", default=str(HERE.parent / "src"),
                    help="sources to measure (default: this checkout's)")
    ap.add_argument("--cases", default="adult,kdd")
    ap.add_argument("--methods", default="nb,auto")
    ap.add_argument("--target", type=float, help="instead of the case's target")
    ap.add_argument("--parallel", action="store_true",
                    help="also run this checkout with the CLI's default workers")
    args = ap.parse_args()
    after_src = Path(args.after)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for case in args.cases.split(","):
            data, keys, n_pop, target = sample(case, tmp)
            target = args.target if args.target is not None else target
            for method in args.methods.split(","):
                serial = ["--workers", "1"]
                runs = ([("before", Path(args.before), serial)] if args.before else []) + [
                    ("after", after_src, serial)]
                if args.parallel:
                    runs.append(("after, default workers", after_src, []))
                outs = {}
                for label, src, extra in runs:
                    outs[label] = tmp / f"{case}_{method}_{len(outs)}.json"
                    r = run(src, data, keys, n_pop, target, method, outs[label], extra)
                    d = json.loads(outs[label].read_text(encoding="utf-8"))
                    best = next((p for p in d["plans"] if p["reached"]), None)
                    print(f"{case:<5} {method:<4} {label:<10} cpu {r['cpu_s']:6.1f} s  wall "
                          f"{r['wall_s']:6.1f} s  fits {r['fits']:4d}  load {r['load']:.2f}  "
                          f"best {best['label'] if best else None} "
                          f"({best['records_changed'] if best else '-'} records)", flush=True)
                first, *others = outs
                for label in others:  # settings.ran says where the plans ran
                    diff = [d for d in differences(
                        json.loads(outs[first].read_text(encoding="utf-8")),
                        json.loads(outs[label].read_text(encoding="utf-8")))
                        if not d.startswith(".settings.ran:")]
                    print(f"{case:<5} {method:<4} JSON {first} == {label}: {not diff}"
                          + "".join(f"\n    {d}" for d in diff[:10]), flush=True)


if __name__ == "__main__":
    main()
