"""Searched log-linear model on 3.5-4.7 x 10^8-cell keys (issue 20 item 5).

Each case runs in its own process (so its peak RSS is its own): the population's 5% Bernoulli
sample of the shared ground-truth design (``numpy.random.default_rng(0)``), then
``LogLinearRisk(terms=...)`` with the default engine (``auto``: the factored engine above
10^7 cells). Printed: seconds of the fit (wall and CPU, the machine is shared), peak RSS of
the process, the chosen model, tau1/tau2 against the true values of ``ground_truth.csv``.

``--equality`` also runs both engines on key spaces where the dense one runs (census KS6 5%
search, 541,450 cells; eusilcP KS8 5% all-2-way, 10,264,320 cells) and prints both results.

Usage::

    python benchmarks/bench_loglinear_large.py [--data ../shared/data] [--equality]
    python benchmarks/bench_loglinear_large.py --case census_income_kdd:KS8:0.05:search
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data"

LARGE = ["census_income_kdd:KS8:0.05:search", "uci_adult:KS8:0.05:search",
         "ghanaS:KS8:0.05:search", "census_income_kdd:KS8:0.05:all-2-way"]
EQUALITY = ["census_income_kdd:KS6:0.05:search:dense", "census_income_kdd:KS6:0.05:search:factored",
            "eusilcP:KS8:0.05:all-2-way:dense", "eusilcP:KS8:0.05:all-2-way:factored"]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_case(spec: str, data: Path) -> dict:
    import numpy as np

    import sdcrisk
    from sdcrisk import Microdata, tabulate
    from sdcrisk.analyses.sampling import Bernoulli, draw_sample
    from sdcrisk.estimators import _factored

    pop, keyset, frac, terms, *engine = spec.split(":")
    engine = engine[0] if engine else "auto"
    folder = data / pop
    with open(folder / "ground_truth.csv") as fh:
        truth = next(r for r in csv.DictReader(fh)
                     if r["keyset"] == keyset and float(r["fraction"]) == float(frac))
    population = Microdata.from_source(sorted(folder.glob("*.csv.gz"))[0],
                                       truth["keys"].split("+"), max_levels=None)
    rows = draw_sample(population, Bernoulli(float(frac)), seed=0)
    table = tabulate(population.subset(rows, population_size=population.n))
    assert table.n == int(truth["n"]), (table.n, truth["n"])
    # load the numba kernels from their cache on a tiny table (process start-up, not the fit)
    t0 = time.perf_counter()
    tiny = tabulate(Microdata.from_source({"a": np.arange(40) % 4, "b": np.arange(40) % 5},
                                          ["a", "b"], population_size=400))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sdcrisk.LogLinearRisk(terms="all-2-way", engine="factored").fit(tiny)
    _factored.warm_up()
    warm = time.perf_counter() - t0
    est = sdcrisk.LogLinearRisk(terms=terms, engine=engine)
    c0, t0 = _cpu(), time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = est.fit(table)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    d = res.diagnostics
    path = d.get("search_path") or []
    out = {
        "case": spec, "n": table.n, "K": table.cell_space, "engine": d.get("engine", "dense"),
        "support_cells": d.get("support_cells"), "blocks": d.get("blocks"),
        "model": d["model"], "fits": len(path) or 1, "iterations": d["iterations"],
        "converged": d["converged"], "warnings": len(caught),
        "tau1": res.estimate("tau1"), "tau1_true": float(truth["tau1"]),
        "tau2": res.estimate("tau2"), "tau2_true": float(truth["tau2"]),
        "Z_tau2": res.fitted["minimum_error"]["tau2"]["Z"],
        "seconds": wall, "cpu_seconds": cpu, "warm_up_seconds": warm,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "steps": [(r["step"], r["model"], r["Z"]) for r in path
                  if not r["step"].startswith("candidate")],
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--case", help="POP:KEYSET:FRACTION:TERMS[:ENGINE], run in this process")
    ap.add_argument("--equality", action="store_true",
                    help="also run both engines where the dense one runs")
    ap.add_argument("--only-equality", action="store_true")
    args = ap.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.data)))
        return
    cases = [] if args.only_equality else list(LARGE)
    if args.equality or args.only_equality:
        cases += EQUALITY
    print(f"Machine: {os.cpu_count()} cores (shared), {platform.platform()}; "
          f"{time.strftime('%Y-%m-%d')}")
    print("| case | n | K | engine | support cells | fits | model | tau1 (true) | err | "
          "tau2 (true) | err | Z(tau2) | wall s | CPU s | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for case in cases:
        proc = subprocess.run([sys.executable, __file__, "--case", case, "--data", str(args.data)],
                              capture_output=True, text=True, check=False)
        if proc.returncode:
            print(f"| {case} | failed: {proc.stderr.strip().splitlines()[-1]} |")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        e1 = (r["tau1"] - r["tau1_true"]) / r["tau1_true"]
        e2 = (r["tau2"] - r["tau2_true"]) / r["tau2_true"]
        print(f"| {case} | {r['n']:,} | {r['K']:,} | {r['engine']} | "
              f"{r['support_cells'] or '–'} | {r['fits']} | {r['model']} | "
              f"{r['tau1']:.1f} ({r['tau1_true']:.0f}) | {100 * e1:+.1f}% | "
              f"{r['tau2']:.1f} ({r['tau2_true']:.1f}) | {100 * e2:+.1f}% | "
              f"{r['Z_tau2']:.3f} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | "
              f"{r['peak_rss_mib']:.0f} |", flush=True)
        for step, model, z in r["steps"]:
            print(f"|  | {step} | {model} | Z = {z:.3f} |", file=sys.stderr)


if __name__ == "__main__":
    main()
