"""auto blended with a record-level calibration of graphical(prior_weight=50) (issue 17).

auto's calibrated rule (``benchmarks/calibrate_auto.py``) blends its regression with
graphical(prior_weight=50)'s own log(tau / SU). This script scores one change, declared in
``benchmarks/unseen_records.py`` before its outside figures existed: the blend target (and one
more regression feature) becomes the sum over the sample uniques of g50's record risks after a
logistic map

    logit p' = a + b logit p + c log(n / N)

learned on the corpus's sample-unique records (``benchmarks/record_calibration.py``'s cache;
P(F = 1 | f = 1) against population uniqueness for tau1, E[1/F | f = 1] against 1/F as a
fractional outcome for tau2; records weighted 1 / SU so that every case counts once, every
population equally). The map has three parameters per measure, fitted on about 370,000
records.

Scored two ways, both without the scored population in any fit:

* corpus, nested leave-one-population-out: for a left-out population p the map is fitted on
  the other five; the training cases' own map column comes from maps that left out p and
  their own population too (stacking), so the regression and the blend weight never see a
  map fitted on the case they are fitted on;
* the 14 files outside the corpus (``unseen_free1.py``, ``unseen_rdatasets.py`` batches 1 and
  2; records from ``unseen_records.py``), everything fitted on all six corpus populations,
  against the shipped rule refitted the same way.

Usage::

    nice -n 10 python benchmarks/record_calibration.py   # the corpus's records (cached)
    nice -n 10 python benchmarks/unseen_records.py       # the outside files' records (cached)
    python benchmarks/record_rule.py [--outside]

The map's code is ``calibrate_auto.py``'s (``RecordMaps``), and the rule scored is the one
``calibrate_auto.py --write`` ships; the old rule (``shipped`` in the tables: the blend with
graphical(prior_weight=50)'s own figure, shipped 2026-11-24 to 2026-11-25) is the same code
without the record column.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import calibrate_auto as ca  # noqa: E402

OUTSIDE = (HERE / "unseen_free1.csv", HERE / "unseen_rdatasets.csv",
           HERE / "unseen_rdatasets2.csv")
RULES = ("shipped", "record")
FULL = ca.CANDIDATE_SETS["full"]


def corpus_lopo(df: pd.DataFrame, maps: ca.RecordMaps) -> pd.DataFrame:
    """Both rules, nested leave-one-population-out (``calibrate_auto.lopo``)."""
    old = ca.lopo(df, FULL)
    new = ca.lopo(df, FULL, records=maps)
    out = new.drop(columns=[c for c in new.columns if c.startswith("auto:")])
    for rule, res in zip(RULES, (old, new), strict=True):
        for c in res.columns:
            if c.startswith("auto:"):
                out[c.replace("auto:", f"{rule}:")] = res[c].to_numpy()
    return out


def outside_rows() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The outside samples with every candidate, and their sample-unique records."""
    import unseen_records

    od = pd.concat([pd.read_csv(p) for p in OUTSIDE if p.exists()], ignore_index=True)
    ok = np.all([np.isfinite(od[f"{c}:{m}"].to_numpy(float)) for c in FULL
                 for m in ca.MEASURES], axis=0)
    od = od[ok].reset_index(drop=True)
    od["case"] = np.arange(len(od))
    recs = unseen_records.load()
    key = ["population", "keyset", "fraction"]
    recs = recs.merge(od[[*key, "case", "n", "N"]], on=key, how="inner")
    recs["log_fraction"] = np.log(recs["n"] / recs["N"])
    big_f = recs["big_f"].to_numpy(float)
    recs["pu"], recs["inv_f"] = (big_f == 1).astype(float), 1.0 / big_f
    return od, recs


def outside(df: pd.DataFrame, maps: ca.RecordMaps) -> pd.DataFrame:
    """Both rules fitted on all six corpus populations (as ``--write`` ships them), applied
    to the outside samples."""
    od, orecs = outside_rows()
    every = sorted(df["population"].unique())
    record = maps.record(every)
    dfu = ca.usable(df, FULL)
    pops = dfu["population"].to_numpy()
    out = od[["population", "keyset", "fraction", "true_tau1", "true_tau2"]].copy()
    osu = od["sample_uniques"].to_numpy(float)
    for m in ca.MEASURES:
        x, sx, names = ca.matrices(dfu, m, FULL)
        ox, osx, _ = ca.matrices(od, m, FULL)
        y = ca._target(dfu, m)
        col = maps.column(dfu, m)
        ocol = ca.record_sums(orecs, record, m, ["case"]).reindex(od["case"]).to_numpy()
        ocol = np.where(np.isfinite(ocol), ocol, 0.0)  # (no sample unique: no records)
        for rule in RULES:
            xx, nn, oxx = x, names, ox
            if rule == "record":
                xx, nn = ca.with_record(dfu, x, names, col, m)
                oxx, _ = ca.with_record(od, ox, names, ocol, m)
            model = ca.fit_model(xx, y, pops, sx, nn, list(ca.SCALE_FEATURES))
            yh, yl, yu = ca.apply(model, oxx, osx)
            out[f"{rule}:{m}"], out[f"{rule}:{m}_lo"] = osu * np.exp(yh), osu * np.exp(yl)
            out[f"{rule}:{m}_hi"] = np.minimum(osu, osu * np.exp(yu))
    return out


def table(out: pd.DataFrame, title: str) -> None:
    print(f"\n{title}\n")
    print("| rule | measure | median | p90 | coverage | width | cases |")
    print("|---|---|---|---|---|---|---|")
    for rule in RULES:
        for m in ca.MEASURES:
            t = out[f"true_{m}"].to_numpy(float)
            e, lo, hi = (out[f"{rule}:{m}{s}"].to_numpy(float) for s in ("", "_lo", "_hi"))
            ok = (t > 0) & np.isfinite(e)
            r = np.abs(e[ok] / t[ok] - 1)
            print(f"| {rule} | {m} | {np.median(r):.1%} | {np.quantile(r, 0.9):.1%} | "
                  f"{np.mean((lo[ok] <= t[ok]) & (t[ok] <= hi[ok])):.1%} | "
                  f"{np.median((hi[ok] - lo[ok]) / e[ok]):.0%} | {int(ok.sum())} |")
    print("\n| population | shipped tau1 | record tau1 | shipped signed | record signed |")
    print("|---|---|---|---|---|")
    better = 0
    pops = out["population"].unique()
    for p in pops:
        g = out[(out["population"] == p) & (out["true_tau1"] > 0)
                & np.isfinite(out["record:tau1"])]
        rs = {r: g[f"{r}:tau1"] / g["true_tau1"] - 1 for r in RULES}
        better += rs["record"].abs().median() < rs["shipped"].abs().median()
        print(f"| {p} | {rs['shipped'].abs().median():.1%} | {rs['record'].abs().median():.1%}"
              f" | {rs['shipped'].median():+.1%} | {rs['record'].median():+.1%} |")
    print(f"\nrecord's tau1 median lower on {better} of {len(pops)}")


def main() -> None:
    df = ca.load(ca.HERE / "corpus.csv")
    maps = ca.RecordMaps(ca.load_records(df))
    every = sorted(df["population"].unique())
    for m in ca.MEASURES:
        print(f"map on all six populations, {m}: a, b, c = "
              f"{np.round(maps.record(every)[m], 4).tolist()}")
    table(corpus_lopo(df, maps), "Corpus, nested leave-one-population-out")
    if "--outside" in sys.argv:
        table(outside(df, maps), "Files outside the corpus, fitted on all six populations")


if __name__ == "__main__":
    main()
