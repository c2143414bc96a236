"""Microdata (the one validated input type) and CellTable (its tabulation over key cells).

Everything enters through :meth:`Microdata.from_source`, which resolves key variables by
name, fixes the category levels (declared levels may have zero count), checks weights,
household ids and the population size, and fails with a one-line message naming the
offending column or value. Estimators trust what it produces.
"""

from __future__ import annotations

import hashlib
import math
import weakref
from collections.abc import Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from ..exceptions import InputError, ParameterError
from . import _cells, wildcard
from ._fold import Fold
from .io import iter_columns, source_name
from .population import PopulationCounts, population_counts
from .sizes import (
    boolean_weights,
    check_memory,
    check_population_size,
    check_weight_values,
    missing_weight,
    resolve_population_size,
    short_repr,
)
from .text import decimal_comma_weights

__all__ = ["Microdata", "CellTable", "PopulationCounts", "tabulate", "tabulate_source",
           "check_keys", "check_level_keys"]

MissingPolicy = Literal["category", "error", "wildcard"]
PopulationSizeSource = Literal["given", "sampling_fraction", "weights", "assumed_population"]

DEFAULT_MAX_LEVELS = 1000


@dataclass(frozen=True, eq=False, repr=False)
class Microdata:
    """Validated categorical microdata: key codes, levels, weights, households, N.

    Build it with :meth:`from_source`. Codes are 0-based integers into ``levels[j]``.

    Attributes
    ----------
    keys : tuple of str
        Key variable names, in the order given.
    codes : tuple of ndarray
        One integer code array per key (length n).
    levels : tuple of tuple
        Category labels per key, in code order; ``None`` is the "missing" level.
    weights : ndarray or None
        Survey weights (positive, finite), if given.
    household : ndarray or None
        Household codes (0..H-1) per record, if a household column was given.
    population_size : float
        N. From ``population_size``, from ``n / sampling_fraction``, from the sum of the
        weights, or (when none is given) N = n: the file is taken to be the population.
    population_size_source : str
        Which of the above gave N.
    missing : {"category", "error", "wildcard"}
        How missing key values count; with ``"wildcard"`` :func:`tabulate` adds sdcMicro's
        wildcard fk/Fk (:mod:`sdcrisk.data.wildcard`).
    wildcard_alpha : float
        sdcMicro's ``alpha``: the weight of a matching record with missing values.
    """

    keys: tuple[str, ...]
    codes: tuple[np.ndarray, ...]
    levels: tuple[tuple, ...]
    weights: np.ndarray | None
    household: np.ndarray | None
    population_size: float
    population_size_source: PopulationSizeSource
    source: str = "data"
    weights_column: str | None = None
    household_column: str | None = None
    missing: MissingPolicy = "category"
    wildcard_alpha: float = 1.0

    def __post_init__(self) -> None:
        """What :meth:`from_source` guarantees, checked on a Microdata built by hand (codes
        outside the levels ended in an IndexError, arrays of unequal length were cut short,
        N < n was taken for a census, N = inf ended in a ZeroDivisionError)."""
        fix = "; or build it with Microdata.from_source(data, keys=[...], population_size=N)"
        if not len(self.keys) == len(self.codes) == len(self.levels):
            raise ParameterError(f"Microdata has {len(self.keys)} keys, {len(self.codes)} code "
                                 f"arrays and {len(self.levels)} level lists: give one code "
                                 f"array and one tuple of levels per key{fix}")
        if len(set(self.keys)) != len(self.keys):  # cells keyed by name would collide
            twice = sorted({k for k in self.keys if self.keys.count(k) > 1})
            raise ParameterError(f"Microdata: key {twice[0]!r} is given twice; name each "
                                 f"key once{fix}")
        n = self.n
        for key, c, lv in zip(self.keys, self.codes, self.levels, strict=True):
            if not isinstance(c, np.ndarray) or c.ndim != 1 or len(c) != n or (
                    c.size and c.dtype.kind not in "iu"):
                raise ParameterError(f"Microdata: the codes of key {key!r} must be a 1-D "
                                     f"integer array of the n={n} records{fix}")
            if c.size and (c.min() < 0 or c.max() >= len(lv)):
                bad = int(c.min()) if c.min() < 0 else int(c.max())
                raise ParameterError(f"Microdata: key {key!r} has the code {bad}, outside its "
                                     f"{len(lv)} levels (codes are 0-based positions in "
                                     f"levels){fix}")
        for name, values in (("weights", self.weights), ("household", self.household)):
            if values is not None and (np.ndim(values) != 1 or len(values) != n):
                raise ParameterError(f"Microdata: {name} must be None or one value per "
                                     f"record (n={n}){fix}")
        if self.weights is not None:
            check_weight_values(self.weights_column or "weights",
                                np.asarray(self.weights, dtype=float))
        check_population_size(self.population_size, n)

    @property
    def n(self) -> int:
        """Number of records."""
        return len(self.codes[0]) if self.codes else 0

    @property
    def n_levels(self) -> tuple[int, ...]:
        """Number of levels of each key."""
        return tuple(len(lv) for lv in self.levels)

    @property
    def n_categories(self) -> tuple[int, ...]:
        """Categories of each key: its levels, less the missing level under
        ``missing="wildcard"`` (see :func:`~sdcrisk.data.wildcard.key_categories`)."""
        return wildcard.key_categories(self.levels, self.missing == "wildcard")

    @property
    def cell_space(self) -> int:
        """K: the number of cells of the full cross-classification (an exact Python int);
        under ``missing="wildcard"`` a missing value is not a category of its own."""
        return math.prod(self.n_categories)

    @property
    def sampling_fraction(self) -> float:
        """n / N."""
        return self.n / self.population_size

    def __repr__(self) -> str:
        return (
            f"Microdata(n={self.n}, keys={list(self.keys)}, K={self.cell_space}, "
            f"N={self.population_size:g} [{self.population_size_source}])"
        )

    def _repr_html_(self) -> str:
        """Notebook view: the repr and the number of levels of each key, escaped."""
        import html

        rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{m}</td></tr>"
                       for k, m in zip(self.keys, self.n_categories, strict=True))
        return (f'<div class="sdcrisk-data"><p><code>{html.escape(repr(self))}</code></p>'
                f"<table><tr><th>key</th><th>levels</th></tr>{rows}</table></div>")

    @classmethod
    def from_source(
        cls,
        source: Any,
        keys: Sequence[str] | str,
        *,
        weights: str | None = None,
        household: str | None = None,
        population_size: float | None = None,
        sampling_fraction: float | None = None,
        levels: Mapping[str, Sequence] | None = None,
        missing: MissingPolicy = "category",
        max_levels: int | None = DEFAULT_MAX_LEVELS,
        wildcard_alpha: float = 1.0,
    ) -> Microdata:
        """Read and validate microdata.

        Parameters
        ----------
        source : path, ``example:NAME``, DataFrame (pandas/polars), pyarrow Table or dict
            The records, one row per person.
        keys : sequence of str or comma-separated str
            Key variables (what an intruder can match on), by column name.
        weights : str, optional
            Column of survey weights (positive, finite numbers).
        household : str, optional
            Column of household identifiers.
        population_size : float, optional
            N. Must be at least n.
        sampling_fraction : float, optional
            n / N, in (0, 1]. Exclusive with ``population_size``.
        levels : mapping, optional
            Declared category levels per key (may include levels with zero count). Values
            outside the declared levels are an error.
        missing : {"category", "error", "wildcard"}
            Missing key values become their own level (default), an error, or wildcards
            that match every category of their key (sdcMicro ``freqCalc``; the level is
            still coded ``None`` and :func:`tabulate` adds the wildcard counts, see
            :mod:`sdcrisk.data.wildcard`). Nothing is ever dropped silently.
        max_levels : int or None
            Refuse a key with more distinct values than this (default 1000).
        wildcard_alpha : float
            With ``missing="wildcard"``: how much a matching record with missing values
            counts, in [0, 1] (sdcMicro's ``alpha``, default 1).

        Raises
        ------
        InputError
            Missing column, empty data, non-categorical key, bad weights, N < n, too many
            levels.
        ParameterError
            Inconsistent options.

        Examples
        --------
        >>> from sdcrisk import Microdata
        >>> md = Microdata.from_source("example:uk_census2011",
        ...     keys=["region", "sex", "age_band"], population_size=56_075_912)
        >>> md.n
        10000
        """
        keys = _check_options(keys, weights, household, levels, missing, max_levels)
        wildcard_alpha = wildcard.check_alpha(wildcard_alpha)
        if wildcard_alpha != 1.0 and missing != "wildcard":
            raise ParameterError(f"wildcard_alpha={wildcard_alpha:g} applies to "
                                 "missing='wildcard' only (--missing wildcard)")
        n, codes, lv, w, hh = _read_coded(source, keys, weights, household, levels, missing,
                                          max_levels, None)
        big_n, how = resolve_population_size(n, w, population_size, sampling_fraction)
        return cls(
            keys=keys,
            codes=tuple(codes),
            levels=tuple(lv),
            weights=w,
            household=hh,
            population_size=big_n,
            population_size_source=how,
            source=source_name(source),
            weights_column=weights,
            household_column=household,
            missing=missing,
            wildcard_alpha=wildcard_alpha,
        )

    def subset(self, rows: np.ndarray, *, population_size: float | None = None,
               sampling_fraction: float | None = None) -> Microdata:
        """Records ``rows`` (indices or boolean mask) with the same levels.

        Used to draw samples from a population: weights and household ids follow the records;
        N is re-resolved from the arguments (default: the file is its own population).
        """
        rows = _cells.check_index(rows, self.n, name="rows", item="record")
        if rows.size == 0:
            raise InputError("the sample is empty: no record was drawn; raise the sampling "
                             "fraction (--fraction on the command line) or draw a number of "
                             "records (--n)")
        w = None if self.weights is None else self.weights[rows]
        hh = None if self.household is None else self.household[rows]
        big_n, how = resolve_population_size(len(rows), w, population_size, sampling_fraction)
        return Microdata(
            keys=self.keys,
            codes=tuple(c[rows] for c in self.codes),
            levels=self.levels,
            weights=w,
            household=hh,
            population_size=big_n,
            population_size_source=how,
            source=self.source,
            weights_column=self.weights_column,
            household_column=self.household_column,
            missing=self.missing,
            wildcard_alpha=self.wildcard_alpha,
        )

    def with_population_size(self, population_size: float) -> Microdata:
        """The same records with a given N."""
        big_n, how = resolve_population_size(self.n, self.weights, population_size, None)
        return Microdata(**{**self.__dict__, "population_size": big_n,
                            "population_size_source": how})




def check_keys(keys, weights=None, household=None) -> tuple[str, ...]:
    """The key variables as a tuple of names (a comma-separated string is split), after
    checking them and the weights and household column names.

    Raises
    ------
    ParameterError
        Not names, none, repeated, or a key that is also the weights or household column.
    """
    if isinstance(keys, str):
        keys = [k.strip() for k in keys.split(",") if k.strip()]
    if isinstance(keys, bytes | Mapping) or not isinstance(keys, Iterable):
        raise ParameterError(f"keys={keys!r}: give the key variables as a list of column "
                             "names or a comma-separated string")
    keys = tuple(keys)
    # not next(..., None): a None among the keys is itself the bad key
    bad = [k for k in keys if not isinstance(k, str) or not k.strip()]
    if bad:
        bad_key = bad[0]
        raise ParameterError(f"keys: {bad_key!r} is not a column name; give names as "
                             "strings")
    if not keys:
        raise ParameterError("give at least one key variable")
    if len(set(keys)) != len(keys):
        twice = next(k for i, k in enumerate(keys) if k in keys[:i])
        raise ParameterError(f"key variables repeat: {list(keys)} names {twice!r} twice; "
                             "give each key once")
    for opt_name, opt in (("weights", weights), ("household", household)):
        if opt is not None and not isinstance(opt, str):
            # an array of weights or household ids printed whole ran to thousands of lines
            text = " ".join(repr(opt).split())
            text = text if len(text) <= 60 else text[:57] + "..."
            raise ParameterError(
                f"{opt_name}={text} must be a column name "
                f"(a string); put the values in a column of the data and name it, e.g. "
                f"frame.assign(w=values) with {opt_name}='w'")
    for opt_name, opt in (("weights", weights), ("household", household)):
        if opt is not None and opt in keys:
            raise ParameterError(f"column {opt!r} cannot be both a key and {opt_name}")
    if household is not None and household == weights:
        raise ParameterError(f"column {household!r} cannot be both weights and household")
    return keys


def check_level_keys(levels: Mapping, keys: Sequence[str]) -> None:
    """``levels`` names keys only (ParameterError naming the first that is not one)."""
    unknown = [k for k in levels if k not in keys]
    if unknown:
        raise ParameterError(f"levels given for {unknown[0]!r}, which is not a key: give "
                             f"levels for the keys {', '.join(keys)} only (--levels on the "
                             "command line)")


def _check_options(keys, weights, household, levels, missing, max_levels) -> tuple[str, ...]:
    """The keys as a tuple, after checking the options of :meth:`Microdata.from_source`."""
    keys = check_keys(keys, weights, household)
    if missing not in ("category", "error", "wildcard"):
        raise ParameterError(f"missing={missing!r}; use 'category', 'error' or 'wildcard'")
    if max_levels is not None and (isinstance(max_levels, bool)
                                   or not isinstance(max_levels, int | np.integer)
                                   or max_levels < 1):
        raise ParameterError(f"max_levels={max_levels!r} must be an integer >= 1 (or None)")
    if levels is not None and not isinstance(levels, Mapping):
        raise ParameterError(f"levels={short_repr(levels)} must map key names to lists of "
                             'categories, e.g. {"sex": ["F", "M"]}')
    if levels:
        check_level_keys(levels, keys)
        for k, lv in levels.items():
            if isinstance(lv, str | bytes | Mapping) or not isinstance(lv, Iterable):
                raise ParameterError(
                    f"levels of {k!r} is {short_repr(lv)}, not a list; give every category "
                    f'of {k!r} as a list, e.g. {{"{k}": [1, 2, 3]}}')
            if isinstance(lv, Sized) and len(lv) == 0:
                raise ParameterError(f"levels of {k!r} is an empty list; give its "
                                     "categories or leave the key out of levels")
    return keys


def _read_coded(source, keys, weights, household, levels, missing, max_levels, fold):
    """Read and code the columns of :meth:`Microdata.from_source`, one at a time.

    Each column is coded and its raw values released before the next is read (issue 20).
    With a :class:`~sdcrisk.data._fold.Fold`, key codes go into its cell ids instead of the
    returned list.
    """
    wanted = list(keys) + [c for c in (weights, household) if c is not None]
    n, columns = iter_columns(source, wanted, ids=[household] if household else [])
    if n == 0:
        raise InputError(f"{source_name(source)}: no records (the sample is empty)")
    if fold is not None:
        fold.n = n
    codes, lv = [], []
    w = hh = None
    for col in columns:
        name = col.name
        if name == weights:
            w = _validate_weights(weights, col)
            continue
        if name == household:  # labels (sdcrisk.data.ids), missing ids refused there
            hh, _ = _cells.encode_column(household, col.values, None, levels=None,
                                         missing_policy="error", max_levels=None)
            hh = hh.astype(np.int64)
            continue
        c, levs = _cells.encode_column(
            name,
            col.values,
            col.missing,
            levels=None if not levels or name not in levels else levels[name],
            missing_policy="category" if missing == "wildcard" else missing,
            max_levels=max_levels,
        )
        del col
        lv.append(levs)
        if fold is None:
            codes.append(c)
        else:
            fold.add(c, len(levs))
            if fold.overflow:
                return n, None, lv, w, hh
        del c
    return n, codes, lv, w, hh


_SOURCE_OPTIONS = {"weights", "household", "population_size", "sampling_fraction", "levels",
                   "missing", "max_levels", "wildcard_alpha"}


def tabulate_source(source: Any, keys: Sequence[str] | str, **options) -> CellTable:
    """``tabulate(Microdata.from_source(source, keys, **options))`` in less memory.

    The key codes are folded into cell ids as each column is read, so memory holds one
    n-long id array (int32 while K < 2^31, which becomes the record -> cell map) and one
    raw column, not a code array per key: at 3e7 records and 8 keys the peak fell from
    1.0 to 0.77 GB (before the nb fit). Same options, same table (levels, cell order,
    counts, record map, weights, households, N). Key spaces of 2^62 cells or more fall back
    to :meth:`Microdata.from_source` and :func:`tabulate`.
    """
    unknown = set(options) - _SOURCE_OPTIONS
    if unknown:
        raise ParameterError(f"tabulate_source() got an unknown option {sorted(unknown)[0]!r}")
    names = _check_options(keys, options.get("weights"), options.get("household"),
                           options.get("levels"), options.get("missing", "category"),
                           options.get("max_levels", DEFAULT_MAX_LEVELS))
    if options.get("missing") == "wildcard":  # the wildcard counts need the key codes
        return tabulate(Microdata.from_source(source, names, **options))
    fold = Fold()
    n, _, lv, w, hh = _read_coded(
        source, names, options.get("weights"), options.get("household"),
        options.get("levels"), options.get("missing", "category"),
        options.get("max_levels", DEFAULT_MAX_LEVELS), fold)
    if fold.overflow:
        return tabulate(Microdata.from_source(source, names, **options))
    big_n, how = resolve_population_size(n, w, options.get("population_size"),
                                         options.get("sampling_fraction"))
    return _table_from_ids(fold.ids, fold.bound, names, tuple(lv), w, hh, big_n, how,
                           source_name(source), decode=None if fold.prefix is None
                           else fold.codes)


def _validate_weights(name: str, col) -> np.ndarray:
    if col.missing is not None:
        row = int(np.flatnonzero(col.missing)[0])
        raise missing_weight(name, row + 1)
    values = col.values
    if col.boolean or values.dtype.kind == "b":
        raise boolean_weights(name)
    if values.dtype.kind not in "iuf":
        try:
            values = values.astype(float)
        except ValueError:
            values = decimal_comma_weights(name, values)
    return check_weight_values(name, values.astype(float))


#: CellTable -> its fingerprint (tables are not changed once built)
_FINGERPRINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True, eq=False, repr=False)
class CellTable:
    """Sample cell counts f_k over observed cells, and the record -> cell map.

    Memory is proportional to the number of observed cells (plus the n-long record map),
    never to the size of the key space K.

    Attributes
    ----------
    keys, levels : as in :class:`Microdata`
    cell_codes : ndarray (n_cells, J)
        Level codes of each observed cell (sorted by cell).
    counts : ndarray (n_cells,)
        f_k, the sample count of each observed cell.
    weight_sums : ndarray or None
        Sum of the survey weights in each cell (a Horvitz-Thompson estimate of F_k).
    record_cell : ndarray (n,) or None
        Index of each record's cell in ``counts``; None in a table built without it
        (:meth:`without_record_map`: measures only, 4-8 bytes a record saved), whose
        record-level figures then refuse with a remedy (:meth:`record_map`).
    household : ndarray or None
        Household code of each record.
    population_size : float
        N, as resolved by :class:`Microdata`.
    population : PopulationCounts or None
        True F_k when a population was given to :func:`tabulate`.
    inclusion_sums : ndarray or None
        Sum of 1/weight in each cell (sdcMicro ``modRisk``'s ``inclProb``; for a sample unique
        the inclusion probability of its record).
    wildcard : WildcardCounts or None
        With ``missing="wildcard"``: fk and Fk where a missing key value matches every
        category (:mod:`sdcrisk.data.wildcard`). Estimators that cannot use them refuse a
        table whose cells have missing values.
    records : int or None
        n when ``record_cell`` is None (else ignored: n is the record map's length).
    """

    keys: tuple[str, ...]
    levels: tuple[tuple, ...]
    cell_codes: np.ndarray
    counts: np.ndarray
    weight_sums: np.ndarray | None
    record_cell: np.ndarray | None
    household: np.ndarray | None
    population_size: float
    population_size_source: str
    population: PopulationCounts | None = None
    source: str = "data"
    inclusion_sums: np.ndarray | None = None
    wildcard: wildcard.WildcardCounts | None = None
    records: int | None = None

    def __post_init__(self):
        if self.record_cell is None and (self.records is None or self.household is not None):
            raise ParameterError("a CellTable without its record map needs records=n and "
                                 "no household column")
        check_population_size(self.population_size, self.n)  # by hand, N < n read as a census

    @property
    def n(self) -> int:
        """Number of records."""
        if self.record_cell is None:
            return int(self.records)  # type: ignore[arg-type]  # checked in __post_init__
        return int(self.record_cell.shape[0])

    def record_map(self) -> np.ndarray:
        """``record_cell``, the index of each record's cell.

        Raises
        ------
        ParameterError
            When the table was built without it (:meth:`without_record_map`)."""
        if self.record_cell is None:
            raise ParameterError(
                "record-level figures need the record -> cell map, and this table was built "
                "without it (CellTable.without_record_map(), or `sdcrisk assess` with an "
                "output of measures only); tabulate the data again, e.g. with "
                "sdcrisk.tabulate_source(...), or ask assess for --format html")
        return self.record_cell

    def without_record_map(self) -> CellTable:
        """The same table without the n-long record -> cell map (its measures need only the
        cells; 120 MB at 3x10^7 records). Tables with households keep theirs (household
        risks are record-level)."""
        if self.record_cell is None or self.household is not None:
            return self
        return replace(self, record_cell=None, records=self.n)

    @property
    def n_cells(self) -> int:
        """Number of observed (non-empty) cells: the rows of ``counts``. With wildcard counts
        a row may be a pattern with missing values, which is no cell of the key space (see
        :attr:`key_cells`)."""
        return int(self.counts.shape[0])

    @property
    def key_cells(self) -> int:
        """Observed cells of the key space (of K): ``n_cells`` less the missing patterns."""
        return self.n_cells - self.missing_patterns

    @property
    def missing_patterns(self) -> int:
        """Rows of ``counts`` with a missing value under ``missing="wildcard"`` (no category:
        each such pattern matches several cells of the key space); 0 otherwise."""
        return 0 if self.wildcard is None else int(self.wildcard.n_missing_cells)

    @property
    def n_categories(self) -> tuple[int, ...]:
        """Categories of each key: its levels, less the missing level when the table holds
        wildcard counts (see :func:`~sdcrisk.data.wildcard.key_categories`)."""
        return wildcard.key_categories(self.levels, self.wildcard is not None)

    @property
    def cell_space(self) -> int:
        """K = product of the numbers of categories (exact Python int); with wildcard counts
        (``missing="wildcard"``) a missing value is not a category of its own."""
        return math.prod(self.n_categories)

    @property
    def sample_uniques(self) -> int:
        """n1, the number of cells with f = 1."""
        return int(np.count_nonzero(self.counts == 1))

    @property
    def sampling_fraction(self) -> float:
        """n / N."""
        return self.n / self.population_size

    def __repr__(self) -> str:
        return (
            f"CellTable(n={self.n}, cells={self.n_cells}, K={self.cell_space}, "
            f"sample_uniques={self.sample_uniques}, N={self.population_size:g})"
        )

    def _repr_html_(self) -> str:
        """Notebook view: the repr and the number of levels of each key, escaped (no cell's
        key values: they can disclose)."""
        import html

        rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{m}</td></tr>"
                       for k, m in zip(self.keys, self.n_categories, strict=True))
        return (f'<div class="sdcrisk-data"><p><code>{html.escape(repr(self))}</code></p>'
                f"<table><tr><th>key</th><th>levels</th></tr>{rows}</table></div>")

    def fingerprint(self) -> str:
        """SHA-256 of keys, levels and cell counts: identifies the input without revealing it.

        Computed once per table (every result's provenance carries it; at 5.9 M cells a hash
        took 0.1 s) from the arrays' own memory, without byte copies."""
        got = _FINGERPRINTS.get(self)
        if got is None:
            h = hashlib.sha256()
            h.update(repr((self.keys, self.levels)).encode())
            h.update(np.ascontiguousarray(self.cell_codes).data)
            h.update(np.ascontiguousarray(self.counts, dtype=np.int64).data)
            if self.weight_sums is not None:
                h.update(np.ascontiguousarray(self.weight_sums).data)
            h.update(repr(float(self.population_size)).encode())
            got = _FINGERPRINTS[self] = h.hexdigest()[:16]
        return got

    def cell_labels(self, cells: Sequence[int] | np.ndarray | None = None) -> list[tuple]:
        """Category labels of (some) observed cells, as tuples in key order.

        Parameters
        ----------
        cells : sequence of int or array, optional
            Cell indices in ``[0, n_cells)`` (as in ``table.counts``), or a boolean mask of
            length ``n_cells``; default every observed cell.

        Raises
        ------
        ParameterError
            An index that is not an integer, is negative or is ``n_cells`` or more, or a
            mask of another length; the message names the value and the valid range.
        """
        codes = (self.cell_codes if cells is None
                 else self.cell_codes[_cells.check_index(cells, self.n_cells, name="cells",
                                                        item="observed cell")])
        return [tuple(self.levels[j][c] for j, c in enumerate(row)) for row in codes.tolist()]

    def dense_counts(self, *, dtype=np.float64, limit: int | None = None) -> np.ndarray:
        """f over the whole key space as an array of shape ``n_levels`` (for log-linear IPF).

        Raises
        ------
        MemoryLimitError
            When K cells of ``dtype`` exceed the memory limit.
        """
        shape = tuple(len(lv) for lv in self.levels)
        check_memory(
            self.cell_space * np.dtype(dtype).itemsize,
            what=f"a dense table of K={self.cell_space:,} cells",
            limit=limit,
            remedies="use fewer or coarser key variables, partition the table, or a method "
            "whose memory grows with the observed cells only (nb, poisson-gamma)",
        )
        out = np.zeros(shape, dtype=dtype)
        out[tuple(self.cell_codes[:, j] for j in range(len(shape)))] = self.counts
        return out

    def k_anonymity_violations(self, ks: Sequence[int] = (2, 3, 5)) -> dict[int, int]:
        """Records in cells with f < k (sample k-anonymity), for each k.

        With ``missing="wildcard"`` f is the wildcard frequency (a missing key value matches
        every category, as sdcMicro's ``kAnon_violations``)."""
        if isinstance(ks, str) or not isinstance(ks, Iterable) or any(
                isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1 for k in ks):
            raise ParameterError(f"ks={short_repr(ks)} must be a list of integers k >= 1, "
                                 "e.g. (2, 3, 5)")
        f = self.counts if self.wildcard is None else self.wildcard.counts
        return {int(k): int(self.counts[f < k].sum()) for k in ks}


def tabulate(microdata: Microdata, *, population: Microdata | None = None) -> CellTable:
    """Tabulate sample cell counts over the observed key cells.

    Parameters
    ----------
    microdata : Microdata
        The sample.
    population : Microdata, optional
        The population the sample was drawn from, coded with the same keys and levels
        (build the sample with ``levels=population.levels`` or by ``population.subset``).
        Then ``table.population`` holds the true F_k and population uniqueness.

    Returns
    -------
    CellTable

    Raises
    ------
    InputError
        Sample and population keys/levels differ, or a sample cell is missing from the
        population (the sample does not come from it).
    """
    if not isinstance(microdata, Microdata):
        raise ParameterError(
            f"tabulate() takes a Microdata, not {type(microdata).__name__}; build it with "
            "sdcrisk.Microdata.from_source(data, keys=[...], population_size=N)")
    if population is not None and not isinstance(population, Microdata):
        raise ParameterError(f"tabulate(population=...) takes a Microdata, not "
                             f"{type(population).__name__}")
    md = microdata
    if (population is not None or md.missing == "wildcard"
            or not _cells.is_mixed_radix(md.n_levels) or not md.codes):
        return _tabulate_codes(md, population)
    ids, bound = _cells.cell_ids(md.codes, md.n_levels, narrow=True)
    return _table_from_ids(ids, bound, md.keys, md.levels, md.weights, md.household,
                           md.population_size, md.population_size_source, md.source,
                           np.result_type(*md.codes))


def _table_from_ids(ids, bound, keys, levels, weights, household, population_size,
                    population_size_source, source, dtype=None, decode=None) -> CellTable:
    """The CellTable of mixed-radix record ids (``ids`` may become the record map);
    ``dtype`` of the cell codes, default that of the key codes ``encode_column`` gives;
    ``decode(cells, dtype)`` their codes when the ids are not plain mixed-radix numbers
    (:class:`~sdcrisk.data._fold.Fold`'s ranks)."""
    cells, counts, record_cell = _cells.observed_cells(ids, bound)
    del ids
    n_levels = tuple(len(lv) for lv in levels)
    if dtype is None:
        dtype = _cells.code_dtype(max(max(n_levels), 1))
    cell_codes = (_cells.decode_cells(cells, n_levels, dtype) if decode is None
                  else decode(cells, dtype))
    weight_sums = inclusion_sums = None
    if weights is not None:
        weight_sums = np.bincount(record_cell, weights=weights, minlength=len(cells))
        inclusion_sums = np.bincount(record_cell, weights=1.0 / weights, minlength=len(cells))
    return CellTable(
        keys=keys, levels=levels, cell_codes=cell_codes, counts=counts.astype(np.int64),
        weight_sums=weight_sums, record_cell=record_cell, household=household,
        population_size=population_size, population_size_source=population_size_source,
        population=None, source=source, inclusion_sums=inclusion_sums)


def _tabulate_codes(md: Microdata, population: Microdata | None) -> CellTable:
    ids, bound = _cells.cell_ids(md.codes, md.n_levels, narrow=True)
    cells, counts, record_cell = _cells.observed_cells(ids, bound)
    del ids
    if not md.codes:
        cell_codes = np.zeros((0, 0))
    elif _cells.is_mixed_radix(md.n_levels):
        # cell ids are mixed-radix numbers: read the codes off them (no pass over records)
        cell_codes = _cells.decode_cells(cells, md.n_levels, np.result_type(*md.codes))
    else:
        # ids were compressed to ranks: take the codes of one record of each cell
        rep = np.empty(len(cells), np.int64)
        rep[record_cell] = np.arange(md.n)
        cell_codes = np.stack([c[rep] for c in md.codes], axis=1)
    weight_sums = inclusion_sums = None
    if md.weights is not None:
        weight_sums = np.bincount(record_cell, weights=md.weights, minlength=len(cells))
        inclusion_sums = np.bincount(record_cell, weights=1.0 / md.weights,
                                     minlength=len(cells))
    pop = None
    if population is not None:
        pop = population_counts(md, population, cell_codes, counts)
    return CellTable(
        keys=md.keys,
        levels=md.levels,
        cell_codes=cell_codes,
        counts=counts.astype(np.int64),
        weight_sums=weight_sums,
        record_cell=record_cell,
        household=md.household,
        population_size=float(pop.size) if pop is not None else md.population_size,
        population_size_source="population" if pop is not None else md.population_size_source,
        population=pop,
        source=md.source,
        inclusion_sums=inclusion_sums,
        wildcard=None if md.missing != "wildcard" else wildcard.wildcard_cell_counts(
            cell_codes, md.n_levels, counts, weight_sums, md.levels, md.wildcard_alpha),
    )
