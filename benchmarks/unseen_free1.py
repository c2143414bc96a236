"""auto on a population outside its calibration corpus: mu-Argus's demo file ``free1`` (issue 17).

``../shared/data/sdcmicro/free1.csv`` (4,000 records, 34 variables; the CASC project's
mu-Argus demo file, synthetic) is in no fit of auto: the corpus (``benchmarks/corpus.py``)
holds the six populations of ``../shared/data`` and not this file. It is treated as a
population: the corpus's designs (Bernoulli samples at the corpus fractions leaving at least
50 records: 2, 3, 5 and 10%), a 6- and an 8-variable key set named before the run, and
``RANDOM_KEYSETS`` random sets of 4-10 of its 29 categorical variables (the five continuous
ones, WEIGHT, INCOME, MONEY, ASSETS and DEBTS, left out), seeded by the name as the corpus
does. Truths from the file's own cell counts. The shipped ``auto`` (its parameters unchanged)
and its candidates are fitted on each sample.

A small synthetic file (4,000 records, 2-10% samples of 73-419 records): a check on one
population auto has never seen, not a calibration.

Width: the median of (upper - lower) / estimate. Rows (with the corpus's columns: sample
features and every candidate of auto, so that other calibrated rules can be applied to them,
``benchmarks/unseen_variants.py``) go to ``benchmarks/unseen_free1.csv``.

Usage::

    nice -n 10 python benchmarks/unseen_free1.py
"""

from __future__ import annotations

import hashlib
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

FILE = HERE.parent.parent / "shared" / "data" / "sdcmicro" / "free1.csv"
CONTINUOUS = {"WEIGHT", "INCOME", "MONEY", "ASSETS", "DEBTS"}
KS = ["SEX AGE MARSTAT KINDPERS EDUC1 ETNI",
      "SEX AGE MARSTAT KINDPERS EDUC1 ETNI REGION TENURE"]
FRACTIONS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.1)
MIN_RECORDS = 50
RANDOM_KEYSETS = 10
OUT = HERE / "unseen_free1.csv"
METHODS = ("auto", "graphical:prior_weight=50", "pitman-yor", "nb")


def keysets(cols: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    out = [("KS6", tuple(KS[0].split())), ("KS8", tuple(KS[1].split()))]
    rng = np.random.default_rng(int(hashlib.sha256(b"free1").hexdigest()[:8], 16))
    seen = {frozenset(k) for _, k in out}
    while len(out) < 2 + RANDOM_KEYSETS:
        keys = tuple(sorted(rng.choice(cols, size=int(rng.integers(4, 11)), replace=False)))
        if frozenset(keys) not in seen:
            seen.add(frozenset(keys))
            out.append((f"R{len(out) - 1:02d}", keys))
    return out


def truth(pop: pd.DataFrame, keys, take: np.ndarray) -> dict:
    _, ids = np.unique(pop[list(keys)].to_numpy(), axis=0, return_inverse=True)
    ids = ids.ravel()
    big_f = np.bincount(ids)
    f = np.bincount(ids[take], minlength=len(big_f))
    su = f == 1
    return {"n": int(take.sum()), "sample_uniques": int(su.sum()),
            "true_tau1": int(np.sum(su & (big_f == 1))),
            "true_tau2": float(np.sum(1.0 / big_f[su]))}


def evaluate(pop: pd.DataFrame, name: str, sets: list[tuple[str, tuple[str, ...]]],
             fractions=FRACTIONS, min_records: int = MIN_RECORDS) -> pd.DataFrame:
    """Every method of ``METHODS`` on Bernoulli samples of ``pop`` (treated as the population)
    at ``fractions`` (those leaving at least ``min_records``), for each key set: one row per
    sample with the truth and each method's tau1/tau2 and bounds. Samples are seeded by
    ``name``, the key set's label and the fraction."""
    sys.path.insert(0, str(HERE.parent / "src"))
    from sdcrisk import AutoRisk, Microdata, tabulate
    from sdcrisk.analyses.validation import Candidate

    rows = []
    for label, keys in sets:
        for frac in fractions:
            if frac * len(pop) < min_records:
                continue
            tag = f"{name} {label} {frac}".encode()
            take = np.random.default_rng(int(hashlib.sha256(tag).hexdigest()[:8], 16)).random(
                len(pop)) < frac
            row = {"population": name, "N": len(pop), "keyset": label, "keys": " ".join(keys),
                   "fraction": frac, **truth(pop, keys, take)}
            table = tabulate(Microdata.from_source(pop.loc[take, list(keys)], list(keys),
                                                   population_size=len(pop)))
            # the columns a corpus row has (benchmarks/corpus.py), so that calibrated rules
            # other than the shipped one can be applied to these samples afterwards
            row.update({"n_keys": len(keys), **corpus.features(table)})
            for spec in METHODS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = AutoRisk() if spec == "auto" else Candidate.parse(spec).estimator()
                    res = est.fit(table)
                for m in ("tau1", "tau2"):
                    meas = res.measures[m]
                    row[f"{spec}:{m}"] = meas.estimate
                    row[f"{spec}:{m}_lo"], row[f"{spec}:{m}_hi"] = meas.lower, meas.upper
                if spec == "auto":  # (a file with one sample unique has no combination)
                    row["py_alpha"] = res.fitted.get("features", {}).get("py_alpha")
                    for c in res.fitted.get("candidate_estimates", []):
                        for m in ("tau1", "tau2"):
                            row[f"{c['candidate']}:{m}"] = c[m]
            rows.append(row)
            print(f"{name} {label} {frac:.1%} n={row['n']} SU={row['sample_uniques']} "
                  f"true tau1={row['true_tau1']} auto={row['auto:tau1']:.1f}", flush=True)
    return pd.DataFrame(rows)


def print_table(df: pd.DataFrame, methods=METHODS) -> None:
    """Markdown table: median / p90 |relative error|, coverage and median width per method
    (cases with a true tau1 > 0; tau2 likewise)."""
    su = df[df["sample_uniques"] > 0]  # a sample without uniques has no share (0 / 0)
    print(f"\n{len(df)} samples; true tau1 / SU median "
          f"{np.median(su['true_tau1'] / su['sample_uniques']):.2f}\n")
    print("| method | tau1 median | tau1 p90 | tau1 coverage | tau1 width | tau2 median | "
          "tau2 p90 | tau2 coverage | tau2 width | cases (true tau1 > 0) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for spec in methods:
        cells = []
        for m in ("tau1", "tau2"):
            d = df[df[f"true_{m}"] > 0]
            t = d[f"true_{m}"].to_numpy(float)
            rel = np.abs(d[f"{spec}:{m}"].to_numpy(float) / t - 1)
            lo, hi = d[f"{spec}:{m}_lo"].to_numpy(float), d[f"{spec}:{m}_hi"].to_numpy(float)
            cov = np.mean((lo <= t) & (t <= hi)) if np.isfinite(lo).all() else float("nan")
            est = d[f"{spec}:{m}"].to_numpy(float)
            with np.errstate(divide="ignore", invalid="ignore"):
                width = np.median((hi - lo) / est)
            cells += [f"{100 * np.median(rel):.1f}%", f"{100 * np.quantile(rel, 0.9):.1f}%",
                      f"{100 * cov:.1f}%", f"{100 * width:.0f}%"]
        print(f"| {spec} | " + " | ".join(cells) + f" | {int((df['true_tau1'] > 0).sum())} |")


def main() -> None:
    if not FILE.exists():
        sys.exit(f"{FILE} is absent (../shared/data)")
    pop = pd.read_csv(FILE)
    cols = [c for c in pop.columns if c not in CONTINUOUS]
    df = evaluate(pop, "free1", keysets(cols))
    df.to_csv(OUT, index=False)
    print_table(df)


if __name__ == "__main__":
    main()
