"""Out-of-core tabulation: a CSV or Parquet file larger than memory, by key cells.

:func:`tabulate_file` streams the file in record batches with ``pyarrow.dataset`` and never
holds more than one batch of records:

1. *Pass 1* groups each batch by the raw key values (Arrow's multithreaded hash
   aggregation: count, and with weights the sums of w and 1/w) and merges the partial
   aggregates whenever the unmerged ones outgrow the merged table (so the merging work stays
   linear in the records). What stays in memory is one row per
   distinct key combination - the observed cells - whatever the number of records.
2. The distinct combinations are coded exactly as :meth:`Microdata.from_source` codes the
   records (the same :func:`sdcrisk.data._cells.encode_column` on the same set of distinct
   values), so levels, their order and the cell order are those of the in-memory path.
3. *Pass 2* reads the keys again and writes each
   record's cell index into a memory-mapped file: the record -> cell map that record-level
   risk needs, 4 bytes a record on disk instead of in memory.

With a household column, pass 1 also collects the distinct household ids (one value a
household: household risk needs an array over households anyway) and pass 2 writes each
record's household code - the rank of its id, as the in-memory path codes it - into a second
memory-mapped file (8 bytes a record, the in-memory path's int64).

The result is the same :class:`~sdcrisk.data.table.CellTable` as
``tabulate(Microdata.from_source(path, keys, ...))`` - equal counts, cell codes, levels and
record map; weight sums equal up to floating-point summation order.

Why an entry point and not ``Microdata.from_source(..., out_of_core=True)``: a Microdata holds
n-long code arrays by design (sampling, subsets, evaluation need them), which is exactly what
does not fit; the out-of-core path goes from the file straight to the CellTable.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..exceptions import InputError, ParameterError
from . import _cells
from .column_values import arrow_column
from .columns import check_present
from .csvstream import (
    NotUtf8,
    csv_dataset,
    csv_error,
    keys_as_bytes,
    typed_column,
)
from .duckdb_engine import COUNT, ISUM, WSUM, group_parquet, group_stream
from .ids import distinct_labels, id_labels, merge_labels
from .io import detect_format, named_file, not_found
from .repeated_header import could_be_header, find_repeated_header
from .sizes import (
    boolean_weights,
    check_weight_values,
    missing_weight,
    resolve_population_size,
    short_repr,
)
from .table import DEFAULT_MAX_LEVELS, CellTable, check_keys, check_level_keys
from .text import decimal_comma_weights, decode_array, printable

__all__ = ["tabulate_file", "check_stream_options", "check_path", "PartCounts", "CellPlan",
           "count_part", "plan_cells", "part_record_cells"]

RecordCell = Literal["memmap", "memory"]


def _dataset(path: Path, columns: Sequence[str], weights: str | None,
             text: Sequence[str | None] = (), as_bytes: bool | None = None):
    """The dataset to stream and whether its columns are text to type (CSV, mu-Argus).

    ``text``: the columns other than keys (weights, household ids), which a mu-Argus
    file gives as text; its keys come as raw values (:class:`sdcrisk.data.asc.Stream`).
    ``as_bytes``: read a CSV's key columns as bytes (:func:`~.csvstream.csv_dataset`).
    """
    import pyarrow as pa
    import pyarrow.dataset as ds

    if named_file(path) == "muargus":
        from .asc import Stream
        from .muargus import read_metadata

        meta = read_metadata(path)
        check_present(columns, meta.names, meta.path.name)
        return Stream(meta, text=[c for c in text if c]), True
    kind, compression = ("parquet", None) if path.is_dir() else detect_format(path)
    if kind not in ("csv", "parquet"):
        raise InputError(f"{path.name}: the out-of-core reader streams CSV, Parquet and "
                         f"mu-Argus files; read this {kind} file without --out-of-core "
                         "(in memory)")
    ext = {"gzip": ".gz", "bz2": ".bz2", "zstd": ".zst", "lz4": ".lz4"}.get(compression or "")
    if ext and not path.name.lower().endswith(ext):
        raise InputError(f"{path.name}: the file holds {compression}-compressed data but its "
                         f"name does not end in {ext}; the streaming reader decompresses by "
                         f"name: rename it to {path.name}{ext}, or read it without "
                         "--out-of-core")
    parquet = kind == "parquet"
    if parquet:
        try:
            data = ds.dataset(str(path), format="parquet")
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(f"{path.name}: could not be read as Parquet "
                             f"({printable(str(exc))})") from exc
        check_present(columns, data.schema.names, path.name)
        if path.is_dir():
            _check_parts(path, data.files, [c for c in columns if c])
        return data, False
    return csv_dataset(path, compression, columns, weights, as_bytes)


def _count_csv(path: Path, data, keys, weights, household, missing, batch_rows):
    """Pass 1 of a CSV (:func:`_count`), and the dataset pass 2 must read: when a key value
    past the first block is not UTF-8, the file is read again with its keys as bytes
    (decoded as in memory, :func:`~.csvstream.typed_column`).

    A header line repeated among the records is refused (:mod:`.repeated_header`): looked
    for in the file when a key combination is the keys' own names, or when the records
    could not be read (the header's text in the weights column is no number)."""
    compression = detect_format(path)[1]
    try:
        counted = _count_csv_once(path, data, keys, weights, household, missing, batch_rows)
    except InputError as exc:
        error = None if isinstance(exc, NotUtf8) else find_repeated_header(path, compression)
        if error is not None:
            raise error from exc
        raise
    combos = counted[0].combos
    if combos is not None and could_be_header({k: combos.column(k) for k in keys},
                                              data.schema.names[0]):
        error = find_repeated_header(path, compression)
        if error is not None:
            raise error
    return counted


def _count_csv_once(path: Path, data, keys, weights, household, missing, batch_rows):
    try:
        return _count(data, keys, weights, household, missing, batch_rows, True), data
    except NotUtf8:
        if keys_as_bytes(data, keys):
            raise
    columns = list(keys) + [c for c in (weights, household) if c]
    data, _ = _dataset(path, columns, weights, (weights, household), as_bytes=True)
    return _count(data, keys, weights, household, missing, batch_rows, True), data


def _check_parts(folder: Path, files: Sequence[str], columns: Sequence[str]) -> None:
    """Every Parquet part of ``folder`` holds ``columns``: the dataset takes its schema from
    the first part and reads a column absent from another part as nulls, which would count
    as missing key values without a word. Reads each part's footer only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for file in files[1:]:
        try:
            names = pq.read_schema(file).names
        except (pa.ArrowInvalid, OSError):
            continue  # a damaged part: the batch reader names it
        absent = [c for c in columns if c not in names]
        if absent:
            raise InputError(f"{folder.name}: the part {Path(file).name} has no column "
                             f"{absent[0]!r}; the parts of a folder must share one schema "
                             "(the same columns, of the same types)")


def _prepare(arr):
    """Dictionary columns decoded, NaN as null (both are missing on the in-memory path),
    -0.0 as 0.0: DuckDB's pass 1 groups the two as one value, whose sign it picks, and
    pass 2's lookup tells them apart ("a value not seen in the first pass")."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    if pa.types.is_floating(arr.type):
        arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type),
                         pc.if_else(pc.equal(arr, 0), pa.scalar(0, arr.type), arr))
    return arr


def _group(table, keys: Sequence[str], sums: Sequence[str]):
    import pyarrow as pa

    agg = table.group_by(list(keys), use_threads=True).aggregate(
        [(c, "sum") for c in sums])
    names = [f"{c}_sum" for c in sums]
    return agg.select(list(keys) + names).rename_columns(list(keys) + list(sums)) \
        if names else pa.table({k: agg.column(k) for k in keys})


def _batches(data, columns: Sequence[str], batch_rows: int):
    """The dataset's record batches as tables. A CSV value that pyarrow cannot convert past
    its first block (which typed the columns) surfaces here, not when the dataset opens."""
    import pyarrow as pa

    try:
        for batch in data.to_batches(columns=list(columns), batch_size=batch_rows):
            if batch.num_rows:
                yield pa.Table.from_batches([batch])
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:  # OSError: truncated
        import pyarrow.dataset as ds

        files = getattr(data, "files", None) or [""]
        if isinstance(getattr(data, "format", None), ds.CsvFileFormat):
            raise csv_error(Path(files[0]).name, data.schema.names, exc) from exc
        # a folder of Parquet parts typed apart (the first part's schema types the rest), or
        # a damaged part
        where = Path(files[0]).parent.name if len(files) > 1 else Path(files[0]).name
        parts = ("; the parts of a folder must share one schema (the same columns, of the "
                 "same types)") if len(files) > 1 and "Could not open" not in str(exc) else ""
        raise InputError(f"{where}: could not be read as Parquet ({printable(str(exc))})"
                         f"{parts}") from exc


def _check_weights(name: str, w, offset: int) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if w.null_count:
        row = offset + int(np.flatnonzero(w.is_null().to_numpy(zero_copy_only=False))[0])
        raise missing_weight(name, row + 1)
    if pa.types.is_binary(w.type):  # a CSV that is not UTF-8: the values as in memory
        w = decode_array(w)
    if pa.types.is_string(w.type) or pa.types.is_large_string(w.type):
        # a CSV not separated by commas: text, with a decimal point or comma
        try:
            values = pc.cast(w, pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            values = decimal_comma_weights(name, w)
    elif pa.types.is_boolean(w.type):
        raise boolean_weights(name)
    elif not (pa.types.is_integer(w.type) or pa.types.is_floating(w.type)
              or pa.types.is_decimal(w.type)):  # a database's DECIMAL(6, 2): numbers
        raise InputError(f"weights column {name!r} is not numeric (type {w.type})")
    else:
        values = pc.cast(w, pa.float64()).to_numpy(zero_copy_only=False)
    return check_weight_values(name, values, offset)


def check_path(path, function: str) -> Path:
    """``path`` as a Path; ParameterError naming ``function`` unless it is a str or
    os.PathLike (a DataFrame, None, a number, bytes)."""
    if isinstance(path, bytes | bytearray) or not isinstance(path, str | os.PathLike):
        shown = short_repr(path)
        shown = type(path).__name__ + ("" if "\n" in shown else f" {shown}")
        raise ParameterError(
            f"{function}() takes a file path (str or os.PathLike), not {shown}; for data in "
            "memory (a DataFrame, an "
            "Arrow table) use sdcrisk.tabulate_source(data, keys, ...) or "
            "sdcrisk.Microdata.from_source")
    return Path(path)


def check_stream_options(path, keys, levels, missing, engine, batch_rows,
                         function: str = "tabulate_file") -> Path:
    """The options every streaming pass shares, checked once (``keys`` already checked):
    the path as a Path that exists."""
    if missing not in ("category", "error"):
        raise ParameterError(f"missing={missing!r}; use 'category' or 'error'")
    if engine not in ("auto", "duckdb", "pyarrow"):
        raise ParameterError(f"engine={engine!r}; use 'auto', 'duckdb' or 'pyarrow'")
    if isinstance(batch_rows, bool) or int(batch_rows) != batch_rows or batch_rows < 1:
        raise ParameterError(f"batch_rows={batch_rows!r} must be an integer >= 1")
    if levels:
        check_level_keys(levels, keys)
    path = check_path(path, function)
    if not path.exists() and named_file(path) != "muargus":  # FILE.rda::DATA: locate() checks
        raise not_found(str(path))
    return path


def tabulate_file(
    path: str | os.PathLike,
    keys: Sequence[str] | str,
    *,
    weights: str | None = None,
    household: str | None = None,
    population_size: float | None = None,
    sampling_fraction: float | None = None,
    levels: Mapping[str, Sequence] | None = None,
    missing: Literal["category", "error"] = "category",
    max_levels: int | None = DEFAULT_MAX_LEVELS,
    batch_rows: int = 1 << 20,
    record_cell: RecordCell = "memmap",
    workdir: str | os.PathLike | None = None,
    engine: Literal["auto", "duckdb", "pyarrow"] = "auto",
) -> CellTable:
    """Tabulate a CSV/Parquet file, a directory of Parquet files or mu-Argus microdata
    (``FILE.rda``, read by :class:`sdcrisk.data.asc.Stream`) without loading it.

    Parameters
    ----------
    path : path
        ``.csv``/``.tsv`` (optionally compressed), ``.parquet``/``.pq``, or a directory of
        Parquet files (a partitioned dataset).
    keys, weights, household, population_size, sampling_fraction, levels, missing, max_levels
        As for :meth:`sdcrisk.Microdata.from_source`.
    batch_rows : int
        Records per streamed batch (memory: a few batches of the key columns).
    record_cell : {"memmap", "memory"}
        Where the n-long record -> cell map (and the records' household codes) go: a
        memory-mapped temporary file in ``workdir`` (default; the file is unlinked at once and
        its space freed when the table is garbage-collected) or an ordinary array.
    workdir : path, optional
        Directory of the memory-mapped file (default: the system temporary directory).
    engine : {"auto", "duckdb", "pyarrow"}
        Who counts the key combinations (pass 1). ``duckdb``: one ``GROUP BY`` over the
        Parquet file(s), spilling to disk past a memory limit (half of
        :func:`~sdcrisk.data.sizes.memory_limit`); 5x less CPU and 2.5x less memory than
        Arrow's batches on 3e7 records (``benchmarks/bench_engines.py``). ``auto``
        (default) uses it for Parquet input without household ids when the ``duckdb``
        package is installed (``pip install 'sdcrisk[duckdb]'``), else ``pyarrow``, the
        batch-wise hash aggregation. Pass 2 always streams with pyarrow. Same table.

    Returns
    -------
    CellTable
        Equal to ``tabulate(Microdata.from_source(path, keys, ...))``.

    Raises
    ------
    InputError
        As :meth:`Microdata.from_source`; also a file that changed between the two passes.
    ParameterError
        Bad options; a key space of 2^62 cells or more (whose ids are not mixed-radix).

    Notes
    -----
    Memory is O(observed cells + batch), time two streaming passes. CSV key columns are read
    as text and then typed as integers, else true/false, else decimals, else text, like
    pyarrow's reader; unlike it, date-like columns stay text (for household ids only their
    order matters, and it is the same). With ``household``, memory also holds the
    distinct household ids, O(households); each record's household code (the rank of its id
    among the sorted distinct ids, an int64 as in :class:`~sdcrisk.data.table.Microdata`) goes to
    a memory-mapped file like the record map.

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> from sdcrisk import Microdata, tabulate
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "s.csv"
    >>> pd.DataFrame({"a": [1, 2, 2, 3], "b": ["x", "y", "y", "x"]}).to_csv(d, index=False)
    >>> t = tabulate_file(d, ["a", "b"], batch_rows=2)
    >>> t.counts.tolist(), t.n
    ([1, 2, 1], 4)
    """

    keys = check_keys(keys, weights, household)
    if record_cell not in ("memmap", "memory"):
        raise ParameterError(f"record_cell={record_cell!r}; use 'memmap' or 'memory'")
    path = check_stream_options(path, keys, levels, missing, engine, batch_rows)
    columns = list(keys) + [c for c in (weights, household) if c]
    data, is_csv = _dataset(path, columns, weights, (weights, household))
    typer = getattr(data, "values", None)  # a mu-Argus stream types its raw key values
    counted = None
    if engine != "pyarrow" and household is None and typer is not None and weights is None:
        counted = _count_duckdb_stream(data, keys, required=engine == "duckdb")
    elif engine != "pyarrow" and not is_csv and household is None:
        counted = _count_duckdb(path, keys, weights, missing, required=engine == "duckdb")
    if counted is None and is_csv and typer is None:
        counted, data = _count_csv(path, data, keys, weights, household, missing, batch_rows)
    elif counted is None:
        counted = _count(data, keys, weights, household, missing, batch_rows, is_csv)
    n = counted.n
    if n == 0:
        raise InputError(f"{path.name}: no records (the sample is empty)")
    hh_ids = counted.households
    hh_levels, hh_whole = hh_ids.levels() if hh_ids is not None else (None, False)
    plan = _code_combos(counted.combos, keys, is_csv, bool(weights), levels, missing,
                        max_levels, typer)
    del counted

    # pass 2: the record -> cell map ---------------------------------------------------------
    out = _record_map(n, plan.dtype, record_cell, workdir)
    hh_out = None if hh_ids is None else _record_map(n, np.int64, record_cell, workdir)
    pos = _map_records(data, path.name, plan, out, batch_rows, household=household,
                       hh_out=hh_out, hh_levels=hh_levels, hh_whole=hh_whole)
    if pos != n:
        raise InputError(f"{path.name}: the file changed while it was read")
    big_n, how = resolve_population_size(
        n, np.array([plan.weight_total]) if weights else None, population_size,
        sampling_fraction)
    return plan.table(out, hh_out, big_n, how, path.name)


@dataclass(frozen=True)
class PartCounts:
    """Pass 1 over one file (or part): its distinct raw key combinations and their counts.

    ``combos`` is an Arrow table: the key columns as read, a count column and, with weights,
    the sums of w and 1/w. What a cluster worker sends back for one part: a row per observed
    combination, whatever the number of records.
    """

    combos: Any
    n: int
    weight_sum: float
    is_csv: bool
    households: Any = None
    #: types raw key values (a mu-Argus stream's :meth:`~sdcrisk.data.asc.Stream.values`)
    typer: Any = None


def _count_duckdb(path: Path, keys, weights, missing, *, required: bool) -> PartCounts | None:
    """Pass 1 over Parquet as one DuckDB ``GROUP BY`` (:func:`~.duckdb_engine.group_parquet`);
    None when the Arrow pass must do it."""
    import pyarrow as pa

    got = group_parquet(path, keys, weights, missing, required=required)
    if got is None:
        return None
    combos, n, wsum = got
    if combos is not None:  # NaN keys are missing, like null: the Arrow pass nulls them first
        combos = pa.table({c: (_prepare(combos.column(c)) if c in keys else combos.column(c))
                           for c in combos.column_names})
    return PartCounts(combos, n, wsum, False, None)


def _count_duckdb_stream(data, keys, *, required: bool) -> PartCounts | None:
    """Pass 1 of a mu-Argus stream as one DuckDB ``GROUP BY``
    (:func:`~.duckdb_engine.group_stream`); None without duckdb."""
    got = group_stream(data, keys, required=required)
    if got is None:
        return None
    combos, n = got
    return PartCounts(combos, n, 0.0, True, None, data.values)


def _count(data, keys, weights, household, missing, batch_rows, is_csv) -> PartCounts:
    """Pass 1: distinct key combinations with counts (and weight sums) of a dataset."""
    import pyarrow as pa

    columns = list(keys) + [c for c in (weights, household) if c]
    sums = [COUNT] + ([WSUM, ISUM] if weights else [])
    partial, held, merged, n, wsum = [], 0, 0, 0, 0.0
    hh_ids = _DistinctIds(household, 4 * batch_rows) if household else None
    for tbl in _batches(data, columns, batch_rows):
        cols = {k: _prepare(tbl.column(k)) for k in keys}
        if missing == "error":
            for k, arr in cols.items():
                if arr.null_count:
                    row = n + int(np.flatnonzero(arr.is_null().to_numpy(
                        zero_copy_only=False))[0])
                    raise InputError(f"column {k!r} has missing values (first at row "
                                     f"{row + 1}); use missing='category' to treat missing "
                                     "as its own level, or fill them")
        cols[COUNT] = pa.array(np.ones(tbl.num_rows, np.int64))
        if weights:
            w = _check_weights(weights, _prepare(tbl.column(weights)), n)
            wsum += float(w.sum())
            cols[WSUM], cols[ISUM] = pa.array(w), pa.array(1.0 / w)
        if hh_ids is not None:
            hh_ids.add(tbl.column(household), n)
        part = _group(pa.table(cols), keys, sums)
        partial.append(part)
        held += part.num_rows
        n += tbl.num_rows
        # merge once the unmerged partials outgrow the merged part (and a few batches):
        # the merged table at most doubles between merges, so merging stays linear overall
        if len(partial) > 1 and held - merged > max(merged, 4 * batch_rows):
            partial = [_group(pa.concat_tables(partial), keys, sums)]
            held = merged = partial[0].num_rows
    if not partial:
        combos = None
    else:
        combos = _group(pa.concat_tables(partial), keys, sums) if len(partial) > 1 \
            else partial[0]
    return PartCounts(combos, n, wsum, is_csv, hh_ids, getattr(data, "values", None))


def merge_counts(parts: Sequence[PartCounts], keys: Sequence[str], *, weights: bool) -> Any:
    """The combined combinations of several parts' :class:`PartCounts` (an Arrow table)."""
    import pyarrow as pa

    tables = [p.combos for p in parts if p.combos is not None]
    if not tables:
        return None
    sums = [COUNT] + ([WSUM, ISUM] if weights else [])
    if len(tables) == 1:
        return tables[0]
    # parts of a CSV folder may type a column differently: all as text then (as bytes where
    # a part read a key as bytes, not being UTF-8)
    if len({t.schema for t in tables}) > 1:
        raw = {f.name for t in tables for f in t.schema if pa.types.is_binary(f.type)}
        tables = [t.cast(pa.schema([(f.name, pa.binary() if f.name in raw else pa.string())
                                    if f.name in keys else f for f in t.schema]))
                  for t in tables]
    return _group(pa.concat_tables(tables), list(keys), sums)


@dataclass(frozen=True)
class CellPlan:
    """The observed cells of a file, coded as the in-memory path codes records, and what
    pass 2 needs to map a record's raw key values to its cell."""

    keys: tuple
    levels: tuple
    cells: np.ndarray
    counts: np.ndarray
    cell_codes: np.ndarray
    weight_sums: np.ndarray | None
    inclusion_sums: np.ndarray | None
    weight_total: float
    raw_lookup: tuple
    dtype: Any

    @property
    def n_levels(self) -> tuple[int, ...]:
        return tuple(len(x) for x in self.levels)

    def mapper(self) -> CellPlan:
        """This plan without its per-cell figures (what a pass-2 worker needs)."""
        return dataclasses.replace(self, counts=np.zeros(0, np.int64),
                                   cell_codes=np.zeros((0, len(self.keys)), np.int8),
                                   weight_sums=None, inclusion_sums=None)

    def table(self, record_cell, household, population_size, how, source) -> CellTable:
        return CellTable(
            keys=self.keys, levels=self.levels, cell_codes=self.cell_codes,
            counts=self.counts, weight_sums=self.weight_sums, record_cell=record_cell,
            household=household, population_size=population_size,
            population_size_source=how, population=None, source=source,
            inclusion_sums=self.inclusion_sums)


def _code_combos(combos, keys, is_csv, weighted, levels, missing, max_levels,
                 typer=None) -> CellPlan:
    """Code the distinct combinations exactly as the in-memory path codes records.

    ``typer(key, raw)``: the values and missing mask of a key's raw Arrow values, for a
    source whose raw values are not its values (mu-Argus: :meth:`sdcrisk.data.asc.Stream.values`).
    """
    import pyarrow.compute as pc

    codes, lv, raw_lookup = [], [], []
    for k in keys:
        raw = combos.column(k).combine_chunks()
        if typer is not None:
            values, miss = typer(k, raw)
            if miss is not None and missing == "error":  # no row number: records not kept
                many = int(combos.column(COUNT).to_numpy()[miss].sum())
                raise InputError(f"column {k!r} has {many} missing value(s) (blank, or one of "
                                 "its missing codes); use missing='category' to treat missing "
                                 "as its own level, or fill them")
        else:
            col = arrow_column(k, typed_column(raw) if is_csv else raw)
            values, miss = col.values, col.missing
        c, levs = _cells.encode_column(
            k, values, miss, levels=None if not levels or k not in levels
            else levels[k], missing_policy=missing, max_levels=max_levels)
        codes.append(c)
        lv.append(levs)
        uniq = pc.unique(raw)
        code_of = np.zeros(len(uniq), np.int64)
        code_of[pc.index_in(raw, value_set=uniq).to_numpy(zero_copy_only=False)] = c
        raw_lookup.append((uniq, code_of))
    n_levels = tuple(len(x) for x in lv)
    if not _cells.is_mixed_radix(n_levels):
        raise ParameterError(f"the key space K={np.prod(n_levels, dtype=float):.3g} is too "
                             "large for the out-of-core record map (2^62 cells or more); "
                             "use fewer or coarser keys, or tabulate in memory")
    ids, _ = _cells.cell_ids(codes, n_levels)
    cells, inv = np.unique(ids, return_inverse=True)
    inv = inv.ravel()
    m = len(cells)
    counts = np.bincount(inv, weights=combos.column(COUNT).to_numpy(),
                         minlength=m).round().astype(np.int64)
    weight_sums = inclusion_sums = None
    total = 0.0
    if weighted:
        wsum = combos.column(WSUM).to_numpy()
        total = float(wsum.sum())
        weight_sums = np.bincount(inv, weights=wsum, minlength=m)
        inclusion_sums = np.bincount(inv, weights=combos.column(ISUM).to_numpy(), minlength=m)
    cell_codes = _cells.decode_cells(cells, n_levels, np.result_type(*codes))
    return CellPlan(keys=tuple(keys), levels=tuple(lv), cells=cells, counts=counts,
                    cell_codes=cell_codes, weight_sums=weight_sums,
                    inclusion_sums=inclusion_sums, weight_total=total,
                    raw_lookup=tuple(raw_lookup),
                    dtype=np.int32 if m < (1 << 31) else np.int64)


def _map_records(data, name, plan: CellPlan, out, batch_rows, *, household=None,
                 hh_out=None, hh_levels=None, hh_whole=False) -> int:
    """Pass 2: write each record's cell index into ``out``; returns the records read."""
    import pandas as pd
    import pyarrow.compute as pc

    lookup = pd.Index(plan.cells)  # hash lookup: ~3x faster than searchsorted on many cells
    n, pos = len(out), 0
    read = list(plan.keys) + ([household] if household else [])
    for tbl in _batches(data, read, batch_rows):
        batch_codes = []
        for k, (uniq, code_of) in zip(plan.keys, plan.raw_lookup, strict=True):
            idx = pc.index_in(_prepare(tbl.column(k)), value_set=uniq)
            if idx.null_count:
                raise InputError(f"{name}: a value of {k!r} not seen in the first pass; "
                                 "the file changed while it was read")
            batch_codes.append(code_of[idx.to_numpy(zero_copy_only=False)])
        bid, _ = _cells.cell_ids(batch_codes, plan.n_levels)
        where = lookup.get_indexer(bid)
        end = pos + tbl.num_rows
        if end > n or (where < 0).any():
            raise InputError(f"{name}: the file changed while it was read")
        out[pos:end] = where
        if hh_out is not None:
            hh_out[pos:end] = _household_codes(name, household, tbl.column(household),
                                               hh_levels, hh_whole, pos)
        pos = end
    return pos


def count_part(path: str | os.PathLike, keys: Sequence[str], *, weights: str | None = None,
               missing: Literal["category", "error"] = "category",
               batch_rows: int = 1 << 20) -> PartCounts:
    """Pass 1 on one file (a part of a partitioned dataset): :class:`PartCounts`.

    The unit of work a cluster worker runs in :func:`sdcrisk.runtime.tabulate_parts`.
    """
    path = Path(path)
    if not path.exists() and named_file(path) != "muargus":
        raise not_found(str(path))
    keys = tuple(keys)
    data, is_csv = _dataset(path, list(keys) + ([weights] if weights else []), weights,
                            (weights,))
    if hasattr(data, "values") and weights is None:  # a mu-Argus stream
        counted = _count_duckdb_stream(data, keys, required=False)
        if counted is not None:
            return counted
    if is_csv and not hasattr(data, "values"):
        return _count_csv(path, data, keys, weights, None, missing, batch_rows)[0]
    return _count(data, keys, weights, None, missing, batch_rows, is_csv)


def part_record_cells(path: str | os.PathLike, plan: CellPlan, n: int,
                      batch_rows: int = 1 << 20) -> np.ndarray:
    """Pass 2 on one part: the cell index of each of its ``n`` records (``plan.mapper()``)."""
    import pyarrow as pa

    path = Path(path)
    # keys as bytes where pass 1 read them so (a CSV that is not UTF-8): the plan's lookup
    as_bytes = any(pa.types.is_binary(uniq.type) for uniq, _ in plan.raw_lookup)
    data, _ = _dataset(path, list(plan.keys), None, as_bytes=as_bytes or None)
    out = np.empty(n, plan.dtype)
    if _map_records(data, path.name, plan, out, batch_rows) != n:
        raise InputError(f"{path.name}: the file changed while it was read")
    return out


def plan_cells(parts: Sequence[PartCounts], keys: Sequence[str], *, weighted: bool,
               levels: Mapping[str, Sequence] | None = None,
               missing: Literal["category", "error"] = "category",
               max_levels: int | None = DEFAULT_MAX_LEVELS) -> CellPlan:
    """Merge the parts' counts and code the cells as :func:`tabulate_file` does."""
    combos = merge_counts(parts, keys, weights=weighted)
    if combos is None:
        raise InputError("no records (the sample is empty)")
    is_csv = any(p.is_csv for p in parts)
    typer = next((p.typer for p in parts if p.typer is not None), None)
    return _code_combos(combos, tuple(keys), is_csv, weighted, levels, missing, max_levels,
                        typer)


class _DistinctIds:
    """The distinct household id labels of a column (:mod:`sdcrisk.data.ids`), gathered
    batch by batch (pass 1).

    Each batch's distinct labels are kept and merged once the unmerged ones outgrow the
    merged set (and ``slack``), so memory stays O(households + batch) and merging linear
    overall.
    """

    def __init__(self, name: str, slack: int):
        self.name, self.slack = name, slack
        self.parts: list = []
        self.held = self.merged = 0

    def add(self, arr, offset: int) -> None:
        part = distinct_labels(self.name, arr, offset=offset)
        self.parts.append(part)
        self.held += len(part)
        if len(self.parts) > 1 and self.held - self.merged > max(self.merged, self.slack):
            self._merge()

    def _merge(self) -> None:
        self.parts = [merge_labels(self.parts)]
        self.held = self.merged = len(self.parts[0])

    def levels(self) -> tuple[np.ndarray, bool]:
        """The sorted distinct labels, as the in-memory path orders them, and whether they
        are whole numbers (how pass 2 reads each batch's ids)."""
        self._merge()
        levels = self.parts[0]
        self.parts = []
        return levels, levels.dtype.kind in "iu"


def _household_codes(source: str, name: str, column, levels: np.ndarray, whole: bool,
                     offset: int) -> np.ndarray:
    """Each record's household code: the position of its id's label among the sorted
    ``levels`` (labels by the rule of :func:`~sdcrisk.data.ids.id_labels`, as in memory)."""
    values = id_labels(name, column, whole=whole, offset=offset)
    pos = np.searchsorted(levels, values)
    if (pos >= len(levels)).any() or (levels[np.minimum(pos, len(levels) - 1)] != values).any():
        raise InputError(f"{source}: a household id not seen in the first pass; the file "
                         "changed while it was read")
    return pos


def _record_map(n: int, dtype, how: str, workdir) -> np.ndarray:
    if how == "memory":
        return np.empty(n, dtype)
    fd, name = tempfile.mkstemp(prefix="sdcrisk-record-cell-", suffix=".bin",
                                dir=None if workdir is None else str(workdir))
    os.close(fd)
    try:
        mm = np.memmap(name, dtype=dtype, mode="w+", shape=(n,))
    finally:
        try:
            os.unlink(name)  # POSIX: the mapping stays valid, the space goes with it
        except OSError:  # pragma: no cover - Windows keeps the file until unmapped
            pass
    return mm

