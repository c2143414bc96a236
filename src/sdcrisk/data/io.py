"""Files and frames in: the only module that knows file formats and DataFrame libraries.

Sources accepted by :func:`read_columns`:

* a path to a CSV file (``.csv``, ``.txt``, ``.tsv``; gzip/bz2/zstd compressed by extension) or a
  Parquet file (``.parquet``, ``.pq``), read with pyarrow and only the needed columns;
* ``example:NAME`` for a bundled dataset (see :mod:`sdcrisk.data.datasets`);
* a pandas or polars DataFrame, a pyarrow Table, or a mapping of column name to array.

Each column comes back as a NumPy array plus a boolean mask of missing values (or ``None``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import InputError

__all__ = ["Column", "iter_columns", "read_columns", "source_name"]

_PARQUET = (".parquet", ".pq")
_COMPRESSED = (".gz", ".bz2", ".zst", ".lz4")


@dataclass(frozen=True)
class Column:
    """One column: values (NumPy) and the mask of missing entries (None when there are none)."""

    name: str
    values: np.ndarray
    missing: np.ndarray | None


def source_name(source: Any) -> str:
    """A short, non-identifying description of a source for provenance."""
    if isinstance(source, str | os.PathLike):
        return Path(source).name if not str(source).startswith("example:") else str(source)
    return type(source).__module__.split(".")[0] + "." + type(source).__name__


def _resolve_path(source: str | os.PathLike) -> Path:
    text = str(source)
    if text.startswith("example:"):
        from .datasets import example_path

        return example_path(text.split(":", 1)[1])
    path = Path(text)
    if not path.exists():
        raise InputError(f"file not found: {text!r}")
    if path.is_dir():
        raise InputError(f"{text!r} is a directory; give a CSV or Parquet file")
    return path


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in _PARQUET


def _read_arrow(path: Path, columns: Sequence[str]):
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    try:
        if _is_parquet(path):
            schema_names = pq.read_schema(path).names
            check_present(columns, schema_names, path.name)
            if path.is_file():  # ParquetFile: no pyarrow.dataset (which imports pandas)
                return pq.ParquetFile(path).read(columns=list(columns))
            return pq.read_table(path, columns=list(columns))
        suffixes = [s.lower() for s in path.suffixes]
        delimiter = "\t" if ".tsv" in suffixes else ","
        if path.stat().st_size == 0:
            raise InputError(f"{path.name}: the file is empty")
        header = _csv_header(path, delimiter)
        check_present(columns, header, path.name)
        convert = pacsv.ConvertOptions(
            include_columns=list(columns),
            null_values=["", "NA", "N/A", "NaN", "nan", "null", "NULL", "None"],
            strings_can_be_null=True,
        )
        return pacsv.read_csv(
            path,
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=convert,
        )
    except InputError:
        raise
    except (pa.ArrowInvalid, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{path.name}: could not be read ({first})") from exc


def _csv_header(path: Path, delimiter: str) -> list[str]:
    import pyarrow.csv as pacsv

    opts = pacsv.ReadOptions(block_size=1 << 16)
    try:
        reader = pacsv.open_csv(
            path, read_options=opts, parse_options=pacsv.ParseOptions(delimiter=delimiter)
        )
    except Exception as exc:  # empty files and garbage end up here
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "Empty CSV file" in msg or "empty" in msg.lower():
            raise InputError(f"{path.name}: the file is empty") from exc
        raise InputError(f"{path.name}: could not be read as CSV ({msg})") from exc
    return list(reader.schema.names)


def check_present(columns: Sequence[str], available: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in available]
    if missing:
        shown = ", ".join(map(repr, list(available)[:20]))
        more = "" if len(available) <= 20 else f" (+{len(available) - 20} more)"
        raise InputError(f"{what}: missing column {missing[0]!r}; available columns: {shown}{more}")


def arrow_column(name: str, chunked) -> Column:
    import pyarrow as pa

    if (isinstance(chunked, pa.ChunkedArray) and pa.types.is_integer(chunked.type)
            and chunked.null_count == 0 and chunked.num_chunks > 1):
        # the chunks' value buffers copied once into one array (combine_chunks and then a
        # copy would hold the column twice)
        dtype = np.dtype(chunked.type.to_pandas_dtype())
        values = np.concatenate([
            np.frombuffer(c.buffers()[1], dtype=dtype, count=len(c), offset=c.offset)
            for c in chunked.chunks])
        return Column(name, values, None)
    arr = chunked.combine_chunks() if isinstance(chunked, pa.ChunkedArray) else chunked
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    missing = None
    if arr.null_count:
        missing = arr.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_integer(arr.type) and missing is None:
        # the values buffer as is: Array.to_numpy would import pandas (~0.3 s)
        values = np.frombuffer(arr.buffers()[1], dtype=np.dtype(arr.type.to_pandas_dtype()),
                               count=len(arr), offset=arr.offset).copy()
    elif pa.types.is_integer(arr.type) or pa.types.is_boolean(arr.type):
        values = (arr.fill_null(0) if missing is not None else arr).to_numpy(zero_copy_only=False)
        if values.dtype == bool:
            values = values.astype(np.int8)
    elif pa.types.is_floating(arr.type):
        values = arr.to_numpy(zero_copy_only=False).astype(float)
        nan = np.isnan(values)
        if nan.any():
            missing = nan if missing is None else (missing | nan)
    else:
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            import pyarrow.compute as pc  # ~0.1 s to import: only for non-text columns here

            arr = pc.cast(arr, pa.string())
        values = arr.fill_null("").to_numpy(zero_copy_only=False).astype(str)
    return Column(name, values, missing)


def _frame_columns(source: Any, columns: Sequence[str]) -> dict[str, Column] | None:
    module = type(source).__module__.split(".")[0]
    if module == "pandas":
        check_present(columns, [str(c) for c in source.columns], "data frame")
        out = {}
        for name in columns:
            series = source[name]
            missing = series.isna().to_numpy()
            if str(series.dtype) == "category":
                series = series.astype(object)
            values = series.to_numpy()
            if values.dtype == object or str(series.dtype).startswith("string"):
                values = np.where(missing, "", series.astype(object).to_numpy()).astype(str)
            elif values.dtype.kind == "f":
                values = values.astype(float)
            elif values.dtype.kind == "b":
                values = values.astype(np.int8)
            elif values.dtype.kind not in "iu":
                values = series.astype(str).to_numpy().astype(str)
            out[name] = Column(name, values, missing if missing.any() else None)
        return out
    if module == "polars":
        check_present(columns, list(source.columns), "data frame")
        return {n: arrow_column(n, source.get_column(n).to_arrow()) for n in columns}
    if module == "pyarrow":
        check_present(columns, list(source.column_names), "table")
        return {n: arrow_column(n, source.column(n)) for n in columns}
    if isinstance(source, Mapping):
        check_present(columns, [str(k) for k in source], "mapping")
        out = {}
        for name in columns:
            values = np.asarray(source[name])
            missing = None
            if values.dtype.kind == "f":
                nan = np.isnan(values)
                missing = nan if nan.any() else None
            elif values.dtype == object:
                miss = np.array([v is None or (isinstance(v, float) and v != v) for v in values])
                missing = miss if miss.any() else None
                values = _object_values(values, miss)
            out[name] = Column(name, values, missing)
        return out
    return None


def _object_values(values: np.ndarray, miss: np.ndarray) -> np.ndarray:
    """An object array with missing entries as int, float or str (numbers stay numbers)."""
    present = [v for v, m in zip(values, miss, strict=True) if not m]
    if present and all(isinstance(v, int | np.integer) for v in present):
        return np.array([0 if m else int(v) for v, m in zip(values, miss, strict=True)],
                        dtype=np.int64)
    if present and all(isinstance(v, int | float | np.number) for v in present):
        return np.array([np.nan if m else float(v) for v, m in zip(values, miss, strict=True)])
    return np.where(miss, "", values).astype(str)


def read_columns(source: Any, columns: Sequence[str]) -> tuple[dict[str, Column], int]:
    """Read the named columns of a file or frame.

    Returns
    -------
    columns : dict of :class:`Column`
    n_rows : int

    Raises
    ------
    InputError
        Missing file or column, unreadable or empty file.
    """
    columns = list(dict.fromkeys(columns))
    if isinstance(source, str | os.PathLike):
        path = _resolve_path(source)
        table = _read_arrow(path, columns)
        out = {name: arrow_column(name, table.column(name)) for name in columns}
        n_rows = table.num_rows
    else:
        out = _frame_columns(source, columns)
        if out is None:
            raise InputError(
                f"unsupported data source of type {type(source).__name__}; give a CSV/Parquet "
                "path, a pandas or polars DataFrame, a pyarrow Table or a dict of arrays"
            )
        lengths = {len(c.values) for c in out.values()}
        if len(lengths) > 1:
            raise InputError(f"columns have different lengths: {sorted(lengths)}")
        n_rows = lengths.pop() if lengths else 0
    return out, n_rows


def iter_columns(source: Any, columns: Sequence[str]) -> tuple[int, Iterator[Column]]:
    """The named columns one at a time, each released once the caller moves on.

    A Parquet file is read column by column (only one column's values are in memory at a
    time); any other source is read as by :func:`read_columns` and its Arrow columns are
    converted and dropped one after the other. Errors (missing file or column, unreadable
    file) are raised here, before the first column is yielded.

    Returns
    -------
    n_rows : int
    columns : iterator of :class:`Column`, in the order of ``columns``
    """
    columns = list(dict.fromkeys(columns))
    if not isinstance(source, str | os.PathLike):
        out, n_rows = read_columns(source, columns)
        return n_rows, (out.pop(name) for name in columns)
    path = _resolve_path(source)
    if _is_parquet(path) and path.is_file():
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            parquet = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InputError(f"{path.name}: could not be read ({first})") from exc
        check_present(columns, parquet.schema_arrow.names, path.name)

        def parquet_columns() -> Iterator[Column]:
            for name in columns:
                try:
                    chunked = parquet.read(columns=[name]).column(0)
                except (pa.ArrowInvalid, OSError) as exc:
                    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    raise InputError(f"{path.name}: could not be read ({first})") from exc
                column = arrow_column(name, chunked)
                del chunked
                # hand the decoded pages back: Arrow's allocator would keep them (0.2 GB
                # of resident memory at 3e7 records, issue 20)
                pa.default_memory_pool().release_unused()
                yield column
                del column

        return parquet.metadata.num_rows, parquet_columns()
    table = _read_arrow(path, columns)
    arrays = {name: table.column(name) for name in columns}
    n_rows = table.num_rows
    del table
    return n_rows, (arrow_column(name, arrays.pop(name)) for name in columns)
