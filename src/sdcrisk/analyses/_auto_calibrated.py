"""The calibrated rule of ``method="auto"``: a meta-estimator learned on a corpus of populations.

``auto`` fits a fixed set of cheap, deterministic candidates on the whole file (no
sub-sampling, so the answer does not depend on a seed through the choice) and combines their
tau1 and tau2 by a regression learned on the calibration corpus (``benchmarks/corpus.py``,
``benchmarks/calibrate_auto.py``): for a measure m,

    log(tau_m / SU) = sum_j beta_j x_j,

x = standardised sample-only features (each candidate's log(tau_m / SU), the sampling fraction,
n, the sample-unique share, cells per record, the key space, the Pitman-Yor alpha..., and the
record-calibrated estimate ``log_record``: log of the sum over the sample uniques of
graphical(prior_weight=50)'s record risks after the map :func:`record_map` learned on the
corpus's records). The regression is blended with that record-calibrated log(tau_m / SU)
(weight 0.25 on the regression for tau1, 0 for tau2, chosen on the corpus); the blend is
linear in x, so ``beta`` already holds it (``auto_params.json`` records the weight under
``shrink`` and the map under ``record_map``). Its 95%
interval is a normalised split-conformal interval: exp(+-q s(x)) around the estimate, s(x) a
fitted scale of the out-of-population log error (log-linear in the log sampling fraction, the
log number of sample uniques and the predicted log(tau_m / SU) itself: an estimate near its
ceiling tau_m = SU errs less) and q the corpus quantile of |error| / s.
The parameters are package data (``auto_params.json``); ``docs/auto.md`` reports their
leave-one-population-out accuracy and coverage.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

__all__ = ["load_params", "base_features", "model_features", "predict", "outside_range",
           "record_map", "log_share", "SHARE_FLOOR", "MEASURES", "RECORD_FEATURE",
           "RECORD_RISK_KIND"]

MEASURES = ("tau1", "tau2")
#: the feature holding the record-calibrated estimate: log(sum of mapped record risks / SU)
RECORD_FEATURE = "log_record"
#: the per-cell risk whose record-level map gives each measure's record-calibrated estimate
RECORD_RISK_KIND = {"tau1": "population_unique", "tau2": "reidentification"}
#: floor of a candidate's tau (as a share of the sample uniques) before taking logs
SHARE_FLOOR = 1e-4


@lru_cache(maxsize=1)
def load_params() -> dict[str, Any]:
    """The shipped parameters (``sdcrisk/analyses/auto_params.json``)."""
    text = resources.files("sdcrisk.analyses").joinpath("auto_params.json").read_text()
    return json.loads(text)


def base_features(*, n: int, population_size: float, sample_uniques: int, n_cells: int,
                  f2: int, f3: int, cell_space: float, n_keys: int, py_alpha: float | None
                  ) -> dict[str, float]:
    """Features observable in the sample alone (no candidate estimate). ``f2``, ``f3``: the
    numbers of cells seen twice and three times. ``log_chao_per_N``: Chao's lower bound of
    the number of population cells, K_n + f1^2 / (2 (f2 + 1)), per population record."""
    su = max(int(sample_uniques), 1)
    chao = n_cells + sample_uniques**2 / (2.0 * (f2 + 1))
    return {
        "log_chao_per_N": math.log(chao / population_size),
        "f3_per_su": f3 / su,
        "log_fraction": math.log(n / population_size),
        "log_n": math.log(n),
        "su_share": sample_uniques / n,
        "log_cells_per_record": math.log(n_cells / n),
        "f2_per_su": f2 / su,
        "log_space_per_record": math.log(max(cell_space, 1.0) / n),
        "n_keys": float(n_keys),
        "py_alpha": float(py_alpha) if py_alpha is not None and math.isfinite(py_alpha)
        else 0.5,
    }


def model_features(base: dict[str, float], estimates: dict[str, float], measure: str,
                   sample_uniques: int, candidates: list[str]) -> dict[str, float]:
    """Base features plus each candidate's log(tau_m / SU) for ``measure``."""
    out = dict(base)
    for c in candidates:
        out[f"log_{c}"] = log_share(estimates.get(c), sample_uniques)
    return out


def log_share(value: float | None, sample_uniques: int) -> float:
    """log(value / SU), the value floored at 1e-4 SU (a missing or non-finite one taken as
    the floor): how every estimate enters the combination."""
    su = max(int(sample_uniques), 1)
    floor = SHARE_FLOOR * su
    v = floor if value is None or not np.isfinite(value) else max(float(value), floor)
    return math.log(v / su)


def record_map(risk: np.ndarray, fraction: float, record: dict[str, Any], measure: str
               ) -> np.ndarray:
    """The corpus-learned map of a candidate's sample-unique record risks (``record``: the
    ``record_map`` entry of the parameters),

        logit p' = a + b logit p + c log(n / N),

    (``benchmarks/calibrate_auto.py`` fits a, b, c on the corpus's sample-unique records
    against population uniqueness for tau1 and 1/F for tau2). The sum of the mapped risks is
    the record-calibrated estimate of the measure."""
    a, b, c = (float(v) for v in record[measure])
    clip = float(record["clip"])
    p = np.clip(np.asarray(risk, float), clip, 1.0 - clip)
    # z = a + b log(p / (1 - p)) + c log(n / N) and 1 / (1 + exp(-z)), each step in one
    # array (the same operations in the same order: the same bits; five sample-unique-long
    # temporaries were 0.7 GB at 1.8x10^7 sample uniques, issue 20)
    z = np.subtract(1.0, p)
    np.divide(p, z, out=z)
    del p
    np.log(z, out=z)
    z *= b
    z += a
    z += c * math.log(fraction)
    np.negative(z, out=z)
    np.exp(z, out=z)
    z += 1.0
    return np.divide(1.0, z, out=z)


#: the feature a model is blended towards (``shrink`` of the parameters): the record-calibrated
#: estimate where the model has it, else graphical(prior_weight=50)'s own figure (the rule
#: of ``benchmarks/calibrate_auto.py``)
SHRINK_FEATURES = (RECORD_FEATURE, "log_graphical(prior_weight=50)")


def linear_prediction(model: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """log(tau / SU) before its ceiling, for rows ``x`` of raw features (2-D, the model's
    order): the regression on the standardised features clipped at ``clip`` sd, and the
    blend's share of its target, (1 - a) log(target / SU), unclipped. The blend ships folded
    into the coefficients (a linear function of the standardised features); clipping its
    share too held auto at the corpus's edge where every model went below it (tau2 0.16 on
    50 records at n/N = 5e-5, its five models 0.001-0.018), and the calibration chose the
    weight a on the unclipped target."""
    x = np.atleast_2d(np.asarray(x, float))
    mean, sd = np.asarray(model["mean"], float), np.asarray(model["sd"], float)
    raw = (x - mean) / sd
    clip = model.get("clip", 6.0)
    z = np.clip(raw, -clip, clip)
    y = np.column_stack([np.ones(len(z)), z]) @ np.asarray(model["coef"], float)
    shrink, names = model.get("shrink"), list(model.get("features", ()))
    target = next((k for k in SHRINK_FEATURES if k in names), None)
    if shrink is not None and target is not None:
        k = names.index(target)
        y = y + (1.0 - float(shrink["alpha"])) * sd[k] * (raw[:, k] - z[:, k])
    return y


#: plain names of the features, and whether the feature is the log of the named quantity
_READABLE = {
    "log_chao_per_N": ("estimated population key combinations per population record (Chao)",
                       True),
    "f3_per_su": ("cells seen three times per sample unique", False),
    "log_fraction": ("sampling fraction n/N", True),
    "log_n": ("records n", True),
    "su_share": ("share of records that are sample uniques", False),
    "log_cells_per_record": ("observed key combinations per record", True),
    "f2_per_su": ("cells seen twice per sample unique", False),
    "log_space_per_record": ("key space per record", True),
    "n_keys": ("number of keys", False),
    "py_alpha": ("Pitman-Yor alpha", False),
    RECORD_FEATURE: ("record-calibrated estimate / sample uniques", True),
}


def describe_feature(name: str, value: float, lo: float, hi: float) -> str:
    """``name = value (corpus range lo to hi)`` in plain words and on the natural scale (a
    log feature is shown as the quantity itself; a candidate's log(tau / SU) as tau / SU)."""
    return " = ".join(feature_parts(name, value, lo, hi))


def feature_parts(name: str, value: float, lo: float, hi: float) -> tuple[str, str]:
    """The two sides of :func:`describe_feature`: the feature in plain words, and
    ``value (corpus range lo to hi)``."""
    label, is_log = _READABLE.get(name, (name, False))
    if name.startswith("log_") and name not in _READABLE:
        label, is_log = f"{name[4:]}'s estimate / sample uniques", True
    if is_log:
        value, lo, hi = math.exp(value), math.exp(lo), math.exp(hi)
    return label, f"{_number(value)} (corpus range {_number(lo)} to {_number(hi)})"


def _number(x: float) -> str:
    """Three significant digits below 1,000; a whole number with separators from there up
    (50,000, not 5e+04)."""
    return f"{x:,.0f}" if abs(x) >= 1000 and math.isfinite(x) else f"{x:.3g}"


def outside_range(model: dict[str, Any], feats: dict[str, float]) -> dict[str, tuple[str, str]]:
    """Features of this file outside the range seen on the corpus (the model extrapolates):
    feature name -> (plain words, value and range) by :func:`feature_parts`, in the model's
    order."""
    if "min" not in model:
        return {}
    out = {}
    for k, lo, hi in zip(model["features"], model["min"], model["max"], strict=True):
        v = feats[k]
        if v < lo - 1e-9 or v > hi + 1e-9:
            out[k] = feature_parts(k, v, lo, hi)
    return out


def predict(model: dict[str, Any], feats: dict[str, float], sample_uniques: int,
            level: float = 0.95) -> tuple[float, float, float, float]:
    """Estimate, lower, upper of tau_m, and the interval's log half-width."""
    su = max(int(sample_uniques), 1)
    y = float(linear_prediction(model, [[feats[k] for k in model["features"]]])[0])
    y = min(y, 0.0)  # tau1, tau2 <= SU
    feats = {**feats, "log_su": math.log(su), "predicted_log_share": y}
    scale_x = np.array([feats[k] for k in model["scale_features"]], float)
    if "scale_min" in model:
        # the interval's scale shrinks as the file grows; beyond the corpus's largest files
        # it is held at their value: a model's error does not vanish with n (a 3x10^7-record
        # sample of a synthetic census got a +-2% interval 38% away from the truth)
        scale_x = np.clip(scale_x, model["scale_min"], model["scale_max"])
    scale_x = np.concatenate([[1.0], scale_x])
    s = math.exp(float(scale_x @ np.asarray(model["scale_coef"])))
    q = _quantile(model, level)
    half = q * s
    est = su * math.exp(y)
    return est, est * math.exp(-half), min(su, est * math.exp(half)), half


def _quantile(model: dict[str, Any], level: float) -> float:
    """The conformal quantile of |log error| / scale at ``level`` (interpolated between the
    stored levels)."""
    levels = np.asarray(model["conformal_levels"], float)
    qs = np.asarray(model["conformal_quantiles"], float)
    return float(np.interp(level, levels, qs))
