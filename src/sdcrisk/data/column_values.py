"""One column as read: the :class:`Column` type (values and the mask of missing entries),
and the conversion of an Arrow array, a pandas or polars DataFrame's column, or a mapping's
values to it. Every reader of :mod:`sdcrisk.data.io` ends here."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import InputError
from .columns import check_present
from .text import decode_array, decode_text, printable

__all__ = ["Column", "arrow_column", "frame_columns", "object_values", "refuse_nested"]


@dataclass(frozen=True)
class Column:
    """One column: values (NumPy) and the mask of missing entries (None when there are none)."""

    name: str
    values: np.ndarray
    missing: np.ndarray | None
    #: the file held true/false values (read as the codes 0 and 1): a key as any other, but
    #: no weights column (:func:`sdcrisk.data.sizes.boolean_weights`)
    boolean: bool = False


def _value_buffer(arr, dtype: np.dtype) -> np.ndarray:
    """The values of an Arrow integer array without nulls, as a view of its buffer. A slice
    of an array (a sliced or concatenated table, a frame's chunk) starts ``arr.offset``
    values into the buffer: numpy's offset is in bytes, and taking it as a count of values
    read other records' bytes (codes 768, 1024 for 5, 6 from two slices of an int16
    column, without a word)."""
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr),
                         offset=arr.offset * dtype.itemsize)

def _column(name: str, values: np.ndarray, missing: np.ndarray | None) -> Column:
    """A Column of ``values``; true/false values as 0 and 1 (``boolean``, which the weights
    check refuses), alike from an Arrow table, a frame or a mapping."""
    if values.dtype.kind == "b":
        return Column(name, values.astype(np.int8), missing, boolean=True)
    return Column(name, values, missing)


def arrow_column(name: str, chunked) -> Column:
    import pyarrow as pa

    if (isinstance(chunked, pa.ChunkedArray) and pa.types.is_integer(chunked.type)
            and chunked.null_count == 0 and chunked.num_chunks > 1):
        # the chunks' value buffers copied once into one array (combine_chunks and then a
        # copy would hold the column twice)
        dtype = np.dtype(chunked.type.to_pandas_dtype())
        values = np.concatenate([_value_buffer(c, dtype) for c in chunked.chunks])
        return Column(name, values, None)
    arr = chunked.combine_chunks() if isinstance(chunked, pa.ChunkedArray) else chunked
    if pa.types.is_nested(arr.type):
        # a list, struct or map per record: no category to count (the cast to text below
        # would fail with pyarrow's ArrowNotImplementedError)
        raise InputError(f"column {name!r} holds nested values ({printable(str(arr.type), 60)}),"
                         " not one value per record; give a column of categories, or flatten "
                         "it (one column per element) before reading")
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    missing = None
    if arr.null_count:
        missing = arr.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_integer(arr.type) and missing is None:
        # the values buffer as is: Array.to_numpy would import pandas (~0.3 s)
        values = _value_buffer(arr, np.dtype(arr.type.to_pandas_dtype())).copy()
    elif pa.types.is_integer(arr.type) or pa.types.is_boolean(arr.type):
        # a boolean column's nulls are filled with False (pyarrow refuses 0 as a boolean)
        fill = False if pa.types.is_boolean(arr.type) else 0
        values = (arr.fill_null(fill) if missing is not None else arr).to_numpy(
            zero_copy_only=False)
        if values.dtype == bool:
            return _column(name, values, missing)
    elif pa.types.is_floating(arr.type):
        values = arr.to_numpy(zero_copy_only=False).astype(float)
        nan = np.isnan(values)
        if nan.any():
            missing = nan if missing is None else (missing | nan)
    elif pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        # text that is not UTF-8 (pyarrow reads it as bytes): each value decoded by
        # text.decode_text (UTF-8, else Windows-1252, else Latin-1), so that a Windows export
        # tabulates as it is and its labels print as written
        values = decode_array(arr).fill_null("").to_numpy(zero_copy_only=False).astype(str)
    else:
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            import pyarrow.compute as pc  # ~0.1 s to import: only for non-text columns here

            arr = pc.cast(arr, pa.string())
        values = arr.fill_null("").to_numpy(zero_copy_only=False).astype(str)
    return Column(name, values, missing)


def frame_columns(source: Any, columns: Sequence[str]) -> dict[str, Column] | None:
    """The named columns of a pandas or polars DataFrame, a pyarrow Table or a mapping of
    name to values; None for any other source (a path: the readers of
    :mod:`sdcrisk.data.io`)."""
    module = type(source).__module__.split(".")[0]
    if module == "pandas":
        if not hasattr(source, "columns"):  # a Series, an Index...
            return None
        check_present(columns, [str(c) for c in source.columns], "data frame")
        # columns are named by their text (keys are strings): a frame whose labels are
        # numbers (pd.DataFrame(array)) is read by the label that prints as the name
        label = {str(c): c for c in source.columns}
        out = {}
        for name in columns:
            series = source[label[name]]
            missing = series.isna().to_numpy()
            if str(series.dtype) == "category":
                series = series.astype(object)
            exact = getattr(series.dtype, "numpy_dtype", None)
            if exact is not None and exact.kind in "iub":
                # a nullable (Int64, boolean) or Arrow-backed integer or true/false column:
                # to_numpy() of one with a missing value gives float64 (-2^53 - 1 read as
                # -2^53, a UInt64 code past 2^53 refused) or objects (True read as 'True')
                values = series.to_numpy(dtype=exact, na_value=exact.type(0))
            else:
                values = series.to_numpy()
            if values.dtype == object:
                refuse_nested(name, values)
                present = values[~missing]  # numbers read as numbers, as a mapping's: 1
                if present.size and all(  # and 1.0 were the categories '1' and '1.0'
                        isinstance(v, int | float | np.number | np.bool_) for v in present):
                    values = object_values(values, missing)
            if values.dtype == object or str(series.dtype).startswith("string"):
                values = text_values(series.astype(object).to_numpy(), missing)
            elif values.dtype.kind == "f":
                values = values.astype(float)
                # NaN is missing, as in a NumPy column, an Arrow table, a mapping: a nullable
                # (Float64) or Arrow-backed column's isna() tells it from NA and says no
                missing = missing | np.isnan(values)
            elif values.dtype.kind not in "iub":
                values = series.astype(str).to_numpy().astype(str)
            out[name] = _column(name, values, missing if missing.any() else None)
        return out
    if module == "polars":
        if not hasattr(source, "get_column"):  # a LazyFrame: nothing is computed yet
            raise InputError(f"unsupported data source of type {type(source).__name__}; "
                             "collect it first (lazy_frame.collect()) and give the DataFrame")
        check_present(columns, list(source.columns), "data frame")
        return {n: arrow_column(n, source.get_column(n).to_arrow()) for n in columns}
    if module == "pyarrow":
        check_present(columns, list(source.column_names), "table")
        return {n: arrow_column(n, source.column(n)) for n in columns}
    if isinstance(source, Mapping):
        check_present(columns, [str(k) for k in source], "mapping")
        out = {}
        for name in columns:
            try:
                values = np.asarray(source[name])
            except ValueError:  # ragged: lists of different lengths per record
                values = np.empty(len(source[name]), dtype=object)
                for i, v in enumerate(source[name]):
                    values[i] = v
            if values.dtype.kind == "f" and np.any(np.abs(values) >= 2.0**63):
                # a list of integers one of which is past int64: NumPy made it float64,
                # digits lost (2^63 + 1 read as 2^63); read as objects, exact
                values = np.array(source[name], dtype=object)
            if values.dtype.kind == "S":  # bytes: decoded as text below, as Arrow's are
                values = values.astype(object)
            if values.ndim != 1:
                raise InputError(f"mapping: {name!r} is not a column (a 1-d sequence of "
                                 f"values) but {printable(repr(source[name]), 60)}")
            missing = None
            if values.dtype.kind == "f":
                nan = np.isnan(values)
                missing = nan if nan.any() else None
            elif values.dtype == object:
                refuse_nested(name, values)
                miss = np.array([v is None or (isinstance(v, float) and v != v) for v in values])
                missing = miss if miss.any() else None
                values = object_values(values, miss)
            out[name] = _column(name, values, missing)
        return out
    return None


#: kinds of pandas.api.types.infer_dtype that hold no list, tuple, set, dict or array
_FLAT = frozenset({"string", "bytes", "empty", "integer", "floating", "mixed-integer-float",
                   "boolean", "decimal"})


def refuse_nested(name: str, values: np.ndarray) -> None:
    """Refuse an object column holding a list, tuple, set, dict or array per record, as
    :func:`arrow_column` refuses arrow's nested types: there is no category to count (the
    conversion to text would fail with numpy's ValueError, or count each dict's repr)."""
    pandas = sys.modules.get("pandas")
    if pandas is not None and pandas.api.types.infer_dtype(values, skipna=True) in _FLAT:
        return  # pandas' scan in C: text or numbers throughout (5x faster than the loop)
    nested = next((v for v in values if isinstance(v, list | tuple | set | dict | np.ndarray)),
                  None)
    if nested is not None:
        raise InputError(f"column {name!r} holds nested values (e.g. "
                         f"{printable(repr(nested), 40)}), not one value per record; give a "
                         "column of categories, or flatten it (one column per element) "
                         "before reading")


def object_values(values: np.ndarray, miss: np.ndarray) -> np.ndarray:
    """An object array with missing entries as bool, int, float or str (numbers stay
    numbers; true/false values, read as 0/1 from every source, are not the texts
    'True'/'False')."""
    present = [v for v, m in zip(values, miss, strict=True) if not m]
    if present and all(isinstance(v, bool | np.bool_) for v in present):
        return np.array([not m and bool(v) for v, m in zip(values, miss, strict=True)])
    if present and all(isinstance(v, int | np.integer) for v in present):
        ints = [0 if m else int(v) for v, m in zip(values, miss, strict=True)]
        for dtype in (np.int64, np.uint64):  # codes past int64 (a UInt64 column) as uint64
            try:
                return np.array(ints, dtype=dtype)
            except OverflowError:
                continue
        return text_values(values, miss)  # past both (2^64 and -1): exact text
    if present and all(isinstance(v, int | float | np.number) for v in present):
        return np.array([np.nan if m else float(v) for v, m in zip(values, miss, strict=True)])
    return text_values(values, miss)


def text_values(values: np.ndarray, miss: np.ndarray) -> np.ndarray:
    """Objects as text, missing entries ''. Bytes are decoded as an Arrow binary column's
    values are (:func:`~sdcrisk.data.text.decode_text`: UTF-8, else Windows-1252, else
    Latin-1), not as ASCII: NumPy's astype(str) raised UnicodeDecodeError on b'caf\\xc3\\xa9'
    (a frame from pandas.read_sas holds bytes), which a polars or Arrow column reads as
    'café'."""
    text = np.where(miss, "", values)
    try:
        return text.astype(str)
    except UnicodeDecodeError:
        return np.array([decode_text(v) if isinstance(v, bytes) else str(v) for v in text])
