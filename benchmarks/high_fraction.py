"""auto and its candidates at sampling fractions above the calibration corpus (20-50%).

The corpus (``benchmarks/corpus.py``) holds 0.5-10% samples, the range of survey files.
Census-scale files (tens of millions of records) are typically large fractions of their
population, where the calibrated combination would extrapolate. This script draws Bernoulli
samples at ``FRACTIONS`` for the corpus's populations and key sets (same code, same seeds
scheme), fits the default ``auto`` (whose fitted rows carry every candidate's tau1/tau2) and
writes ``benchmarks/high_fraction.csv``; it then prints the median / 90th percentile / worst
|relative error| per method and fraction.

Usage::

    nice -n 10 python benchmarks/high_fraction.py [--summary]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

FRACTIONS = (0.2, 0.3, 0.5)
OUT = HERE / "high_fraction.csv"


def cases() -> list[corpus.Case]:
    out = []
    for name in corpus.KEYSETS:
        for label, keys in corpus.keysets(name):
            for frac in FRACTIONS:
                out.append(corpus.Case(len(out), name, label, keys, "bernoulli", frac))
    return out


def run() -> None:
    from sdcrisk import AutoRisk, Microdata, tabulate

    done = set(pd.read_csv(OUT)["case"]) if OUT.exists() else set()
    for case in cases():
        if case.index in done:
            continue
        sample, truth = corpus.draw(case)
        md = Microdata.from_source(sample, list(case.keys), population_size=truth["N"])
        table = tabulate(md)
        row = {"case": case.index, "population": case.population, "keyset": case.keyset,
               "n_keys": len(case.keys), "fraction": case.fraction, **truth}
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = AutoRisk().fit(table)
        row["auto:seconds"] = time.perf_counter() - t0
        for m in ("tau1", "tau2"):
            meas = res.measures[m]
            row[f"auto:{m}"] = meas.estimate
            row[f"auto:{m}_lo"] = meas.lower
            row[f"auto:{m}_hi"] = meas.upper
        for c in res.fitted["candidate_estimates"]:
            for m in ("tau1", "tau2"):
                row[f"{c['candidate']}:{m}"] = c[m]
        pd.DataFrame([row]).to_csv(OUT, mode="a", header=not OUT.exists(), index=False)
        print(case.index, case.population, case.keyset, case.fraction, flush=True)


def summary() -> None:
    df = pd.read_csv(OUT)
    methods = sorted({c.rsplit(":", 1)[0] for c in df.columns
                      if c.endswith(":tau1")})
    for m in ("tau1", "tau2"):
        print(f"\n{m}: median / p90 / worst |relative error| (cases with truth > 0)")
        ok = df[df[f"true_{m}"] > 0]
        for frac, g in ok.groupby("fraction"):
            line = [f"f={frac:.1f} ({len(g)})"]
            for meth in methods:
                e = (g[f"{meth}:{m}"] / g[f"true_{m}"] - 1).abs().dropna()
                line.append(f"{meth} {e.median():.1%}/{e.quantile(.9):.1%}/{e.max():.0%}")
            print("  ".join(line))
        cov = ((ok["auto:" + m + "_lo"] <= ok[f"true_{m}"])
               & (ok[f"true_{m}"] <= ok["auto:" + m + "_hi"]))
        print("auto interval coverage", f"{cov.mean():.1%}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--summary", action="store_true")
    a = ap.parse_args()
    if not a.summary:
        run()
    summary()
