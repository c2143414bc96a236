"""Does auto's validation error, measured at several sub-sample fractions, predict the truth?

For chosen dev cases (population, key set, sampling fraction; the scoreboard's samples, seed
0), run :func:`sdcrisk.validate` on the sample at auto's own sub-sample fraction f0
and at 2 f0 and 4 f0 (at most 0.5), 5 replicates, with auto's default candidates except nb.
For each candidate print the median signed relative errors of tau1 and tau2 at each
fraction, their straight-line extrapolation in log(fraction) to the file's sampling
fraction, and the candidate's true error on that sample (``benchmarks/accuracy.csv``).

If the extrapolated errors tracked the true ones, auto could choose (or correct) by them
(issue 9, items 3-4). They do not: see the section this prints in ``benchmarks/RESULTS.md``.

Usage::

    python benchmarks/validation_fractions.py [--cases eusilcP:KS6:0.01,...] [--data DIR]
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import DEFAULT_DATA, HERE, populations  # noqa: E402

from sdcrisk import (  # noqa: E402
    Bernoulli,
    Microdata,  # noqa: E402
    draw_sample,
)
from sdcrisk.analyses.auto import default_candidates  # noqa: E402
from sdcrisk.analyses.validation import subsample_fraction, validate  # noqa: E402
from sdcrisk.data.table import tabulate  # noqa: E402

CASES = ("census_income_kdd:KS6:0.01,eusilcP:KS6:0.01,eusilcP:KS6:0.05,ghanaS:KS6:0.03,"
         "sdcmicro_testdata:KS6:0.03,uci_adult:KS8:0.03,uk_census2011_nanodata:KS6:0.05,"
         "uk_census2011_nanodata:KS8:0.01")
#: candidate label -> scoreboard method
SCOREBOARD = {"poisson-gamma": "poisson-gamma", "graphical": "graphical",
              "loglinear(terms=all-2-way)": "loglinear-2way",
              "loglinear(terms=search)": "loglinear-search"}


def _pct(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{100 * x:+.0f}%"


def case_table(path, gt):
    pop = Microdata.from_source(path, gt["keys"].split("+"), max_levels=None)
    frac = float(gt["fraction"])
    tab = tabulate(pop.subset(draw_sample(pop, Bernoulli(frac), seed=0), population_size=pop.n))
    assert tab.n == int(gt["n"]) and tab.sample_uniques == int(gt["SU"]), "not the shared sample"
    return tab


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args(argv)
    truth = {(r["population"], r["keyset"], float(r["fraction"]), r["method"]): r
             for r in csv.DictReader(open(HERE / "accuracy.csv"))}
    wanted = [c.split(":") for c in args.cases.split(",")]
    print("| case | n | candidate | tau1 error at f0, 2f0, 4f0 | extrapolated | true | "
          "tau2 error at f0, 2f0, 4f0 | extrapolated | true |")
    print("|---|---|---|---|---|---|---|---|---|")
    t_all = time.perf_counter()
    for name, path, rows in populations(args.data):
        for pn, ks, fr in wanted:
            if pn != name:
                continue
            gt = next(r for r in rows if r["keyset"] == ks
                      and math.isclose(float(r["fraction"]), float(fr)))
            tab = case_table(path, gt)
            cands = [c for c in default_candidates(tab) if c != "nb"]
            f0, _ = subsample_fraction(tab, None, 200, 0.1)  # auto's defaults
            fracs = sorted({min(0.5, f0 * k) for k in (1, 2, 4)})
            tables = [validate(tab, cands, fraction=f, replicates=5, random_state=0)
                      for f in fracs]
            for i in range(len(cands)):
                label = tables[0].rows[i].candidate.label
                cells = []
                for m in ("tau1", "tau2"):
                    errs = np.array([np.nan if (e := vt.summary(vt.rows[i])[f"median_rel_err_{m}"])
                                     is None else e for vt in tables])
                    ok = np.isfinite(errs)
                    ext = math.nan
                    if ok.sum() >= 2:
                        slope, icpt = np.polyfit(np.log(np.array(fracs)[ok]), errs[ok], 1)
                        ext = icpt + slope * math.log(float(fr))
                    t = truth.get((name, ks, float(fr), SCOREBOARD.get(label, "")))
                    cells += [" ".join(_pct(e) for e in errs), _pct(ext),
                              "–" if t is None else f"{100 * float(t[f'{m}_rel_err']):+.0f}%"]
                print(f"| {name} {ks} {float(fr):g} | {tab.n} | {label} | " + " | ".join(cells)
                      + " |", flush=True)
    print(f"\n{time.perf_counter() - t_all:.0f} s; sub-sample fractions f0 = auto's default "
          "(the file's n/N raised to give about 200 records, at most 0.1, at least 50 "
          "records), 2 f0 and 4 f0 (at most 0.5); 5 replicates; seed 0.")


if __name__ == "__main__":
    main()
