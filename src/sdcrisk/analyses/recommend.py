"""Recommendations: the least change to the keys that brings the estimated risk below a target.

Three kinds of plan, each found greedily and re-estimated with the chosen estimator after
every change (so the risk reported with a plan is the estimator's, not a prediction):

* **local suppression** - set single key values of risky records to missing. sdcrisk treats
  a missing value as a category of its own (:meth:`Microdata.from_source`, ``missing=
  "category"``), so a suppressed record joins the cell of the records that share its other
  key values and are missing on the same keys (:mod:`._suppression_search`);
* **global recoding** - merge categories of one key variable (one plan per key;
  :mod:`._recoding_search`);
* **recoding, then suppression** - the first merges of a key's recoding plan, as many as pay
  better than suppression, then local suppression from the recoded file (one plan per key;
  :mod:`._combined_search` says how far it recodes).

Plans are ranked by information loss: records changed, then key values changed. This goes
beyond Zaslavsky & Horton (1998), whose section 5 lists "combining cells or suppressing some
data fields" as further decision alternatives. The results (:class:`RiskTarget`,
:class:`Plan`, :class:`Recommendations`) live in :mod:`._recommend_plan`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from ..data.table import Microdata, tabulate
from ..estimators import Estimator, without_p_pu
from ..estimators._base import check_int
from ..exceptions import ParameterError
from ..runtime.executors import describe_executor, executor_scope, map_units
from ..runtime.progress import progress
from ._combined_search import combined_plan, recoding_depths
from ._recoding_search import recoding_plan
from ._recommend_plan import (
    ACTIONS,
    Action,
    Plan,
    Recommendations,
    RiskTarget,
    SearchContext,
    plan_rank,
)
from ._suppression_search import suppression_plan
from .methods import get_estimator

__all__ = ["RiskTarget", "Plan", "Recommendations", "recommend"]


def recommend(
    sample: Microdata,
    target: RiskTarget,
    *,
    estimator: Estimator | str = "nb",
    actions: Sequence[Action] = ACTIONS,
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
        after every change (but not on a file it fitted already for the same plan, or the
        recoded file a combined plan starts from: :mod:`._recommend_cache`).
    actions : sequence of {"suppression", "recoding", "recoding+suppression"}
        Which kinds of plan to list (default all three). A combined plan
        (``recoding+suppression``, one per key) starts from the key's recoding plan, which is
        searched for it even when ``recoding`` is not listed.
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
        Most greedy steps per plan (a combined plan: of each of its two actions).
    executor, workers
        Where the plans run, each plan a work unit (:func:`sdcrisk.runtime.executors.
        executor_scope`: an Executor, a Dask Client or scheduler address, ``"serial"``, or
        ``workers`` local processes). Default: in this process (a script that starts
        processes needs the ``if __name__ == "__main__":`` guard; the CLI uses every CPU from
        ``PARALLEL_FROM`` records, ``PARALLEL_FROM_AUTO`` with ``auto``). Each plan re-fits
        the estimator tens of times and the plans are independent; they are the same
        wherever they run.

    Returns
    -------
    Recommendations
        Plans ranked: those that reach the target first, by records then values changed.

    Notes
    -----
    The searches are greedy (not guaranteed minimal). *Suppression*: in each round the
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
    then change a cell count (its plan has no step). *Recoding, then suppression*, per key
    whose recoding lowered the objective: the first 1, 2, 4, ... steps of its recoding,
    each followed by the suppression search from the recoded file, the best by the ranking
    kept (the doubling stops at the first that ranks worse; :mod:`._combined_search` says
    why the depth is searched rather than predicted). Its records changed count a record
    both recoded and suppressed once, its values changed a value both recoded and
    suppressed once.

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
    # a string, comma-separated as on the command line ('suppression' was read letter by
    # letter: "action 's'"; keys='ab' as the keys 'a' and 'b')
    actions = tuple(a.strip() for a in actions.split(",")) if isinstance(actions, str) \
        else tuple(actions)
    if not actions:  # an empty list searched nothing and recommended nothing, without a word
        raise ParameterError(f"actions=[] gives no plan to search; give any of "
                             f"{', '.join(ACTIONS)} (--actions on the command line)")
    for a in actions:
        if a not in ACTIONS:
            raise ParameterError(f"action {a!r} (--actions on the command line); use any of "
                                 f"{', '.join(ACTIONS)}")
    keys = list(sample.keys if keys is None else [k.strip() for k in keys.split(",")]
                if isinstance(keys, str) else keys)
    if not keys:
        raise ParameterError("keys=[] lets no key change, so there is nothing to recommend; "
                             "give the keys that may change, or None for all (--change-keys "
                             "on the command line)")
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
    held = tuple(bool(np.bincount(c, minlength=len(lv)).all())
                 for c, lv in zip(sample.codes, sample.levels, strict=True))
    ctx = SearchContext(without_p_pu(est), target, base_table.record_map(),
                        base=(base_table, base), compact=held)
    before = ctx.measures(base)
    allowed = [sample.keys.index(k) for k in keys]
    # a key's combined plan follows its recoding plan: that is searched first, even when
    # only the combined plans are listed
    combined = "recoding+suppression" in actions
    units = []
    if "suppression" in actions:
        units.append(_PlanUnit(sample, ctx, "suppression", allowed, pairs, refit_candidates,
                               max_pattern_size, max_steps))
    if "recoding" in actions or combined:
        units += [_PlanUnit(sample, ctx, "recoding", [j], pairs, refit_candidates,
                            max_pattern_size, max_steps) for j in allowed]
    parallel = not (executor == "serial" or (executor is None and workers in (None, 1)))
    where = describe_executor(executor) if parallel and len(units) > 1 else "serial"
    with executor_scope(executor, workers=workers) if parallel else nullcontext() as ex:
        runs = _run_units(units, ex)
        if combined:  # the keys whose recoding lowered the objective at some step
            # each starts from its recoding plan's fits of the recoded files (seeds)
            units = [_PlanUnit(sample, ctx, "recoding+suppression", allowed, pairs,
                               refit_candidates, max_pattern_size, max_steps, recoding=plan,
                               seeds=seeds)
                     for plan, _, seeds in runs if plan.kind == "recoding"
                     and recoding_depths(plan)]
            runs += _run_units(units, ex)
    searched = dict.fromkeys(w for _, raised, _ in runs for w in raised if w not in told)
    runs = [run for run in runs if run.plan.kind in actions]
    plans = [plan for plan, _, _ in runs]
    for category, text in told:
        warnings.warn(text, category, stacklevel=2)
    for category, text, others in _alike(searched):
        more = (f" (and {others} more like it on other changed files, with other figures)"
                if others else "")
        warnings.warn(f"on a changed file of the plan search: {text}{more}", category,
                      stacklevel=2)
    plans.sort(key=plan_rank)
    settings = {"pairs": pairs, "refit_candidates": refit_candidates,
                "max_pattern_size": max_pattern_size, "max_steps": max_steps,
                "keys": keys, "actions": list(actions), "estimator": est.get_params(),
                "ran": where,
                "missing": "a suppressed value is a category of its own (sdcrisk convention)"}
    return Recommendations(target=target, method=est.name,
                           objective_before=before["objective"], measures_before=before,
                           plans=tuple(plans), settings=settings)


def _alike(raised) -> list[tuple[type, str, int]]:
    """Warnings of the changed files grouped by their words, figures aside: (category, the
    first one's text, how many others differed only in figures). A search re-fits tens of
    files, and auto's caution that each lies outside its corpus, with that file's figures,
    buried the result (nine lines around a one-line outcome of ``protect --target``)."""
    groups: dict[tuple[type, str], list] = {}
    for category, text in raised:
        shape = re.sub(r"\d[\d.,e+-]*", "#", text)
        groups.setdefault((category, shape), [category, text, -1])[2] += 1
    return [tuple(g) for g in groups.values()]


# --- shared machinery --------------------------------------------------------------------------
#: the CLI runs the plans of files with at least this many records in local processes (below,
#: starting them costs more than the plans)
PARALLEL_FROM = 5_000
#: and, re-fitting ``auto`` (five candidates and their combination per change, ~0.4 s a fit
#: at 2,443 records x 8 keys, ~240 fits), from this many: there the plans cost minutes
PARALLEL_FROM_AUTO = 1_000


@dataclass(frozen=True)
class _PlanUnit:
    """One plan to search: a work unit for :func:`map_units` (picklable)."""

    sample: Microdata
    ctx: SearchContext
    kind: str  # "suppression", "recoding" or "recoding+suppression"
    keys: list[int]  # the keys it may change (recoding: the one key)
    pairs: str
    refit_candidates: int
    max_pattern_size: int
    max_steps: int
    recoding: Plan | None = None  # recoding+suppression: the key's recoding plan
    #: (table, fit) pairs its search starts from, fitted by another unit (a combined plan:
    #: its recoding plan's fits of the recoded files)
    seeds: tuple = ()

    def describe(self) -> str:
        if self.kind == "suppression":
            return "local suppression"
        if self.kind == "recoding":
            return f"recode {self.sample.keys[self.keys[0]]}"
        assert self.recoding is not None  # a combined unit is made with its recoding plan
        return f"recode {self.recoding.key}, then local suppression"

    def size(self) -> int:
        """A guess of its work: the most merges a recoding can make (levels of its key);
        suppression (also after a recoding) first."""
        return self.sample.n_levels[self.keys[0]] if self.kind == "recoding" else (1 << 30)


class _Run(NamedTuple):
    plan: Plan
    #: its distinct warnings, as (category, text)
    raised: list[tuple[type, str]]
    #: a recoding plan's (table, fit) at the depths a combined plan starts from
    seeds: tuple


def _run_units(units: list[_PlanUnit], executor) -> list[_Run]:
    """(plan, its distinct warnings, seeds) per unit, in the units' order: in this process when
    ``executor`` is None or there is one unit, else on ``executor``."""
    if executor is None or len(units) < 2:
        runs = []
        with progress(total=len(units), desc="recommend", unit="plan") as bar:
            for u in units:
                bar.set_postfix_str(u.describe())
                runs.append(_run_plan(u))
                bar.update(1)
        return runs
    # the plans with most steps first (suppression, then keys by number of levels): a key of
    # 91 ages merges tens of times where one of 2 sexes merges once; the results go back to
    # the units' order, so the ranking is the serial one
    order = sorted(range(len(units)), key=lambda i: -units[i].size())
    done = map_units(_run_plan, [units[i] for i in order], executor=executor)
    return [run for _, run in sorted(zip(order, done, strict=True), key=lambda t: t[0])]


def _run_plan(unit: _PlanUnit) -> _Run:
    """The plan, and the distinct warnings its re-fits raised as (category, text): the
    caller issues each once (tens of re-fits repeat the same warning, and a worker process's
    own would print in Python's two-line form); a recoding plan's seeds for its combined
    plan. The unit's fits are cached for the unit alone (its context's copy)."""
    ctx = unit.ctx.for_unit(unit.seeds)
    seeds: tuple = ()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if unit.kind == "suppression":
            plan = suppression_plan(unit.sample, ctx, unit.keys, unit.max_pattern_size,
                                     unit.max_steps)
        elif unit.kind == "recoding":
            fits_at: dict = {}
            plan = recoding_plan(unit.sample, ctx, unit.keys[0], unit.pairs,
                                  unit.refit_candidates, unit.max_steps, fits_at=fits_at)
            seeds = tuple((fits_at[s].table, fits_at[s]) for s in recoding_depths(plan))
        else:
            assert unit.recoding is not None
            plan = combined_plan(unit.sample, ctx,
                                  unit.sample.keys.index(unit.recoding.key), unit.recoding,
                                  unit.keys, unit.max_pattern_size, unit.max_steps)
    return _Run(plan, list(dict.fromkeys((w.category, str(w.message)) for w in caught)),
                seeds)
