"""Population counts of a sample's cells: the truth that evaluation, the report's truth
section and validation's pseudo-populations score against (spec A.1)."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..exceptions import InputError
from . import _cells

#: a :class:`~sdcrisk.data.table.Microdata` (not imported: table.py imports this module)
Microdata = Any

__all__ = ["PopulationCounts", "population_counts"]


@dataclass(frozen=True, eq=False, repr=False)
class PopulationCounts:
    """Population counts F for a sample's cells, and the population's own uniqueness.

    Attributes
    ----------
    counts : ndarray
        F_k for each observed sample cell (aligned with ``CellTable.counts``).
    size : int
        N, the number of population records.
    n_cells : int
        Number of non-empty population cells.
    n_unique : int
        Number of population cells with F = 1 (population uniques).
    """

    counts: np.ndarray
    size: int
    n_cells: int
    n_unique: int
    k_anonymity_violations: Mapping[int, int] = field(default_factory=dict)


def population_counts(sample: Microdata, population: Microdata,
                       sample_cell_codes: np.ndarray,
                       sample_counts: np.ndarray | None = None) -> PopulationCounts:
    """F for each of the sample's observed cells (given by their codes), with the
    population's size, cells, uniques and k-anonymity violations.

    Raises
    ------
    InputError
        Keys or levels that differ between sample and population, or a sample cell that
        the population does not have, or has fewer records in than ``sample_counts`` (the
        sample does not come from it).
    """
    if sample.keys != population.keys:
        raise InputError(
            f"sample keys {list(sample.keys)} differ from population keys {list(population.keys)}"
        )
    if sample.levels != population.levels:
        bad = next(k for k, a, b in zip(sample.keys, sample.levels, population.levels,
                                        strict=True) if a != b)
        raise InputError(
            f"levels of {bad!r} differ between sample and population; build the sample with "
            "levels=population.levels"
        )
    if _cells.is_mixed_radix(population.n_levels):
        # plain mixed-radix ids: the population's cells are counted once per population
        # (validation draws many sub-samples of one pseudo-population; issue 20)
        pcells, pcounts = _population_cells(population)
        samp_ids, _ = _cells.cell_ids([sample_cell_codes[:, j] for j in
                                       range(sample_cell_codes.shape[1])],
                                      population.n_levels)
    else:
        # one joint id space for population records and sample cells: ids stay comparable
        # when cell_ids has to compress them (key spaces of 2^62 cells or more)
        joint = [np.concatenate([p, sample_cell_codes[:, j].astype(p.dtype)])
                 for j, p in enumerate(population.codes)]
        ids, _ = _cells.cell_ids(joint, population.n_levels)
        pop_ids, samp_ids = ids[: population.n], ids[population.n:]
        pcells, pcounts = np.unique(pop_ids, return_counts=True)
    pos = np.searchsorted(pcells, samp_ids)
    pos = np.clip(pos, 0, len(pcells) - 1)
    found = pcells[pos] == samp_ids
    if not found.all():
        raise InputError(
            f"{int((~found).sum())} sample cell(s) do not occur in the population; the sample "
            "does not come from this population"
        )
    big_f = pcounts[pos].astype(np.int64)
    if sample_counts is not None and (big_f < sample_counts).any():
        # was "cell 0: big_f=1 < f=50" from the measures, after the fits
        over = np.flatnonzero(big_f < sample_counts)
        raise InputError(
            f"{len(over)} sample cell(s) hold more records than the population has in them "
            f"(e.g. {int(sample_counts[over[0]])} against {int(big_f[over[0]])}); the sample "
            "does not come from this population")
    kav = {k: int(pcounts[pcounts < k].sum()) for k in (2, 3, 5)}
    return PopulationCounts(
        counts=big_f,
        size=population.n,
        n_cells=len(pcells),
        n_unique=int(np.count_nonzero(pcounts == 1)),
        k_anonymity_violations=kav,
    )


#: the observed cells and counts of populations already counted (by identity; dropped with
#: the population)
_POPULATION_CELLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _population_cells(population: Microdata) -> tuple[np.ndarray, np.ndarray]:
    """Sorted mixed-radix ids of a population's observed cells and their counts (cached)."""
    hit = _POPULATION_CELLS.get(population)
    if hit is None:
        ids, bound = _cells.cell_ids(population.codes, population.n_levels, narrow=True)
        hit = _cells.cell_counts(ids, bound)
        del ids
        _POPULATION_CELLS[population] = hit
    return hit
