"""FrequencyTable: the sample's frequencies of frequencies, for exchangeable models (issue 20).

Under an exchangeable model without survey weights (Benedetti-Franconi with equal weights,
Poisson-gamma, Pitman-Yor, Skinner-Elliot) the predictive law of a cell's unseen count depends
on the cell only through its sample count f, so every measure (tau1, tau2, theta, expected
re-identifications, the record-risk threshold, k-anonymity and sample-unique counts) is a
function of how many observed cells have each count, plus n, N and the key space. A
:class:`FrequencyTable` holds exactly that: a few hundred numbers where a
:class:`~sdcrisk.data.table.CellTable` holds one row per observed cell and one entry per
record. :func:`sdcrisk.data.outofcore.tabulate_frequencies` streams a file straight into one.

What it cannot give is anything that needs to know *which* cell is which: per-cell or per-record
risks, the cells' key values, household risk, an input fingerprint of the cells.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..exceptions import InputError
from .table import CellTable

__all__ = ["FrequencyTable", "count_frequencies"]


def count_frequencies(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct cell counts (ascending), how many cells have each, and each cell's index
    among the distinct counts.

    By bincount over the counts (no sort) when the largest count is not much larger than
    the number of cells; by sorting otherwise.
    """
    counts = np.asarray(counts)
    if counts.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.intp)
    top = int(counts.max())
    if top <= max(4 * counts.size, 1 << 20):
        tally = np.bincount(counts, minlength=top + 1)
        sizes = np.flatnonzero(tally)
        rank = np.cumsum(tally > 0) - 1
        return sizes.astype(np.int64), tally[sizes].astype(np.int64), rank[counts]
    sizes, inverse, cells = np.unique(counts, return_inverse=True, return_counts=True)
    return sizes.astype(np.int64), cells.astype(np.int64), inverse.ravel()


@dataclass(frozen=True, eq=False, repr=False)
class FrequencyTable:
    """Frequencies of frequencies: how many observed cells have each sample count f.

    What an exchangeable model without weights needs (see the module notes); from
    :func:`sdcrisk.data.outofcore.tabulate_frequencies` (a file streamed without holding its
    cells) or :meth:`from_cells`. Estimators whose ``supports_frequencies()`` is true fit it
    and give the same measures as on the :class:`~sdcrisk.data.table.CellTable`.

    Attributes
    ----------
    keys, levels : as in :class:`~sdcrisk.data.table.CellTable`
        The levels fix K; the cells' key values are not kept.
    sizes : ndarray of int64
        The distinct sample counts f >= 1 of the observed cells, ascending.
    cells : ndarray of int64
        How many observed cells have each of ``sizes`` (>= 1).
    population_size, population_size_source, source : as in CellTable.
    """

    keys: tuple[str, ...]
    levels: tuple[tuple, ...]
    sizes: np.ndarray
    cells: np.ndarray
    population_size: float
    population_size_source: str
    source: str = "data"

    def __post_init__(self) -> None:
        sizes = np.array(self.sizes, dtype=np.int64)
        cells = np.array(self.cells, dtype=np.int64)
        if sizes.ndim != 1 or sizes.shape != cells.shape:
            raise InputError("a frequency table needs one number of cells per sample count")
        if sizes.size and (sizes[0] < 1 or np.any(np.diff(sizes) <= 0) or np.any(cells < 1)):
            raise InputError("the sample counts of a frequency table must be distinct, "
                             "ascending and >= 1, each with >= 1 cell")
        sizes.setflags(write=False)
        cells.setflags(write=False)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "cells", cells)

    @classmethod
    def from_cells(cls, table: CellTable) -> FrequencyTable:
        """The frequencies of a CellTable's cell counts (its weights, households and
        wildcard counts are dropped: they are not functions of f)."""
        sizes, cells, _ = count_frequencies(table.counts)
        return cls(keys=table.keys, levels=table.levels, sizes=sizes, cells=cells,
                   population_size=table.population_size,
                   population_size_source=table.population_size_source, source=table.source)

    # what a CellTable has and a frequency table has not -----------------------------------
    @property
    def weight_sums(self) -> None:
        """None: no survey weights (their per-cell sums are not functions of f)."""
        return None

    @property
    def household(self) -> None:
        """None: no household ids."""
        return None

    @property
    def wildcard(self) -> None:
        """None: missing values are their own category, never wildcards."""
        return None

    @property
    def population(self) -> None:
        """None: no true population counts."""
        return None

    # sizes -------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of records, sum of f over the cells."""
        return int(np.dot(self.sizes, self.cells))

    @property
    def n_cells(self) -> int:
        """Number of observed (non-empty) cells."""
        return int(self.cells.sum())

    @property
    def cell_space(self) -> int:
        """K = product of the numbers of levels (exact Python int)."""
        return math.prod(len(lv) for lv in self.levels)

    @property
    def sample_uniques(self) -> int:
        """n1, the number of cells with f = 1."""
        return int(self.cells[self.sizes == 1].sum())

    @property
    def sampling_fraction(self) -> float:
        """n / N."""
        return self.n / self.population_size

    def k_anonymity_violations(self, ks: Sequence[int] = (2, 3, 5)) -> dict[int, int]:
        """Records in cells with f < k (sample k-anonymity), for each k."""
        records = self.sizes * self.cells
        return {int(k): int(records[self.sizes < k].sum()) for k in ks}

    def __repr__(self) -> str:
        return (f"FrequencyTable(n={self.n}, cells={self.n_cells}, K={self.cell_space}, "
                f"sample_uniques={self.sample_uniques}, N={self.population_size:g}, "
                f"distinct counts={len(self.sizes)})")

    def _repr_html_(self) -> str:
        import html

        rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{len(lv)}</td></tr>"
                       for k, lv in zip(self.keys, self.levels, strict=True))
        return (f'<div class="sdcrisk-data"><p><code>{html.escape(repr(self))}</code></p>'
                f"<table><tr><th>key</th><th>levels</th></tr>{rows}</table></div>")
