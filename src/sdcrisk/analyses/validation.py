"""Pseudo-population validation: how wrong is each estimator on *this* file?

The user has a sample and no population, so no estimator's error can be measured directly.
The sample itself, however, is a population whose every cell count is known. Treating it as
one (N = n), we draw sub-samples from it by the file's own design at the file's sampling
fraction, run each candidate estimator on each sub-sample with the sample size as the
population size, and compare its tau1 and tau2 with the sub-sample's exactly known values
(and its record-level scores with the sub-sample's known population uniques, by ROC AUC).

:func:`validate` returns a frozen :class:`ValidationTable`; :class:`sdcrisk.AutoRisk`
uses it to choose an estimator (or a weighted pair) and to widen its intervals.

The assumption, and where it breaks, is set out in ``docs/auto.md``: the sample, sub-sampled
at the same fraction, must behave like the population sampled at that fraction. Sub-samples
are smaller than the sample by the factor n/N, so on small files they hold only a handful of
records; the sub-sample fraction is then raised to give at least ``min_records`` records and
the table says so (``fraction_rule``).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from ..core.base import ResultBase, jsonable
from ..core.measures import roc_auc
from ..data.sizes import check_number, short_repr
from ..data.table import CellTable, Microdata, tabulate
from ..estimators import MODELS, Estimator, options_of
from ..estimators._base import check_int, check_seed
from ..exceptions import InputError, ParameterError
from ..runtime.progress import progress
from .sampling import Bernoulli, HouseholdBernoulli, draw_sample, truth_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Candidate",
    "Replicate",
    "ValidationRow",
    "ValidationTable",
    "validate",
    "table_microdata",
    "check_options",
    "subsample_fraction",
]


@dataclass(frozen=True)
class Candidate:
    """One estimator setting to validate: a method name and its options.

    Build it with :meth:`parse` from ``"graphical"``, ``("loglinear", {"terms": "search"})``
    or ``"loglinear:terms=search"``.
    """

    method: str
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def parse(cls, spec: Candidate | str | Sequence) -> Candidate:
        """A candidate from a name, a ``name:key=value,...`` string or a (name, options) pair.

        Raises
        ------
        ParameterError
            Unknown method, or an option the method does not have.
        """
        if isinstance(spec, Candidate):
            cand = spec
        elif isinstance(spec, str):
            name, _, opts = spec.partition(":")
            options = {}
            for item in filter(None, (o.strip() for o in opts.split(","))):
                key, eq, value = item.partition("=")
                if not eq:
                    raise ParameterError(f"candidate option {item!r} in {spec!r} is not "
                                         "key=value; write e.g. 'loglinear:terms=search'")
                if key.strip() in options:  # the last one silently won
                    raise ParameterError(f"candidate option {key.strip()!r} is given twice in "
                                         f"{spec!r}; give each option once")
                options[key.strip()] = _literal(value.strip())
            cand = cls(name.strip(), tuple(sorted(options.items())))
        elif isinstance(spec, Sequence) and len(spec) == 2 and isinstance(spec[0], str) \
                and isinstance(spec[1], Mapping):
            cand = cls(spec[0], tuple(sorted(dict(spec[1]).items())))
        else:
            raise ParameterError(f"candidate {spec!r}: give a method name, 'name:key=value' "
                                 "or a (name, {options}) pair")
        cand.check()
        return cand

    def check(self) -> None:
        """Raise ParameterError for an unknown method or option (before any fitting)."""
        if self.method == "auto":
            raise ParameterError("'auto' cannot be its own candidate")
        if self.method not in MODELS:
            raise ParameterError(f"unknown candidate method {self.method!r}; available: "
                                 f"{', '.join(MODELS)}")
        fields = options_of(MODELS[self.method])
        bad = [k for k, _ in self.options if k not in fields]
        if bad:
            raise ParameterError(f"candidate {self.method!r} has no option {bad[0]!r}; its "
                                 f"options: {', '.join(sorted(fields))}")
        MODELS[self.method](**dict(self.options))  # validates the values

    @property
    def setting(self) -> str:
        """The options in words (``"default"`` when none)."""
        return ", ".join(f"{k}={v}" for k, v in self.options) or "default"

    @property
    def label(self) -> str:
        """``method`` or ``method(setting)``."""
        return self.method if not self.options else f"{self.method}({self.setting})"

    def estimator(self, **shared) -> Estimator:
        """The estimator; ``shared`` options (seed, ci_level) apply where the class has them
        and the candidate does not set them itself."""
        cls = MODELS[self.method]
        fields = options_of(cls)
        shared = {k: v for k, v in shared.items() if k in fields and v is not None}
        return cls(**{**shared, **dict(self.options)})


def _literal(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def check_options(*, replicates, fraction, min_records, max_fraction, time_budget) -> None:
    """The sub-sampling options of :func:`validate` (and of ``AutoRisk``, which passes them
    on): checked once for both (validate took replicates=True for 1, min_records=-1 and
    max_fraction=0).

    Raises
    ------
    ParameterError
        Naming the option and the value.
    """
    check_int("replicates", replicates, 1)
    if fraction is not None and not 0 < check_number("fraction", fraction) <= 1:
        raise ParameterError(f"fraction={fraction} must lie in (0, 1] or be None (the file's "
                             "own sampling fraction)")
    if not 0 < check_number("max_fraction", max_fraction) <= 1:
        raise ParameterError(f"max_fraction={max_fraction} must lie in (0, 1]")
    check_int("min_records", min_records, 0)
    if time_budget is not None and not check_number("time_budget", time_budget) > 0:
        raise ParameterError(f"time_budget={time_budget} must be > 0 seconds or None")


def table_microdata(table: CellTable) -> Microdata:
    """The records of ``table`` as Microdata whose population is the file itself (N = n).

    Each record gets the level codes of its cell (``cell_codes[record_cell]``); household ids
    follow the records. Survey weights are not kept (a table holds only their cell sums): the
    pseudo-population is the unweighted sample.
    """
    codes = tuple(np.ascontiguousarray(table.cell_codes[table.record_map(), j])
                  for j in range(len(table.keys)))
    return Microdata(keys=table.keys, codes=codes, levels=table.levels, weights=None,
                     household=table.household, population_size=float(table.n),
                     population_size_source="assumed_population", source=table.source)


#: sub-samples smaller than this (on average) are avoided where the file allows: the fraction
#: may then exceed ``max_fraction`` up to ``FLOOR_MAX_FRACTION``
FLOOR_RECORDS = 50
FLOOR_MAX_FRACTION = 0.5


def subsample_fraction(table: CellTable, fraction: float | None = None,
                       min_records: int = 0, max_fraction: float = 0.5) -> tuple[float, str]:
    """The sub-sample fraction and the rule that gave it.

    ``fraction=None`` takes the file's sampling fraction n/N, raised where needed so that a
    sub-sample holds ``min_records`` records on average, but not above ``max_fraction``; if
    that leaves fewer than ``FLOOR_RECORDS`` (50) records, the fraction goes up to give 50,
    but not above ``FLOOR_MAX_FRACTION`` (0.5: a sub-sample must leave records out for there
    to be anything to predict).
    """
    if fraction is not None:
        if not 0 < fraction <= 1:
            raise ParameterError(f"fraction={fraction} must lie in (0, 1]")
        return float(fraction), "given"
    pi = table.n / table.population_size
    n = table.n
    if pi * n >= min_records or pi >= max_fraction:
        frac, rule = float(pi), "the file's sampling fraction n/N"
    else:
        frac = min(max_fraction, min_records / n)
        rule = (f"raised from the file's sampling fraction {pi:.3g} so that a sub-sample holds "
                f"about {frac * n:.0f} records (min_records={min_records}, at most "
                f"max_fraction={max_fraction:g})")
    if frac * n < FLOOR_RECORDS and frac < FLOOR_MAX_FRACTION:
        frac = min(FLOOR_MAX_FRACTION, max(frac, FLOOR_RECORDS / n))
        rule = (f"raised from the file's sampling fraction {pi:.3g} to {frac:.3g} so that a "
                f"sub-sample holds about {frac * n:.0f} records (at least {FLOOR_RECORDS} "
                f"where the file allows, at most {FLOOR_MAX_FRACTION:g} of it); the file is "
                "too small for its own fraction")
    return frac, rule


@dataclass(frozen=True)
class Replicate:
    """One sub-sample of the pseudo-population and its exact measures."""

    seed: int
    n: int
    sample_uniques: int
    tau1: float
    tau2: float
    population_uniques: int


@dataclass(frozen=True)
class ValidationRow:
    """One candidate's estimates on every replicate.

    ``tau1``/``tau2``/``auc`` hold one value per replicate (NaN where the candidate failed
    or gives no such figure). ``status`` is ``"ok"``, ``"failed: ..."`` or
    ``"skipped: ..."``.
    """

    candidate: Candidate
    tau1: tuple[float, ...]
    tau2: tuple[float, ...]
    auc: tuple[float, ...]
    seconds: float
    status: str = "ok"
    warnings: int = 0

    @property
    def usable(self) -> bool:
        """Validated on every replicate with tau1 and tau2."""
        return (self.status == "ok" and bool(self.tau1)
                and bool(np.all(np.isfinite(self.tau1)) and np.all(np.isfinite(self.tau2))))


@dataclass(frozen=True, eq=False, repr=False)
class ValidationTable(ResultBase):
    """Every candidate's validated errors on the sub-samples of one file.

    Attributes
    ----------
    rows : tuple of ValidationRow
        One per candidate, in the order given.
    replicates : tuple of Replicate
        The sub-samples and their exact tau1, tau2 (an empty sub-sample is left out).
    fraction : float
        Sub-sampling fraction.
    fraction_rule : str
        How the fraction was chosen.
    design : str
        The sub-sampling design, in words.
    n : int
        Size of the pseudo-population (the file).
    seconds : float
        Wall-clock time of the whole validation.
    """

    rows: tuple[ValidationRow, ...]
    replicates: tuple[Replicate, ...]
    fraction: float
    fraction_rule: str
    design: str
    n: int
    seconds: float

    def truth(self, measure: str) -> np.ndarray:
        """The replicates' exact values of ``"tau1"`` or ``"tau2"``."""
        return np.array([getattr(r, measure) for r in self.replicates], float)

    def row(self, label: str) -> ValidationRow:
        """The row of a candidate by its label."""
        for r in self.rows:
            if r.candidate.label == label:
                return r
        raise KeyError(f"no candidate {label!r}; have {[r.candidate.label for r in self.rows]}")

    def relative_errors(self, estimates, measure: str) -> np.ndarray:
        """(estimate - truth) / truth per replicate; NaN where the truth is 0."""
        return relative_errors(np.asarray(estimates, float), self.truth(measure))

    @overload
    def summary(self, row: None = None) -> pd.DataFrame: ...

    @overload
    def summary(self, row: ValidationRow) -> dict[str, Any]: ...

    def summary(self, row: ValidationRow | None = None) -> pd.DataFrame | dict[str, Any]:
        """One row per candidate: status, median |relative error| of tau1 and tau2, median
        AUC, seconds. With ``row``: :meth:`row_summary` of that row (a dict)."""
        if row is not None:
            return self.row_summary(row)
        cols = ["candidate", "status", "median_abs_rel_err_tau1", "median_abs_rel_err_tau2",
                "median_auc", "seconds"]
        return self.to_frame().reset_index()[cols].set_index("candidate")

    def row_summary(self, row: ValidationRow) -> dict[str, Any]:
        """Median |relative error|, median signed error and median AUC of one row."""
        out: dict[str, Any] = {}
        for m in ("tau1", "tau2"):
            err = self.relative_errors(getattr(row, m), m) if row.tau1 else np.array([])
            out[f"median_abs_rel_err_{m}"] = _nanmedian(np.abs(err))
            out[f"median_rel_err_{m}"] = _nanmedian(err)
        out["median_auc"] = _nanmedian(np.asarray(row.auc, float))
        return out

    def to_rows(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per candidate: its replicate errors and their medians."""
        out = []
        for row in self.rows:
            entry = {"candidate": row.candidate.label, "method": row.candidate.method,
                     "setting": row.candidate.setting, "status": row.status}
            for m in ("tau1", "tau2"):
                entry[f"rel_err_{m}"] = [None if not math.isfinite(e) else float(e)
                                         for e in self.relative_errors(getattr(row, m), m)] \
                    if row.tau1 else []
            entry.update(self.row_summary(row))
            entry["auc"] = [None if not math.isfinite(a) else float(a) for a in row.auc]
            entry["warnings"] = row.warnings
            entry["seconds"] = row.seconds
            out.append(entry)
        return jsonable(out)

    def to_frame(self) -> pd.DataFrame:
        """:meth:`to_rows` as a pandas DataFrame (one row per candidate)."""
        import pandas as pd

        return pd.DataFrame(self.to_rows()).set_index("candidate")

    def _payload(self) -> dict[str, Any]:
        """The table with its design and replicates."""
        return {
            "design": self.design, "fraction": self.fraction,
            "fraction_rule": self.fraction_rule, "pseudo_population_size": self.n,
            "replicates": [r.__dict__ for r in self.replicates],
            "candidates": self.to_rows(), "seconds": self.seconds,
        }

    def _repr_parts(self) -> list[str]:
        return [f"candidates={[r.candidate.label for r in self.rows]}",
                f"replicates={len(self.replicates)}", f"fraction={self.fraction:.4g}",
                f"design={self.design!r}", f"n={self.n}", f"seconds={self.seconds:.3g}"]


def relative_errors(estimates: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """(estimate - truth) / truth, NaN where the truth is 0 or the estimate missing."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(truth > 0, estimates / truth - 1.0, np.nan)


def _nanmedian(a: np.ndarray) -> float | None:
    a = np.asarray(a, float)
    a = a[np.isfinite(a)]
    return float(np.median(a)) if a.size else None


def _design(table: CellTable, design: str, fraction: float):
    if design == "auto":
        design = "household" if table.household is not None else "bernoulli"
    if design == "household":
        if table.household is None:
            raise ParameterError("design='household' needs household ids in the data")
        return HouseholdBernoulli(fraction)
    if design == "bernoulli":
        return Bernoulli(fraction)
    raise ParameterError(f"design={design!r}; use 'auto', 'bernoulli' or 'household'")


def validate(
    table: CellTable,
    candidates: Sequence[Candidate | str | Sequence],
    *,
    replicates: int = 5,
    fraction: float | None = None,
    min_records: int = 0,
    max_fraction: float = 0.5,
    design: str = "auto",
    time_budget: float | None = None,
    random_state: int | None = 0,
    estimator_options: Mapping[str, Any] | None = None,
) -> ValidationTable:
    """Run every candidate on seeded sub-samples of the file and measure its errors.

    Parameters
    ----------
    table : CellTable
        The user's sample (its records become the pseudo-population, N = n).
    candidates : sequence
        Estimator settings (see :meth:`Candidate.parse`).
    replicates : int
        Number of sub-samples (default 5).
    fraction : float, optional
        Sub-sampling fraction; default the file's own n/N (see :func:`subsample_fraction`).
    min_records : int
        With ``fraction=None``, raise the fraction so that a sub-sample holds about this many
        records (0: never raise it) ...
    max_fraction : float
        ... but not above this fraction (default 0.5).
    design : {"auto", "bernoulli", "household"}
        ``auto``: whole households at the fraction when the table has household ids,
        otherwise records (Bernoulli).
    time_budget : float, optional
        Seconds for the whole validation. Candidates run in the order given; one whose
        replicates would not fit in what is left (predicted from its first replicate) is
        stopped and marked ``skipped``. A skipped candidate cannot be chosen; results stay
        reproducible for a seed only while no candidate is skipped.
    random_state : int, optional
        Seeds the sub-samples (``SeedSequence(random_state).spawn(replicates)``) and every
        candidate that takes a ``random_state``.
    estimator_options : mapping, optional
        Options given to every candidate that has them (e.g. ``ci_level``).

    Returns
    -------
    ValidationTable

    Notes
    -----
    Replicate r draws sub-sample s_r from the file by the design; its exact measures are
    tau1_r = #{k : f'_k = 1, f_k = 1} and tau2_r = sum over f'_k = 1 of 1/f_k, where f' are
    the sub-sample's and f the file's cell counts. A candidate's relative error on replicate
    r is (tau_hat_r - tau_r) / tau_r with tau_hat_r its estimate from s_r with N = n. The AUC
    is the ROC area of its P(F = 1 | f) for telling the file's uniques among the sub-sample's
    uniques.

    References
    ----------
    The sample-as-population idea is that of the pseudo-population bootstrap (Gross 1980;
    Booth, Butler & Hall 1994, JASA 89, 1282-1289); here it is used, as in cross-validation,
    to measure the error of each estimator rather than the variance of one.
    """
    if not isinstance(table, CellTable):
        raise ParameterError(f"validate() takes a CellTable (see sdcrisk.tabulate), not "
                             f"{type(table).__name__}")
    check_options(replicates=replicates, fraction=fraction, min_records=min_records,
                  max_fraction=max_fraction, time_budget=time_budget)
    check_seed(random_state)  # -1 was numpy's ValueError
    if estimator_options is not None and not isinstance(estimator_options, Mapping):
        raise ParameterError(f"estimator_options={short_repr(estimator_options)} must be a "
                             "mapping of option -> value, e.g. {'ci_level': 0.9}, or None")
    if isinstance(candidates, str) or not isinstance(candidates, Iterable):
        raise ParameterError(f"candidates={short_repr(candidates)}: give a list of method "
                             "names or specs, e.g. ['nb', 'loglinear:terms=search']")
    cands = [Candidate.parse(c) for c in candidates]
    if not cands:
        raise ParameterError("give at least one candidate")
    labels = [c.label for c in cands]
    if len(set(labels)) != len(labels):
        raise ParameterError(f"candidates repeat: {labels}")
    start = time.perf_counter()
    frac, rule = subsample_fraction(table, fraction, min_records, max_fraction)
    des = _design(table, design, frac)
    pseudo = table_microdata(table)
    seeds = [int(s.generate_state(1)[0])
             for s in np.random.SeedSequence(random_state).spawn(replicates)]
    reps, subs = [], []
    for seed in seeds:
        rows = draw_sample(pseudo, des, seed=seed)
        if rows.size == 0:  # an empty sub-sample has nothing to estimate: left out
            continue
        sub = tabulate(pseudo.subset(rows, population_size=pseudo.n), population=pseudo)
        t = truth_of(sub)
        reps.append(Replicate(seed, sub.n, sub.sample_uniques, t["tau1"], t["tau2"],
                              int(t["population_uniques"])))
        su = sub.counts == 1
        subs.append((sub, su, sub.population.counts[su] == 1))
    if not reps:
        raise InputError(f"every sub-sample of the file at fraction {frac:.3g} was empty "
                         f"(n={table.n}); give a larger fraction")
    shared = {"random_state": random_state, **dict(estimator_options or {})}
    rows_out = []
    with progress(total=len(cands), desc="validating candidates", unit="candidate") as bar:
        for cand in cands:
            bar.set_postfix_str(cand.label)
            left = None if time_budget is None else time_budget - (time.perf_counter() - start)
            rows_out.append(_run_candidate(cand, subs, shared, left))
            bar.update(1)
    return ValidationTable(rows=tuple(rows_out), replicates=tuple(reps), fraction=frac,
                           fraction_rule=rule, design=des.describe(), n=table.n,
                           seconds=time.perf_counter() - start)


def _run_candidate(cand: Candidate, subs: list, shared: dict, left: float | None
                   ) -> ValidationRow:
    tau1, tau2, auc = [], [], []
    n_warn = 0
    t0 = time.perf_counter()
    if left is not None and left <= 0:
        return ValidationRow(cand, (), (), (), 0.0, "skipped: time budget spent before it")
    est = cand.estimator(**shared)
    for i, item in enumerate(subs):
        sub, su, is_pu = item
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = est.fit(sub)
            n_warn += len(caught)
        except Exception as exc:  # noqa: BLE001 - a failing candidate is reported, not fatal
            return ValidationRow(cand, (), (), (), time.perf_counter() - t0,
                                 f"failed: {type(exc).__name__}: {exc}", n_warn)
        tau1.append(_value(res, "tau1"))
        tau2.append(_value(res, "tau2"))
        score = (res.cell_risk("population_unique")[su]
                 if "population_unique" in res.cell_risk_values else None)
        a = None if score is None else roc_auc(score, is_pu)
        auc.append(math.nan if a is None else a)
        spent = time.perf_counter() - t0
        if left is not None and i + 1 < len(subs) and spent * len(subs) / (i + 1) > left:
            return ValidationRow(cand, (), (), (), spent,
                                 f"skipped: time budget ({left:.0f} s left would not cover "
                                 f"{len(subs)} replicates at {spent / (i + 1):.1f} s each)",
                                 n_warn)
    return ValidationRow(cand, tuple(tau1), tuple(tau2), tuple(auc),
                         time.perf_counter() - t0, "ok", n_warn)


def _value(res, name: str) -> float:
    m = res.measures.get(name)
    return math.nan if m is None or m.estimate is None else float(m.estimate)
