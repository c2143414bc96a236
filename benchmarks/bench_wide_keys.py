"""`sdcrisk report` on wide key sets (15 and 30 keys): where the time goes.

Samples of census_income_kdd (../shared/data; Bernoulli, ``default_rng(0)``, as the
ground truths) with 15 and 30 of its categorical columns as keys, N = 299,285. For each:
the report's steps timed one by one (tabulate, the default ``auto`` fit, the leave-one-key-out
re-fits, SUDA with the report's ``max_size="auto"`` bound, the uniqueness models, the page),
then the whole command in-process (``sdcrisk report ... --quiet``). Numba kernels are
compiled before the first timing (a fresh install compiles them once, ~10 s, then caches).

``--sizes`` also times the unbounded SUDA search size by size (30 keys: minutes).

Run: ``PYTHONPATH=src python benchmarks/bench_wide_keys.py [--fractions 0.01,0.03,0.05]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import sdcrisk
from sdcrisk.analyses import _suda
from sdcrisk.cli import main
from sdcrisk.report import collect, contributions

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "census_income_kdd"
N_POP = 299_285
KEYS15 = ["age", "sex", "race", "marital_stat", "education", "citizenship",
          "major_occupation_code", "country_of_birth_self", "hispanic_origin",
          "class_of_worker", "detailed_household_summary_in_household",
          "weeks_worked_in_year", "major_industry_code", "tax_filer_stat",
          "full_or_part_time_employment_stat"]
#: every column but the row id, the file/year flags, the outcome and five near-duplicates
DROPPED = ["rid", "source", "year", "income_50k", "migration_code_move_within_reg",
           "migration_prev_res_in_sunbelt", "fill_inc_questionnaire_for_veterans_admin",
           "region_of_previous_residence", "detailed_household_and_family_stat"]


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def run_case(sample: pd.DataFrame, keys: list[str], csv: Path, sizes: bool) -> dict:
    md = sdcrisk.Microdata.from_source(sample, keys=keys, population_size=N_POP)
    table, t_tab = _timed(lambda: sdcrisk.tabulate(md))
    res, t_auto = _timed(lambda: _quiet(lambda: sdcrisk.get_estimator("auto").fit(table)))
    loko, t_loko = _timed(lambda: _quiet(lambda: contributions.variable_contributions(res)))
    frac, _ = collect._dis_fraction(table)
    suda, t_suda = _timed(lambda: sdcrisk.suda2(table, dis_fraction=frac, max_size="auto"))
    _, t_uniq = _timed(lambda: collect._uniqueness_section(table, []))
    _, t_page = _timed(lambda: _quiet(lambda: collect.build_report(
        res, contributions=False, suda=False, uniqueness=False)))
    argv = ["report", str(csv), "--keys", ",".join(keys), "--population-size", str(N_POP),
            "--quiet", "--out", str(csv.with_suffix(".html"))]
    with contextlib.redirect_stderr(io.StringIO()):
        code, t_cli = _timed(lambda: main(argv))
    row = {"n": table.n, "keys": len(keys), "cells": table.n_cells,
           "sample_uniques": table.sample_uniques, "tabulate": t_tab, "auto fit": t_auto,
           "leave-one-key-out": t_loko, "loko method": loko["method"].iloc[0],
           "suda": t_suda, "suda max_size": suda.max_size, "suda complete": suda.complete,
           "suda work": suda.diagnostics["search_work"], "uniqueness": t_uniq,
           "page (no sections above)": t_page, "report command": t_cli, "exit": code}
    if sizes:
        counts = np.asarray(table.counts, np.int64)
        lv = [len(v) for v in table.levels]
        for m in range(1, len(keys) + 1):
            found, t = _timed(lambda m=m: _suda.msus_up_to(table.cell_codes, counts, lv,
                                                           [-1] * len(lv), m))
            print(f"  unbounded SUDA up to size {m}: {t:.2f} s, work {found.work:,}, "
                  f"{len(found.cells):,} MSUs, complete={found.complete}", flush=True)
            if found.complete or t > 120:
                break
    return row


def main_bench(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fractions", default="0.01,0.03,0.05")
    ap.add_argument("--sizes", action="store_true", help="also time SUDA size by size")
    args = ap.parse_args(argv)
    if not DATA.exists():
        print(f"skipped: {DATA} not present")
        return 0
    pop = pd.read_csv(DATA / "census_income_kdd.csv.gz")
    keys30 = [c for c in pop.columns if c not in DROPPED]
    assert len(keys30) == 30
    u = np.random.default_rng(0).random(len(pop))
    print(f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, numpy {np.__version__}")
    print(f"budget: SUDA work {_suda.WORK_BUDGET:,} units; full search up to "
          f"{_suda.FULL_SEARCH_KEYS} keys; leave-one-key-out nb beyond "
          f"{contributions.CONTRIBUTION_REFIT_KEYS} keys")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        warm = pop[u < 0.002]
        _quiet(lambda: run_case(warm, KEYS15, Path(tmp) / "warm.csv", False))  # compile
        for f in (float(x) for x in args.fractions.split(",")):
            sample = pop[u < f]
            csv = Path(tmp) / f"kdd_{f}.csv"
            sample.to_csv(csv, index=False)
            for keys in (KEYS15, keys30):
                row = run_case(sample, keys, csv, args.sizes)
                rows.append({"fraction": f, **row})
                print({k: (round(v, 2) if isinstance(v, float) else v)
                       for k, v in rows[-1].items()}, flush=True)
    df = pd.DataFrame(rows)
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(df.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main_bench())
