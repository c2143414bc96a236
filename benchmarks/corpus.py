"""Calibration corpus (issue 17): many samples of the shared populations with exact truths.

Every population in ../shared/data with a household-free or household file (arx_adult is left
out: it is a 30,162-record subset of UCI Adult, not a population of its own, and would leak
between leave-one-population-out folds). For each population:

* key sets: the shared KS6 and KS8 plus ``RANDOM_KEYSETS`` random sets of 4-10 of its
  categorical variables (seeded by the population's name: deterministic);
* designs: Bernoulli samples at ``FRACTIONS`` (fractions leaving fewer than 50 records are
  skipped) and, for household files, Bernoulli samples of whole households at
  ``HH_FRACTIONS``;
* each case's truth (tau1, tau2) from the population's own cell counts, and every candidate's
  estimate on the sample (the sample's cell table only: no population information except N).

Rows are written to ``benchmarks/corpus/part-<i>-of-<k>.csv`` (small: one row per case).
Cases are numbered in a fixed order and part i of k takes cases i, i + k, ... so parts can run
on separate cores, and an interrupted part resumes where it stopped.

Usage::

    python benchmarks/corpus.py --list                # the cases, no fitting
    nice -n 10 python benchmarks/corpus.py --part 1/2
    nice -n 10 python benchmarks/corpus.py --part 1/2 --loglinear --time-limit 1500
    python benchmarks/corpus.py --merge               # parts -> benchmarks/corpus.csv
    nice -n 10 python benchmarks/corpus.py --copula --part 1/2 --time-limit 1500
    python benchmarks/corpus.py --merge-copula        # copula parts -> corpus.csv columns
    nice -n 10 python benchmarks/corpus.py --latent --part 1/2 --time-limit 2400
    python benchmarks/corpus.py --merge-latent        # latent-class parts -> corpus.csv

``--copula`` fits only the Gaussian-copula candidate (added after the main pass) and writes
``benchmarks/corpus/copula-part-<i>-of-<k>.csv`` (its tau1/tau2, interval bounds, seconds and
the ROC AUC of its record risk for "sample unique is population unique" on the case);
``--merge-copula`` adds those columns to ``benchmarks/corpus.csv`` (replacing earlier ones).
``--copula --auc SPEC`` computes instead the same AUC for another candidate's record risk
(e.g. ``graphical:prior_weight=50``, whose record risk auto reports), for comparison.
``--latent`` (parts ``latent-part-<i>-of-<k>.csv``) and ``--merge-latent`` do the same for the
latent-class candidate and its variants (``LATENT``).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
import signal
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"
OUT = HERE / "corpus"

KEYSETS = {
    "census_income_kdd": ["age sex race marital_stat education citizenship",
                          "age sex race marital_stat education citizenship "
                          "major_occupation_code country_of_birth_self"],
    "uci_adult": ["age sex race marital_status education native_country",
                  "age sex race marital_status education native_country workclass occupation"],
    "eusilcP": ["region hsize age gender ecoStat citizenship",
                "region hsize age gender ecoStat citizenship main eqinc_decile"],
    "ghanaS": ["region age sex relate ethnic religion",
               "region age sex relate ethnic religion highest_degree occupation"],
    "uk_census2011_nanodata": [
        "region sex age_band marital_status ethnic_group religion",
        "region sex age_band marital_status ethnic_group religion country_of_birth "
        "economic_activity"],
    "sdcmicro_testdata": ["urbrur water relat sex age hhcivil",
                          "urbrur water relat sex age hhcivil roof walls"],
}
#: columns that are identifiers or not key-like
EXCLUDE = {"rid", "source", "hid", "pid", "hhid", "clust", "person_id", "ori_hid",
           "income_50k", "income", "year"}
HOUSEHOLD = {"eusilcP": "hid", "ghanaS": "hhid", "sdcmicro_testdata": "ori_hid"}
RANDOM_KEYSETS = 10
FRACTIONS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.1)
HH_FRACTIONS = (0.01, 0.03, 0.05)
MIN_RECORDS = 50
#: candidates run on every case (cheap: closed forms or one pass over the observed cells)
CANDIDATES = ("nb", "poisson-gamma", "pitman-yor", "graphical", "graphical:prior_weight=50")


@dataclass(frozen=True)
class Case:
    index: int
    population: str
    keyset: str       # KS6, KS8, R01..R10
    keys: tuple[str, ...]
    design: str       # bernoulli / household
    fraction: float

    @property
    def seed(self) -> int:
        text = f"{self.population}|{self.keyset}|{self.design}|{self.fraction}"
        return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def _population_file(name: str) -> Path:
    return next((DATA / name).glob("*.csv.gz"))


def _columns(name: str) -> list[str]:
    cols = pd.read_csv(_population_file(name), nrows=1).columns
    return [c for c in cols if c not in EXCLUDE]


def keysets(name: str) -> list[tuple[str, tuple[str, ...]]]:
    out = [("KS6", tuple(KEYSETS[name][0].split())), ("KS8", tuple(KEYSETS[name][1].split()))]
    cols = _columns(name)
    rng = np.random.default_rng(int(hashlib.sha256(name.encode()).hexdigest()[:8], 16))
    seen = {frozenset(k) for _, k in out}
    i = 0
    while i < RANDOM_KEYSETS:
        size = int(rng.integers(4, min(10, len(cols)) + 1))
        keys = tuple(sorted(rng.choice(cols, size=size, replace=False)))
        if frozenset(keys) in seen:
            continue
        seen.add(frozenset(keys))
        i += 1
        out.append((f"R{i:02d}", keys))
    return out


def cases() -> list[Case]:
    out: list[Case] = []
    for name in KEYSETS:
        big_n = sum(1 for _ in pd.read_csv(_population_file(name), usecols=[0]).itertuples())
        designs = [("bernoulli", f) for f in FRACTIONS if f * big_n >= MIN_RECORDS]
        if name in HOUSEHOLD:
            designs += [("household", f) for f in HH_FRACTIONS if f * big_n >= MIN_RECORDS]
        for label, keys in keysets(name):
            for design, frac in designs:
                out.append(Case(len(out), name, label, keys, design, frac))
    return out


_POP_CACHE: dict[str, pd.DataFrame] = {}


def _population(name: str) -> pd.DataFrame:
    if name not in _POP_CACHE:  # all six together take about 150 MB
        _POP_CACHE[name] = pd.read_csv(_population_file(name))
    return _POP_CACHE[name]


_IDS_CACHE: dict[tuple, np.ndarray] = {}


def _cell_ids(df: pd.DataFrame, keys) -> np.ndarray:
    """Dense cell id of every population record (mixed radix, re-densified as it grows)."""
    key = (id(df), tuple(keys))
    if key not in _IDS_CACHE:
        _IDS_CACHE.clear()
        ids = np.zeros(len(df), np.int64)
        size = 1
        for col in keys:
            _, codes = np.unique(df[col].to_numpy(), return_inverse=True)
            levels = int(codes.max()) + 1
            if size * levels > 2**62:
                _, ids = np.unique(ids, return_inverse=True)
                size = int(ids.max()) + 1
            ids = ids * levels + codes.ravel()
            size *= levels
        _, ids = np.unique(ids, return_inverse=True)
        _IDS_CACHE[key] = ids.ravel()
    return _IDS_CACHE[key]


def draw(case: Case) -> tuple[pd.DataFrame, dict]:
    """The case's sample (its key columns) and the truth."""
    sample, truth, _ = draw_records(case)
    return sample, truth


def draw_records(case: Case) -> tuple[pd.DataFrame, dict, np.ndarray]:
    """:func:`draw`, plus the population count F of each sampled record's cell (in the
    sample's row order)."""
    df = _population(case.population)
    rng = np.random.default_rng(case.seed)
    if case.design == "household":
        hh = df[HOUSEHOLD[case.population]].to_numpy()
        uniq, inv = np.unique(hh, return_inverse=True)
        take = (rng.random(len(uniq)) < case.fraction)[inv.ravel()]
    else:
        take = rng.random(len(df)) < case.fraction
    ids = _cell_ids(df, case.keys)
    big_f = np.bincount(ids)
    f = np.bincount(ids[take], minlength=len(big_f))
    su = f == 1
    truth = {"N": len(df), "n": int(take.sum()), "sample_uniques": int(su.sum()),
             "true_tau1": int(np.sum(su & (big_f == 1))),
             "true_tau2": float(np.sum(1.0 / big_f[su])),
             "pop_cells": int(len(big_f)), "pop_uniques": int(np.sum(big_f == 1))}
    return df.loc[take, list(case.keys)], truth, big_f[ids[take]]


def features(table) -> dict:
    """Sample-only features of a cell table."""
    counts = table.counts
    n, su = table.n, int(table.sample_uniques)
    f2 = int(np.sum(counts == 2))
    f3 = int(np.sum(counts == 3))
    return {"n_cells": int(table.n_cells), "f1": su, "f2": f2, "f3": f3,
            "cell_space": float(table.cell_space),
            "log_cell_space": math.log(float(table.cell_space)),
            "su_share": su / n, "cells_per_record": table.n_cells / n}


#: the log-linear variants, run only where the compact key space is at most LOGLINEAR_MAX_K
#: (``--loglinear``: a separate, time-bounded pass; a search fits 10-100 models)
LOGLINEAR = ("loglinear:terms=all-2-way", "loglinear:terms=search")
LOGLINEAR_MAX_K = 200_000


#: seconds a candidate may take on one case (graphical's model search on tiny samples with
#: 9-10 keys took minutes when the corpus was run; since then the search is about 10 times
#: faster and bounded by max_visited, benchmarks/bench_graphical_search.py); a candidate past
#: it is recorded as failed
CANDIDATE_TIMEOUT = 120


class CandidateTimeout(Exception):
    pass


def _timeout(signum, frame):
    raise CandidateTimeout(f"over {CANDIDATE_TIMEOUT} s")


def fit_or_error(estimator, table):
    """(result, None), or (None, "Error: message") when the fit fails or runs past
    CANDIDATE_TIMEOUT (a failure is a corpus fact); warnings are silenced."""
    signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(CANDIDATE_TIMEOUT)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return estimator.fit(table), None
    except Exception as exc:  # noqa: BLE001 - a failure is a corpus fact
        return None, f"{type(exc).__name__}: {exc}"[:200]
    finally:
        signal.alarm(0)


def record_measures(row: dict, label: str, res) -> None:
    """tau1 and tau2 of a fit, with their interval, as the row's ``label:`` columns."""
    for m in ("tau1", "tau2"):
        meas = res.measures[m]
        row[f"{label}:{m}"] = meas.estimate
        row[f"{label}:{m}_lo"] = meas.lower
        row[f"{label}:{m}_hi"] = meas.upper


def timed_fit(row: dict, cand, table):
    """Fit a candidate (:func:`fit_or_error`) and record its measures and seconds, or its
    error, in the row's ``label:`` columns; the result, or None when it failed."""
    t0 = time.perf_counter()
    res, error = fit_or_error(cand.estimator(), table)
    if error is not None:
        row[f"{cand.label}:error"] = error
        return None
    record_measures(row, cand.label, res)
    row[f"{cand.label}:seconds"] = time.perf_counter() - t0
    return res


def run_case(case: Case, candidates=CANDIDATES, max_k: float | None = None) -> dict | None:
    from sdcrisk import Microdata, tabulate
    from sdcrisk.analyses.validation import Candidate

    sample, truth = draw(case)
    row = {"case": case.index, "population": case.population, "keyset": case.keyset,
           "keys": " ".join(case.keys), "n_keys": len(case.keys), "design": case.design,
           "fraction": case.fraction, **truth}
    md = Microdata.from_source(sample, list(case.keys), population_size=truth["N"])
    table = tabulate(md)
    if max_k is not None:
        from sdcrisk.estimators.loglinear import compact_levels

        if compact_levels(table).cell_space > max_k:
            return None
    row.update(features(table))
    for spec in candidates:
        cand = Candidate.parse(spec)
        res = timed_fit(row, cand, table)
        if res is None:
            continue
        if cand.method == "pitman-yor":
            row["py_alpha"] = res.fitted["alpha"]
            row["py_theta"] = res.fitted["theta"]
            row["py_bound"] = bool(res.diagnostics.get("alpha_at_bound")
                                   or res.diagnostics.get("theta_at_bound"))
        if cand.method == "poisson-gamma":
            row["pg_alpha"] = res.fitted["alpha"]
    return row


def _part_path(i: int, k: int, loglinear: bool = False) -> Path:
    return OUT / f"{'loglinear-' if loglinear else ''}part-{i}-of-{k}.csv"


def _run_pass(path: Path, i: int, k: int, limit: float | None, run, *, keep=None,
              order=lambda c: (c.population, c.keyset), label: str = "case") -> None:
    """Part i of k of a pass: ``run(case)`` on the cases not yet in ``path`` (those ``keep``
    accepts), in ``order``, appending each row (None: skipped) and rewriting ``path`` after
    every case, so that an interrupted part resumes; stops after ``limit`` seconds."""
    OUT.mkdir(exist_ok=True)
    rows = pd.read_csv(path).to_dict("records") if path.exists() else []
    done = {r["case"] for r in rows}
    todo = [c for c in cases() if c.index % k == i - 1 and c.index not in done
            and (keep is None or keep(c))]
    todo.sort(key=order)
    start = time.time()
    for case in todo:
        if limit is not None and time.time() - start > limit:
            print(f"time limit reached; {len(todo)} cases were left", flush=True)
            break
        t0 = time.time()
        row = run(case)
        if row is None:
            continue
        rows.append(row)
        pd.DataFrame(rows).to_csv(path, index=False)
        print(f"{label} {case.index} {case.population} {case.keyset} {case.design} "
              f"{case.fraction}: {time.time() - t0:.1f}s", flush=True)


def run_part(i: int, k: int, limit: float | None, loglinear: bool = False) -> None:
    if not loglinear:
        _run_pass(_part_path(i, k), i, k, limit, run_case)
        return
    # a stratified subset (1% and 5% Bernoulli samples, every key set), interleaving the
    # populations key set by key set so that a cut-off of this time-bounded pass leaves
    # every population scored
    _run_pass(_part_path(i, k, True), i, k, limit,
              lambda c: run_case(c, LOGLINEAR, LOGLINEAR_MAX_K),
              keep=lambda c: c.design == "bernoulli" and c.fraction in (0.01, 0.05),
              order=lambda c: (c.keyset, c.fraction, c.population))


def refit(method: str, query: str) -> None:
    """Re-fit one candidate on the part rows matching ``query`` (after a fix to it)."""
    by_index = {c.index: c for c in cases()}
    for path in sorted(OUT.glob("part-*.csv")):
        df = pd.read_csv(path)
        hit = df.query(query).index
        for i in hit:
            new = run_case(by_index[int(df.at[i, "case"])], (method,))
            for k, v in new.items():
                if k.startswith(method) or k.startswith("py_"):
                    df.at[i, k] = v
            print(f"refitted {method} on case {df.at[i, 'case']}", flush=True)
        df.to_csv(path, index=False)


#: the copula pass (added after the main pass: its own part files, merged as columns)
COPULA = "copula"


def run_copula_case(case: Case) -> dict:
    """The Gaussian-copula candidate on one case, with the AUC of its record risk."""
    from sdcrisk import GaussianCopulaRisk, Microdata, roc_auc, tabulate

    sample, truth, record_f = draw_records(case)
    row: dict = {"case": case.index}
    table = tabulate(Microdata.from_source(sample, list(case.keys), population_size=truth["N"]))
    t0 = time.perf_counter()
    res, error = fit_or_error(GaussianCopulaRisk(), table)
    if error is not None:
        row[f"{COPULA}:error"] = error
        return row
    row[f"{COPULA}:seconds"] = time.perf_counter() - t0
    record_measures(row, COPULA, res)
    su = table.counts[table.record_cell] == 1
    row[f"{COPULA}:auc"] = roc_auc(res.record_risk("population_unique")[su], record_f[su] == 1)
    row[f"{COPULA}:qmc_se_tau1"] = res.diagnostics["qmc_standard_error"].get("tau1")
    row[f"{COPULA}:max_rho"] = res.diagnostics["max_abs_correlation"]
    return row


def run_auc_case(case: Case, spec: str) -> dict:
    """The ROC AUC of one candidate's record risk P(F = 1 | f = 1) over the sample uniques
    (for comparison with the copula's; ``--auc SPEC``)."""
    from sdcrisk import Microdata, roc_auc, tabulate
    from sdcrisk.analyses.validation import Candidate

    cand = Candidate.parse(spec)
    sample, truth, record_f = draw_records(case)
    row: dict = {"case": case.index}
    table = tabulate(Microdata.from_source(sample, list(case.keys), population_size=truth["N"]))
    res, error = fit_or_error(cand.estimator(), table)
    if error is not None:
        row[f"{cand.label}:auc_error"] = error
        return row
    su = table.counts[table.record_cell] == 1
    row[f"{cand.label}:auc"] = roc_auc(res.record_risk("population_unique")[su],
                                       record_f[su] == 1)
    return row


def run_copula_part(i: int, k: int, limit: float | None, auc: str | None = None) -> None:
    path = OUT / (f"copula-part-{i}-of-{k}.csv" if auc is None
                  else f"auc-{auc.replace(':', '_').replace('=', '')}-part-{i}-of-{k}.csv")
    _run_pass(path, i, k, limit,
              run_copula_case if auc is None else (lambda c: run_auc_case(c, auc)),
              label="copula case")


def merge_copula() -> pd.DataFrame:
    """Add the copula pass's columns (and the ``--auc`` passes' AUC columns) to corpus.csv,
    replacing earlier ones."""
    df = pd.read_csv(HERE / "corpus.csv")
    for pattern in ("copula-part-*.csv", "auc-*-part-*.csv"):
        parts = sorted(OUT.glob(pattern))
        if not parts:
            continue
        new = pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)
        new = new.groupby("case", as_index=False).first()
        df = df[[c for c in df.columns if c == "case" or c not in new.columns]]
        df = df.merge(new, on="case", how="left")
    df = df.sort_values("case")
    df.to_csv(HERE / "corpus.csv", index=False, quoting=csv.QUOTE_MINIMAL, float_format="%.8g")
    return df


#: the latent-class pass (issue 17 item 2): the default and the variants tried, each a
#: candidate spec whose label names its columns (every variant is reported, none chosen here)
LATENT = ("latent-class", "latent-class:classes=bic", "latent-class:classes=average",
          "latent-class:smoothing=1", "latent-class:classes=8")
#: run after the first latent pass (its own part files ``latent-extra-part-*``): is the cap
#: of 8 classes binding? (the held-out rule chose 8 on many cases)
LATENT_EXTRA = ("latent-class:max_classes=16",)


def run_latent_case(case: Case, specs=LATENT) -> dict:
    """The latent-class candidate and its variants on one case: tau1/tau2, interval bounds,
    seconds, the chosen number of classes and the ROC AUC of the record risk."""
    from sdcrisk import Microdata, roc_auc, tabulate
    from sdcrisk.analyses.validation import Candidate

    sample, truth, record_f = draw_records(case)
    row: dict = {"case": case.index}
    table = tabulate(Microdata.from_source(sample, list(case.keys), population_size=truth["N"]))
    su = table.counts[table.record_cell] == 1
    for spec in specs:
        cand = Candidate.parse(spec)
        res = timed_fit(row, cand, table)
        if res is None:
            continue
        row[f"{cand.label}:classes"] = res.diagnostics["classes"]
        row[f"{cand.label}:auc"] = roc_auc(res.record_risk("population_unique")[su],
                                           record_f[su] == 1)
    return row


def run_latent_part(i: int, k: int, limit: float | None, extra: bool = False) -> None:
    _run_pass(OUT / f"latent-{'extra-' if extra else ''}part-{i}-of-{k}.csv", i, k, limit,
              (lambda c: run_latent_case(c, LATENT_EXTRA)) if extra else run_latent_case,
              label="latent case")


def merge_latent() -> pd.DataFrame:
    """Add the latent-class pass's columns to corpus.csv, replacing earlier ones."""
    df = pd.read_csv(HERE / "corpus.csv")
    parts = sorted(OUT.glob("latent-*part-*.csv"))  # the first pass and the extra one
    new = pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)
    new = new.groupby("case", as_index=False).first()
    df = df[[c for c in df.columns if c == "case" or c not in new.columns]]
    df = df.merge(new, on="case", how="left").sort_values("case")
    df.to_csv(HERE / "corpus.csv", index=False, quoting=csv.QUOTE_MINIMAL, float_format="%.8g")
    return df


def merge() -> pd.DataFrame:
    parts = sorted(OUT.glob("part-*.csv"))
    df = pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)
    df = df.drop_duplicates("case").sort_values("case")
    df.to_csv(HERE / "corpus.csv", index=False, quoting=csv.QUOTE_MINIMAL, float_format="%.8g")
    ll = sorted(OUT.glob("loglinear-part-*.csv"))
    if ll:
        dl = pd.concat([pd.read_csv(p) for p in ll], ignore_index=True)
        dl.drop_duplicates("case").sort_values("case").to_csv(
            HERE / "corpus_loglinear.csv", index=False, float_format="%.8g")
    return df


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="1/1", help="i/k: run cases i, i+k, ... (default 1/1)")
    ap.add_argument("--list", action="store_true", help="print the cases and exit")
    ap.add_argument("--merge", action="store_true", help="merge the parts into corpus.csv")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds for this run")
    ap.add_argument("--loglinear", action="store_true",
                    help="the log-linear pass (1%% and 5%% samples, compact K <= 200,000)")
    ap.add_argument("--refit", nargs=2, metavar=("METHOD", "QUERY"),
                    help="re-fit one candidate on the rows matching a pandas query, e.g. "
                    "--refit pitman-yor 'py_theta > 1e5' (done 2026-11-24 after the "
                    "large-theta fix of the Pitman-Yor tau2)")
    ap.add_argument("--copula", action="store_true",
                    help="the Gaussian-copula pass only (its own part files)")
    ap.add_argument("--auc", metavar="SPEC", default=None,
                    help="with --copula: instead, the record-risk AUC of this candidate, e.g. "
                    "'graphical:prior_weight=50' (the record risk auto reports)")
    ap.add_argument("--merge-copula", action="store_true",
                    help="add the copula parts' columns to corpus.csv")
    ap.add_argument("--latent", action="store_true",
                    help="the latent-class pass only (its own part files)")
    ap.add_argument("--latent-extra", action="store_true",
                    help="with --latent: the variants added after the first pass "
                    "(LATENT_EXTRA)")
    ap.add_argument("--merge-latent", action="store_true",
                    help="add the latent-class parts' columns to corpus.csv")
    args = ap.parse_args(argv)
    if args.merge_latent:
        df = merge_latent()
        print(f"latent-class columns for {int(df['latent-class:tau1'].notna().sum())} cases "
              "merged")
        return
    if args.merge_copula:
        df = merge_copula()
        print(f"copula columns for {int(df[f'{COPULA}:tau1'].notna().sum())} cases merged")
        return
    if args.refit:
        refit(*args.refit)
        return
    if args.list:
        cs = cases()
        for c in cs:
            print(c.index, c.population, c.keyset, len(c.keys), c.design, c.fraction)
        print(f"{len(cs)} cases")
        return
    if args.merge:
        df = merge()
        print(f"{len(df)} cases merged into {HERE / 'corpus.csv'}")
        return
    i, k = (int(x) for x in args.part.split("/"))
    if args.copula:
        run_copula_part(i, k, args.time_limit, args.auc)
        return
    if args.latent:
        run_latent_part(i, k, args.time_limit, args.latent_extra)
        return
    run_part(i, k, args.time_limit, args.loglinear)


if __name__ == "__main__":
    main()
