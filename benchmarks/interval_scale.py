"""Which scale model for auto's conformal interval (issue 17, item 4)? Leave-one-population-out.

auto's 95% interval is estimate x exp(+-q s(x)), s(x) a scale fitted to the out-of-population
log errors. Three scale models, every figure leave-one-population-out on the corpus
(``benchmarks/corpus.csv``; the estimates are the same in all three, only the interval moves):

* ``fraction, SU``: s = exp(gamma . [1, log fraction, log SU]) (shipped until 2026-11-24);
* ``+ spread``: also the standard deviation of the candidates' log estimates (the variant
  declared before the run);
* ``+ prediction``: also the prediction log(tau / SU) itself (shipped): an estimate near its
  ceiling tau = SU, which every file has, errs less.

Printed: pooled coverage and median width (upper - lower) / estimate, the lowest coverage of a
left-out population, and the coverage on the cases with a true tau1 of 10 or less.

Usage::

    python benchmarks/interval_scale.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import calibrate_auto as ca  # noqa: E402


def spread(df: pd.DataFrame, measure: str) -> pd.DataFrame:
    """The standard deviation of the full candidate set's log(tau / SU) (sample-only)."""
    f = ca.features(df, measure, ca.CANDIDATE_SETS["full"])
    logs = f[[f"log_{c}" for c in ca.CANDIDATE_SETS["full"]]].to_numpy(float)
    return pd.DataFrame({"candidate_spread": logs.std(axis=1)})


VARIANTS = {
    "fraction, SU": {"scale_prediction": False},
    "+ spread": {"scale_prediction": False, "scale_extra": spread},
    "+ prediction (shipped)": {"scale_prediction": True},
}


def row(out: pd.DataFrame, measure: str) -> list[str]:
    s = ca.summary(out, "auto", measure)
    per = [ca.summary(g.reset_index(drop=True), "auto", measure)["coverage"]
           for _, g in out.groupby("population")]
    small = out[(out["true_tau1"] > 0) & (out["true_tau1"] <= 10)].reset_index(drop=True)
    small_coverage = ca.summary(small, "auto", measure)["coverage"]
    return [f"{100 * s['coverage']:.1f}%", f"{100 * s['width']:.1f}%",
            f"{100 * min(per):.1f}%", f"{100 * small_coverage:.1f}%"]


def main() -> None:
    df = ca.load(HERE / "corpus.csv")
    cands = ca.CANDIDATE_SETS["full"]
    print("| scale model | tau1 coverage | tau1 width | tau1 worst population | tau1 coverage, "
          "true tau1 <= 10 | tau2 coverage | tau2 width | tau2 worst population | tau2 "
          "coverage, true tau1 <= 10 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, options in VARIANTS.items():
        out = ca.lopo(df, cands, **options)
        print(f"| {name} | " + " | ".join(row(out, "tau1") + row(out, "tau2")) + " |")


if __name__ == "__main__":
    main()
