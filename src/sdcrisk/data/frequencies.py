"""FrequencyTable: the sample's frequencies of frequencies, for exchangeable models (issue 20).

Under an exchangeable model without survey weights (Benedetti-Franconi with equal weights,
Poisson-gamma, Pitman-Yor, Skinner-Elliot) the predictive law of a cell's unseen count depends
on the cell only through its sample count f, so every measure (tau1, tau2, theta, expected
re-identifications, the record-risk threshold, k-anonymity and sample-unique counts) is a
function of how many observed cells have each count, plus n, N and the key space. A
:class:`FrequencyTable` holds exactly that: a few hundred numbers where a
:class:`~sdcrisk.data.table.CellTable` holds one row per observed cell and one entry per
record. :func:`sdcrisk.data.frequencies.tabulate_frequencies` streams a file straight into one.

What it cannot give is anything that needs to know *which* cell is which: per-cell or per-record
risks, the cells' key values, household risk, an input fingerprint of the cells.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from ..exceptions import InputError
from . import _cells, outofcore
from .column_values import arrow_column
from .columns import check_present
from .duckdb_engine import duckdb_session, import_duckdb
from .io import detect_format, parquet_parts
from .outofcore import check_stream_options
from .sizes import check_population_size, memory_limit, resolve_population_size
from .table import DEFAULT_MAX_LEVELS, CellTable, check_keys

__all__ = ["FrequencyTable", "count_frequencies", "tabulate_frequencies"]


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
    :func:`sdcrisk.data.frequencies.tabulate_frequencies` (a file streamed without holding its
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
        if not (np.array_equal(sizes, np.asarray(self.sizes))
                and np.array_equal(cells, np.asarray(self.cells))):  # 1.5 was cut to 1
            raise InputError("the sample counts of a frequency table and their numbers of "
                             "cells must be whole numbers")
        sizes.setflags(write=False)
        cells.setflags(write=False)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "cells", cells)
        # built by hand: N < n was taken for a census, cells beyond K counted
        if self.n_cells > self.cell_space:
            raise InputError(f"the frequency table has {self.n_cells:,} observed cells but its "
                             f"keys' levels make only K={self.cell_space:,}; give every "
                             "level of each key in levels")
        check_population_size(self.population_size, self.n)

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
    def key_cells(self) -> int:
        """Observed cells of the key space: ``n_cells`` (no wildcards here)."""
        return self.n_cells

    @property
    def missing_patterns(self) -> int:
        """Patterns with a missing value counted apart: none (no wildcards here)."""
        return 0

    @property
    def n_categories(self) -> tuple[int, ...]:
        """Levels of each key (missing values are a category of their own here)."""
        return tuple(len(lv) for lv in self.levels)

    @property
    def cell_space(self) -> int:
        """K = product of the numbers of levels (exact Python int)."""
        return math.prod(self.n_categories)

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


#: DuckDB's working memory for the frequency pass, at most (spilling costs little here:
#: 10^8 records x 10 keys, 62.7 M cells: 18.1 CPU s and 2.9 GiB with 4 GiB for DuckDB,
#: 19.2 CPU s and 1.1 GiB with 1 GiB)
DUCKDB_MAX = 1 << 30


def _duckdb_budget() -> int:
    return max(min(memory_limit() // 2, DUCKDB_MAX), 1 << 27)


def tabulate_frequencies(
    path: str | os.PathLike,
    keys: Sequence[str] | str,
    *,
    population_size: float | None = None,
    sampling_fraction: float | None = None,
    levels: Mapping[str, Sequence] | None = None,
    missing: Literal["category", "error"] = "category",
    max_levels: int | None = DEFAULT_MAX_LEVELS,
    batch_rows: int = 1 << 20,
    engine: Literal["auto", "duckdb", "pyarrow"] = "auto",
) -> FrequencyTable:
    """The frequencies of the cell counts of a CSV/Parquet file, streamed, with no cells held.

    For an exchangeable method without weights (``supports_frequencies()``: nb, poisson-gamma,
    pitman-yor, skinner-elliot) this is all the fit needs; its measures equal those of the
    same method on :func:`~sdcrisk.data.outofcore.tabulate_file`'s CellTable.

    Parameters
    ----------
    path : path
        ``.parquet``/``.pq`` file or folder of Parquet parts; ``.csv``/``.tsv``.
    keys, population_size, sampling_fraction, levels, missing, max_levels
        As for :meth:`sdcrisk.Microdata.from_source` (no weights, no households).
    batch_rows : int
        Records per batch of the Arrow pass.
    engine : {"auto", "duckdb", "pyarrow"}
        ``duckdb``: each key's distinct values (its levels), then one query that groups the
        records by their key values and those groups by their size, spilling to disk past
        half of :func:`~sdcrisk.data.sizes.memory_limit` or ``DUCKDB_MAX`` (1 GiB),
        whichever is smaller; memory stays within that limit whatever the number of cells.
        ``pyarrow``: the Arrow pass 1 of ``tabulate_file`` (its key combinations are held
        and coded, but not the record map). ``auto``
        (default): DuckDB for Parquet when it is installed, else Arrow. DuckDB also hands
        over to Arrow where the data need a message with a row number (missing keys under
        ``missing="error"``) or two raw values share one level.

    Returns
    -------
    FrequencyTable

    Raises
    ------
    InputError, ParameterError
        As :func:`~sdcrisk.data.outofcore.tabulate_file`.

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "s.csv"
    >>> pd.DataFrame({"a": [1, 2, 2, 3], "b": ["x", "y", "y", "x"]}).to_csv(d, index=False)
    >>> t = tabulate_frequencies(d, ["a", "b"], population_size=100)
    >>> t.sizes.tolist(), t.cells.tolist(), t.n, t.cell_space
    ([1, 2], [2, 1], 4, 6)
    """
    keys = check_keys(keys)
    path = check_stream_options(path, keys, levels, missing, engine, batch_rows,
                                "tabulate_frequencies")
    parquet = path.is_dir() or detect_format(path)[0] == "parquet"
    got = None
    if engine != "pyarrow" and parquet:
        got = _duckdb_frequencies(path, keys, levels, missing, max_levels,
                                  required=engine == "duckdb")
    if got is None:
        counted = outofcore.count_part(path, keys, missing=missing, batch_rows=batch_rows)
        if counted.n == 0:
            raise InputError(f"{path.name}: no records (the sample is empty)")
        plan = outofcore.plan_cells([counted], keys, weighted=False, levels=levels,
                                    missing=missing, max_levels=max_levels)
        sizes, cells, _ = count_frequencies(plan.counts)
        got = plan.levels, sizes, cells
    lv, sizes, cells = got
    n = int(np.dot(sizes, cells))
    if n == 0:
        raise InputError(f"{path.name}: no records (the sample is empty)")
    big_n, how = resolve_population_size(n, None, population_size, sampling_fraction)
    return FrequencyTable(keys=keys, levels=tuple(lv), sizes=sizes, cells=cells,
                          population_size=big_n, population_size_source=how, source=path.name)


def _duckdb_frequencies(path: Path, keys, levels, missing, max_levels, *, required: bool):
    """(levels, sizes, cells) by DuckDB; None to hand over to the Arrow pass (see
    :func:`tabulate_frequencies`)."""
    duckdb = import_duckdb(required)
    if duckdb is None:
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = [str(f) for f in parquet_parts(path)]
    try:
        schema = pq.read_schema(files[0])
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path.name}: could not be read as Parquet ({exc})") from exc
    check_present(keys, schema.names, path.name)
    try:
        with duckdb_session(duckdb, _duckdb_budget()) as con:
            return _spectrum(con, files, schema, keys, levels, missing, max_levels)
    except duckdb.Error as exc:
        if required:
            raise InputError(f"{path.name}: DuckDB could not read it ({exc})") from exc
        return None


def _spectrum(con, files, schema, keys, levels, missing, max_levels):
    """The levels and the counts of counts on a DuckDB connection (None: hand over)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    source = f"read_parquet({files!r})"
    groups, lv = [], []
    for k in keys:
        typ = schema.field(k).type
        typ = typ.value_type if pa.types.is_dictionary(typ) else typ
        col = '"' + k.replace('"', '""') + '"'
        raw = _arrow(con, f"SELECT DISTINCT {col} FROM {source}").column(0)
        try:  # typed as pyarrow reads the column, so that it codes as tabulate_file codes it
            raw = raw.combine_chunks().cast(typ)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        if pa.types.is_floating(typ):  # NaN is missing, like null (as arrow_column has it)
            raw = pc.if_else(pc.is_nan(raw), pa.scalar(None, typ), raw)
        if missing == "error" and raw.null_count:
            return None  # the Arrow pass names the first row with a missing value
        column = arrow_column(k, raw)
        codes, levs = _cells.encode_column(
            k, column.values, column.missing,
            levels=None if not levels or k not in levels else levels[k],
            missing_policy=missing, max_levels=max_levels)
        if len(np.unique(codes)) != len(codes):
            # two raw values share a level (NaN and null, text decoded alike): DuckDB
            # groups them apart, the Arrow pass merges their cells
            return None
        groups.append(col)
        lv.append(levs)
    spectrum = _arrow(con, f"SELECT c, count(*) FROM (SELECT count(*) AS c FROM {source} "
                           f"GROUP BY {', '.join(groups)}) GROUP BY c ORDER BY c")
    sizes = spectrum.column(0).to_numpy().astype(np.int64)
    cells = spectrum.column(1).to_numpy().astype(np.int64)
    return tuple(lv), sizes, cells


def _arrow(con, query: str):
    """A DuckDB query's result as an Arrow table (duckdb 2.x: to_arrow_table; 1.x: arrow)."""
    rel = con.sql(query)
    fetch = getattr(rel, "to_arrow_table", None) or rel.arrow
    return fetch()
