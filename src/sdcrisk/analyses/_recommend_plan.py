"""The recommendation results (:class:`RiskTarget`, :class:`Plan`, :class:`Recommendations`)
and what every plan search shares: the context that re-fits the estimator on a changed file
and measures the objective, and the steps of a plan's path. Public through
:mod:`sdcrisk.analyses.recommend`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..core.base import ResultBase
from ..core.result import RiskResult
from ..data.sizes import check_number
from ..data.table import Microdata, tabulate
from ..estimators import Estimator
from ..exceptions import InputError, ParameterError
from ._recommend_cache import FitCache
from ._recommend_edits import label_text, merge_levels, observed_levels, suppress_values

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RiskTarget", "Plan", "Recommendations"]

Objective = Literal["tau2", "records_above"]
Action = Literal["suppression", "recoding", "recoding+suppression"]
#: the plan kinds, in the order of ``recommend``'s default ``actions``
ACTIONS: tuple[Action, ...] = ("suppression", "recoding", "recoding+suppression")


@dataclass(frozen=True, kw_only=True)
class RiskTarget:
    """What "safe enough" means: the objective must end at or below ``value``.

    Parameters
    ----------
    objective : {"tau2", "records_above"}
        ``tau2``: the estimated expected number of correct matches of sample uniques;
        ``records_above``: the number of records whose estimated re-identification risk
        E[1/F | f] exceeds ``risk_threshold``.
    value : float
        Target (at or below).
    risk_threshold : float, optional
        Record-risk threshold, required for ``records_above``.

    Examples
    --------
    >>> RiskTarget(objective="records_above", value=10, risk_threshold=0.05).describe()
    'at most 10 records with estimated re-identification risk > 0.05'
    """

    objective: Objective = "tau2"
    value: float
    risk_threshold: float | None = None

    def __post_init__(self):
        if self.objective not in ("tau2", "records_above"):
            raise ParameterError(f"objective={self.objective!r}; use 'tau2' or 'records_above'")
        value = check_number("value", self.value)
        if not (value >= 0 and math.isfinite(value)):  # np.isfinite(10**30): TypeError
            raise ParameterError(f"target value={self.value!r} must be a non-negative number")
        if self.objective == "records_above":
            thr = self.risk_threshold
            if thr is None or not 0 < check_number("risk_threshold", thr) <= 1:
                raise ParameterError(f"risk_threshold={self.risk_threshold!r}: give a record "
                                     "risk threshold in (0, 1] for objective='records_above' "
                                     "(--risk-threshold R with --objective records-above on "
                                     "the command line)")
        elif self.risk_threshold is not None:  # it would be ignored without a word
            raise ParameterError(f"risk_threshold={self.risk_threshold!r} applies to "
                                 "objective='records_above' only (--objective records-above "
                                 "on the command line); drop it for a tau2 target")

    def measure(self, result: RiskResult) -> float:
        """The objective's value for a fitted result."""
        if self.objective == "tau2":
            value = result.measures.get("tau2")
            if value is None or value.estimate is None:
                raise ParameterError(f"method {result.method!r} gives no tau2 estimate; use "
                                     "another estimator")
            return float(value.estimate)
        return float(np.count_nonzero(result.record_risk("reidentification")
                                      > self.risk_threshold))

    def describe(self) -> str:
        if self.objective == "tau2":
            return f"estimated tau2 <= {self.value:g}"
        return (f"at most {self.value:g} records with estimated re-identification risk > "
                f"{self.risk_threshold:g}")


@dataclass(frozen=True, eq=False, repr=False)
class Plan(ResultBase):
    """One recommended change and the risk re-estimated after it.

    Attributes
    ----------
    kind : {"suppression", "recoding", "recoding+suppression"}
        Local suppression; global recoding of one key; or a recoding of one key followed
        by local suppression on the recoded file (a combined plan).
    key : str or None
        The recoded key (None for suppression).
    reached : bool
        Whether the target is met after the change.
    objective_after : float
        The objective re-estimated on the changed sample as it reads once written: without
        the categories the change emptied (:meth:`apply` keeps them, so a model over the
        cell space fitted on its result directly can differ).
    records_changed, values_changed, cells_changed : int
        Information loss: records with any changed key value; changed key values; sample
        cells (key combinations, before the change) holding a changed record. In a combined
        plan a record or value both recoded and suppressed counts once.
    merges : tuple of tuple
        Recoding (also in a combined plan): groups of original category labels merged into
        one.
    suppressions : ndarray (m, 2)
        Suppression (also in a combined plan): (record index in the sample, key index) of
        each value set to missing; the indices are those of the sample, which recoding does
        not reorder.
    measures_after : dict
        tau1, tau2, expected re-identifications and the objective after the change.
    path : tuple of dict
        The greedy steps: records/values changed and the re-estimated objective after each
        (a combined plan's steps also say which ``action`` each took).
    """

    kind: Action
    key: str | None
    reached: bool
    objective_after: float
    records_changed: int
    values_changed: int
    cells_changed: int
    merges: tuple = ()
    suppressions: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    measures_after: Mapping[str, Any] = field(default_factory=dict)
    path: tuple = ()
    keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "suppressions",
                           np.array(self.suppressions, dtype=np.int64).reshape(-1, 2))
        super().__post_init__()

    def label(self) -> str:
        if self.kind == "suppression":
            return "local suppression"
        if self.kind == "recoding":
            return f"recode {self.key}"
        return f"recode {self.key}, then local suppression"

    def apply(self, microdata: Microdata, *, rows: np.ndarray | None = None) -> Microdata:
        """The same change made to ``microdata`` (the sample, or its population): the
        merges first, then the suppressions.

        Parameters
        ----------
        microdata : Microdata
            With the same keys and levels as the sample the plan was made for.
        rows : ndarray, optional
            The rows of ``microdata`` that the sample's records are (e.g. the sample's
            indices in its population), for the suppressions; default: ``microdata`` is the
            sample. Merges apply to every row.
        """
        if microdata.keys != self.keys:
            raise InputError(f"keys {list(microdata.keys)} differ from the plan's "
                             f"{list(self.keys)}")
        out = microdata
        if self.kind != "suppression":
            out = merge_levels(out, out.keys.index(self.key), self.merges)
        if self.kind == "recoding":
            return out
        idx = self.suppressions[:, 0]
        if rows is not None:
            idx = np.asarray(rows)[idx]
        if idx.size and idx.max() >= out.n:
            raise InputError("suppressed record index beyond the data; pass rows= to map "
                             "sample records to these data")
        return suppress_values(out, idx, self.suppressions[:, 1])

    def _payload(self, *, internal: bool = False) -> dict[str, Any]:
        d = {"kind": self.kind, "key": self.key, "label": self.label(), "reached": self.reached,
             "objective_after": self.objective_after, "records_changed": self.records_changed,
             "values_changed": self.values_changed, "cells_changed": self.cells_changed,
             "measures_after": self.measures_after, "steps": len(self.path) - 1,
             "path": [{**s, "merged": [label_text(v) for v in s["merged"]]} if "merged" in s
                      else s for s in self.path]}
        if self.kind != "suppression":
            d["merges"] = [[label_text(v) for v in g] for g in self.merges]
        if self.kind != "recoding":
            counts = np.bincount(self.suppressions[:, 1], minlength=len(self.keys))
            d["suppressed_values_per_key"] = {k: int(c) for k, c in zip(self.keys, counts,
                                                                         strict=True)}
            if internal:
                d["suppressions"] = [{"record": int(r), "key": self.keys[int(j)]}
                                     for r, j in self.suppressions]
        return d

    def summary(self) -> pd.DataFrame:
        """The greedy path: one row per step (records and values changed, objective; the
        category a recoding step formed; a combined plan's action at each step)."""
        import pandas as pd

        return pd.DataFrame(list(self.path)).rename_axis("step")

    def _repr_parts(self) -> list[str]:
        return [repr(self.label()), f"reached={self.reached}",
                f"records_changed={self.records_changed}", f"values_changed={self.values_changed}",
                f"objective_after={self.objective_after:.4g}"]


@dataclass(frozen=True, eq=False, repr=False)
class Recommendations(ResultBase):
    """Plans ranked by information loss, with the target and the risk before any change."""

    target: RiskTarget
    method: str
    objective_before: float
    measures_before: Mapping[str, Any]
    plans: tuple[Plan, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> Plan | None:
        """The first plan that reaches the target (least information loss), if any."""
        return next((p for p in self.plans if p.reached), None)

    def summary(self) -> pd.DataFrame:
        """One row per plan, ranked."""
        import pandas as pd

        return pd.DataFrame([{"rank": i + 1, "plan": p.label(), "reached": p.reached,
                              "records_changed": p.records_changed,
                              "values_changed": p.values_changed,
                              "cells_changed": p.cells_changed,
                              "objective_after": p.objective_after}
                             for i, p in enumerate(self.plans)])

    def _payload(self, *, internal: bool = False) -> dict[str, Any]:
        return {"method": self.method, "objective": self.target.objective,
                "target": self.target.describe(),
                "thresholds": {"target": self.target.value,
                               "risk_threshold": self.target.risk_threshold},
                "objective_before": self.objective_before,
                "measures_before": self.measures_before,
                "settings": self.settings,
                "plans": [p.to_dict(internal=internal) for p in self.plans]}

    def _repr_parts(self) -> list[str]:
        best = self.best
        return [f"method={self.method!r}", self.target.describe(),
                f"before={self.objective_before:.4g}", f"plans={len(self.plans)}",
                f"best={best.label() if best else None}"]


# --- shared by the searches ----------------------------------------------------------------
@dataclass
class SearchContext:
    est: Estimator
    target: RiskTarget
    base_cells: np.ndarray
    #: the file's table and its fit, pinned in the cache: every plan starts from it
    base: tuple[Any, RiskResult] | None = None
    #: fits by table content (cells, counts, levels, N and record map): a table met again is
    #: not fitted again (fits are deterministic: the same result); one per plan unit
    #: (:meth:`for_unit`), bounded (:mod:`._recommend_cache`)
    cache: FitCache = field(default_factory=FitCache)
    #: per key, whether every category it declares was held by a record of the file: such
    #: a key's categories that a plan empties are dropped before a fit (the written file,
    #: read back, knows only those it holds), see :func:`._recommend_edits.observed_levels`
    compact: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        if self.base is not None:
            self.cache.put(*self.base, pin=True)

    def for_unit(self, seeds: Sequence[tuple[Any, RiskResult]] = ()) -> SearchContext:
        """A context for one plan unit: a cache of its own holding the pinned fits (the
        file's), and ``seeds`` (table, fit) pinned too (a combined plan's recoded files,
        fitted by its recoding plan)."""
        out = replace(self, cache=FitCache(self.cache.max_entries, self.cache.max_bytes))
        for table, res in (*self.cache.pinned(), *seeds):
            out.cache.put(table, res, pin=True)
        return out

    def fit(self, md: Microdata) -> tuple[RiskResult, float]:
        """The fit of a changed file as it will be read once written: categories that the
        change emptied are gone (a fit over the cell space of the file before the change
        said a target was met, and the written file re-assessed was above it)."""
        return self.fit_table(tabulate(observed_levels(md, self.compact)))

    def fit_table(self, table) -> tuple[RiskResult, float]:
        res = self.cache.get(table)
        if res is None:
            res = self.est.fit(table)
            self.cache.put(table, res)
        return res, self.target.measure(res)

    def measures(self, res: RiskResult) -> dict:
        out = {"objective": self.target.measure(res)}
        for m in ("tau1", "tau2", "expected_reidentifications"):
            if m in res.measures:
                out[m] = res.measures[m].estimate
        out["sample_uniques"] = res.sample_uniques
        return out

    def risky(self, res: RiskResult) -> tuple[np.ndarray, np.ndarray]:
        """Records counting against the objective, and what each contributes to it."""
        table = res.table
        if self.target.objective == "tau2":
            cell = res.cell_risk("reidentification")
            mask = (table.counts == 1)[table.record_map()]
            return mask, np.where(mask, cell[table.record_map()], 0.0)
        mask = res.record_risk("reidentification") > self.target.risk_threshold
        return mask, mask.astype(float)

    def loss(self, changed_records: np.ndarray) -> tuple[int, int]:
        return (int(changed_records.sum()),
                int(len(np.unique(self.base_cells[changed_records]))))


def plan_rank(plan: Plan) -> tuple:
    """The plans' ranking: those that reach the target first, by records then values
    changed; the others by the objective they reach."""
    return (not plan.reached, plan.records_changed if plan.reached else 0,
            plan.values_changed if plan.reached else 0, plan.objective_after)


def path_step(records_changed, values_changed, objective, action: str | None = None) -> dict:
    """One step of a plan's path (a combined plan's also name the ``action`` it took)."""
    step: dict[str, Any] = {"records_changed": int(records_changed),
                            "values_changed": int(values_changed), "objective": float(objective)}
    if action is not None:
        step["action"] = action
    return step
