"""Evaluation against the truth: draw a sample from a population, compute the true measures,
run estimators and compare.

Sampling designs (all seeded with ``numpy.random.default_rng(seed)``):

* :class:`Bernoulli` - each record independently with probability ``fraction``:
  ``u = rng.random(N); sampled = u < fraction``. With seed 0 this is exactly the design of
  the ``ground_truth.csv`` files in the shared data (nested samples in file row order).
* :class:`SimpleRandomSample` - ``n`` records without replacement.
* :class:`HouseholdBernoulli` - whole households, each with probability ``fraction``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .estimators import Estimator, get_estimator
from .exceptions import InputError, ParameterError
from .measures import roc_auc, truth_measures
from .result import RiskResult, _jsonable
from .table import CellTable, Microdata, tabulate

__all__ = [
    "Bernoulli",
    "SimpleRandomSample",
    "HouseholdBernoulli",
    "draw_sample",
    "evaluate",
    "Evaluation",
    "MethodEvaluation",
    "truth_of",
]


@dataclass(frozen=True)
class _FractionDesign:
    fraction: float

    def __post_init__(self):
        if not 0 < self.fraction <= 1:
            raise ParameterError(f"fraction={self.fraction} must lie in (0, 1]")


@dataclass(frozen=True)
class Bernoulli(_FractionDesign):
    """Bernoulli sampling of records at ``fraction``."""

    def describe(self) -> str:
        return f"Bernoulli sampling of records, fraction {self.fraction:g}"


@dataclass(frozen=True)
class SimpleRandomSample:
    """Simple random sample of ``n`` records without replacement."""

    n: int

    def __post_init__(self):
        if self.n < 1:
            raise ParameterError(f"n={self.n} must be >= 1")

    def describe(self) -> str:
        return f"simple random sample of {self.n} records"


@dataclass(frozen=True)
class HouseholdBernoulli(_FractionDesign):
    """Bernoulli sampling of whole households at ``fraction`` (needs household ids)."""

    def describe(self) -> str:
        return f"Bernoulli sampling of whole households, fraction {self.fraction:g}"


Design = Bernoulli | SimpleRandomSample | HouseholdBernoulli


def draw_sample(population: Microdata, design: Design, *, seed: int = 0) -> np.ndarray:
    """Indices (sorted) of the records a design draws from ``population``."""
    rng = np.random.default_rng(seed)
    big_n = population.n
    if isinstance(design, Bernoulli):
        return np.flatnonzero(rng.random(big_n) < design.fraction)
    if isinstance(design, SimpleRandomSample):
        if design.n > big_n:
            raise InputError(f"sample size n={design.n} exceeds the population size N={big_n}")
        return np.sort(rng.choice(big_n, size=design.n, replace=False))
    if isinstance(design, HouseholdBernoulli):
        if population.household is None:
            raise InputError("household sampling needs a household column (--household)")
        n_households = int(population.household.max()) + 1
        take = rng.random(n_households) < design.fraction
        return np.flatnonzero(take[population.household])
    raise ParameterError(f"unknown design {design!r}")


def truth_of(table: CellTable) -> dict[str, float]:
    """True measures of a table tabulated with its population."""
    if table.population is None:
        raise ParameterError("the table has no population counts; tabulate(sample, "
                             "population=...)")
    pop = table.population
    truth = truth_measures(table.counts, pop.counts, population_size=pop.size,
                           population_uniques=pop.n_unique)
    truth.update(n=float(table.n), population_size=float(pop.size),
                 population_uniques=float(pop.n_unique))
    return truth


@dataclass(frozen=True)
class MethodEvaluation:
    """One estimator's figures against the truth."""

    method: str
    estimates: dict[str, float | None]
    relative_errors: dict[str, float | None]
    seconds: float
    auc: float | None
    result: RiskResult | None = field(default=None, repr=False)
    error: str | None = None

    def to_dict(self) -> dict:
        model = {}
        if self.result is not None:
            # what the method chose: the model (log-linear, graphical kept models)
            model = {k: self.result.fitted[k] for k in ("model", "models")
                     if k in self.result.fitted}
        return _jsonable({
            **self.estimates,
            "seconds": self.seconds,
            "auc": self.auc,
            "relative_error": self.relative_errors,
            **model,
            **({"error": self.error} if self.error else {}),
        })


@dataclass(frozen=True)
class Evaluation:
    """Truth, estimates and errors for one sample of a population."""

    truth: dict[str, float]
    methods: dict[str, MethodEvaluation]
    design: str
    seed: int | None
    keys: tuple[str, ...]
    cell_space: int

    def to_dict(self) -> dict:
        truth = dict(self.truth)
        for k in ("n", "sample_uniques", "population_uniques", "tau1"):
            if k in truth:
                truth[k] = int(truth[k])
        return _jsonable({
            "design": self.design,
            "seed": self.seed,
            "keys": list(self.keys),
            "cell_space": self.cell_space,
            "truth": truth,
            "estimates": {k: m.to_dict() for k, m in self.methods.items()},
        })


_COMPARED = ("tau1", "tau2", "p_pu", "p_pu_given_su", "theta")


def evaluate(
    population: Microdata,
    estimators: Sequence[Estimator | str],
    *,
    design: Design | None = None,
    sample: Microdata | None = None,
    seed: int = 0,
) -> Evaluation:
    """Draw (or take) a sample of ``population``, compute the truth and run ``estimators``.

    Parameters
    ----------
    population : Microdata
        The whole population (one row per person).
    estimators : sequence of Estimator or method names
        What to compare.
    design : Bernoulli, SimpleRandomSample or HouseholdBernoulli
        How to draw the sample. Exclusive with ``sample``.
    sample : Microdata
        A given sample whose records come from ``population`` (coded with
        ``levels=population.levels``).
    seed : int
        Seed of the sampling design.

    Returns
    -------
    Evaluation
        ``to_dict()`` gives ``truth`` and ``estimates`` keyed by method, with seconds,
        relative errors and the ROC AUC of P(F=1|f) for detecting population uniques among
        the sample uniques (where the method gives record-level risk).
    """
    if (design is None) == (sample is None):
        raise ParameterError("give exactly one of design= or sample=")
    if sample is None:
        rows = draw_sample(population, design, seed=seed)
        sample = population.subset(rows, population_size=population.n)
        what = design.describe()
    else:
        sample = sample.with_population_size(population.n)
        what = "given sample"
    table = tabulate(sample, population=population)
    truth = truth_of(table)
    su = table.counts == 1
    is_pu = table.population.counts[su] == 1
    methods: dict[str, MethodEvaluation] = {}
    for est in estimators:
        est = get_estimator(est) if isinstance(est, str) else est
        label = est.name
        if label in methods:
            label = f"{est.name}[{len(methods)}]"
        methods[label] = _run_one(est, table, truth, su, is_pu)
    return Evaluation(truth=truth, methods=methods, design=what,
                      seed=seed if design is not None else None, keys=table.keys,
                      cell_space=table.cell_space)


def _run_one(est: Estimator, table: CellTable, truth: dict, su: np.ndarray,
             is_pu: np.ndarray) -> MethodEvaluation:
    start = time.perf_counter()
    result = est.fit(table)
    seconds = time.perf_counter() - start
    estimates: dict[str, Any] = {}
    errors: dict[str, Any] = {}
    for name in _COMPARED:
        m = result.measures.get(name)
        value = None if m is None else m.estimate
        estimates[name] = value
        t = truth.get(name)
        errors[name] = (None if value is None or t is None or t == 0
                        else (value - t) / t)
    auc = None
    if "population_unique" in result.cell_risk_values:
        auc = roc_auc(result.cell_risk("population_unique")[su], is_pu)
    return MethodEvaluation(est.name, estimates, errors, seconds, auc, result)
