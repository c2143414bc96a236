"""Does pooling neighbouring levels of a numeric key (age in years) help the graphical model?
(issue 17: the idea left open at stop 24; tried, not shipped.)

eusilcP's key set R09 (age in single years, hsize, main, region) is over-estimated 3-6x by
every candidate, and age in single years looks sparse to models that treat its 99 levels as
unordered. The variant: fit ``graphical(prior_weight=50)`` on the key with every numeric key of
20 or more levels cut into bands of ``WIDTH`` consecutive values, then split each band cell's
law over its values by the sample's own distribution of the variable within the band (counts
+ 0.5). Under the gamma approximation pi_band ~ Gamma with the band cell's exact moments, a
value's share w gives pi = w pi_band, so U = F - f is NegBin(alpha, 1 / (1 + w u E[pi] CV^2))
with the band's alpha: tau1 = sum of P(U = 0) and tau2 = sum of E[1 / (1 + U)] over the sample
uniques of the full key, averaged over the band model's Occam window.

Runs every corpus case (``benchmarks/corpus.py``) whose key has such a variable (age in every
population, 329 cases with a true tau1 > 0), at band widths 5 and 10, and prints the median and
90th percentile of |relative error| against graphical(prior_weight=50) on the full key (from
``benchmarks/corpus.csv``), pooled and per population. A few minutes on one core.

Usage::

    nice -n 10 python benchmarks/ordered_bands.py
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import corpus  # noqa: E402

from sdcrisk import Microdata, tabulate  # noqa: E402
from sdcrisk.core._nb import expected_inverse, prob_zero  # noqa: E402
from sdcrisk.estimators._decomposable import Margins, occam_window  # noqa: E402
from sdcrisk.estimators._graphical_predictive import nb_parameters, observed_moments  # noqa: E402

PRIOR_WEIGHT = 50.0
MIN_LEVELS = 20
WIDTHS = (5, 10)
G50 = "graphical(prior_weight=50)"


def numeric_keys(case: corpus.Case) -> list[str]:
    """Keys that keep their numeric value (not in the codebook) with >= MIN_LEVELS values."""
    path = corpus.DATA / case.population / "codebook.json"
    coded = set(json.loads(path.read_text())) if path.exists() else set()
    pop = corpus._population(case.population)
    return [k for k in case.keys if k not in coded and pop[k].nunique() >= MIN_LEVELS]


def banded_taus(sample: pd.DataFrame, big_n: int, banded: list[str], width: int
                ) -> tuple[float, float]:
    coarse = sample.copy()
    for c in banded:
        coarse[c] = coarse[c] // width
    keys = list(sample.columns)
    table = tabulate(Microdata.from_source(coarse, keys, population_size=big_n))
    margins = Margins(table.cell_codes, table.counts, [len(lv) for lv in table.levels])
    search = occam_window(margins, PRIOR_WEIGHT, 20.0, 50)
    u = float(big_n - table.n)
    record_cell = table.record_map()
    size = sample.groupby(keys, sort=False)[keys[0]].transform("size").to_numpy()
    su = size == 1
    share = np.ones(len(sample))
    for c in banded:
        v = sample[c].to_numpy()
        lo, hi = int(v.min()), int(v.max())
        m = np.bincount(v - lo, minlength=hi - lo + 1).astype(float) + 0.5
        band_total = pd.Series(m).groupby(np.arange(lo, hi + 1) // width).transform("sum")
        share *= (m / band_total.to_numpy())[v - lo]
    cells, w = record_cell[su], share[su]
    tau1 = tau2 = 0.0
    for weight, g in zip(search.posterior, search.graphs, strict=True):
        r, p = nb_parameters(observed_moments(g, margins, PRIOR_WEIGHT), u)
        pf = 1.0 / (1.0 + (1.0 / p[cells] - 1.0) * w)
        tau1 += weight * float(prob_zero(r[cells], pf).sum())
        tau2 += weight * float(expected_inverse(np.ones(len(cells)), r[cells], pf).sum())
    return tau1, tau2


def main() -> None:
    ref = pd.read_csv(HERE / "corpus.csv").set_index("case")
    rows = []
    for case in corpus.cases():
        banded = numeric_keys(case)
        if not banded:
            continue
        sample, truth = corpus.draw(case)
        if truth["true_tau1"] == 0 or pd.isna(ref.at[case.index, f"{G50}:tau1"]):
            continue
        row = {"population": case.population, "true_tau1": truth["true_tau1"],
               "true_tau2": truth["true_tau2"], "g50:tau1": ref.at[case.index, f"{G50}:tau1"],
               "g50:tau2": ref.at[case.index, f"{G50}:tau2"]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for width in WIDTHS:
                row[f"band{width}:tau1"], row[f"band{width}:tau2"] = banded_taus(
                    sample, truth["N"], banded, width)
        rows.append(row)
    df = pd.DataFrame(rows)
    labels = ["g50", *(f"band{w}" for w in WIDTHS)]

    def err(d, label, m):
        return np.abs(d[f"{label}:{m}"] / d[f"true_{m}"] - 1)

    print(f"{len(df)} cases with a numeric key of >= {MIN_LEVELS} levels and a true tau1 > 0")
    print("| variant | tau1 median | tau1 p90 | tau2 median | tau2 p90 | median ratio to g50 "
          "(tau1) |")
    print("|---|---|---|---|---|---|")
    for label in labels:
        e1, e2 = err(df, label, "tau1"), err(df, label, "tau2")
        ratio = np.median(df[f"{label}:tau1"] / df["g50:tau1"])
        print(f"| {label} | {100 * e1.median():.1f}% | {100 * e1.quantile(0.9):.1f}% | "
              f"{100 * e2.median():.1f}% | {100 * e2.quantile(0.9):.1f}% | {ratio:.3f} |")
    print("\ntau1 median |relative error| by population:")
    print("| population | cases | " + " | ".join(labels) + " |")
    print("|---|---|" + "---|" * len(labels))
    for pop, d in df.groupby("population"):
        print(f"| {pop} | {len(d)} | "
              + " | ".join(f"{100 * err(d, lb, 'tau1').median():.1f}%" for lb in labels) + " |")


if __name__ == "__main__":
    main()
