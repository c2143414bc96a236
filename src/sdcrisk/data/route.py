"""In memory or streamed: how a file reaches its CellTable (issue 20).

:func:`tabulate_path` reads a file in memory (:func:`sdcrisk.data.table.tabulate_source`)
unless that would need more than the memory limit, or the path is a folder of Parquet parts;
then it streams it (:func:`sdcrisk.data.outofcore.tabulate_file`). :func:`in_memory_bytes`
is the estimate it goes by.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..exceptions import InputError
from . import outofcore
from ._fold import Fold
from .io import named_file
from .table import DEFAULT_MAX_LEVELS, CellTable

__all__ = ["tabulate_path", "needs_out_of_core", "in_memory_bytes"]



#: bytes a record costs the in-memory path beyond its raw key values: the int32 cell id
#: that becomes the record map, one key's codes and the coding blocks
_IN_MEMORY_RECORD_BYTES = 8
_CSV_ROW_SAMPLE = 1 << 20
#: extra bytes a record when the key space needs int64 ids found by sorting (K >= 2^31)
_SORTED_RECORD_BYTES = 28
#: ... and from _RANKED_FROM records, where the ids are folded into ranks and counted in
#: one int32 table of at most two slots a record (sdcrisk.data._fold.Fold)
_RANKED_RECORD_BYTES = 8
_RANKED_FROM = Fold.RANKS_FROM_RECORDS


def in_memory_bytes(path: str | os.PathLike, keys: Sequence[str],
                    others: Sequence[str] = ()) -> int | None:
    """Bytes :func:`sdcrisk.data.table.tabulate_source` needs for ``keys`` (and the
    ``others`` columns: weights, household) of a file.

    A Parquet file is read one column at a time: the widest column twice (Arrow's and
    NumPy's copy; text counts 16 bytes a value) plus 8 bytes a record, plus 28 when the
    key space (bounded from the column statistics) reaches 2^31 cells and the int64 cell
    ids are sorted (8 from 2^20 records, whose ids are folded into ranks instead). A CSV
    file is parsed whole: 8 bytes a record per column plus the same 8; its record count is
    estimated from the first MiB (compressed files count five times their size). None for
    what is not a file (a folder is streamed) and for Excel files (never streamed); a
    mu-Argus file's estimate is that of its reader (:func:`_muargus_bytes`).
    """
    import pyarrow.parquet as pq

    columns = list(keys) + list(others)
    special = named_file(path)
    if special == "muargus":
        return _muargus_bytes(path, columns)
    p = Path(path)
    if not p.is_file() or special is not None:  # Excel: read whole
        return None
    if p.suffix.lower() in (".parquet", ".pq"):
        try:
            meta = pq.ParquetFile(p)
        except Exception:  # noqa: BLE001 - unreadable: the reader reports it properly
            return None
        schema = meta.schema_arrow
        if any(schema.names.count(c) > 1 for c in columns):
            return None  # a repeated name (schema.field raised KeyError): the reader names it
        widths = [_value_bytes(schema.field(c).type) for c in columns if c in schema.names]
        rows = meta.metadata.num_rows
        per_record = 2 * max(widths, default=8) + _IN_MEMORY_RECORD_BYTES
        if _key_space_bound(meta, keys) >= (1 << 31):
            # int64 ids, found by sorting: the ids, the sort's permutation and sorted copy,
            # and the inverse (8 bytes each); from 2^20 records ranks instead, and a dense
            # int32 table of up to two slots a record (10^8 x 10 keys: 2.0 GiB, 5.4 sorted)
            per_record += (_RANKED_RECORD_BYTES if rows >= _RANKED_FROM
                           else _SORTED_RECORD_BYTES)
        return rows * per_record
    size = p.stat().st_size
    compressed = p.suffix.lower() in (".gz", ".bz2", ".zst", ".lz4", ".xz")
    try:
        with open(p, "rb") as fh:
            head = fh.read(_CSV_ROW_SAMPLE) if not compressed else b""
    except OSError:  # unreadable (no permission): the reader reports it, naming the file
        return None
    lines = max(head.count(b"\n"), 1)
    rows = (5 * size) // 8 if compressed else size * lines // max(len(head), 1)
    return rows * (8 * len(columns) + _IN_MEMORY_RECORD_BYTES)


def _muargus_bytes(path: str | os.PathLike, columns: Sequence[str]) -> int | None:
    """Bytes :func:`sdcrisk.data.asc.read` needs: the raw values of every column (fixed
    format: its width rounded up to 1, 2, 4 or 8 bytes; free format: 8 bytes a value), then
    a column's lookup (4 bytes a record) and each column's values (2 bytes a record for a
    column of width 4 or less, read as small integers, else 4 bytes a character, read as
    text), plus 8 bytes a record; the record count estimated from the first MiB of the data
    file. 3e7 records x 8 keys of fixed format: 1.1 GB estimated, 0.77 GiB peak RSS with
    the nb fit (``benchmarks/RESULTS.md``, "mu-Argus at scale")."""
    from .muargus import read_metadata

    try:
        meta = read_metadata(path)
        size = meta.data.stat().st_size
        with open(meta.data, "rb") as fh:
            head = fh.read(_CSV_ROW_SAMPLE)
    except (InputError, OSError):  # the reader reports it, naming the file
        return None
    rows = size * max(head.count(b"\n"), 1) // max(len(head), 1)
    known = {v.name: v for v in meta.variables}
    per_record = 4 + _IN_MEMORY_RECORD_BYTES
    for c in columns:
        if c in known:
            width = known[c].width
            per_record += 8 if meta.separator is not None else \
                next(b for b in (1, 2, 4, 8, width) if b >= width)
            per_record += 2 if width <= 4 else 4 * width
    return rows * per_record


def _key_space_bound(meta, columns: Sequence[str]) -> int:
    """An upper bound on K from the Parquet statistics: max - min + 1 for integer columns
    (plus one for nulls), ``DEFAULT_MAX_LEVELS`` for any other column."""
    import pyarrow as pa

    schema = meta.schema_arrow
    bound = 1
    for c in columns:
        levels = DEFAULT_MAX_LEVELS
        if c in schema.names and pa.types.is_integer(schema.field(c).type):
            j = schema.get_field_index(c)
            lo = hi = None
            nulls = 0
            try:
                for g in range(meta.metadata.num_row_groups):
                    st = meta.metadata.row_group(g).column(j).statistics
                    if st is None or not st.has_min_max:
                        raise ValueError
                    lo = st.min if lo is None else min(lo, st.min)
                    hi = st.max if hi is None else max(hi, st.max)
                    nulls += st.null_count or 0
                if lo is not None:
                    levels = int(hi) - int(lo) + 1 + (nulls > 0)
            except (ValueError, TypeError):
                pass
        bound *= max(levels, 1)
    return bound


def _value_bytes(typ) -> int:
    """Bytes a value of an Arrow type takes in memory (16 for text and other variable widths)."""
    try:
        return max(typ.bit_width // 8, 1)
    except ValueError:
        return 16


def needs_out_of_core(path: str | os.PathLike, keys: Sequence[str], *,
                      weights: str | None = None, household: str | None = None,
                      limit: int | None = None) -> bool:
    """Whether ``path`` should be streamed: a folder of Parquet parts, or a file whose
    in-memory tabulation (:func:`in_memory_bytes`) exceeds the memory limit
    (``limit``, default :func:`sdcrisk.data.sizes.memory_limit`: ``SDCRISK_MEMORY_LIMIT``,
    else 8 GiB)."""
    from .sizes import memory_limit

    p = Path(path)
    if p.is_dir():
        if not any(p.glob("*.parquet")):
            raise InputError(f"{str(path)!r} is a directory with no Parquet parts (*.parquet); "
                             "give a CSV, Parquet, Stata, SAS or SPSS file, or a folder of "
                             "Parquet parts")
        return True
    need = in_memory_bytes(p, keys, [c for c in (weights, household) if c])
    if need is None:
        return False
    budget = memory_limit() if limit is None else int(limit)
    return need > budget


def tabulate_path(path: str | os.PathLike, keys: Sequence[str] | str, *,
                  out_of_core: bool | None = None, **options) -> CellTable:
    """Tabulate a file in memory, or stream it when it would not fit (or when asked).

    ``out_of_core=None`` (default) decides with :func:`needs_out_of_core`: a folder of
    Parquet parts, or a file whose in-memory tabulation needs more than the memory limit
    (``SDCRISK_MEMORY_LIMIT``), goes through :func:`~sdcrisk.data.outofcore.tabulate_file`;
    anything else through :func:`sdcrisk.data.table.tabulate_source`. ``True``/``False``
    force the choice. Both give the same table; ``options`` are those of
    :meth:`sdcrisk.Microdata.from_source`.
    """
    from .table import tabulate_source

    outofcore.check_path(path, "tabulate_path")
    names = [k.strip() for k in keys.split(",") if k.strip()] if isinstance(keys, str) \
        else list(keys)
    if out_of_core is None:
        out_of_core = not str(path).startswith("example:") and needs_out_of_core(
            path, names, weights=options.get("weights"), household=options.get("household"))
    if out_of_core:
        return outofcore.tabulate_file(path, names, **options)
    return tabulate_source(path, names, **options)
