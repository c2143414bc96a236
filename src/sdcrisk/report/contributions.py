"""What drives the risk, for the report: leave-one-key-out (:func:`variable_contributions`:
the headline method re-fitted without each key) and per-category shares
(:func:`category_contributions`)."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from typing import Literal

import numpy as np
import pandas as pd

from ..analyses.methods import ESTIMATORS, get_estimator
from ..core.result import RiskResult
from ..data import _cells, wildcard
from ..data.table import CellTable
from ..estimators import Estimator, without_p_pu
from ..exceptions import ParameterError

__all__ = ["CONTRIBUTION_REFIT_KEYS", "SLOW_METHODS", "RiskKind", "category_contributions",
           "chosen_candidates", "quiet_fit", "variable_contributions", "wide_refit"]

RiskKind = Literal["reidentification", "population_unique"]


def _reduce_table(table: CellTable, drop: int, *, record_map: bool = True) -> CellTable:
    """The table with key ``drop`` removed: cells merged, counts and weights summed.
    ``record_map=False``: without the record -> cell map (kept with households), for fits
    whose file-level figures need only the cells (an n-long int64 array per key: 240 MB a
    key at 3x10^7 records)."""
    keep = [j for j in range(len(table.keys)) if j != drop]
    codes = table.cell_codes[:, keep]
    radices = [len(table.levels[j]) for j in keep]
    ids, bound = _cells.cell_ids([codes[:, i] for i in range(len(keep))], radices)
    cells, _, inverse = _cells.observed_cells(ids, bound)
    m = len(cells)
    counts = np.bincount(inverse, weights=table.counts, minlength=m).round().astype(np.int64)
    rep = np.empty(m, np.int64)
    rep[inverse] = np.arange(len(inverse))
    weights = (None if table.weight_sums is None
               else np.bincount(inverse, weights=table.weight_sums, minlength=m))
    levels = tuple(table.levels[j] for j in keep)
    wild = None
    if table.wildcard is not None:  # the wildcard frequencies of the merged cells
        wild = wildcard.wildcard_cell_counts(codes[rep], radices, counts, weights, levels,
                                             table.wildcard.alpha)
    keep_map = record_map or table.household is not None or table.wildcard is not None
    return dataclasses.replace(
        table, keys=tuple(table.keys[j] for j in keep), levels=levels, cell_codes=codes[rep],
        counts=counts, weight_sums=weights,
        record_cell=inverse[table.record_map()] if keep_map else None,
        records=None if keep_map else table.n, population=None, wildcard=wild)


#: methods too slow to fit again once per key: leave-one-key-out uses ``nb`` for them
SLOW_METHODS = ("hdp", "mixed-membership")
#: with more keys than this, the leave-one-key-out contributions re-fit nb, not the headline
#: method (one fit per key: auto's 30 re-fits on 30 keys and 8,927 records took 125 s, nb's
#: 16 s; auto's calibration corpus ends at 10 keys, beyond which it extrapolates anyway)
CONTRIBUTION_REFIT_KEYS = 10


def chosen_candidates(result: RiskResult) -> list[str]:
    """auto's chosen candidates as ``"method:key=value"`` specs (empty for other methods)."""
    choice = result.fitted.get("choice")
    if result.method != "auto" or not isinstance(choice, Mapping):
        return []
    methods, settings = choice.get("methods") or [], choice.get("settings") or []
    if len(methods) != len(settings):  # auto fitted one candidate unvalidated (tiny file)
        return []
    return [m if s == "default" else f"{m}:{s}" for m, s in zip(methods, settings,
                                                                 strict=True)]


def _contribution_estimator(result: RiskResult, estimator: Estimator | str | None
                            ) -> Estimator:
    if isinstance(estimator, Estimator):
        return estimator
    common = {"ci_level": result.parameters.get("ci_level", 0.95),
              "max_global_risk": result.parameters.get("max_global_risk", 0.01)}
    if estimator is None:
        if result.method not in ESTIMATORS or result.method in SLOW_METHODS or \
                wide_refit(result):
            return get_estimator("nb", **common)
        params = dict(result.parameters)
        chosen = chosen_candidates(result)
        if chosen:  # auto: the same choice among the candidates it chose on the whole file
            params["candidates"] = tuple(chosen)
        return get_estimator(result.method, **params)
    if not isinstance(estimator, str):
        raise ParameterError(f"contributions={estimator!r}: give a method name or an "
                             "Estimator")
    return get_estimator(estimator, **common)


def wide_refit(result: RiskResult) -> bool:
    """More keys than :data:`CONTRIBUTION_REFIT_KEYS` and a headline other than nb: the
    default leave-one-key-out method is then nb (bounded time; said on the page)."""
    return len(result.table.keys) > CONTRIBUTION_REFIT_KEYS and result.method != "nb"


def quiet_fit(est: Estimator, table: CellTable, notes: list[str] | None) -> RiskResult:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = est.fit(table)
    if notes is not None:
        for w in caught:
            notes.append(f"{est.name} on a reduced table: {w.message}")
    return res


def variable_contributions(result: RiskResult, *, estimator: Estimator | str | None = None,
                           notes: list[str] | None = None) -> pd.DataFrame:
    """Leave-one-key-out: the risk figures when each key variable is dropped.

    Each key is removed in turn; cells that differ only in that key are merged (counts and
    survey weights summed, which is what re-tabulating the file without the key gives) and
    the estimator is fitted again.

    Parameters
    ----------
    result : RiskResult
        The fit on all keys.
    estimator : Estimator, method name or None
        The estimator re-fitted on each reduced table. Default: the result's own method
        with its parameters (``auto`` restricted to the candidates it chose on the whole
        file, so that the choice is made again on each reduced table), except the MCMC
        methods of :data:`SLOW_METHODS`, and any method other than nb on more than
        :data:`CONTRIBUTION_REFIT_KEYS` keys (one fit per key), for which ``nb`` (exact
        Benedetti-Franconi) with the result's ``ci_level`` and ``max_global_risk`` is used.

    Returns
    -------
    DataFrame
        One row for all keys (``dropped`` = None) and one per key: ``method``,
        ``sample_uniques``, ``records_below_3`` (records in cells with f < 3),
        ``expected_reidentifications``, ``tau2`` and the reductions against all keys
        (``su_reduction``, ``er_reduction``, ``er_reduction_pct``).

    Notes
    -----
    The reduction of expected re-identifications when a key is dropped measures how much of
    the risk that key creates given the others (a "what would fix it" figure); the
    reductions of different keys do not add up to the total.
    """
    est = _contribution_estimator(result, estimator)
    table = result.table
    if est.get_params() == dict(result.parameters) and est.name == result.method:
        base = result
    else:
        base = quiet_fit(est, table, notes)
    rows = [_contribution_row(None, base)]
    if len(table.keys) >= 2:
        refit = without_p_pu(est)  # the rows read no P(PU)
        for j, key in enumerate(table.keys):
            reduced = _reduce_table(table, j, record_map=est.uses_record_map())
            rows.append(_contribution_row(key, quiet_fit(refit, reduced, notes)))
    df = pd.DataFrame(rows)
    df.insert(1, "method", est.name)
    df["su_reduction"] = df["sample_uniques"].iloc[0] - df["sample_uniques"]
    er0 = df["expected_reidentifications"].iloc[0]
    df["er_reduction"] = er0 - df["expected_reidentifications"]
    df["er_reduction_pct"] = 100 * df["er_reduction"] / er0 if er0 and er0 > 0 else np.nan
    return df


def _contribution_row(key: str | None, res: RiskResult) -> dict:
    def est(name):
        m = res.measures.get(name)
        return np.nan if m is None or m.estimate is None else float(m.estimate)

    counts = res.table.counts
    return {"dropped": key, "sample_uniques": res.sample_uniques,
            "records_below_3": int(counts[counts < 3].sum()),
            "expected_reidentifications": est("expected_reidentifications"),
            "tau2": est("tau2")}


def category_contributions(result: RiskResult, *, min_count: int = 1,
                           kind: RiskKind = "reidentification", threshold: float | None = None,
                           ) -> tuple[pd.DataFrame, dict]:
    """Share of the risk per category of each key, against its share of the file.

    Parameters
    ----------
    result : RiskResult
    min_count : int
        Categories with fewer records are not listed by value; they are summed into the
        second return value (a non-disclosive report uses its threshold here).
    kind : str
        Which cell risk measures the risk share (default ``"reidentification"``); without
        record risk only the sample-unique shares are given.
    threshold : float, optional
        Also count the records with risk above it (``above``, ``above_share``: the
        category's share of all such records).

    Returns
    -------
    rows : DataFrame
        ``key``, ``category`` (the label), ``records``, ``file_share``, ``sample_uniques``
        (records in cells with f = 1 having the category), ``su_share``, ``risk`` (sum of
        record risks, i.e. expected re-identifications among those records), ``risk_share``
        and ``risk_ratio`` = risk_share / file_share (> 1: the category is over-represented
        among the risky records), sorted by ``risk_ratio`` (or ``su_share``).
    hidden : dict
        ``categories``, ``records``, ``sample_uniques``, ``risk`` (and ``above``) of the
        categories with fewer than ``min_count`` records (never listed by value).
    """
    table = result.table
    f = table.counts
    n = table.n
    su = wildcard.unique_cells(table)  # as the cards count them: fk = 1 with wildcard counts
    n1 = int(f[su].sum())
    risk = (result.cell_risk(kind) * f if kind in result.cell_risk_values else None)
    total_risk = float(risk.sum()) if risk is not None else None
    above = None
    if threshold is not None and risk is not None:
        above = np.where(result.cell_risk(kind) > threshold, f, 0)
    frames = []
    hidden = {"categories": 0, "records": 0, "sample_uniques": 0, "risk": 0.0}
    if above is not None:
        hidden["above"] = 0
    for j, key in enumerate(table.keys):
        codes = table.cell_codes[:, j]
        d = len(table.levels[j])
        records = np.bincount(codes, weights=f, minlength=d)
        su_rec = np.bincount(codes[su], weights=f[su], minlength=d).astype(np.int64)
        rk = np.bincount(codes, weights=risk, minlength=d) if risk is not None else None
        present = records > 0
        small = present & (records < min_count)
        hidden["categories"] += int(small.sum())
        hidden["records"] += int(records[small].sum())
        hidden["sample_uniques"] += int(su_rec[small].sum())
        if rk is not None:
            hidden["risk"] += float(rk[small].sum())
        show = np.flatnonzero(present & ~small)
        part = {
            "key": key,
            "category": [table.levels[j][c] for c in show],
            "records": records[show].astype(np.int64),
            "sample_uniques": su_rec[show].astype(np.int64),
            "risk": rk[show] if rk is not None else np.nan,
        }
        if above is not None:
            ab = np.bincount(codes, weights=above, minlength=d)
            hidden["above"] += int(ab[small].sum())
            part["above"] = ab[show].astype(np.int64)
        frames.append(pd.DataFrame(part))
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    df["file_share"] = df["records"] / n
    df["su_share"] = df["sample_uniques"] / n1 if n1 else np.nan
    if total_risk:
        df["risk_share"] = df["risk"] / total_risk
        df["risk_ratio"] = df["risk_share"] / df["file_share"]
        order = ["risk_ratio", "risk_share"]
    else:
        df["risk_share"] = np.nan
        df["risk_ratio"] = df["su_share"] / df["file_share"]
        order = ["risk_ratio", "su_share"]
    df = df.sort_values(order, ascending=False, kind="stable").reset_index(drop=True)
    cols = ["key", "category", "records", "file_share", "sample_uniques", "su_share", "risk",
            "risk_share", "risk_ratio"]
    if above is not None:
        n_above = int(above.sum())
        df["above_share"] = df["above"] / n_above if n_above else np.nan
        cols += ["above", "above_share"]
    return df[cols], hidden
