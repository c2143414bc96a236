"""auto's leave-one-population-out tau1 error by size of the truth, beside an oracle that knows
each case's expected tau1 (issue 17: how much of the p90 is the realised count's own noise).

Reads ``benchmarks/calibration.csv`` (LOPO estimates, ``calibrate_auto.py --write``) and
``benchmarks/corpus.csv`` (population uniques). For a Bernoulli sample with fraction pi, the
expected tau1 is pi x (population uniques): an estimator that knew it exactly would still err by
the binomial noise of the realised tau1. Household samples have no such closed form and are
left out. Prints a markdown table; takes a second.

Usage::

    python benchmarks/error_bands.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
BANDS = (0, 10, 30, 100, 300, np.inf)


def table() -> pd.DataFrame:
    cal = pd.read_csv(HERE / "calibration.csv")
    corpus = pd.read_csv(HERE / "corpus.csv")[["case", "pop_uniques"]]
    d = cal.merge(corpus, on="case", validate="one_to_one")
    d = d[(d["true_tau1"] > 0) & (d["design"] == "bernoulli")].copy()
    truth = d["true_tau1"]
    d["auto"] = ((d["auto:tau1"] - truth) / truth).abs()
    d["oracle"] = ((d["fraction"] * d["pop_uniques"] - truth) / truth).abs()
    d["band"] = pd.cut(truth, BANDS, right=False)
    return d


def summary(d: pd.DataFrame) -> list[tuple[str, int, float, float, float, float]]:
    rows = []
    groups = [(f"{b.left:g}-{b.right:g}", g) for b, g in d.groupby("band", observed=True)]
    groups.append((">= 30, together", d[d["true_tau1"] >= 30]))
    groups.append(("all", d))
    for label, g in groups:
        rows.append((label, len(g), g["auto"].median(), g["auto"].quantile(0.9),
                     g["oracle"].median(), g["oracle"].quantile(0.9)))
    return rows


def main() -> None:
    d = table()
    print(f"{len(d)} Bernoulli cases with a true tau1 > 0\n")
    print("| true tau1 | cases | auto median | auto p90 | oracle median | oracle p90 |")
    print("|---|---|---|---|---|---|")
    for label, n, am, a9, om, o9 in summary(d):
        print(f"| {label} | {n} | {am:.1%} | {a9:.1%} | {om:.1%} | {o9:.1%} |")


if __name__ == "__main__":
    main()
