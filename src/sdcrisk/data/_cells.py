"""Low-level coding: column values -> level codes, and level codes -> observed cells.

Kept apart from :mod:`sdcrisk.data.table` so that the hot paths (measured in
``benchmarks/bench_tabulate.py``) stay small and easy to profile.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..exceptions import InputError, ParameterError, SdcRiskWarning, user_stacklevel
from .sizes import short_repr

MISSING_LABEL = None  # the level that stands for a missing value under missing="category"

# A dense bincount over the mixed-radix cell space is used up to this many cells
# (int64 counts: 8 bytes a cell -> 1 GiB at most) and while the space is not much larger
# than the number of records; otherwise observed cells are found by sorting.
DENSE_MAX_CELLS = 1 << 27
_INT_RANGE_LOOKUP = 1 << 24
CODE_BLOCK = 1 << 20  # records coded at a time (8 MB of int64 temporaries)


def code_dtype(n_levels: int):
    """The narrowest signed integer dtype for codes 0..n_levels-1."""
    if n_levels <= np.iinfo(np.int8).max:
        return np.int8
    if n_levels <= np.iinfo(np.int16).max:
        return np.int16
    return np.int32


_code_dtype = code_dtype  # the name analyses/recommend.py uses


#: the first integer a float64 does not tell from its neighbour (2**53 + 1 is read as 2**53):
#: a code read as a number is exact below it (as io.exact_whole_numbers has it)
_EXACT_FLOAT = float(2**53)


def _format_value(value) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, str) else str(value)


def encode_column(
    name: str,
    values: np.ndarray,
    missing: np.ndarray | None,
    *,
    levels: Sequence | None,
    missing_policy: str,
    max_levels: int | None,
) -> tuple[np.ndarray, tuple]:
    """Integer codes 0..d-1 for one key column and its levels (tuple, in code order).

    Integer columns keep numeric order; strings sort lexicographically; declared ``levels``
    fix the order and may contain levels that never occur. Missing values become the last
    level (``None``) under ``missing_policy="category"`` and an error under ``"error"``.
    """
    n = len(values)
    has_missing = missing is not None and bool(missing.any())
    if has_missing and missing_policy == "error":
        row = int(np.flatnonzero(missing)[0])
        raise InputError(
            f"column {name!r} has {int(missing.sum())} missing value(s) (first at row {row + 1}); "
            "use missing='category' to treat missing as its own level, or fill them"
        )
    present = ~missing if has_missing else None
    vals = values[present] if has_missing else values

    if vals.dtype.kind == "f":
        bad = ~np.isfinite(vals) | (vals != np.round(vals))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"column {name!r} is not categorical: value {_format_value(vals[i])} is not an "
                f"integer code; "
                "band it into categories (or give it as text) before using it as a key"
            )
        big = np.abs(vals) >= _EXACT_FLOAT
        if big.any():
            # a code from 2**53 on read as a number may have lost digits (pyarrow reads a
            # CSV column with a value past int64, or with a decimal point, as double: 2**53
            # + 1 is 2**53 there), and one past int64 wrapped on the cast below: distinct
            # codes merged into one category, silently (fuzz sweep 4)
            i = int(np.flatnonzero(big)[0])
            raise InputError(
                f"column {name!r} is not categorical: value {_format_value(vals[i])} is too "
                "large to be an exact integer code (a number from 2^53 on loses digits, so "
                "distinct codes would merge); recode it to shorter codes, or give it as text "
                "(e.g. a letter before each code), before using it as a key"
            )
        vals = vals.astype(np.int64)
        values = values.copy()
        values[~np.isfinite(values)] = 0
        values = values.astype(np.int64)

    if levels is not None:
        codes, level_tuple = _encode_declared(name, values, present, vals, levels)
    elif vals.dtype.kind in "iu":
        codes, level_tuple = _encode_integers(values, vals, present)
    else:
        uniq, inv = np.unique(vals.astype(str), return_inverse=True)
        level_tuple = tuple(str(u) for u in uniq)
        codes = np.empty(n, np.int64)
        if has_missing:
            codes[present] = inv
        else:
            codes = inv.astype(np.int64)

    if has_missing:
        if MISSING_LABEL not in level_tuple:
            level_tuple = (*level_tuple, MISSING_LABEL)
        codes[missing] = level_tuple.index(MISSING_LABEL)
    d = len(level_tuple)
    if max_levels is not None and d > max_levels and levels is not None:
        raise InputError(
            f"the levels declared for column {name!r} number {d}, more than "
            f"max_levels={max_levels}; declare only the categories that exist, or raise "
            "max_levels (--max-levels on the command line)"
        )
    if max_levels is not None and d > max_levels:
        raise InputError(
            f"column {name!r} has {d} distinct values, more than max_levels={max_levels}; "
            "it looks like an identifier or a continuous variable: band it, or raise max_levels "
            "(--max-levels on the command line)"
        )
    if n and d == 0:
        raise InputError(f"column {name!r} has no levels")
    if levels is None and level_tuple == (MISSING_LABEL,):
        # likely a misread column; the figures are right (it separates no one), but equal to
        # those without the key, which nothing said (sixth bad-input sweep)
        warnings.warn(f"key {name!r} holds no value: every one is missing (blank, or a "
                      "missing-value code), so it separates no record and the figures are "
                      "those without it; check the column's name, or the codes read as "
                      "missing", SdcRiskWarning, stacklevel=user_stacklevel())
    return codes.astype(code_dtype(max(d, 1)), copy=False), level_tuple


def _encode_integers(values: np.ndarray, vals: np.ndarray, present: np.ndarray | None):
    if vals.size == 0:
        return np.zeros(len(values), np.int64), ()
    lo, hi = int(vals.min()), int(vals.max())
    # an unsigned code past int64 (a uint64 Parquet column) would overflow the int64 blocks
    # of the lookup: np.unique takes it as it is
    if hi - lo < _INT_RANGE_LOOKUP and hi <= np.iinfo(np.int64).max:
        # a lookup table over [lo, hi], filled and applied block by block: no n-long int64
        # temporary (at 3e7 records that was 240 MB a key; issue 20)
        n = len(values)
        if n >= COMPILED_FROM and values.dtype in _COMPILED_CODES:
            # the same two passes compiled: 0.11 s a key at 3x10^7 records in blocks
            none = np.zeros(0, bool)
            seen = np.zeros(hi - lo + 1, bool)
            _kernels().mark(values, lo, none if present is None else present, seen)
            level_values = np.flatnonzero(seen) + lo
            lookup = (np.cumsum(seen) - 1).astype(code_dtype(len(level_values) + 1))
            codes = _kernels().apply(values, lo, none if present is None else present, lookup)
            return codes, tuple(int(v) for v in level_values)
        seen = np.zeros(hi - lo + 1, bool)
        for s in range(0, n, CODE_BLOCK):
            block = values[s:s + CODE_BLOCK].astype(np.int64)
            block -= lo
            seen[block if present is None else block[present[s:s + CODE_BLOCK]]] = True
        level_values = np.flatnonzero(seen) + lo
        lookup = (np.cumsum(seen) - 1).astype(code_dtype(len(level_values) + 1))
        codes = np.empty(n, lookup.dtype)
        for s in range(0, n, CODE_BLOCK):
            block = values[s:s + CODE_BLOCK].astype(np.int64)
            block -= lo
            if present is not None:
                block[~present[s:s + CODE_BLOCK]] = 0
            codes[s:s + CODE_BLOCK] = lookup[block]
        return codes, tuple(int(v) for v in level_values)
    else:
        level_values, inv = np.unique(vals, return_inverse=True)
        codes = np.zeros(len(values), np.int64)
        if present is not None:
            codes[present] = inv
        else:
            codes = inv.astype(np.int64)
    return codes.astype(np.int64), tuple(int(v) for v in level_values)


def _is_int(value) -> bool:
    try:
        int(value)
    except (TypeError, ValueError):
        return False
    return True


def _encode_declared(name, values, present, vals, levels):
    level_list = list(levels)
    if len(set(map(_normalise, level_list))) != len(level_list):
        dup = next(v for i, v in enumerate(level_list)
                   if _normalise(v) in map(_normalise, level_list[:i]))
        raise InputError(f"levels of {name!r} contain {dup!r} more than once; list each "
                         "category once (the levels file, --levels on the command line)")
    numeric = vals.dtype.kind in "iu"
    keys = [_normalise(v) for v in level_list]
    if numeric:
        try:
            ints = [int(k) for k in keys if k is not None]
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"levels of {name!r} must be integers for an integer-coded column (the "
                f"column holds numbers; the levels given include "
                f"{next(k for k in keys if k is not None and not _is_int(k))!r})"
            ) from exc
        order = [k for k in keys if k is not None]
        # compared in the column's integer type: NumPy compares int64 with uint64 as
        # float64 (2^53 + 1 equal to 2^53), and a level past int64 overflowed; a declared
        # level outside that type is in no record
        work = np.uint64 if vals.dtype == np.uint64 else np.int64
        fits = [int(np.iinfo(work).min) <= v <= int(np.iinfo(work).max) for v in ints]
        declared = np.array([v for v, f in zip(ints, fits, strict=True) if f], dtype=work)
        vals = vals.astype(work, copy=False)
        sorter = np.argsort(declared)
        pos = np.searchsorted(declared[sorter], vals)
        pos = np.clip(pos, 0, len(declared) - 1) if len(declared) else pos
        ok = len(declared) > 0 and np.all(declared[sorter][pos] == vals) if vals.size else True
        if not ok:
            bad = vals[declared[sorter][pos] != vals][0] if len(declared) else vals[0]
            raise InputError(
                f"column {name!r} has value {_format_value(bad)} that is not among its declared "
                f"levels {order[:10]}{'...' if len(order) > 10 else ''}: add it to the levels "
                f"of {name!r} (--levels on the command line) or correct the data"
            )
        position = {k: i for i, k in enumerate(keys)}
        idx_in_keys = np.array([position[k] for k, f in zip(order, fits, strict=True) if f],
                               dtype=np.int64)
        inv = idx_in_keys[sorter][pos] if vals.size else np.zeros(0, np.int64)
    else:
        lookup = {k: i for i, k in enumerate(keys)}
        svals = vals.astype(str)
        uniq, uinv = np.unique(svals, return_inverse=True)
        mapped = np.empty(len(uniq), np.int64)
        for j, u in enumerate(uniq):
            if u not in lookup:
                raise InputError(
                    f"column {name!r} has value {str(u)!r} that is not among its declared levels:"
                    f" add it to the levels of {name!r} (--levels on the command line) or "
                    "correct the data"
                )
            mapped[j] = lookup[u]
        inv = mapped[uinv]
    codes = np.zeros(len(values), np.int64)
    if present is not None:
        codes[present] = inv
    else:
        codes = inv
    return codes, tuple(level_list)


def _normalise(v):
    if v is None or (isinstance(v, float) and v != v):
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, bool):
        return int(v)
    return v if isinstance(v, int) else str(v)


# Records (or cells) are processed in blocks of this many so that the per-key passes of the
# mixed-radix arithmetic stay in cache instead of streaming n-long arrays once per key.
_BLOCK = 1 << 15
# Mixed-radix ids are kept below this; past it partial ids are compressed to ranks.
ID_LIMIT = 1 << 62
# records counted at a time by observed_cells (a 32 MB intp copy per block)
_COUNT_BLOCK = 1 << 22


def _radices(radices: Sequence[int]) -> list[int]:
    return [max(int(d), 1) for d in radices]


def is_mixed_radix(radices: Sequence[int]) -> bool:
    """Whether :func:`cell_ids` returns plain mixed-radix ids (no rank compression)."""
    return math.prod(_radices(radices)) < ID_LIMIT


def cell_ids(columns: Sequence[np.ndarray], radices: Sequence[int], *,
             narrow: bool = False) -> tuple[np.ndarray, int]:
    """Mixed-radix cell ids of records and an upper bound on them.

    When the product of radices would overflow int64, the partial ids are compressed to
    dense ranks (at most n distinct values) before going on, so memory stays proportional
    to the number of records whatever the size of the key space. With ``narrow`` the ids
    come back as int32 when they all fit (half the memory; :func:`observed_cells` then
    turns that array into the record -> cell map in place).
    """
    n = len(columns[0]) if columns else 0
    radices = _radices(radices)
    if len(radices) != len(columns):
        raise ValueError("cell_ids: one radix per column is needed")
    ids = None  # None stands for all zeros (bound 1)
    bound = 1
    i, n_cols = 0, len(columns)
    while i < n_cols:
        if bound > 1 and bound * radices[i] >= ID_LIMIT:
            uniq, inv = np.unique(ids, return_inverse=True)
            ids = inv.astype(np.int64).ravel()
            bound = len(uniq)
        # take the longest run of columns whose ids stay below the limit
        j, end = i + 1, bound * radices[i]
        while j < n_cols and end * radices[j] < ID_LIMIT:
            end *= radices[j]
            j += 1
        last = j == n_cols
        ids = _mixed_radix(ids if bound > 1 else None, columns[i:j], radices[i:j], end, n,
                           np.int32 if narrow and last and end < (1 << 31) else np.int64)
        bound, i = end, j
    if ids is None:
        ids = np.zeros(n, np.int32 if narrow else np.int64)
    return ids, bound


def _mixed_radix(prefix, columns, radices, bound, n, dtype=np.int64) -> np.ndarray:
    """prefix * prod(radices) + mixed-radix value of columns, block by block (``dtype`` out).

    The arithmetic runs in int32 when every id is below 2**31 (half the memory traffic).
    """
    out = np.empty(n, dtype)
    narrow = bound < (1 << 31)
    buf = np.empty(min(n, _BLOCK), np.int32) if narrow else None
    if prefix is None:
        first, rest, rest_radices = columns[0], columns[1:], radices[1:]
    else:
        first, rest, rest_radices = prefix, columns, radices
    for s in range(0, n, _BLOCK):
        e = min(s + _BLOCK, n)
        x = buf[: e - s] if narrow and dtype != np.int32 else out[s:e]
        np.copyto(x, first[s:e], casting="unsafe")
        for col, d in zip(rest, rest_radices, strict=True):
            x *= d
            x += col[s:e]
        if narrow and x.base is not out:
            out[s:e] = x
    return out


def decode_cells(cells: np.ndarray, radices: Sequence[int], dtype) -> np.ndarray:
    """Level codes (n_cells, J) of mixed-radix cell ids (only when :func:`is_mixed_radix`)."""
    radices = _radices(radices)
    if math.prod(radices) >= ID_LIMIT:
        raise ValueError("decode_cells: ids of this key space are compressed ranks")
    m, n_keys = len(cells), len(radices)
    out = np.empty((m, n_keys), dtype)
    if n_keys == 0:
        return out
    work = np.int32 if math.prod(radices) < (1 << 31) else np.int64
    for s in range(0, m, 2 * _BLOCK):
        e = min(s + 2 * _BLOCK, m)
        rem = cells[s:e].astype(work)
        for j in range(n_keys - 1, 0, -1):
            d = radices[j]
            q = rem // d
            np.subtract(rem, q * d, out=out[s:e, j], casting="unsafe")
            rem = q
        np.copyto(out[s:e, 0], rem, casting="unsafe")
    return out


def observed_cells(ids: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observed cells of record ids: (cell id of each observed cell, counts, record->cell).

    On the dense path an int32 ``ids`` array is overwritten with the record -> cell map
    (and returned as it), so tabulating holds one n-long array, not three.
    """
    n = len(ids)
    if (n >= COMPILED_FROM and ids.dtype == np.int32 and n < (1 << 31)
            and bound <= min(max(DENSE_MAX_CELLS, 2 * n), max(16 * n, 1 << 20))):
        # counted and mapped in place, in one int32 table of the cells (per-thread tables
        # up to 2^24 cells), whose slots then hold the cells' ranks: 4 bytes a cell, so up
        # to twice the records' ids (10^8 records of 1.35x10^8 cells, from _Fold's ranks,
        # were sorted: 3 GB of int64 temporaries)
        counts = _kernels().count_ids(ids, bound, 2 if bound <= (1 << 24) else 1)
        cells, found = _kernels().rank_slots(counts, np.count_nonzero(counts))
        _kernels().remap(ids, counts)
        return cells, found, ids
    if bound <= DENSE_MAX_CELLS and bound <= max(16 * n, 1 << 20):
        if n <= _COUNT_BLOCK:
            counts = np.bincount(ids, minlength=bound)
        else:  # bincount converts its input to intp: count in blocks to bound that copy
            counts = np.zeros(bound, np.int64)
            for s in range(0, n, _COUNT_BLOCK):
                counts += np.bincount(ids[s:s + _COUNT_BLOCK], minlength=bound)
        cells = np.flatnonzero(counts != 0)
        lookup = np.empty(bound, np.int32 if len(cells) < (1 << 31) else np.int64)
        lookup[cells] = np.arange(len(cells), dtype=lookup.dtype)
        if ids.dtype != lookup.dtype:
            return cells, counts[cells], lookup[ids]
        for s in range(0, n, _COUNT_BLOCK):
            ids[s:s + _COUNT_BLOCK] = lookup[ids[s:s + _COUNT_BLOCK]]
        return cells, counts[cells], ids
    cells, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    dtype = np.int32 if len(cells) < (1 << 31) else np.int64
    return cells, counts, inverse.ravel().astype(dtype)


#: records from which observed_cells counts and maps int32 ids, and integer keys are coded,
#: in compiled passes (numba costs about 0.4 s to import; at 3x10^7 records the blocked
#: bincount and lookup took 0.8-1.3 s, the compiled passes 0.4 s, and coding a key 0.11 s
#: against 0.04 s; issue 20)
COMPILED_FROM = 1 << 20
#: integer column types the compiled coding takes (each widens to int64 exactly)
_COMPILED_CODES = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8,
                                              np.uint16, np.uint32))
_KERNELS = None


def _kernels():
    """This module's compiled passes, built on first use (each compiled on its first call):

    * ``count_ids(ids, bound, blocks)``: dense int32 counts of int32 ids below ``bound``
      (n < 2^31 records), ``blocks`` private tables filled in parallel and summed;
    * ``rank_slots(counts, m)``: the ``m`` non-zero slots of ``counts`` (cells) and their
      counts (int64), each slot then overwritten with its rank, in one pass (flatnonzero,
      a gather and an arange held three cell-long temporaries at once);
    * ``remap(ids, lookup)``: ``ids[i] = lookup[ids[i]]`` in place;
    * ``mark(values, lo, present, seen)``: ``seen[v - lo] = True`` for every value v (where
      ``present``, unless it is empty);
    * ``apply(values, lo, present, lookup)``: ``lookup[v - lo]`` of every value v
      (``lookup[0]`` where not ``present``).
    """
    global _KERNELS
    if _KERNELS is None:
        from types import SimpleNamespace

        from numba import njit, prange

        @njit(parallel=True, cache=True)
        def count_ids(ids, bound, blocks):
            n = ids.shape[0]
            acc = np.zeros((blocks, bound), np.int32)
            per = (n + blocks - 1) // blocks
            for b in prange(blocks):
                for i in range(b * per, min(n, (b + 1) * per)):
                    acc[b, ids[i]] += 1
            if blocks == 1:
                return acc[0]
            out = acc[0].copy()
            for b in range(1, blocks):
                out += acc[b]
            return out

        @njit(cache=True)
        def rank_slots(counts, m):
            cells = np.empty(m, np.int64)
            found = np.empty(m, np.int64)
            r = 0
            for i in range(counts.shape[0]):
                if counts[i] != 0:
                    cells[r] = i
                    found[r] = counts[i]
                    counts[i] = r
                    r += 1
            return cells, found

        @njit(parallel=True, cache=True)
        def remap(ids, lookup):
            for i in prange(ids.shape[0]):
                ids[i] = lookup[ids[i]]

        @njit(parallel=True, cache=True)
        def mark(values, lo, present, seen):
            every = present.shape[0] == 0
            for i in prange(values.shape[0]):
                if every or present[i]:
                    seen[np.int64(values[i]) - lo] = True  # the same True from any thread

        @njit(parallel=True, cache=True)
        def apply(values, lo, present, lookup):
            out = np.empty(values.shape[0], lookup.dtype)
            every = present.shape[0] == 0
            for i in prange(values.shape[0]):
                out[i] = lookup[np.int64(values[i]) - lo if every or present[i] else 0]
            return out

        _KERNELS = SimpleNamespace(count_ids=count_ids, rank_slots=rank_slots, remap=remap,
                                   mark=mark, apply=apply)
    return _KERNELS


def cell_counts(ids: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """Observed cell ids (sorted, int64) and their counts, without the record map."""
    n = len(ids)
    if bound <= DENSE_MAX_CELLS and bound <= max(16 * n, 1 << 20):
        counts = np.zeros(bound, np.int64)
        for s in range(0, n, _COUNT_BLOCK):
            counts += np.bincount(ids[s:s + _COUNT_BLOCK], minlength=bound)
        cells = np.flatnonzero(counts)
        return cells.astype(np.int64), counts[cells]
    cells, counts = np.unique(ids, return_counts=True)
    return cells.astype(np.int64), counts


def check_index(values, size: int, *, name: str, item: str) -> np.ndarray:
    """``values`` as an integer index array into ``size`` items: indices in [0, size) or a
    boolean mask of length ``size``. The one check of the record indices of
    ``Microdata.subset(rows=...)`` and the cell indices of ``CellTable.cell_labels(cells)``.

    ``name`` is the argument as the user typed it (``"rows"``), ``item`` what one index
    points at (``"record"``).

    Raises
    ------
    ParameterError
        An index that is not an integer or out of range (negative ones too: they are not
        read from the end), a 2-d or ragged list, text, or a mask of another length; the
        message names the value and the valid range.
    """
    k = int(size)
    where = f"{name} must be indices of {item}s, integers in [0, {k - 1}] (there are {k})"
    if isinstance(values, Iterable) and not isinstance(values, str | bytes | Mapping
                                                       | np.ndarray):
        values = list(values)
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):  # ragged
        arr = np.zeros((0, 0))
    if isinstance(values, str | bytes | Mapping) or arr.ndim != 1:
        raise ParameterError(f"{name}={short_repr(values)}: {where}; give a list or a 1-d "
                             f"array of them, or a boolean mask with one entry per {item}")
    if arr.dtype == bool:
        if arr.size != k:
            raise ParameterError(f"{name} is a boolean mask of length {arr.size}; a mask "
                                 f"must have one entry per {item} ({k})")
        return np.flatnonzero(arr)
    if arr.size == 0:
        return np.zeros(0, dtype=np.intp)
    if arr.dtype.kind not in "iu":
        bad = next((v for v in arr.ravel().tolist()
                    if isinstance(v, bool) or not isinstance(v, int)), arr.ravel()[0])
        raise ParameterError(f"{name} contains {short_repr(bad)}: {where}")
    out_of_range = (arr < 0) | (arr >= k)
    if out_of_range.any():
        raise ParameterError(f"{name} contains {int(arr[out_of_range][0])}: {where}")
    return arr.astype(np.intp, copy=False)
