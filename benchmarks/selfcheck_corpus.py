"""Self-check features for auto (issue 17, an exploration; nothing here is shipped).

auto's leave-one-population-out (LOPO) error is mostly population transfer: its rule scored on
the populations it was fitted on gives a tau1 median of 8.1%, on a left-out one 11.6%
(``benchmarks/combine_explore.py``). A sample carries a little information about how its own
population behaves: treat the sample S as a population, draw a sub-sample S' of it
(Bernoulli, fraction ``SUB``, seeded by the case), fit candidates to S' with N' = n, and score
them against the exact truth of that sub-problem (S's own cell counts). The log error of each
candidate there is observable from the sample alone. This script records those errors for
every corpus case and asks, with calibrate_auto's LOPO machinery, whether they help auto's
combination as extra features.

Usage::

    nice -n 10 python benchmarks/selfcheck_corpus.py --part 1/2 --time-limit 1500
    nice -n 10 python benchmarks/selfcheck_corpus.py --part 2/2 --time-limit 1500
    python benchmarks/selfcheck_corpus.py --stretch
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import calibrate_auto as cal  # noqa: E402
import corpus  # noqa: E402

#: sub-sampling fraction of the sample (the pseudo-problem's sampling fraction)
SUB = 0.25
#: candidates refitted on the sub-sample (the one auto leans on, and a cheap exchangeable one)
CHECKED = ("graphical:prior_weight=50", "pitman-yor")
LABELS = {"graphical:prior_weight=50": "graphical(prior_weight=50)", "pitman-yor": "pitman-yor"}


def _path(i: int, k: int) -> Path:
    return corpus.OUT / f"selfcheck-part-{i}-of-{k}.csv"


def run_case(case) -> dict:
    from sdcrisk import Microdata, tabulate
    from sdcrisk.analyses.validation import Candidate

    sample, truth = corpus.draw(case)
    keys = list(case.keys)
    ids = sample.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    f_s = np.bincount(ids)
    rng = np.random.default_rng(case.seed ^ 0x5E1F)
    take = rng.random(len(sample)) < SUB
    f_sub = np.bincount(ids[take], minlength=len(f_s))
    su = f_sub == 1
    row = {"case": case.index, "sub_n": int(take.sum()), "sub_su": int(su.sum()),
           "sub_true_tau1": int(np.sum(su & (f_s == 1))),
           "sub_true_tau2": float(np.sum(1.0 / f_s[su])) if su.any() else 0.0}
    if take.sum() < 2 or not su.any():
        return row
    table = tabulate(Microdata.from_source(sample[take], keys, population_size=len(sample)))
    for spec in CHECKED:
        res, error = corpus.fit_or_error(Candidate.parse(spec).estimator(), table)
        if error is None:
            for m in ("tau1", "tau2"):
                row[f"sub:{LABELS[spec]}:{m}"] = res.measures[m].estimate
    return row


def merged() -> pd.DataFrame:
    parts = [pd.read_csv(p) for p in sorted(corpus.OUT.glob("selfcheck-part-*.csv"))]
    sub = pd.concat(parts, ignore_index=True).drop_duplicates("case")
    df = cal.load(HERE / "corpus.csv")
    return df.merge(sub, on="case", how="inner")


def _selfcheck_columns(df: pd.DataFrame, measure: str) -> pd.DataFrame:
    """log((estimate + 0.5) / (truth + 0.5)) on the sub-problem, 0 where it is missing."""
    out = {}
    t = df[f"sub_true_{measure}"].to_numpy(float)
    for label in LABELS.values():
        col = f"sub:{label}:{measure}"
        e = df[col].to_numpy(float) if col in df else np.full(len(df), np.nan)
        v = np.log((e + 0.5) / (t + 0.5))
        out[f"selfcheck_{label}"] = np.where(np.isfinite(v), v, 0.0)
    return pd.DataFrame(out)


def stretch(df: pd.DataFrame) -> list[str]:
    base = cal.CANDIDATE_SETS["full"]
    lines = ["| auto features | tau1 median | tau1 p90 | tau1 coverage | tau1 width | "
             "tau2 median | tau2 p90 | tau2 coverage | tau2 width | cases |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, extra in (("shipped", None), ("+ self-check errors", _selfcheck_columns)):
        res = cal.lopo(df, base, extra=extra)
        s1, s2 = cal.summary(res, "auto", "tau1"), cal.summary(res, "auto", "tau2")
        lines.append(f"| {name} | " + " | ".join(
            cal._pct(s[k]) for s in (s1, s2) for k in ("median", "p90", "coverage", "width"))
            + f" | {s1['cases']} |")
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="1/1")
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--stretch", action="store_true")
    args = ap.parse_args(argv)
    if args.stretch:
        df = merged()
        print(f"{len(df)} cases with the self-check")
        print("\n".join(stretch(df)))
        return
    i, k = (int(x) for x in args.part.split("/"))
    corpus._run_pass(_path(i, k), i, k, args.time_limit, run_case, label="self-check")


if __name__ == "__main__":
    main()
