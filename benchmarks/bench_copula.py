"""Timing of the Gaussian-copula estimator (issue 17): one fit on a ~30,000-record sample
with 8 keys (census_income_kdd KS8, 10% Bernoulli sample, seed 0), with its accuracy against
the population's exact tau1/tau2.

Usage::

    /usr/bin/time -v python benchmarks/bench_copula.py      # prints wall and CPU seconds

(tracemalloc slows the timed fits a little; the wall and CPU figures include it.)
"""

from __future__ import annotations

import resource
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from sdcrisk import GaussianCopulaRisk, Microdata, tabulate

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "census_income_kdd"
KEYS = ["age", "sex", "race", "marital_stat", "education", "citizenship",
        "major_occupation_code", "country_of_birth_self"]


def main() -> None:
    df = pd.read_csv(next(DATA.glob("*.csv.gz")), usecols=KEYS)
    rng = np.random.default_rng(0)
    take = rng.random(len(df)) < 0.1
    ids = np.unique(df[KEYS].to_numpy().astype(str), axis=0, return_inverse=True)[1].ravel()
    big_f = np.bincount(ids)
    f = np.bincount(ids[take], minlength=len(big_f))
    su = f == 1
    truth1, truth2 = int(np.sum(su & (big_f == 1))), float(np.sum(1.0 / big_f[su]))
    table = tabulate(Microdata.from_source(df[take], KEYS, population_size=len(df)))
    GaussianCopulaRisk().fit(table)  # numba compile / cache load, not timed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for points in (128, 256, 512):
            tracemalloc.start()
            c0, t0 = time.process_time(), time.perf_counter()
            res = GaussianCopulaRisk(points=points).fit(table)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            t1, t2 = res.measures["tau1"], res.measures["tau2"]
            print(f"n={table.n:,} keys={len(KEYS)} cells={table.n_cells:,} "
                  f"SU={table.sample_uniques:,} points={points}: wall {wall:.2f} s, "
                  f"CPU {cpu:.2f} s, fit's peak Python allocations {peak:.0f} MB; "
                  f"tau1 {t1.estimate:.1f} [{t1.lower:.1f}, {t1.upper:.1f}] "
                  f"(truth {truth1}), tau2 {t2.estimate:.1f} (truth {truth2:.1f}), QMC se "
                  f"{res.diagnostics['qmc_standard_error']}")
    print(f"peak RSS of the process (reading the population dominates) "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
