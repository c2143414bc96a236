"""IPF speed and memory (issue: log-linear risk).

1. The ONS 8-variable key shape (11 x 96 x 2 x 7 x 6 x 5 x 5 x 5 = 11,088,000 cells),
   all-2-way model, 5 iterations: the fused numba kernel (float32 and float64) against a
   plain NumPy IPF (sum over the other axes, multiply by the ratio) in the same run.
2. The whole ``sdcrisk assess --method loglinear`` process on 10^6 records with that key.
3. The ONS 10-variable key (adds 6 x 14 categories: 931,392,000 cells), all-2-way,
   2 iterations, float32: seconds and peak RSS.

Usage: python benchmarks/bench_ipf.py [--skip-10] [--records N]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SHAPE8 = (11, 96, 2, 7, 6, 5, 5, 5)
SHAPE10 = SHAPE8 + (6, 14)


def skewed_records(shape, n, seed=0):
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, 20, n)
    cols = {}
    for j, d in enumerate(shape):
        probs = rng.dirichlet(np.full(d, 0.5), size=20)
        u = rng.random(n)
        cum = np.cumsum(probs, axis=1)[latent]
        cols[f"k{j}"] = np.minimum((u[:, None] > cum).sum(axis=1), d - 1)
        cols[f"k{j}"][:d] = np.arange(d)  # every level present
    return cols


def margins_from(cols, shape, gens):
    from sdcrisk import Microdata, tabulate
    from sdcrisk.estimators._ipf import margin_of_cells

    md = Microdata.from_source(cols, list(cols), max_levels=None)
    table = tabulate(md)
    return [margin_of_cells(table, g) for g in gens], table


def bench_fit(shape, iterations, n_records, numpy_too=True):
    from sdcrisk.estimators._ipf import ipf, ipf_numpy, parse_terms

    keys = [f"k{j}" for j in range(len(shape))]
    gens = parse_terms("all-2-way", keys)
    targets, _ = margins_from(skewed_records(shape, n_records), shape, gens)
    rows = []
    fused32 = None
    ipf((3, 4), ((0,), (1,)), [np.ones(3) * 4, np.ones(4) * 3], max_iter=1)  # compile/load
    for dtype in (np.float32, np.float64):
        t = time.perf_counter()
        r = ipf(shape, gens, targets, max_iter=iterations, tol=0, dtype=dtype)
        rows.append((f"fused numba, {np.dtype(dtype).name}", time.perf_counter() - t,
                     r.iterations))
        if dtype == np.float32:
            fused32 = r.fitted
        del r
    if numpy_too:
        t = time.perf_counter()
        r = ipf_numpy(shape, gens, targets, max_iter=iterations, tol=0, dtype=np.float32)
        rows.append(("plain NumPy, float32", time.perf_counter() - t, r.iterations))
        rel = float(np.max(np.abs(r.fitted - fused32) / np.maximum(r.fitted, 1e-6)))
        rows.append(("max relative difference fused vs NumPy (float32)", rel, None))
    return rows


def bench_process(n_records, repeats=5):
    cols = skewed_records(SHAPE8, n_records)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ons8.parquet"
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table(cols), path)
        cmd = [sys.executable, "-m", "sdcrisk", "assess", str(path), "--keys",
               ",".join(cols), "--population-size", str(n_records * 50), "--method",
               "loglinear", "--terms", "all-2-way", "--iterations", "5", "--format", "json",
               "--max-levels", "200"]
        # as after `pip install`: bytecode cached (PYTHONDONTWRITEBYTECODE, set on some
        # machines, would recompile every sdcrisk module in every run)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run(cmd, capture_output=True, check=True, env=env)  # warm the caches
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            subprocess.run(cmd, capture_output=True, check=True, env=env)
            times.append(time.perf_counter() - t)
        return times


def bench_10(n_records):
    code = (
        "import sys, time, resource; sys.path.insert(0, %r);"
        "from bench_ipf import *; from sdcrisk.estimators._ipf import ipf, parse_terms;"
        "gens = parse_terms('all-2-way', [f'k{j}' for j in range(10)]);"
        "targets, _ = margins_from(skewed_records(SHAPE10, %d), SHAPE10, gens);"
        "ipf((3, 4), ((0,), (1,)), [np.ones(3) * 4, np.ones(4) * 3], max_iter=1);"
        "t = time.perf_counter();"
        "r = ipf(SHAPE10, gens, targets, max_iter=2, tol=0, dtype=np.float32);"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    ).replace("%r", repr(str(Path(__file__).parent))).replace("%d", str(n_records))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), int(out[1]) / 1024**2


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--skip-10", action="store_true")
    args = ap.parse_args(argv)
    print("## IPF speed (issue: log-linear risk)\n")
    print(f"Machine: {os.cpu_count()} cores, {platform.platform()}, numpy {np.__version__}; "
          f"command `python benchmarks/bench_ipf.py`; {args.records:,} skewed synthetic "
          "records give the margins.\n")
    print(f"ONS 8-variable key, K = {math.prod(SHAPE8):,}, all-2-way (28 margins), "
          "5 iterations:\n")
    print("| engine | seconds | iterations |\n|---|---:|---:|")
    for name, sec, it in bench_fit(SHAPE8, 5, args.records):
        print(f"| {name} | {sec:.3g} | {it if it is not None else ''} |")
    times = bench_process(args.records)
    print(f"\nWhole `sdcrisk assess --method loglinear --iterations 5` process (Parquet in, "
          f"JSON out, numba and bytecode caches warm), {len(times)} runs: median "
          f"{np.median(times):.2f} s, range {min(times):.2f}-{max(times):.2f} s "
          f"(load average before: {os.getloadavg()[0]:.2f})")
    if not args.skip_10:
        sec, gib = bench_10(args.records)
        print(f"\nONS 10-variable key, K = {math.prod(SHAPE10):,}, all-2-way (45 margins), "
              f"2 iterations, float32: {sec:.1f} s, peak RSS {gib:.2f} GiB")
    _ = resource


if __name__ == "__main__":
    main()
