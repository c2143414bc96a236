"""auto on population *excerpts*, the design of issue 17's blind check (issue 17).

Issue 17 measured the default on "6 population files x 6- and 8-variable keys x 1/3/5%
Bernoulli samples, N = 7k-27k": excerpts of populations, not whole ones. An excerpt of a
large population is itself a sample of it, so as a population it is thinner (more of its
cells are single records) than the corpus's whole files. This script reproduces that design
on the corpus's six populations:

* ``EXCERPTS`` excerpts per population, each a simple random subset of ``N_e`` records with
  ``N_e`` drawn uniformly in 7,000-27,000 (the issue's range), seeded by the population's name;
  a file smaller than the draw (uk_census2011_nanodata, 10,000; sdcmicro_testdata, 4,580) is
  taken whole, once;
* the corpus's KS6 and KS8 key sets; Bernoulli samples of the excerpt at 1, 3 and 5%;
* truths from the excerpt's own cell counts (the excerpt *is* the population).

Two versions of auto are scored. ``auto`` is the shipped rule, fitted on all six populations:
it has seen the population each excerpt comes from, so its figure flatters. ``auto-lopo`` is
the same calibrated rule refitted on the corpus without the excerpt's population
(``high_fraction.lopo``, with graphical(prior_weight=50)'s record risks of each sample for the
record map, cached by :func:`records`): the honest figure for a population auto has never
seen. (The ``auto`` columns of the csv are the rule shipped when the rows were run.)

Rows go to ``benchmarks/excerpts.csv`` (resumable); ``--summary`` prints the tables.
``--random-keys`` uses the corpus's ten random key sets of 4-10 variables instead of KS6/KS8,
on the first two excerpts of each population
(rows to ``benchmarks/excerpts_random_keys.csv``): the same excerpts with the corpus's other
key sets, to tell the excerpts' effect from the key sets'.

Usage::

    nice -n 10 python benchmarks/excerpts.py [--random-keys] [--summary]
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
import high_fraction  # noqa: E402
import unseen_free1  # noqa: E402

OUT = HERE / "excerpts.csv"
OUT_RANDOM = HERE / "excerpts_random_keys.csv"
EXCERPTS = 5
SIZE_RANGE = (7_000, 27_000)
FRACTIONS = (0.01, 0.03, 0.05)
#: ``--random-keys`` uses the first two excerpts of each population (10 key sets each)
RANDOM_KEYS_EXCERPTS = 2


def _seed(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def excerpts(name: str) -> list[tuple[int, np.ndarray]]:
    """(excerpt number, row indices into the population) for one population."""
    big_n = len(corpus._population(name))
    rng = np.random.default_rng(_seed(f"excerpt {name}"))
    out = []
    for e in range(EXCERPTS):
        size = int(rng.integers(SIZE_RANGE[0], SIZE_RANGE[1] + 1))
        if size >= big_n:
            if e == 0:
                out.append((e, np.arange(big_n)))
            continue
        out.append((e, np.sort(rng.choice(big_n, size=size, replace=False))))
    return out


def _truth(pop: pd.DataFrame, keys, take: np.ndarray) -> dict:
    return {"N": len(pop), **unseen_free1.truth(pop, keys, take)}


def samples(random_keys: bool):
    """(case, population name, excerpt, excerpt frame, key-set label, keys, fraction, take)
    of every sample, in ``run``'s order (its case numbers)."""
    index = 0
    for name in corpus.KEYSETS:
        full = corpus._population(name)
        for e, rows in excerpts(name):
            if random_keys and e >= RANDOM_KEYS_EXCERPTS:
                continue
            pop = full.iloc[rows].reset_index(drop=True)
            sets = corpus.keysets(name)
            for label, keys in (sets[2:] if random_keys else sets[:2]):
                for frac in FRACTIONS:
                    case, index = index, index + 1
                    take = np.random.default_rng(
                        _seed(f"{name} {e} {label} {frac}")).random(len(pop)) < frac
                    yield case, name, e, pop, label, keys, frac, take


def run(out: Path, random_keys: bool) -> None:
    from sdcrisk import Microdata, tabulate

    done = set(pd.read_csv(out)["case"]) if out.exists() else set()
    for case, name, e, pop, label, keys, frac, take in samples(random_keys):
        if case in done:
            continue
        row = {"case": case, "population": name, "excerpt": e, "keyset": label,
               "fraction": frac, **_truth(pop, keys, take)}
        md = Microdata.from_source(pop.loc[take, list(keys)], list(keys),
                                   population_size=len(pop))
        row.update(high_fraction.fit_auto(tabulate(md)))
        pd.DataFrame([row]).to_csv(out, mode="a", header=not out.exists(), index=False)
        print(case, name, e, len(pop), label, frac, row["n"], row["true_tau1"],
              round(row["auto:tau1"], 1), flush=True)


def records(out: Path, random_keys: bool) -> pd.DataFrame:
    """graphical(prior_weight=50)'s sample-unique record risks of every sample (what the
    record-calibrated auto maps), cached in ``benchmarks/corpus/`` (git-ignored)."""
    import calibrate_auto as cal

    from sdcrisk import Microdata, tabulate

    cache = corpus.OUT / f"{out.stem}-records.parquet"
    if cache.exists():
        return pd.read_parquet(cache)
    frames = []
    for case, name, _, pop, _, keys, _, take in samples(random_keys):
        table = tabulate(Microdata.from_source(pop.loc[take, list(keys)], list(keys),
                                               population_size=len(pop)))
        frames.append(cal.sample_records(table, case, name))
    df = pd.concat(frames, ignore_index=True)
    corpus.OUT.mkdir(parents=True, exist_ok=True)
    df.to_parquet(cache)
    return df


def _cells(g: pd.DataFrame, meth: str, m: str, interval: bool) -> list[str]:
    t = g[f"true_{m}"].to_numpy(float)
    est = g[f"{meth}:{m}"].to_numpy(float)
    rel = np.abs(est / t - 1)
    out = [f"{np.median(rel):.1%}", f"{np.quantile(rel, 0.9):.1%}", f"{rel.max():.0%}"]
    if interval:
        lo, hi = g[f"{meth}:{m}_lo"].to_numpy(float), g[f"{meth}:{m}_hi"].to_numpy(float)
        out += [f"{np.mean((lo <= t) & (t <= hi)):.1%}", f"{np.median((hi - lo) / est):.0%}"]
    else:
        out += ["", ""]
    return out


def summary(out: Path, random_keys: bool) -> None:
    df = high_fraction.lopo(pd.read_csv(out), records(out, random_keys))
    cands = sorted({c.rsplit(":", 1)[0] for c in df.columns if c.endswith(":tau1")
                    and not c.startswith("auto")})
    print(f"{len(df)} samples of {df.groupby(['population', 'excerpt']).ngroups} excerpts; "
          f"N {df['N'].min():,}-{df['N'].max():,}; n {df['n'].min()}-{df['n'].max()}; "
          f"median true tau1 / SU {np.median(df['true_tau1'] / df['sample_uniques']):.2f}; "
          f"samples outside the corpus's feature range: {(df['outside_corpus'] > 0).sum()}\n")
    for m in ("tau1", "tau2"):
        ok = df[df[f"true_{m}"] > 0]
        print(f"\n{m} ({len(ok)} samples with truth > 0): median / p90 / worst |relative "
              "error|, coverage, width\n")
        print("| method | median | p90 | worst | coverage | width |")
        print("|---|---|---|---|---|---|")
        for meth in ["auto-lopo", "auto"] + cands:
            print(f"| {meth} | " + " | ".join(_cells(ok, meth, m, meth.startswith("auto")))
                  + " |")
    print("\nauto-lopo by population (tau1 median / coverage; tau2 median / coverage):\n")
    print("| population | samples | N | tau1 median | tau1 coverage | tau1 signed median "
          "| tau2 median | tau2 coverage |")
    print("|---|---|---|---|---|---|---|---|")
    for p, g in df.groupby("population", sort=False):
        c1 = _cells(g[g["true_tau1"] > 0], "auto-lopo", "tau1", True)
        c2 = _cells(g[g["true_tau2"] > 0], "auto-lopo", "tau2", True)
        g1 = g[g["true_tau1"] > 0]
        signed = np.median(g1["auto-lopo:tau1"] / g1["true_tau1"] - 1)
        print(f"| {p} | {len(g)} | {g['N'].min():,}-{g['N'].max():,} | {c1[0]} | {c1[3]} "
              f"| {signed:+.1%} | {c2[0]} | {c2[3]} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--random-keys", action="store_true",
                    help="the corpus's 10 random key sets of 4-10 variables instead of KS6/KS8 "
                         "(rows to excerpts_random_keys.csv)")
    a = ap.parse_args()
    path = OUT_RANDOM if a.random_keys else OUT
    if not a.summary:
        run(path, a.random_keys)
    summary(path, a.random_keys)
