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

import numpy as np
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


def fit_auto(table) -> dict:
    """The default auto on a cell table, as columns of a row: its tau1/tau2 and bounds
    (``auto:...``), its seconds, its sample features (``feature:...``, what :func:`lopo`
    needs to refit it), each candidate's tau1/tau2 and how many features were outside the
    corpus's range."""
    from sdcrisk import AutoRisk

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = AutoRisk().fit(table)
    row = {"auto:seconds": time.perf_counter() - t0}
    for m in ("tau1", "tau2"):
        meas = res.measures[m]
        row[f"auto:{m}"], row[f"auto:{m}_lo"], row[f"auto:{m}_hi"] = (
            meas.estimate, meas.lower, meas.upper)
    row.update({f"feature:{k}": v for k, v in res.fitted["features"].items()})
    row["outside_corpus"] = len(res.fitted.get("outside_corpus") or {})
    for c in res.fitted["candidate_estimates"]:
        for m in ("tau1", "tau2"):
            row[f"{c['candidate']}:{m}"] = c[m]
    return row


def run() -> None:
    from sdcrisk import Microdata, tabulate

    done = set(pd.read_csv(OUT)["case"]) if OUT.exists() else set()
    for case in cases():
        if case.index in done:
            continue
        sample, truth = corpus.draw(case)
        md = Microdata.from_source(sample, list(case.keys), population_size=truth["N"])
        table = tabulate(md)
        row = {"case": case.index, "population": case.population, "keyset": case.keyset,
               "n_keys": len(case.keys), "fraction": case.fraction, **truth}
        row.update(fit_auto(table))
        pd.DataFrame([row]).to_csv(OUT, mode="a", header=not OUT.exists(), index=False)
        print(case.index, case.population, case.keyset, case.fraction, flush=True)


def records() -> pd.DataFrame:
    """graphical(prior_weight=50)'s sample-unique record risks of every case's sample (what
    the record-calibrated auto maps), cached in ``benchmarks/corpus/`` (git-ignored)."""
    import calibrate_auto as cal

    from sdcrisk import Microdata, tabulate

    cache = corpus.OUT / "high_fraction-records.parquet"
    if cache.exists():
        return pd.read_parquet(cache)
    frames = []
    for case in cases():
        sample, truth = corpus.draw(case)
        table = tabulate(Microdata.from_source(sample, list(case.keys),
                                               population_size=truth["N"]))
        frames.append(cal.sample_records(table, case.index, case.population))
        print("records", case.index, case.population, case.keyset, case.fraction, flush=True)
    df = pd.concat(frames, ignore_index=True)
    corpus.OUT.mkdir(parents=True, exist_ok=True)
    df.to_parquet(cache)
    return df


def lopo(df: pd.DataFrame, records: pd.DataFrame | None = None) -> pd.DataFrame:
    """auto refitted leave-one-population-out: for each population, the calibrated model
    learned on the corpus cases (0.5-10%) of the other populations, applied to this
    population's high-fraction cases ("auto-lopo" columns). ``records`` (columns ``case``
    of ``df``, ``population``, ``p1``, ``r2``, ``log_fraction``: graphical(prior_weight=50)'s
    sample-unique record risks of the rows' samples) makes it the shipped rule since
    2026-11-25, with the record map fitted on the other populations (and the training
    cases' record feature from maps without their own population too, as
    ``calibrate_auto.lopo`` does); without it the rule before it."""
    import calibrate_auto as cal

    from sdcrisk.analyses._auto_calibrated import model_features

    corpus_df = cal.usable(cal.load(HERE / "corpus.csv"), cal.CANDIDATE_SETS["full"])
    cands = cal.CANDIDATE_SETS["full"]
    pops = corpus_df["population"].to_numpy()
    maps = None if records is None else cal.RecordMaps(cal.load_records(corpus_df))
    df = df.copy()
    su = df["sample_uniques"].to_numpy(float)
    base_cols = [c for c in df.columns if c.startswith("feature:")]
    for m in ("tau1", "tau2"):
        x, sx, names = cal.matrices(corpus_df, m, cands)
        y = cal._target(corpus_df, m)
        rows = []
        for i in range(len(df)):
            base = {c.split(":", 1)[1]: float(df.at[i, c]) for c in base_cols}
            est = {c: df.at[i, f"{c}:{m}"] for c in cands}
            feats = model_features(base, est, m, int(su[i]), cands)
            feats["log_su"] = float(np.log(max(su[i], 1)))
            rows.append([feats[k] for k in names] + [feats[k] for k in cal.SCALE_FEATURES])
        xr = np.asarray(rows, float)
        for p in df["population"].unique():
            tr = pops != p
            te = (df["population"] == p).to_numpy()
            xt, xtr, names_p = x, xr[te, :len(names)], names
            if maps is not None:
                col = maps.column(corpus_df, m, left_out=p)
                xt, names_p = cal.with_record(corpus_df, x, names, col, m)
                mine = records[records["population"] == p]
                rec = cal.record_sums(mine, maps.without(p), m, ["case"]).reindex(
                    df.loc[te, "case"]).to_numpy()
                rec = np.where(np.isfinite(rec), rec, 0.0)  # no sample unique, no records
                xtr, _ = cal.with_record(df[te].reset_index(drop=True), xtr, names, rec, m)
            model = cal.fit_model(xt[tr], y[tr], pops[tr], sx[tr], names_p, cal.SCALE_FEATURES)
            yh, yl, yu = cal.apply(model, xtr, xr[te, len(names):])
            df.loc[te, f"auto-lopo:{m}"] = su[te] * np.exp(yh)
            df.loc[te, f"auto-lopo:{m}_lo"] = su[te] * np.exp(yl)
            df.loc[te, f"auto-lopo:{m}_hi"] = np.minimum(su[te], su[te] * np.exp(yu))
    return df


def summary() -> None:
    """Markdown tables: |relative error| per method and fraction; auto's coverage/width."""
    df = lopo(pd.read_csv(OUT), records())
    methods = ["auto-lopo", "auto"] + sorted({c.rsplit(":", 1)[0] for c in df.columns
                                              if c.endswith(":tau1")
                                              and not c.startswith("auto")})
    for m in ("tau1", "tau2"):
        ok = df[df[f"true_{m}"] > 0]
        print(f"\n{m}: median / 90th percentile / worst |relative error| ({len(ok)} cases with "
              "truth > 0)\n")
        print("| fraction | cases | " + " | ".join(methods)
              + " | auto-lopo coverage | auto-lopo width |")
        print("|---" * (len(methods) + 4) + "|")
        for frac, g in ok.groupby("fraction"):
            cells = []
            for meth in methods:
                e = (g[f"{meth}:{m}"] / g[f"true_{m}"] - 1).abs().dropna()
                cells.append(f"{e.median():.1%} / {e.quantile(.9):.1%} / {e.max():.0%}")
            a = "auto-lopo"
            cov = ((g[f"{a}:{m}_lo"] <= g[f"true_{m}"])
                   & (g[f"true_{m}"] <= g[f"{a}:{m}_hi"])).mean()
            width = ((g[f"{a}:{m}_hi"] - g[f"{a}:{m}_lo"]) / g[f"{a}:{m}"]).median()
            print(f"| {frac:.0%} | {len(g)} | " + " | ".join(cells)
                  + f" | {cov:.1%} | {width:.1%} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--summary", action="store_true")
    a = ap.parse_args()
    if not a.summary:
        run()
    summary()
