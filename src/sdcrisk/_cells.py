"""Low-level coding: column values -> level codes, and level codes -> observed cells.

Kept apart from :mod:`sdcrisk.table` so that the hot paths (measured in
``benchmarks/bench_tabulate.py``) stay small and easy to profile.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .exceptions import InputError

MISSING_LABEL = None  # the level that stands for a missing value under missing="category"

# A dense bincount over the mixed-radix cell space is used up to this many cells
# (int64 counts: 8 bytes a cell -> 1 GiB at most) and while the space is not much larger
# than the number of records; otherwise observed cells are found by sorting.
DENSE_MAX_CELLS = 1 << 27
_INT_RANGE_LOOKUP = 1 << 24


def _code_dtype(n_levels: int):
    if n_levels <= np.iinfo(np.int8).max:
        return np.int8
    if n_levels <= np.iinfo(np.int16).max:
        return np.int16
    return np.int32


def _format_value(value) -> str:
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
                f"column {name!r} is not categorical: value {vals[i]!r} is not an integer code; "
                "band it into categories (or give it as text) before using it as a key"
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
    if max_levels is not None and d > max_levels:
        raise InputError(
            f"column {name!r} has {d} distinct values, more than max_levels={max_levels}; "
            "it looks like an identifier or a continuous variable: band it, or raise max_levels"
        )
    if n and d == 0:
        raise InputError(f"column {name!r} has no levels")
    return codes.astype(_code_dtype(max(d, 1)), copy=False), level_tuple


def _encode_integers(values: np.ndarray, vals: np.ndarray, present: np.ndarray | None):
    if vals.size == 0:
        return np.zeros(len(values), np.int64), ()
    lo, hi = int(vals.min()), int(vals.max())
    if hi - lo < _INT_RANGE_LOOKUP:
        seen = np.bincount((vals - lo).astype(np.int64), minlength=hi - lo + 1) > 0
        level_values = np.flatnonzero(seen) + lo
        lookup = np.cumsum(seen) - 1
        shifted = (values - lo).astype(np.int64)
        if present is not None:
            shifted = np.where(present, shifted, 0)
        codes = lookup[shifted]
    else:
        level_values, inv = np.unique(vals, return_inverse=True)
        codes = np.zeros(len(values), np.int64)
        if present is not None:
            codes[present] = inv
        else:
            codes = inv.astype(np.int64)
    return codes.astype(np.int64), tuple(int(v) for v in level_values)


def _encode_declared(name, values, present, vals, levels):
    level_list = list(levels)
    if len(set(map(_normalise, level_list))) != len(level_list):
        raise InputError(f"levels of {name!r} contain duplicates")
    numeric = vals.dtype.kind in "iu"
    keys = [_normalise(v) for v in level_list]
    if numeric:
        try:
            declared = np.array([int(k) for k in keys if k is not None], dtype=np.int64)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"levels of {name!r} must be integers for an integer-coded column"
            ) from exc
        order = [k for k in keys if k is not None]
        sorter = np.argsort(declared)
        pos = np.searchsorted(declared[sorter], vals)
        pos = np.clip(pos, 0, len(declared) - 1) if len(declared) else pos
        ok = len(declared) > 0 and np.all(declared[sorter][pos] == vals) if vals.size else True
        if not ok:
            bad = vals[declared[sorter][pos] != vals][0] if len(declared) else vals[0]
            raise InputError(
                f"column {name!r} has value {_format_value(bad)} that is not among its declared "
                f"levels {order[:10]}{'...' if len(order) > 10 else ''}"
            )
        idx_in_keys = np.array([keys.index(order[i]) for i in range(len(order))], dtype=np.int64)
        inv = idx_in_keys[sorter][pos] if vals.size else np.zeros(0, np.int64)
    else:
        lookup = {k: i for i, k in enumerate(keys)}
        svals = vals.astype(str)
        uniq, uinv = np.unique(svals, return_inverse=True)
        mapped = np.empty(len(uniq), np.int64)
        for j, u in enumerate(uniq):
            if u not in lookup:
                raise InputError(
                    f"column {name!r} has value {u!r} that is not among its declared levels"
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


def cell_ids(columns: Sequence[np.ndarray], radices: Sequence[int]) -> tuple[np.ndarray, int]:
    """Mixed-radix cell ids of records and an upper bound on them.

    When the product of radices would overflow int64, the partial ids are compressed to
    dense ranks (at most n distinct values) before going on, so memory stays proportional
    to the number of records whatever the size of the key space.
    """
    n = len(columns[0]) if columns else 0
    ids = np.zeros(n, np.int64)
    bound = 1
    for col, d in zip(columns, radices, strict=True):
        d = max(int(d), 1)
        if bound * d >= (1 << 62):
            uniq, inv = np.unique(ids, return_inverse=True)
            ids = inv.astype(np.int64).ravel()
            bound = len(uniq)
        if bound == 1:
            ids = col.astype(np.int64)
        else:
            ids *= d
            ids += col
        bound *= d
    return ids, bound


def observed_cells(ids: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observed cells of record ids: (cell id of each observed cell, counts, record->cell)."""
    n = len(ids)
    if bound <= DENSE_MAX_CELLS and bound <= max(16 * n, 1 << 20):
        counts = np.bincount(ids, minlength=bound)
        cells = np.flatnonzero(counts)
        lookup = np.empty(bound, np.int32 if len(cells) < (1 << 31) else np.int64)
        lookup[cells] = np.arange(len(cells), dtype=lookup.dtype)
        return cells, counts[cells], lookup[ids]
    cells, inverse, counts = np.unique(ids, return_inverse=True, return_counts=True)
    dtype = np.int32 if len(cells) < (1 << 31) else np.int64
    return cells, counts, inverse.ravel().astype(dtype)
