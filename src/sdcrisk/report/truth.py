"""The report's figures against the truth, when the population is known: the true measures,
ROC curves of P(F = 1 | f) among the sample uniques and calibration tables of record risk."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from ..core.measures import roc_auc, rounded_for_ranking, truth_measures
from ..core.result import RiskResult
from ..data.population import population_counts
from ..data.table import CellTable, Microdata
from ..exceptions import ParameterError

__all__ = ["roc_curve", "calibration_table", "population_of", "truth_figures"]


def roc_curve(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ROC curve points (false positive rate, true positive rate) over distinct thresholds.

    Starts at (0, 0) and ends at (1, 1); tied scores move both rates at once, so the area by
    the trapezoid rule equals :func:`sdcrisk.roc_auc` (ties counted one half; scores within
    float noise of each other are ties, as there).

    Raises
    ------
    ParameterError
        The labels hold only one class.

    References
    ----------
    Fawcett, T. (2006). An introduction to ROC analysis. Pattern Recogn. Lett. 27, 861-874.
    """
    scores = rounded_for_ranking(np.asarray(scores, float))  # ties as roc_auc counts them
    labels = np.asarray(labels, bool)
    n_pos = int(labels.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ParameterError("a ROC curve needs both classes among the labels")
    order = np.argsort(-scores, kind="stable")
    s, lab = scores[order], labels[order]
    last = np.r_[np.flatnonzero(s[1:] != s[:-1]), len(s) - 1]
    tp = np.cumsum(lab)[last]
    fp = np.cumsum(~lab)[last]
    return np.r_[0.0, fp / n_neg], np.r_[0.0, tp / n_pos]


def calibration_table(predicted: np.ndarray, observed: np.ndarray, *,
                      weights: np.ndarray | None = None, bins: int = 10) -> pd.DataFrame:
    """Mean predicted against mean observed risk in groups of equal total weight.

    Units (cells) are sorted by prediction and cut into ``bins`` groups holding about the
    same total weight (e.g. records: weight f per cell); a unit is never split.

    Returns
    -------
    DataFrame
        ``bin``, ``units``, ``weight``, ``predicted`` and ``observed`` (weighted means),
        ``predicted_sum`` and ``observed_sum`` (weighted sums).

    Notes
    -----
    The reliability diagram: a calibrated risk lies on predicted = observed in every group;
    the report uses it with E[1/F | f] against the true 1/F per record and with
    P(F = 1 | f = 1) against the indicator F = 1 per sample unique.
    """
    p = np.asarray(predicted, float)
    o = np.asarray(observed, float)
    w = np.ones_like(p) if weights is None else np.asarray(weights, float)
    if not (p.shape == o.shape == w.shape):
        raise ParameterError("predicted, observed and weights must have the same length")
    if bins < 1:
        raise ParameterError(f"bins={bins} must be >= 1")
    columns = ["bin", "units", "weight", "predicted", "observed", "predicted_sum",
               "observed_sum"]
    if p.size == 0 or not np.all(w > 0):
        if p.size:
            raise ParameterError("calibration weights must be positive")
        return pd.DataFrame(columns=columns)
    order = np.argsort(p, kind="stable")
    p, o, w = p[order], o[order], w[order]
    cum = np.cumsum(w)
    # a unit goes to the group holding the middle of its weight
    group = np.minimum((bins * (cum - w / 2) / cum[-1]).astype(int), bins - 1)
    rows = []
    for b in np.unique(group):
        sel = group == b
        ws = float(w[sel].sum())
        rows.append({"bin": int(b) + 1, "units": int(sel.sum()), "weight": ws,
                     "predicted": float(np.dot(w[sel], p[sel]) / ws),
                     "observed": float(np.dot(w[sel], o[sel]) / ws),
                     "predicted_sum": float(np.dot(w[sel], p[sel])),
                     "observed_sum": float(np.dot(w[sel], o[sel]))})
    return pd.DataFrame(rows, columns=columns)


def population_of(table: CellTable, population: Microdata | None):
    if table.population is not None:
        return table.population
    if population is None:
        return None
    if not isinstance(population, Microdata):
        raise ParameterError(f"truth must be the population as a Microdata, not "
                             f"{type(population).__name__}")
    sample = SimpleNamespace(keys=table.keys, levels=table.levels)  # what it reads of a sample
    return population_counts(sample, population, table.cell_codes,  # type: ignore[arg-type]
                             table.counts)


def truth_figures(results: Mapping[str, RiskResult], pop, bins: int = 10) -> dict:
    table = next(iter(results.values())).table
    f = table.counts
    big_f = pop.counts
    truth = truth_measures(f, big_f, population_size=pop.size,
                           population_uniques=pop.n_unique)
    truth["expected_reidentifications"] = float(np.sum(f / big_f))
    truth["global_risk"] = truth["expected_reidentifications"] / table.n
    su = f == 1
    is_pu = big_f[su] == 1
    methods = {}
    for label, res in results.items():
        entry: dict[str, Any] = {"auc": None, "roc": None, "calibration": None,
                                 "calibration_pu": None}
        if "population_unique" in res.cell_risk_values and 0 < is_pu.sum() < su.sum():
            scores = res.cell_risk("population_unique")[su]
            entry["auc"] = roc_auc(scores, is_pu)
            entry["roc"] = roc_curve(scores, is_pu)
            entry["calibration_pu"] = calibration_table(scores, is_pu.astype(float), bins=bins)
        if "reidentification" in res.cell_risk_values:
            entry["calibration"] = calibration_table(
                res.cell_risk("reidentification"), 1.0 / big_f, weights=f, bins=bins)
        methods[label] = entry
    return {"measures": truth, "methods": methods, "population_size": pop.size,
            "population_uniques": pop.n_unique, "counts": big_f,
            "k_anonymity": dict(pop.k_anonymity_violations)}
