"""Learn auto's calibrated combination and intervals on the corpus; report them leave-one-
population-out (LOPO).

Reads ``benchmarks/corpus.csv`` (``benchmarks/corpus.py --merge``). For each measure (tau1,
tau2) and each candidate set (``full``: every corpus candidate; ``exchangeable``: the
fallback when graphical cannot run) it fits

    log(tau / SU) = beta . [1, standardised features]

by Huber-loss ridge regression (IRLS), cases weighted so that every population counts equally,
the ridge penalty chosen by leave-one-population-out inside the training populations; blends
it with graphical(prior_weight=50)'s own log(tau / SU), a * model + (1 - a) * g50, the weight
a in {0, 0.25, ..., 1} chosen on the same inner out-of-population predictions (shipped since
2026-11-24, after ``benchmarks/unseen_variants.py``: the corpus learns a correction of g50's
over-estimate there that did not hold on real files outside it); the blend is again linear in
the standardised features and ships as plain coefficients; then a
scale model log|r| = gamma . [1, log fraction, log SU, predicted log(tau / SU)] on the
inner out-of-population residuals r (an estimate near its ceiling tau = SU errs less), and
the split-conformal quantiles of |r| / scale.

Every figure printed is LOPO: the population scored was in none of the fits, the penalty
choice or the conformal quantile. ``--write`` stores the parameters fitted on all populations
in ``src/sdcrisk/analyses/auto_params.json`` and the LOPO table in
``benchmarks/calibration.csv`` / the CALIBRATION section of RESULTS.md.

Usage::

    python benchmarks/calibrate_auto.py [--write]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from sdcrisk.analyses._auto_calibrated import (  # noqa: E402
    RECORD_FEATURE,
    SHARE_FLOOR,
    base_features,
    linear_prediction,
    model_features,
    record_map,
)

PARAMS = HERE.parent / "src" / "sdcrisk" / "analyses" / "auto_params.json"
CANDIDATE_SETS = {
    "full": ["pitman-yor", "graphical", "graphical(prior_weight=50)", "poisson-gamma", "nb"],
    "exchangeable": ["pitman-yor", "poisson-gamma", "nb"],
}
LAMBDAS = (0.3, 3.0, 30.0, 300.0)
#: the candidate the model is blended with, and the blend weights tried (issue 17: the
#: variant `shrink-g50` of combine_explore.py, confirmed outside the corpus by
#: unseen_variants.py)
SHRINK_TOWARDS = "graphical(prior_weight=50)"
SHRINK_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
HUBER = 0.1
#: the record-level calibration (issue 17, 2026-11-25; ``benchmarks/record_rule.py``): the
#: candidate whose sample-unique record risks are mapped by logit p' = a + b logit p +
#: c log(n / N), fitted on the corpus's records; the sum of the mapped risks is the feature
#: RECORD_FEATURE, and the regression is blended towards it instead of towards
#: SHRINK_TOWARDS's own figure
RECORD_SOURCE = "graphical(prior_weight=50)"
RECORD_SPEC = "graphical:prior_weight=50"  # the same, as a candidate is spelled
RECORD_LABEL = f"the sum of {RECORD_SOURCE}'s record risks after the corpus-learned map"
RECORD_CLIP = 1e-6
#: per measure: the record table's risk column and truth column
RECORD_COLUMNS = {"tau1": ("p1", "pu"), "tau2": ("r2", "inv_f")}
SCALE_FEATURES = ["log_fraction", "log_su"]
#: the last feature of the scale model: the model's own prediction of log(tau / SU) (<= 0)
PREDICTED = "predicted_log_share"
LEVELS = (0.5, 0.8, 0.9, 0.95, 0.99)
MEASURES = ("tau1", "tau2")
BEGIN, END = "<!-- CALIBRATION:BEGIN -->", "<!-- CALIBRATION:END -->"


def load(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path)
    df = df[df["sample_uniques"] > 0].reset_index(drop=True)
    return df


def features(df: pd.DataFrame, measure: str, cands: list[str]) -> pd.DataFrame:
    rows = []
    for r in df.itertuples(index=False):
        d = r._asdict() if hasattr(r, "_asdict") else dict(r)
        base = base_features(n=int(d["n"]), population_size=float(d["N"]),
                             sample_uniques=int(d["sample_uniques"]),
                             n_cells=int(d["n_cells"]), f2=int(d["f2"]), f3=int(d["f3"]),
                             cell_space=float(d["cell_space"]), n_keys=int(d["n_keys"]),
                             py_alpha=d.get("py_alpha"))
        rows.append(base)
    base = pd.DataFrame(rows)
    out = []
    for i in range(len(df)):
        est = {c: df.at[i, f"{c}:{measure}"] if f"{c}:{measure}" in df else None for c in cands}
        out.append(model_features(base.iloc[i].to_dict(), est, measure,
                                  int(df.at[i, "sample_uniques"]), cands))
    f = pd.DataFrame(out)
    f["log_su"] = np.log(df["sample_uniques"].to_numpy(float))
    return f


def _target(df: pd.DataFrame, measure: str) -> np.ndarray:
    t = df[f"true_{measure}"].to_numpy(float)
    with np.errstate(divide="ignore"):
        return np.where(t > 0, np.log(t / df["sample_uniques"].to_numpy(float)), np.nan)


def _weights(pops: np.ndarray) -> np.ndarray:
    _, inv, counts = np.unique(pops, return_inverse=True, return_counts=True)
    return 1.0 / counts[inv]


def fit_huber_ridge(x: np.ndarray, y: np.ndarray, w: np.ndarray, lam: float, *,
                    delta: float = HUBER, max_iter: int = 50) -> dict:
    """Huber (``delta`` on the log scale) ridge by IRLS; intercept not penalised."""
    mean = x.mean(axis=0)
    sd = x.std(axis=0)
    sd[sd < 1e-9] = 1.0
    z = np.clip((x - mean) / sd, -6, 6)
    a = np.column_stack([np.ones(len(z)), z])
    pen = lam * np.eye(a.shape[1])
    pen[0, 0] = 0.0
    ww = w / w.sum() * len(w)
    coef = np.zeros(a.shape[1])
    for _ in range(max_iter):
        r = y - a @ coef
        h = np.where(np.abs(r) <= delta, 1.0, delta / np.maximum(np.abs(r), 1e-12))
        wt = ww * h
        new = np.linalg.solve(a.T @ (a * wt[:, None]) + pen, a.T @ (wt * y))
        if np.max(np.abs(new - coef)) < 1e-8:
            coef = new
            break
        coef = new
    return {"mean": mean, "sd": sd, "coef": coef}


def predict_lin(model: dict, x: np.ndarray, *, clip: bool = True) -> np.ndarray:
    """As auto predicts at run time (``linear_prediction``: the standardised features
    clipped at 6 sd, the blend's share of its target not), then the ceiling at 0."""
    y = linear_prediction({**model, "clip": 6.0}, x)
    return np.minimum(y, 0.0) if clip else y


def lopo_predictions(x, y, pops, lam) -> np.ndarray:
    """Each population predicted by the model fitted on the others (before the ceiling
    log(tau / SU) <= 0)."""
    out = np.full(len(y), np.nan)
    for p in np.unique(pops):
        tr = (pops != p) & np.isfinite(y)
        m = fit_huber_ridge(x[tr], y[tr], _weights(pops[tr]), lam)
        out[pops == p] = predict_lin(m, x[pops == p], clip=False)
    return out


def _score(pred, y, pops) -> float:
    """Mean over populations of the median |relative error| (what the penalty minimises)."""
    ok = np.isfinite(y)
    e = np.abs(np.expm1(pred[ok] - y[ok]))
    return float(np.mean([np.median(e[pops[ok] == p]) for p in np.unique(pops[ok])]))


def fit_model(x, y, pops, sx, names, scale_names, *, scale_prediction: bool = True,
              shrink_to_g50: bool = True) -> dict:
    """The full calibrated model on these populations: penalty by LOPO, then the final fit,
    the scale of the LOPO residuals and the conformal quantiles. ``scale_prediction``: the
    prediction itself is the scale's last feature (the shipped rule). ``shrink_to_g50``: the
    model is blended with graphical(prior_weight=50)'s log(tau / SU), the weight chosen by
    LOPO inside these populations (the shipped rule since 2026-11-24; see
    ``benchmarks/unseen_variants.py``)."""
    best = None
    if len(np.unique(pops)) < 2:  # no population to leave out (only in partial corpora)
        m = fit_huber_ridge(x[np.isfinite(y)], y[np.isfinite(y)], _weights(pops[np.isfinite(y)]),
                            LAMBDAS[1])
        best = (0.0, LAMBDAS[1], predict_lin(m, x, clip=False))
    for lam in LAMBDAS if best is None else ():
        raw = lopo_predictions(x, y, pops, lam)
        s = _score(np.minimum(raw, 0.0), y, pops)
        if best is None or s < best[0]:
            best = (s, lam, raw)
    _, lam, raw = best  # the inner out-of-population predictions, before the ceiling
    pred = np.minimum(raw, 0.0)
    ok = np.isfinite(y)
    final = fit_huber_ridge(x[ok], y[ok], _weights(pops[ok]), lam)
    alpha = 1.0
    shrink, towards = ((RECORD_FEATURE, RECORD_LABEL) if RECORD_FEATURE in names
                       else (f"log_{SHRINK_TOWARDS}", f"{SHRINK_TOWARDS}'s own figure"))
    blended = shrink_to_g50 and shrink in names and len(np.unique(pops)) >= 2
    if blended:
        # blend with graphical(pw=50): a * model + (1 - a) * log(g50 / SU), a chosen on the
        # same inner out-of-population predictions as the penalty; the blend is again linear
        # in the standardised features, so it ships as plain coefficients
        k = names.index(shrink)
        g = x[:, k]
        alpha = min((_score(np.minimum(a * raw + (1 - a) * g, 0.0), y, pops), a)
                    for a in SHRINK_GRID)[1]
        pred = np.minimum(alpha * raw + (1 - alpha) * g, 0.0)
        # g = mean_k + sd_k z_k: the intercept and z_k's coefficient take (1 - a) of it
        coef = alpha * final["coef"]
        coef[0] += (1 - alpha) * final["mean"][k]
        coef[1 + k] += (1 - alpha) * final["sd"][k]
        final = {**final, "coef": coef}
    r = (y - pred)[ok]
    if scale_prediction:  # the scale also depends on the prediction itself
        sx = np.column_stack([sx, pred])
        scale_names = [*scale_names, PREDICTED]
    sa = np.column_stack([np.ones(ok.sum()), sx[ok]])
    w = _weights(pops[ok])
    gamma = np.linalg.lstsq(sa * np.sqrt(w)[:, None],
                            np.log(np.abs(r) + 0.02) * np.sqrt(w), rcond=None)[0]
    score = np.abs(r) / np.exp(sa @ gamma)
    qs = [float(_weighted_quantile(score, w, lev)) for lev in LEVELS]
    return {"features": names, "mean": final["mean"].tolist(), "sd": final["sd"].tolist(),
            "min": x[ok].min(axis=0).tolist(), "max": x[ok].max(axis=0).tolist(),
            "coef": final["coef"].tolist(), "lambda": lam, "clip": 6.0,
            "scale_features": list(scale_names), "scale_coef": gamma.tolist(),
            "scale_min": sx[ok].min(axis=0).tolist(), "scale_max": sx[ok].max(axis=0).tolist(),
            "conformal_levels": list(LEVELS), "conformal_quantiles": qs,
            **({"shrink": {"towards": towards, "alpha": alpha}} if blended else {})}


def _weighted_quantile(v, w, q):
    """Conformal quantile: weighted, with the (n + 1) / n finite-sample inflation."""
    order = np.argsort(v)
    v, w = v[order], w[order]
    c = np.cumsum(w) / w.sum()
    n = len(v)
    target = min(1.0, q * (n + 1) / n)
    return v[min(np.searchsorted(c, target), n - 1)]


def apply(model: dict, x: np.ndarray, sx: np.ndarray, level=0.95):
    m = {k: np.asarray(v) if isinstance(v, list) else v for k, v in model.items()}
    yhat = predict_lin(m, x)
    if m["scale_features"][-1] == PREDICTED:
        sx = np.column_stack([sx, yhat])
    sx = np.clip(sx, m["scale_min"], m["scale_max"])  # no narrower than measured (see auto)
    s = np.exp(np.column_stack([np.ones(len(sx)), sx]) @ m["scale_coef"])
    q = float(np.interp(level, m["conformal_levels"], m["conformal_quantiles"]))
    return yhat, yhat - q * s, yhat + q * s


def matrices(df, measure, cands, extra=None):
    """Feature matrix, scale-feature matrix and feature names; ``extra(df, measure)``, if
    given, returns more feature columns (explorations: a candidate feature judged LOPO)."""
    f = features(df, measure, cands)
    if extra is not None:
        f = pd.concat([f, extra(df, measure).set_axis(f.index)], axis=1)
    names = [c for c in f.columns if c != "log_su"]
    return f[names].to_numpy(float), f[SCALE_FEATURES].to_numpy(float), names


def usable(df: pd.DataFrame, cands: list[str]) -> pd.DataFrame:
    """The cases where every candidate of the set has tau1 and tau2 (as auto needs)."""
    ok = np.ones(len(df), bool)
    for c in cands:
        for m in MEASURES:
            col = f"{c}:{m}"
            ok &= df[col].notna().to_numpy() if col in df else False
    return df[ok].reset_index(drop=True)


# --- the record-level map ---------------------------------------------------------------
def load_records(df: pd.DataFrame) -> pd.DataFrame:
    """One row per sample-unique record of the corpus cases in ``df``: RECORD_SOURCE's risks
    (``benchmarks/record_calibration.py``'s cache, filled here for the cases not in it, about
    a minute for the whole corpus), the truth, SU and log(n / N) of its case."""
    import corpus
    import record_calibration as rc

    wanted = set(df["case"])
    cases = [c for c in corpus.cases() if c.index in wanted]
    rc.run_all(cases, None)
    recs = pd.concat([_case_records(rc, c) for c in cases], ignore_index=True)
    size = df.set_index("case")
    recs["log_fraction"] = np.log(recs["case"].map(size["n"]).to_numpy(float)
                                  / recs["case"].map(size["N"]).to_numpy(float))
    return recs


def sample_records(table, case: int, population: str) -> pd.DataFrame | None:
    """RECORD_SOURCE fitted on a sample's cell table: its sample-unique cells' risks, one row
    each, as :func:`load_records` has them (None without a sample unique)."""
    import warnings

    from sdcrisk.analyses.validation import Candidate

    su = table.counts == 1
    if not su.any():
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = Candidate.parse(RECORD_SPEC).estimator().fit(table)
    return pd.DataFrame({"case": case, "population": population,
                         "p1": res.cell_risk_values["population_unique"][su],
                         "r2": res.cell_risk_values["reidentification"][su],
                         "log_fraction": math.log(table.n / table.population_size)})


def _case_records(rc, case) -> pd.DataFrame:
    z = dict(np.load(rc.cache_path(case), allow_pickle=False))
    if str(z["error"]) or "p1" not in z:
        return pd.DataFrame()
    big_f = z["big_f"].astype(float)
    return pd.DataFrame({"case": case.index, "population": case.population,
                         "su": float(z["su"]), "p1": z["p1"].astype(float),
                         "r2": z["r2"].astype(float), "pu": (big_f == 1).astype(float),
                         "inv_f": 1.0 / big_f})


def _record_design(recs: pd.DataFrame, measure: str) -> np.ndarray:
    p = np.clip(recs[RECORD_COLUMNS[measure][0]].to_numpy(float), RECORD_CLIP, 1 - RECORD_CLIP)
    return np.column_stack([np.ones(len(p)), np.log(p / (1 - p)),
                            recs["log_fraction"].to_numpy(float)])


def fit_record_map(recs: pd.DataFrame, measure: str) -> list[float]:
    """a, b, c of the map by (quasi-)binomial likelihood (1/F is a fractional outcome for
    tau2); each record weighted 1 / SU of its case and populations equally, so every case
    counts once."""
    from scipy.optimize import minimize

    x = _record_design(recs, measure)
    y = recs[RECORD_COLUMNS[measure][1]].to_numpy(float)
    per_pop = recs.groupby("population")["case"].transform("nunique").to_numpy(float)
    w = 1.0 / recs["su"].to_numpy(float) / per_pop
    w *= len(w) / w.sum() / 1000.0

    def loss(b):
        z = x @ b
        return (float(np.sum(w * (np.logaddexp(0.0, z) - y * z))),
                x.T @ (w * (1.0 / (1.0 + np.exp(-z)) - y)))

    return minimize(loss, np.zeros(3), jac=True, method="L-BFGS-B").x.tolist()


def mapped_risks(recs: pd.DataFrame, record: dict, measure: str) -> np.ndarray:
    """Each record's risk after the map, as auto computes it (``_auto_calibrated.record_map``,
    one call per sampling fraction)."""
    mapped = np.empty(len(recs))
    for frac, idx in recs.groupby("log_fraction").indices.items():
        mapped[idx] = record_map(recs[RECORD_COLUMNS[measure][0]].to_numpy(float)[idx],
                                 math.exp(frac), record, measure)
    return mapped


def record_sums(recs: pd.DataFrame, record: dict, measure: str, by: list[str]) -> pd.Series:
    """Per group (case): the sum of the mapped risks."""
    return pd.Series(mapped_risks(recs, record, measure),
                     index=recs.index).groupby([recs[b] for b in by]).sum()


class RecordMaps:
    """Record maps fitted on sets of corpus populations (cached), and the record-calibrated
    estimates they give the corpus cases."""

    def __init__(self, recs: pd.DataFrame):
        self.recs = recs
        self._maps: dict = {}

    def record(self, pops) -> dict:
        """The ``record_map`` parameters fitted on ``pops``."""
        key = tuple(sorted(pops))
        if key not in self._maps:
            sub = self.recs[self.recs["population"].isin(key)]
            self._maps[key] = {"source": RECORD_SOURCE, "clip": RECORD_CLIP,
                               "terms": ["1", "logit p", "log(n / N)"],
                               **{m: fit_record_map(sub, m) for m in MEASURES}}
        return self._maps[key]

    def without(self, *pops) -> dict:
        """The map fitted on every population of the records except ``pops``."""
        every = self.recs["population"].unique()
        return self.record([q for q in every if q not in pops])

    def column(self, df: pd.DataFrame, measure: str, left_out=None) -> np.ndarray:
        """Each case's record-calibrated estimate from a map fitted without the case's own
        population, and without ``left_out`` too (the outer left-out population of a nested
        LOPO: its own cases get the map fitted on all the others; stacking). NaN where the
        case has no records."""
        out = np.full(len(df), np.nan)
        pops = df["population"].to_numpy()
        for p in np.unique(pops):
            r = self.recs[self.recs["population"] == p]
            idx = np.where(pops == p)[0]
            if r.empty:
                continue
            s = record_sums(r, self.without(p, left_out), measure, ["case"])
            out[idx] = s.reindex(df["case"].to_numpy()[idx]).to_numpy()
        return out


def with_record(df: pd.DataFrame, x: np.ndarray, names: list[str], col: np.ndarray,
                measure: str) -> tuple[np.ndarray, list[str]]:
    """The feature matrix with RECORD_FEATURE added: log(record-calibrated estimate / SU),
    floored as the candidates are; a case without records takes RECORD_SOURCE's own
    estimate."""
    su = df["sample_uniques"].to_numpy(float)
    own = df[f"{RECORD_SOURCE}:{measure}"].to_numpy(float)
    col = np.where(np.isfinite(col), col, own)
    share = np.log(np.maximum(col, SHARE_FLOOR * su) / su)  # as log_share, vectorised
    return np.column_stack([x, share]), [*names, RECORD_FEATURE]


def lopo(df: pd.DataFrame, cands: list[str], extra=None, *, scale_extra=None,
         scale_prediction: bool = True, shrink_to_g50: bool = True,
         records: RecordMaps | None = None) -> pd.DataFrame:
    """Outer LOPO: per held-out population, the model fitted on the others (with the
    ``extra`` feature columns of :func:`matrices`, if given; ``scale_extra(df, measure)``
    and ``scale_prediction`` vary the interval's scale model, ``shrink_to_g50`` the blend,
    see :func:`fit_model`). ``records``: the record-level calibration (the shipped rule when
    RECORD_SOURCE is a candidate), nested: for a held-out population p the map is fitted on
    the others, and each training case's own record feature comes from a map fitted without
    p and without the case's population (stacking), so that neither the regression nor the
    blend weight sees a map fitted on the case it is fitted on."""
    df = usable(df, cands)
    pops = df["population"].to_numpy()
    out = df[["case", "population", "keyset", "design", "fraction", "n", "sample_uniques",
              "true_tau1", "true_tau2"]].copy()
    su = df["sample_uniques"].to_numpy(float)
    for m in MEASURES:
        x, sx, names = matrices(df, m, cands, extra)
        scale_names = list(SCALE_FEATURES)
        if scale_extra is not None:
            more = scale_extra(df, m)
            sx = np.column_stack([sx, more.to_numpy(float)])
            scale_names += list(more.columns)
        y = _target(df, m)
        est = np.full(len(df), np.nan)
        lo = est.copy()
        hi = est.copy()
        nested = records is not None and RECORD_SOURCE in cands
        for p in np.unique(pops):
            tr = pops != p
            xp, names_p = x, names
            if nested:
                col = records.column(df, m, left_out=p)
                xp, names_p = with_record(df, x, names, col, m)
            model = fit_model(xp[tr], y[tr], pops[tr], sx[tr], names_p, scale_names,
                              scale_prediction=scale_prediction, shrink_to_g50=shrink_to_g50)
            te = pops == p
            yh, yl, yu = apply(model, xp[te], sx[te])
            est[te], lo[te], hi[te] = su[te] * np.exp(yh), su[te] * np.exp(yl), \
                np.minimum(su[te], su[te] * np.exp(yu))
        out[f"auto:{m}"], out[f"auto:{m}_lo"], out[f"auto:{m}_hi"] = est, lo, hi
    return out


def summary(df: pd.DataFrame, label: str, measure: str) -> dict:
    t = df[f"true_{measure}"].to_numpy(float)
    e = df.get(f"{label}:{measure}")
    if e is None:
        return {}
    e = e.to_numpy(float)
    ok = (t > 0) & np.isfinite(e)
    rel = np.abs(e[ok] / t[ok] - 1)
    lo = df.get(f"{label}:{measure}_lo")
    hi = df.get(f"{label}:{measure}_hi")
    cov = width = math.nan
    if lo is not None and hi is not None:
        lo, hi = lo.to_numpy(float)[ok], hi.to_numpy(float)[ok]
        has = np.isfinite(lo) & np.isfinite(hi)
        if has.any():
            cov = float(np.mean((lo[has] <= t[ok][has]) & (t[ok][has] <= hi[has])))
            with np.errstate(divide="ignore", invalid="ignore"):
                width = float(np.median((hi[has] - lo[has]) / e[ok][has]))
    return {"median": float(np.median(rel)), "p90": float(np.quantile(rel, 0.9)),
            "worst": float(rel.max()), "coverage": cov, "width": width, "cases": int(ok.sum())}


def _pct(x):
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:.1f}%"


def table_md(df_all: pd.DataFrame, labels: list[str]) -> list[str]:
    lines = ["| method | tau1 median | tau1 p90 | tau1 worst | tau1 coverage | tau1 width "
             "| tau2 median | tau2 p90 | tau2 worst | tau2 coverage | tau2 width | cases |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for lab in labels:
        s1, s2 = summary(df_all, lab, "tau1"), summary(df_all, lab, "tau2")
        if not s1:
            continue
        lines.append(f"| {lab} | " + " | ".join(
            _pct(s[k]) for s in (s1, s2) for k in ("median", "p90", "worst", "coverage",
                                                    "width")) + f" | {s1['cases']} |")
    return lines


def seed_lines() -> list[str]:
    """The table of ``benchmarks/corpus_seeds.py`` (its output file), if it was run."""
    path = HERE / "corpus_seeds.md"
    if not path.exists():
        return []
    return ["", "Seed stability of auto (`benchmarks/corpus_seeds.py`: KS8, 1% Bernoulli "
            "sample of each population, `AutoRisk(random_state=s)` for s = 0..9; spread = "
            "largest |value / median − 1|):", "", *path.read_text().strip().splitlines()]


def by_truth_md(df_all: pd.DataFrame) -> list[str]:
    lines = ["| true tau1 | cases | tau1 median | tau1 p90 | tau1 coverage | tau2 median "
             "| tau2 p90 | tau2 coverage |", "|---|---|---|---|---|---|---|---|"]
    bins = [(1, 10), (11, 50), (51, 200), (201, 10**9)]
    for lo, hi in bins:
        g = df_all[(df_all["true_tau1"] >= lo) & (df_all["true_tau1"] <= hi)]
        if g.empty:
            continue
        s1, s2 = summary(g, "auto", "tau1"), summary(g, "auto", "tau2")
        name = f"{lo}-{hi}" if hi < 10**9 else f"> {lo - 1}"
        lines.append(f"| {name} | {len(g)} | {_pct(s1['median'])} | {_pct(s1['p90'])} | "
                     f"{_pct(s1['coverage'])} | {_pct(s2['median'])} | {_pct(s2['p90'])} | "
                     f"{_pct(s2['coverage'])} |")
    return lines


def per_population_md(df_all: pd.DataFrame) -> list[str]:
    lines = ["| left-out population | cases | tau1 median | tau1 p90 | tau1 coverage "
             "| tau2 median | tau2 p90 | tau2 coverage | tau2 width |",
             "|---|---|---|---|---|---|---|---|---|"]
    for p, g in df_all.groupby("population"):
        s1, s2 = summary(g, "auto", "tau1"), summary(g, "auto", "tau2")
        lines.append(f"| {p} | {len(g)} | {_pct(s1['median'])} | {_pct(s1['p90'])} | "
                     f"{_pct(s1['coverage'])} | {_pct(s2['median'])} | {_pct(s2['p90'])} | "
                     f"{_pct(s2['coverage'])} | {_pct(s2['width'])} |")
    return lines


def loglinear_md(both: pd.DataFrame) -> list[str]:
    """The log-linear variants on the stratified subset (``corpus.py --loglinear``), beside
    the other methods and auto on the same cases."""
    path = HERE / "corpus_loglinear.csv"
    if not path.exists():
        return []
    ll = pd.read_csv(path)
    labels = ["loglinear(terms=all-2-way)", "loglinear(terms=search)"]
    cols = [f"{lab}:{m}{suf}" for lab in labels for m in MEASURES for suf in ("", "_lo", "_hi")]
    cols = [c for c in cols if c in ll]
    sub = both.merge(ll[["case", *cols]], on="case", how="inner")
    if sub.empty:
        return []
    lines = [f"Log-linear variants on the stratified subset ({len(sub)} cases: 1% and 5% "
             "Bernoulli samples whose compact key space is at most 200,000 cells; "
             "`corpus.py --loglinear`), with every method and auto on the same cases:", ""]
    lines += table_md(sub, [*labels, "auto", *CANDIDATE_SETS["full"]])
    lines += ["", "The forward search validates far better than the fixed all-2-way model, so it "
              "is `--method loglinear`'s default (`terms=\"search\"`; all-2-way stays "
              "available by name, and weighted fits refuse the search)."]
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(HERE / "corpus.csv"))
    ap.add_argument("--write", action="store_true",
                    help="write auto_params.json, calibration.csv and the RESULTS.md section")
    args = ap.parse_args(argv)
    df = load(Path(args.corpus))
    print(f"{len(df)} cases, {df['population'].nunique()} populations")
    records = RecordMaps(load_records(df))
    res = lopo(df, CANDIDATE_SETS["full"], records=records)
    res_x = lopo(df, CANDIDATE_SETS["exchangeable"])
    cols = [c for c in res.columns if c.startswith("auto:")]
    both = df.merge(res[["case", *cols]], on="case", how="left")
    both = both.merge(res_x[["case", *cols]]
                      .rename(columns=lambda c: c.replace("auto:", "auto-exchangeable:")),
                      on="case", how="left")
    # auto's runtime rule: the full model where every candidate ran, else the fallback
    fallback = both["auto:tau1"].isna()
    for c in cols:
        both.loc[fallback, c] = both.loc[fallback, c.replace("auto:", "auto-exchangeable:")]
    print(f"fallback (a graphical candidate failed or timed out): {int(fallback.sum())} cases")
    labels = ["auto", "auto-exchangeable", *CANDIDATE_SETS["full"]]
    lines = table_md(both, labels)
    print("\n".join(lines))
    pp = per_population_md(both)
    print("\n".join(pp))
    ll_lines = loglinear_md(both)
    print("\n".join(ll_lines))
    if not args.write:
        return
    every = sorted(df["population"].unique().tolist())
    params = {"version": 1, "corpus_cases": int(len(df)), "populations": every,
              "candidate_sets": CANDIDATE_SETS, "record_map": records.record(every),
              "models": {}}
    for set_name, cands in CANDIDATE_SETS.items():
        params["models"][set_name] = {}
        dfu = usable(df, cands)
        pops = dfu["population"].to_numpy()
        for m in MEASURES:
            x, sx, names = matrices(dfu, m, cands)
            if RECORD_SOURCE in cands:  # each case's feature from the map without its population
                x, names = with_record(dfu, x, names, records.column(dfu, m), m)
            y = _target(dfu, m)
            params["models"][set_name][m] = fit_model(x, y, pops, sx, names, SCALE_FEATURES)
    PARAMS.write_text(json.dumps(params, indent=1) + "\n")
    keep = ["case", "population", "keyset", "design", "fraction", "n", "sample_uniques",
            "true_tau1", "true_tau2"] + [c for c in both.columns if c.startswith("auto")]
    both[keep].to_csv(HERE / "calibration.csv", index=False, float_format="%.6g")
    write_results(both, lines, pp, len(df), ll_lines)
    print(f"wrote {PARAMS}")


def write_results(both, lines, pp, n_cases, ll_lines) -> None:
    pops = ", ".join(f"{p} ({k})" for p, k in both.groupby("population").size().items())
    body = [
        "## Calibration corpus and the calibrated auto (`benchmarks/corpus.py`, "
        "`benchmarks/calibrate_auto.py`, issue 17)",
        "",
        f"Machine: 2 cores (shared), {platform.platform()}, Python "
        f"{platform.python_version()}; date {datetime.date.today()}.",
        f"Corpus: {n_cases} cases with at least one sample unique: {pops}. Key sets KS6, KS8 "
        "and 10 random sets of 4-10 categorical variables per population; Bernoulli samples "
        "at 0.5-10% (at least 50 records) and whole-household samples at 1/3/5% for the "
        "household files. Truths from the population's own counts.",
        "",
        "Every auto figure is **leave-one-population-out**: the population scored was in none "
        "of the fits, the penalty choice or the conformal quantile. Single methods have no "
        "fitted part; their interval is their own. |rel err| = |estimate / truth − 1| over "
        "cases with truth > 0; coverage = share of cases whose 95% interval holds the truth; "
        "width = median of (upper − lower) / estimate.",
        "",
        *lines,
        "",
        "auto by left-out population:",
        "",
        *pp,
        "",
        "auto by the size of the true value (small counts are noisy: a realised tau1 of 5 "
        "has a Poisson-like spread of about 45% around any expectation):",
        "",
        *by_truth_md(both),
        "",
        *ll_lines,
        *seed_lines(),
    ]
    write_section(BEGIN, END, body)


def write_section(begin: str, end: str, lines: list[str], after: str | None = None) -> Path:
    """Replace the section of RESULTS.md between the markers ``begin`` and ``end`` by
    ``lines`` (between the same markers); a section not there yet goes after the marker
    ``after`` (or at the end)."""
    path = HERE / "RESULTS.md"
    text = path.read_text()
    body = "\n".join([begin, *lines, end])
    if begin in text:
        head, _, rest = text.partition(begin)
        _, _, tail = rest.partition(end)
        text = head + body + tail
    elif after is not None and after in text:
        head, sep, tail = text.partition(after)
        text = head + sep + "\n\n" + body + tail
    else:
        text = text.rstrip("\n") + "\n\n" + body + "\n"
    path.write_text(text)
    return path


if __name__ == "__main__":
    main()
