"""auto's tau1 interval on samples whose true tau1 is 0, before and after its lower bound below 1
is set to 0 (``analyses._auto_bounds.whole_count_lower``; issue 17, 2026-11-25).

The coverage figures elsewhere in RESULTS.md count samples with a true tau1 > 0 only (the
conformal interval is learned on log(estimate / truth)). A sample can hold sample uniques none
of which is population unique: its true tau1 is 0, and an interval whose lower bound is above 0
misses it. The rule is a deterministic step after the interval, so applying it to the recorded
bounds gives what auto now prints. Reads the recorded runs (no fitting):

- ``benchmarks/calibration.csv``: the corpus, leave-one-population-out (``calibrate_auto.py``);
- ``benchmarks/unseen_rdatasets3.csv``: the third batch of outside files, in no decision.

Usage::

    python benchmarks/zero_truths.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from sdcrisk.analyses._auto_bounds import whole_count_lower  # noqa: E402

FILES = {"corpus (LOPO)": HERE / "calibration.csv",
         "outside batch 3": HERE / "unseen_rdatasets3.csv"}


def table(df: pd.DataFrame) -> dict:
    df = df[df["sample_uniques"] > 0]
    est, lo, hi, t = (df[c].to_numpy(float) for c in ("auto:tau1", "auto:tau1_lo",
                                                      "auto:tau1_hi", "true_tau1"))
    new_lo = np.array([whole_count_lower((e, a, b, 0.0))[1]
                       for e, a, b in zip(est, lo, hi, strict=True)])
    pos, zero = t > 0, t == 0
    out = {"samples": len(df), "true tau1 = 0": int(zero.sum())}
    for name, low in (("before", lo), ("after", new_lo)):
        cov = (low <= t) & (t <= hi)
        width = (hi - low) / est
        out[f"{name}: cov. tau1 > 0"] = f"{cov[pos].mean():.1%}"
        out[f"{name}: cov. tau1 = 0"] = f"{cov[zero].mean():.1%}" if zero.any() else "-"
        out[f"{name}: cov. all"] = f"{cov.mean():.1%}"
        out[f"{name}: median width (tau1 > 0)"] = f"{np.median(width[pos]):.0%}"
    out["lower bounds changed"] = int((new_lo != lo).sum())
    return out


if __name__ == "__main__":
    rows = {name: table(pd.read_csv(path)) for name, path in FILES.items() if path.exists()}
    names = list(rows)
    print("| | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for field in rows[names[0]]:
        print(f"| {field} | " + " | ".join(str(rows[n][field]) for n in names) + " |")
