"""Household ids: labels, read by one rule whatever the reader (in memory or streamed) and
the format (CSV, mu-Argus, Parquet, a frame).

A household id names a household; it is not a number to compute with. So a CSV or mu-Argus
id is its **text**, surrounding spaces and tabs removed (as mu-Argus reads every value):
``07`` and ``7`` are two households, ``001`` and ``1`` two more, `` 7`` and ``7`` one. A blank
id is missing. Text that is not UTF-8 is decoded by :func:`~sdcrisk.data.text.decode_text`.
A column whose every id is written as a whole number the one way it is written (``0``, or
digits without a leading zero after an optional ``-``, within the 64-bit range) is kept as
int64 and its households are ordered by value; since such text and its number determine
each other, the households are the same as for the text, only their order (the household
codes) follows the numbers. A
typed column (Parquet, Stata, a frame) keeps its values: integers, booleans, decimals that
are whole numbers (NaN is missing); text columns there follow the text rule.

The in-memory reader (:func:`sdcrisk.data.io.iter_columns` with ``ids=``) and the streaming
reader (:mod:`sdcrisk.data.outofcore`) both call :func:`id_labels`, so that the same file
gives the same households, and the same household risk, either way.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import InputError

__all__ = ["id_labels", "distinct_labels", "merge_labels"]


def id_labels(name: str, arr, *, whole: bool | None = None, offset: int = 0) -> np.ndarray:
    """The label of each id in ``arr`` (an Arrow array or chunked array, or a NumPy array
    with ``None``/NaN for missing): int64 or text, by the module's rule.

    ``whole``: whether the column's ids are whole numbers (kept as int64), when the caller
    knows it from the whole column (a streamed batch: :func:`merge_labels` of pass 1);
    None: decided on ``arr``. ``offset``: the row number of ``arr[0]`` minus one, for the
    messages.

    Raises
    ------
    InputError
        A missing or blank id (naming the row), a decimal id that is not a whole number.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = _arrow(arr)
    typ = arr.type
    if whole is not False and not arr.null_count and (
            pa.types.is_string(typ) or pa.types.is_binary(typ)
            or pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)):
        try:  # the usual case, numbers written as such: no hashing of every record's id
            numbers = _whole(pc.utf8_trim(arr.cast(pa.string()), characters=" \t"))
        except pa.ArrowInvalid:  # not UTF-8
            numbers = None
        if numbers is not None:
            return numbers
    uniq = pc.unique(arr)
    labels = _labels(name, arr, uniq, whole, offset)
    return labels[pc.index_in(arr, value_set=uniq).to_numpy(zero_copy_only=False)]


def distinct_labels(name: str, arr, *, offset: int = 0) -> np.ndarray:
    """The labels of the distinct ids of ``arr`` (unsorted, possibly repeated where two
    texts differ only in surrounding blanks): pass 1 of the streaming reader, one batch."""
    import pyarrow.compute as pc

    arr = _arrow(arr)
    return _labels(name, arr, pc.unique(arr), None, offset)


def merge_labels(parts: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct labels of several :func:`distinct_labels` parts. A part of whole
    numbers beside a part of text is written back as its text (exact: a whole number has
    one spelling), so that the column is text, as read in one piece."""
    if not parts:
        return np.zeros(0, np.int64)
    if any(p.dtype.kind not in "iu" for p in parts) and any(p.dtype.kind in "iu" for p in parts):
        parts = [p.astype(str) for p in parts]
    return np.unique(np.concatenate(parts))


def _whole(text) -> np.ndarray | None:
    """``text`` (an Arrow string array, blanks trimmed) as int64 when every value is the
    one way the number is written (``7``, ``-3``, ``0``; not ``07``, ``+7``, ``-0``, ``7.0``),
    else None: the test of :func:`id_labels`' rule, on distinct values or on all."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:  # digits after an optional '-' ('+7' is refused here), or '0x..'
        numbers = pc.cast(text, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    # 07, -0, 0x10: another spelling than the number's (a pattern, not a scalar argument,
    # which would import pandas: ~0.3 s)
    if pc.any(pc.match_substring_regex(text, "^(-0|0.)")).as_py():
        return None
    # the values buffer as is (no nulls here): Array.to_numpy would import pandas (~0.3 s)
    return np.frombuffer(numbers.buffers()[1], dtype=np.int64, count=len(numbers),
                         offset=numbers.offset * 8).copy()


def _arrow(arr):
    """``arr`` as one Arrow array: chunks combined, a dictionary decoded, NumPy converted."""
    import pyarrow as pa

    if isinstance(arr, np.ndarray):
        if arr.dtype.kind == "O":
            miss = np.array([v is None or (isinstance(v, float) and v != v) for v in arr],
                            dtype=bool)
            arr = pa.array(np.where(miss, "", arr).astype(str), mask=miss, type=pa.string())
        else:
            arr = pa.array(arr)
    elif isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    return arr


def _row(arr, value) -> int:
    """The position of ``value`` (an Arrow scalar) in ``arr``."""
    import pyarrow.compute as pc

    return int(pc.index(arr, value).as_py())



def missing_household_id(name: str, row: int) -> InputError:
    """The refusal of a record without a household id (``row``: 1-based), in the same words
    wherever ids are read."""
    return InputError(f"household column {name!r} is missing at row {row}; every record "
                      "needs its household's id: fill it in (a person living alone can take "
                      "an id no other record has), or leave out --household")

def _labels(name: str, arr, uniq, whole: bool | None, offset: int) -> np.ndarray:
    """The labels of ``uniq``, the distinct values of ``arr`` (for the rows of messages)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .text import decode_array

    if arr.null_count:
        row = int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])
        raise missing_household_id(name, offset + row + 1)
    typ, raw = uniq.type, uniq
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        uniq, typ = decode_array(uniq), pa.string()
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        text = pc.utf8_trim(uniq, characters=" \t")
        blank = np.flatnonzero(pc.equal(pc.utf8_length(text), 0).to_numpy(
            zero_copy_only=False))
        if len(blank):
            row = offset + _row(arr, raw[int(blank[0])]) + 1
            raise InputError(f"household column {name!r} is blank at row {row} "
                             f"({uniq[int(blank[0])].as_py()!r}); every record needs its "
                             "household's id")
        numbers = None if whole is False else _whole(text)
        if numbers is not None:
            return numbers
        if whole:
            raise InputError(f"household column {name!r}: an id not seen in the first pass; "
                             "the file changed while it was read")
        out = text.to_numpy(zero_copy_only=False)
        return out.astype(str) if len(out) else np.zeros(0, "U1")
    if pa.types.is_boolean(typ):
        return uniq.cast(pa.int64()).to_numpy(zero_copy_only=False)
    if pa.types.is_integer(typ):
        values = uniq.to_numpy(zero_copy_only=False)
        if whole is False or (values.dtype == np.uint64 and len(values)
                              and values.max() > np.iinfo(np.int64).max):
            # beyond int64: its text, still one label per id; so too in a streamed batch
            # whose ids fit int64 when another batch's did not (whole=False, text levels)
            return values.astype(str)
        return values.astype(np.int64)
    if pa.types.is_floating(typ):
        values = uniq.to_numpy(zero_copy_only=False).astype(float)
        nan = np.isnan(values)
        if nan.any():
            full = arr.to_numpy(zero_copy_only=False).astype(float)
            row = int(np.flatnonzero(np.isnan(full))[0])
            raise missing_household_id(name, offset + row + 1)
        bad = ~np.isfinite(values) | (values != np.round(values))
        if bad.any():
            value = float(values[bad][0])
            row = offset + _row(arr, pa.scalar(value, typ)) + 1
            raise InputError(f"household column {name!r}: the id {value!r} at row {row} is "
                             "not a whole number; give household ids as whole numbers or as "
                             "text")
        return values.astype(np.int64)
    if pa.types.is_nested(typ):
        raise InputError(f"household column {name!r} holds nested values ({typ}), not one "
                         "id per record; give a column of household ids")
    return id_labels(name, pc.cast(uniq, pa.string()), whole=whole, offset=offset)
