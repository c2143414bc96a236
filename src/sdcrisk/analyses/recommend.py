"""Recommendations: the least change to the keys that brings the estimated risk below a target.

Two kinds of plan, each found greedily and re-estimated with the chosen estimator after every
change (so the risk reported with a plan is the estimator's, not a prediction):

* **local suppression** - set single key values of risky records to missing. sdcrisk treats
  a missing value as a category of its own (:meth:`Microdata.from_source`, ``missing=
  "category"``), so a suppressed record joins the cell of the records that share its other
  key values and are missing on the same keys;
* **global recoding** - merge categories of one key variable (one plan per key).

Plans are ranked by information loss: records changed, then key values changed. This goes
beyond Zaslavsky & Horton (1998), whose section 5 lists "combining cells or suppressing some
data fields" as further decision alternatives.
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..core.base import ResultBase
from ..core.result import RiskResult
from ..data import _cells
from ..data.sizes import check_number
from ..data.table import Microdata, tabulate
from ..estimators import Estimator
from ..estimators._base import check_int
from ..exceptions import InputError, ParameterError
from ..runtime.executors import describe_executor, map_units
from ..runtime.progress import progress
from .methods import get_estimator

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RiskTarget", "Plan", "Recommendations", "recommend"]

Objective = Literal["tau2", "records_above"]
Action = Literal["suppression", "recoding"]


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
        if not (check_number("value", self.value) >= 0 and np.isfinite(self.value)):
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
    kind : {"suppression", "recoding"}
    key : str or None
        The recoded key (None for suppression).
    reached : bool
        Whether the target is met after the change.
    objective_after : float
    records_changed, values_changed, cells_changed : int
        Information loss: records with any changed key value; changed key values; sample
        cells (key combinations, before the change) holding a changed record.
    merges : tuple of tuple
        Recoding: groups of original category labels merged into one.
    suppressions : ndarray (m, 2)
        Suppression: (record index in the sample, key index) of each value set to missing.
    measures_after : dict
        tau1, tau2, expected re-identifications and the objective after the change.
    path : tuple of dict
        The greedy steps: records/values changed and the re-estimated objective after each.
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
        return "local suppression" if self.kind == "suppression" else f"recode {self.key}"

    def apply(self, microdata: Microdata, *, rows: np.ndarray | None = None) -> Microdata:
        """The same change made to ``microdata`` (the sample, or its population).

        Parameters
        ----------
        microdata : Microdata
            With the same keys and levels as the sample the plan was made for.
        rows : ndarray, optional
            Suppression only: the rows of ``microdata`` that the sample's records are (e.g.
            the sample's indices in its population); default: ``microdata`` is the sample.
        """
        if microdata.keys != self.keys:
            raise InputError(f"keys {list(microdata.keys)} differ from the plan's "
                             f"{list(self.keys)}")
        if self.kind == "recoding":
            j = microdata.keys.index(self.key)
            return _merge_levels(microdata, j, self.merges)
        idx = self.suppressions[:, 0]
        if rows is not None:
            idx = np.asarray(rows)[idx]
        if idx.size and idx.max() >= microdata.n:
            raise InputError("suppressed record index beyond the data; pass rows= to map "
                             "sample records to these data")
        return _suppress(microdata, idx, self.suppressions[:, 1])

    def _payload(self, *, internal: bool = False) -> dict[str, Any]:
        d = {"kind": self.kind, "key": self.key, "label": self.label(), "reached": self.reached,
             "objective_after": self.objective_after, "records_changed": self.records_changed,
             "values_changed": self.values_changed, "cells_changed": self.cells_changed,
             "measures_after": self.measures_after, "steps": len(self.path) - 1,
             "path": list(self.path)}
        if self.kind == "recoding":
            d["merges"] = [[_text(v) for v in g] for g in self.merges]
        else:
            counts = np.bincount(self.suppressions[:, 1], minlength=len(self.keys))
            d["suppressed_values_per_key"] = {k: int(c) for k, c in zip(self.keys, counts,
                                                                         strict=True)}
            if internal:
                d["suppressions"] = [{"record": int(r), "key": self.keys[int(j)]}
                                     for r, j in self.suppressions]
        return d

    def summary(self) -> pd.DataFrame:
        """The greedy path: one row per step (records and values changed, objective)."""
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


def recommend(
    sample: Microdata,
    target: RiskTarget,
    *,
    estimator: Estimator | str = "nb",
    actions: Sequence[Action] = ("suppression", "recoding"),
    keys: Sequence[str] | None = None,
    pairs: Literal["auto", "adjacent", "all"] = "auto",
    refit_candidates: int = 1,
    max_pattern_size: int = 2,
    max_steps: int = 500,
    executor: Any = None,
    workers: int | None = None,
) -> Recommendations:
    """Find small changes of the keys that bring the estimated risk to the target.

    Parameters
    ----------
    sample : Microdata
        The file to release (with its population size or weights).
    target : RiskTarget
        The objective and its target value.
    estimator : Estimator or method name
        Any estimator giving record-level risk and tau2 (default ``"nb"``); it is re-fitted
        after every change.
    actions : sequence of {"suppression", "recoding"}
        Which kinds of plan to search.
    keys : sequence of str, optional
        Keys that may be changed (default: all).
    pairs : {"auto", "adjacent", "all"}
        Recoding candidates: merge neighbouring categories in level order (``adjacent``,
        for ordered keys such as age), or any two (``all``). ``auto``: adjacent when every
        level is a number, else all.
    refit_candidates : int
        Recoding: how many of the best merges by the quick score are re-fitted per step to
        pick the one with the lowest re-estimated objective (default 1: the best by the
        quick score; the estimator is re-fitted after every change in any case).
    max_pattern_size : int
        Suppression: most key values suppressed in one record per step.
    max_steps : int
        Most greedy steps per plan.
    executor, workers
        Where the plans run, each plan a work unit (:func:`sdcrisk.runtime.executors.
        executor_scope`: an Executor, a Dask Client or scheduler address, ``"serial"``, or
        ``workers`` local processes). Default: in this process (a script that starts
        processes needs the ``if __name__ == "__main__":`` guard; the CLI uses every CPU from
        ``PARALLEL_FROM`` records). Each plan re-fits the estimator tens of times and the plans
        are independent; they are the same wherever they run.

    Returns
    -------
    Recommendations
        Plans ranked: those that reach the target first, by records then values changed.

    Notes
    -----
    Both searches are greedy (not guaranteed minimal). *Suppression*: in each round the
    records that count against the objective (sample uniques for tau2, records above the
    threshold otherwise) are grouped by their key values outside a set P of at most
    ``max_pattern_size`` keys; suppressing P in a group merges it with the records already
    missing on P, which helps when the merged cell is larger than the group's cells. Groups
    are taken by risk removed per suppressed value until the predicted fall covers the gap
    to the target; then the estimator is re-fitted. *Recoding*, per key: each step merges
    two categories: the ``refit_candidates`` best by a quick score (the objective carried by
    the risky records the merge would join with others, per record newly changed) are
    re-fitted and the lowest
    re-estimated objective wins; the missing category is never merged. A key is not recoded
    at all when every record is alone on the other keys: no merge of its categories could
    then change a cell count (its plan has no step).

    References
    ----------
    Zaslavsky & Horton (1998), section 5 (merging cells, suppressing fields as decision
    alternatives). sdcMicro equivalents: ``localSuppression`` (there, missing values match
    anything) and ``globalRecode`` / ``groupAndRename``.

    Examples
    --------
    >>> from sdcrisk import Microdata
    >>> data = {"age": [30, 31, 32, 33, 40, 40, 41, 41], "sex": [1, 1, 2, 2, 1, 1, 2, 2]}
    >>> md = Microdata.from_source(data, keys=["age", "sex"], population_size=80)
    >>> rec = recommend(md, RiskTarget(objective="tau2", value=0.0), actions=["recoding"])
    >>> rec.best.label(), rec.best.merges, rec.best.records_changed
    ('recode age', ((30, 31), (32, 33)), 4)
    """
    if not isinstance(sample, Microdata):
        raise ParameterError(f"sample must be a Microdata, not {type(sample).__name__}")
    if not isinstance(target, RiskTarget):
        raise ParameterError("target must be a RiskTarget")
    est = get_estimator(estimator) if isinstance(estimator, str) else estimator
    if not isinstance(est, Estimator):
        raise ParameterError(f"estimator {estimator!r} is not an Estimator or method name")
    actions = tuple(actions)
    for a in actions:
        if a not in ("suppression", "recoding"):
            raise ParameterError(f"action {a!r}; use 'suppression' and/or 'recoding'")
    keys = list(sample.keys if keys is None else keys)
    for k in keys:
        if k not in sample.keys:
            raise ParameterError(f"key {k!r} (of the keys that may change, --change-keys) "
                                 f"is not among the keys {list(sample.keys)}")
    if pairs not in ("auto", "adjacent", "all"):
        raise ParameterError(f"pairs={pairs!r}; use 'auto', 'adjacent' or 'all'")
    for name, v in (("refit_candidates", refit_candidates), ("max_pattern_size",
                    max_pattern_size), ("max_steps", max_steps),
                    *((("workers", workers),) if workers is not None else ())):
        check_int(name, v, 1)

    base_table = tabulate(sample)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        base = est.fit(base_table)
    # each distinct warning once: the file's own, then those of the changed files
    told = dict.fromkeys((w.category, str(w.message)) for w in caught)
    # every plan starts from the file itself: its fit is the one above, handed to the plans
    # (they re-fitted it each, one fit per plan: 9 of the ~130 auto fits at 8 keys)
    ctx = _Context(est, target, base_table.record_map(), base=(base_table, base))
    before = ctx.measures(base)
    units = []
    if "suppression" in actions:
        units.append(_PlanUnit(sample, ctx, "suppression", [sample.keys.index(k) for k in keys],
                               pairs, refit_candidates, max_pattern_size, max_steps))
    if "recoding" in actions:
        units += [_PlanUnit(sample, ctx, "recoding", [sample.keys.index(k)], pairs,
                            refit_candidates, max_pattern_size, max_steps) for k in keys]
    if executor == "serial" or (executor is None and workers in (None, 1)) or len(units) < 2:
        runs = []  # (plan, its distinct warnings) per unit
        with progress(total=len(units), desc="recommend", unit="plan") as bar:
            for u in units:
                bar.set_postfix_str(u.describe())
                runs.append(_run_plan(u))
                bar.update(1)
        where = "serial"
    else:
        # the plans with most steps first (suppression, then keys by number of levels): a
        # key of 91 ages merges tens of times where one of 2 sexes merges once; the results
        # go back to the units' order, so the ranking below is the serial one
        order = sorted(range(len(units)), key=lambda i: -units[i].size())
        done = map_units(_run_plan, [units[i] for i in order], executor=executor,
                         workers=workers)
        runs = [run for _, run in sorted(zip(order, done, strict=True), key=lambda t: t[0])]
        where = describe_executor(executor)
    searched = dict.fromkeys(w for _, raised in runs for w in raised if w not in told)
    plans = [plan for plan, _ in runs]
    for category, text in told:
        warnings.warn(text, category, stacklevel=2)
    for category, text in searched:
        warnings.warn(f"on a changed file of the plan search: {text}", category, stacklevel=2)
    plans.sort(key=lambda p: (not p.reached, p.records_changed if p.reached else 0,
                              p.values_changed if p.reached else 0, p.objective_after))
    settings = {"pairs": pairs, "refit_candidates": refit_candidates,
                "max_pattern_size": max_pattern_size, "max_steps": max_steps,
                "keys": keys, "actions": list(actions), "estimator": est.get_params(),
                "ran": where,
                "missing": "a suppressed value is a category of its own (sdcrisk convention)"}
    return Recommendations(target=target, method=est.name,
                           objective_before=before["objective"], measures_before=before,
                           plans=tuple(plans), settings=settings)


# --- shared machinery --------------------------------------------------------------------------
#: the CLI runs the plans of files with at least this many records in local processes (below,
#: starting them costs more than the plans)
PARALLEL_FROM = 5_000


@dataclass(frozen=True)
class _PlanUnit:
    """One plan to search: a work unit for :func:`map_units` (picklable)."""

    sample: Microdata
    ctx: _Context
    kind: str  # "suppression" or "recoding"
    keys: list[int]  # the keys it may change (recoding: the one key)
    pairs: str
    refit_candidates: int
    max_pattern_size: int
    max_steps: int

    def describe(self) -> str:
        return ("local suppression" if self.kind == "suppression"
                else f"recode {self.sample.keys[self.keys[0]]}")

    def size(self) -> int:
        """A guess of its work: the most merges a recoding can make (levels of its key);
        suppression first."""
        return (1 << 30) if self.kind == "suppression" else self.sample.n_levels[self.keys[0]]


def _run_plan(unit: _PlanUnit) -> tuple[Plan, list[tuple[type, str]]]:
    """The plan, and the distinct warnings its re-fits raised as (category, text): the
    caller issues each once (tens of re-fits repeat the same warning, and a worker process's
    own would print in Python's two-line form)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if unit.kind == "suppression":
            plan = _suppression_plan(unit.sample, unit.ctx, unit.keys, unit.max_pattern_size,
                                     unit.max_steps)
        else:
            plan = _recoding_plan(unit.sample, unit.ctx, unit.keys[0], unit.pairs,
                                  unit.refit_candidates, unit.max_steps)
    return plan, list(dict.fromkeys((w.category, str(w.message)) for w in caught))


@dataclass
class _Context:
    est: Estimator
    target: RiskTarget
    base_cells: np.ndarray
    #: the file's table and its fit: a table with the same content (cells, counts, levels,
    #: N and record map) is not fitted again (fits are deterministic: the same result)
    base: tuple[Any, RiskResult] | None = None

    def fit(self, md: Microdata) -> tuple[RiskResult, float]:
        table = tabulate(md)
        res = self._known(table)
        if res is None:
            res = self.est.fit(table)
        return res, self.target.measure(res)

    def _known(self, table) -> RiskResult | None:
        """The base fit when ``table`` has the base table's content, else None."""
        if self.base is None:
            return None
        base_table, res = self.base
        if table.fingerprint() != base_table.fingerprint() or not np.array_equal(
                table.record_map(), base_table.record_map()):
            return None
        return res

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


def _group_ids(codes: Sequence[np.ndarray], n_levels: Sequence[int], keep: Sequence[int],
               n: int) -> np.ndarray:
    """Dense ids 0..G-1 of the records' values on the keys ``keep``."""
    if not keep:
        return np.zeros(n, np.int64)
    ids, _ = _cells.cell_ids([codes[j] for j in keep], [n_levels[j] for j in keep])
    return np.unique(ids, return_inverse=True)[1].ravel()


def _with_missing_level(md: Microdata, j: int) -> tuple[Microdata, int]:
    levels = md.levels[j]
    if _cells.MISSING_LABEL in levels:
        return md, levels.index(_cells.MISSING_LABEL)
    new_levels = (*levels, _cells.MISSING_LABEL)
    codes = list(md.codes)
    codes[j] = codes[j].astype(_cells._code_dtype(len(new_levels)))
    all_levels = list(md.levels)
    all_levels[j] = new_levels
    return dataclasses.replace(md, codes=tuple(codes), levels=tuple(all_levels)), len(levels)


def _suppress(md: Microdata, records: np.ndarray, key_idx: np.ndarray) -> Microdata:
    for j in np.unique(key_idx):
        md, na = _with_missing_level(md, int(j))
        codes = list(md.codes)
        c = codes[j].copy()
        c[records[key_idx == j]] = na
        codes[j] = c
        md = dataclasses.replace(md, codes=tuple(codes))
    return md


def _text(v) -> str:
    return "NA" if v is None else str(v)


def _group_label(group: Sequence) -> str:
    if all(isinstance(v, int) for v in group) and sorted(group) == list(
            range(min(group), max(group) + 1)):
        return f"{min(group)}-{max(group)}"
    return "|".join(_text(v) for v in group)


def _merge_levels(md: Microdata, j: int, merges: Sequence[Sequence]) -> Microdata:
    """Merge groups of original labels of key j into one category each (label 'a-b' / 'a|b')."""
    levels = md.levels[j]
    position = {v: i for i, v in enumerate(levels)}
    target = list(range(len(levels)))
    for group in merges:
        missing = [v for v in group if v not in position]
        if missing:
            raise InputError(f"category {missing[0]!r} of {md.keys[j]!r} is not in the data's "
                             "levels")
        first = min(position[v] for v in group)
        for v in group:
            target[position[v]] = first
    heads = sorted(set(target))
    new_index = {h: i for i, h in enumerate(heads)}
    labels = {}
    for group in merges:
        labels[min(position[v] for v in group)] = _group_label(
            sorted(group, key=lambda v: position[v]))
    new_levels = tuple(labels.get(h, levels[h]) for h in heads)
    lookup = np.array([new_index[t] for t in target], dtype=np.int64)
    codes = list(md.codes)
    codes[j] = lookup[codes[j]].astype(_cells._code_dtype(len(new_levels)))
    all_levels = list(md.levels)
    all_levels[j] = new_levels
    return dataclasses.replace(md, codes=tuple(codes), levels=tuple(all_levels))


def _step(records_changed, values_changed, objective) -> dict:
    return {"records_changed": int(records_changed), "values_changed": int(values_changed),
            "objective": float(objective)}


# --- local suppression -------------------------------------------------------------------------
def _suppression_plan(sample: Microdata, ctx: _Context, allowed: list[int],
                      max_pattern_size: int, max_steps: int) -> Plan:
    n, n_keys = sample.n, len(sample.keys)
    md = sample
    suppressed = np.zeros((n, n_keys), bool)
    res, obj = ctx.fit(md)
    path = [_step(0, 0, obj)]
    patterns = [p for s in range(1, min(max_pattern_size, len(allowed)) + 1)
                for p in itertools.combinations(allowed, s)]
    for _ in range(max_steps):
        if obj <= ctx.target.value:
            break
        mask, contrib = ctx.risky(res)
        f_cur = res.table.counts[res.table.record_map()]
        na = [_missing_code(md, j) for j in range(n_keys)]
        chosen = _choose_groups(md, patterns, na, mask, contrib, f_cur,
                                gap=obj - ctx.target.value)
        if not chosen:
            break
        for pattern, members in chosen:
            for j in pattern:
                suppressed[members, j] = True
        rows, cols = np.nonzero(suppressed)
        md = _suppress(sample, rows, cols)
        res, obj = ctx.fit(md)
        path.append(_step(suppressed.any(axis=1).sum(), suppressed.sum(), obj))
    changed = suppressed.any(axis=1)
    records, cells = ctx.loss(changed)
    pairs_ = np.argwhere(suppressed).astype(np.int64)
    return Plan(kind="suppression", key=None, reached=obj <= ctx.target.value,
                objective_after=obj, records_changed=records,
                values_changed=int(suppressed.sum()), cells_changed=cells,
                suppressions=pairs_, measures_after=ctx.measures(res), path=tuple(path),
                keys=sample.keys)


def _missing_code(md: Microdata, j: int) -> int:
    """Code of the missing category of key j, or -1 when it has none yet."""
    levels = md.levels[j]
    return levels.index(_cells.MISSING_LABEL) if _cells.MISSING_LABEL in levels else -1


def _choose_groups(md, patterns, na, risky, contrib, f_cur, gap):
    """Groups (pattern, member records) to suppress this round, best value per cost first."""
    n = md.n
    codes, n_levels = md.codes, md.n_levels
    candidates = []
    for pattern in patterns:
        keep = [j for j in range(len(codes)) if j not in pattern]
        gid = _group_ids(codes, n_levels, keep, n)
        all_na = np.ones(n, bool)
        for j in pattern:
            all_na &= codes[j] == na[j]
        movers = np.flatnonzero(risky & ~all_na)
        if movers.size == 0:
            continue
        existing = np.bincount(gid[all_na], minlength=gid.max() + 1)
        g_of = gid[movers]
        size = np.bincount(g_of, minlength=len(existing))
        merged = size + existing
        biggest = np.zeros(len(existing), np.int64)
        np.maximum.at(biggest, g_of, f_cur[movers])
        cost_each = np.zeros(len(movers))
        for j in pattern:
            cost_each += codes[j][movers] != na[j]
        cost = np.bincount(g_of, weights=cost_each, minlength=len(existing))
        gain = np.bincount(g_of, weights=contrib[movers], minlength=len(existing))
        useful = np.flatnonzero((size > 0) & (merged >= 2) & (merged > biggest))
        order = np.argsort(g_of, kind="stable")
        starts = np.searchsorted(g_of[order], useful)
        for g, s in zip(useful, starts, strict=True):
            members = movers[order[s:s + size[g]]]
            candidates.append((gain[g] / cost[g], gain[g], pattern, members))
    candidates.sort(key=lambda c: -c[0])
    taken = np.zeros(n, bool)
    chosen, covered = [], 0.0
    for _, gain, pattern, members in candidates:
        if taken[members].any():
            continue
        chosen.append((pattern, members))
        taken[members] = True
        covered += gain
        if covered >= gap:
            break
    return chosen


# --- global recoding ---------------------------------------------------------------------------
def _recoding_plan(sample: Microdata, ctx: _Context, j: int, pairs: str,
                   refit_candidates: int, max_steps: int) -> Plan:
    original = sample.levels[j]
    groups: list[list] = [[v] for v in original]  # current categories as original labels
    md = sample
    res, obj = ctx.fit(md)
    path = [_step(0, 0, obj)]
    numeric = all(isinstance(v, int | np.integer) for v in original if v is not None)
    mode = ("adjacent" if numeric else "all") if pairs == "auto" else pairs
    changed = np.zeros(sample.n, bool)
    # every record alone on the other keys: no merge of this key's categories changes a
    # cell count (each record stays alone), so no step can make a record less unique
    others = [k for k in range(len(sample.keys)) if k != j]
    alone = bool(others) and np.bincount(
        _group_ids(sample.codes, sample.n_levels, others, sample.n)).max() == 1
    for _ in range(0 if alone else max_steps):
        if obj <= ctx.target.value:
            break
        cands = _merge_candidates(md, j, ctx, res, mode,
                                  merged=np.array([len(g) > 1 for g in groups]))
        if not cands:
            break
        best = None
        for a, b in cands[:refit_candidates]:
            trial_groups = groups[:a] + [groups[a] + groups[b]] + groups[a + 1:b] + groups[b + 1:]
            trial = _merge_levels(sample, j, [g for g in trial_groups if len(g) > 1])
            trial_res, trial_obj = ctx.fit(trial)
            if best is None or trial_obj < best[0] - 1e-12:
                best = (trial_obj, trial_groups, trial, trial_res)
        obj, groups, md, res = best
        merged_codes = [original.index(v) for g in groups if len(g) > 1 for v in g]
        changed = np.isin(sample.codes[j], merged_codes)
        path.append(_step(changed.sum(), changed.sum(), obj))
    records, cells = ctx.loss(changed)
    merges = tuple(tuple(g) for g in groups if len(g) > 1)
    return Plan(kind="recoding", key=sample.keys[j], reached=obj <= ctx.target.value,
                objective_after=obj, records_changed=records, values_changed=records,
                cells_changed=cells, merges=merges, measures_after=ctx.measures(res),
                path=tuple(path), keys=sample.keys)


def _merge_candidates(md: Microdata, j: int, ctx: _Context, res: RiskResult, mode: str,
                      merged: np.ndarray) -> list[tuple[int, int]]:
    """Pairs (a, b), a < b, of current categories of key j, best quick score first.

    Score of merging a and b: the objective carried by risky records whose other key values
    also occur with the other category (those records stop being unique by the merge), per
    record newly changed (records of a category that is already a merger are changed
    already; ``merged`` flags those categories).
    """
    levels = md.levels[j]
    d = len(levels)
    real = [i for i, v in enumerate(levels) if v is not None]
    if len(real) < 2:
        return []
    keep = [k for k in range(len(md.keys)) if k != j]
    gid = _group_ids(md.codes, md.n_levels, keep, md.n)
    code = md.codes[j].astype(np.int64)
    present = np.zeros((gid.max() + 1, d), bool)
    present[gid, code] = True
    mask, contrib = ctx.risky(res)
    r = np.flatnonzero(mask)
    score = np.zeros((d, d))
    if r.size:
        partner = present[gid[r]].astype(float) * contrib[r][:, None]
        np.add.at(score, code[r], partner)
    score = score + score.T
    new = np.where(merged, 0, np.bincount(code, minlength=d)).astype(float)
    if mode == "adjacent":
        cands = list(itertools.pairwise(real))
    else:
        cands = list(itertools.combinations(real, 2))

    def rank(p):
        cost = new[p[0]] + new[p[1]]
        value = score[p] / cost if cost > 0 else (np.inf if score[p] > 0 else 0.0)
        return (-value, -score[p], cost, p)

    cands.sort(key=rank)
    return cands
