"""Sampling designs and the true measures of a sample drawn from a population.

Designs (all seeded with ``numpy.random.default_rng(seed)``):

* :class:`Bernoulli` - each record independently with probability ``fraction``:
  ``u = rng.random(N); sampled = u < fraction``. With seed 0 this is exactly the design of
  the ``ground_truth.csv`` files in the shared data (nested samples in file row order).
* :class:`SimpleRandomSample` - ``n`` records without replacement.
* :class:`HouseholdBernoulli` - whole households, each with probability ``fraction``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.measures import truth_measures
from ..data.sizes import check_number
from ..data.table import CellTable, Microdata
from ..estimators._base import check_seed
from ..exceptions import InputError, ParameterError

__all__ = ["Bernoulli", "SimpleRandomSample", "HouseholdBernoulli", "Design", "draw_sample",
           "truth_of"]


@dataclass(frozen=True)
class _FractionDesign:
    fraction: float

    def __post_init__(self):
        if not 0 < check_number("fraction", self.fraction) <= 1:
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
        if (isinstance(self.n, bool) or not isinstance(self.n, int | np.integer)
                or self.n < 1):
            raise ParameterError(f"n={self.n!r} must be an integer >= 1 (the number of "
                                 "records to draw)")

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
    if not isinstance(population, Microdata):
        raise ParameterError(f"draw_sample() takes a Microdata population, not "
                             f"{type(population).__name__}")
    check_seed(seed, "seed")
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
