"""Whole data frames read from and written to files, with every column (for :mod:`sdcrisk.
analyses.protect`, which changes the key columns of a file and writes it back): CSV, Parquet,
Stata and SPSS (value labels kept), mu-Argus (``.asc`` written back in the input's ``.rda``
layout), SAS and Excel read; the output path checked before any work and written
atomically."""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import InputError, ParameterError
from .io import (
    atomic_path,
    blank_text_as_missing,
    detect_format,
    exact_whole_numbers,
    excel_frame,
    named_file,
    resolve_path,
)
from .muargus import format_records, locate, read_metadata, read_records
from .outputs import check_target, refuse_folder_name
from .repeated_header import could_be_header, find_repeated_header
from .table import Microdata
from .text import (
    NOT_UTF8_READ_AS,
    csv_delimiter,
    decode_text,
    head_bytes,
    names_not_utf8,
    printable,
)

__all__ = ["FORMATS", "read_frame", "write_frame", "output_format", "check_output_path"]

FORMATS = {".csv": "csv", ".csv.gz": "csv", ".txt": "csv", ".tsv": "csv", ".tsv.gz": "csv",
           ".parquet": "parquet",
           ".pq": "parquet", ".dta": "dta", ".sav": "sav", ".asc": "asc"}
#: pyreadstat's reader of each labelled format (as :func:`sdcrisk.data.io.detect_format` names
#: it); the value labels are kept in ``frame.attrs`` and written back to .dta / .sav
_LABELLED = {".dta": "read_dta", ".sav": "read_sav", ".zsav": "read_sav",
             ".sas7bdat": "read_sas7bdat", ".xpt": "read_xport"}



def output_format(path: str | os.PathLike) -> str:
    """``csv``, ``parquet``, ``dta``, ``sav`` or ``asc`` (mu-Argus: the data file, its
    ``.rda`` written beside it) from the file name's extension.

    Raises
    ------
    ParameterError
        Any other extension, naming those accepted.
    """
    name = Path(path).name.lower()
    for ext in sorted(FORMATS, key=len, reverse=True):
        if name.endswith(ext):
            return FORMATS[ext]
    raise ParameterError(f"--out {str(path)!r}: the format comes from the extension; use one "
                         f"of {', '.join(FORMATS)}")


def check_output_path(out: str | os.PathLike, source: Any, *, overwrite: bool = False) -> Path:
    """Refuse, before any work, an output that is the input, exists, or cannot be written.

    Raises
    ------
    ParameterError
        The output is the input file, exists (without ``overwrite``) or has an unknown
        extension; or :func:`~sdcrisk.data.outputs.check_target` refuses it (a folder, a
        device or pipe, a folder that is missing or where no file can be created).
    """
    if isinstance(out, str) and not out.strip():  # Path("") is '.', which it then named
        raise ParameterError("--out is empty; give a file name, e.g. protected.csv")
    refuse_folder_name(str(out), "--out")
    out = Path(out)
    fmt = output_format(out)
    targets = [out] + ([out.with_suffix(".rda")] if fmt == "asc" else [])
    if isinstance(source, str | os.PathLike) and not str(source).startswith("example:"):
        inputs = list(locate(source)) if named_file(source) == "muargus" else [Path(source)]
        for target in targets:
            for src in inputs:
                if src.exists() and (src.resolve() == target.resolve()
                                     or (target.exists() and os.path.samefile(src, target))):
                    what = "is the input file" if target == out else \
                        f"would write {target.name} beside it, which is the input's metadata"
                    raise ParameterError(f"--out {str(out)!r} {what}; protect never "
                                         "overwrites its input: give another file name")
    for target in targets:
        check_target(target, "--out", example="protected" + (out.suffix or ".csv"))
        if target.exists() and not overwrite:
            also = "" if target == out else f" (an .asc output writes its {target.name} too)"
            raise ParameterError(f"--out {str(out)!r}: {str(target)!r} exists{also}; remove "
                                 "it, choose another name or add --overwrite")
    return out


def read_frame(source: Any):
    """The whole file as a pandas DataFrame. CSV cells are kept as their text (so that the
    columns protect does not change are written back byte for byte); compression and format
    are recognised by content, as assess does. Parquet is read with pandas; Stata, SPSS and
    SAS files with pyreadstat, as codes, their value and column labels kept in
    ``frame.attrs`` for :func:`write_frame`. A DataFrame is copied."""
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return source.copy()
    if isinstance(source, Microdata):
        raise ParameterError("protect() takes the records themselves (a path or DataFrame), not "
                             "a Microdata: it changes and writes back the file's values")
    special = named_file(source)
    if special == "excel":
        return excel_frame(source)
    if special == "muargus":
        return _read_muargus(source)
    path = resolve_path(source, formats="a CSV, Parquet, Stata, SPSS or SAS file")
    if path.stat().st_size == 0:
        raise InputError(f"{path.name}: the file is empty")
    kind, packed = detect_format(path)  # refuses binary content, a zip archive (Excel), SQLite
    try:
        if kind == "parquet":
            frame = pd.read_parquet(path)
            stat = path.stat()  # the file write_frame copies the other columns from
            frame.attrs["parquet_source"] = (str(path), stat.st_size, stat.st_mtime_ns,
                                             [str(c) for c in frame.columns])
        elif kind in _LABELLED:
            frame = _read_labelled(path, kind)
        else:
            head = head_bytes(path, packed)
            sep = csv_delimiter(path, packed, head)  # as assess reads it: ';' and tab too
            try:
                frame = _read_csv_text(path, packed, sep)
            except UnicodeDecodeError:  # not UTF-8: each value as assess reads it
                frame = _read_csv_text(path, packed, sep, encoding="latin-1")
                _decode_values(frame, path.name)
            frame.attrs["delimiter"] = sep
            frame.attrs["lineterminator"] = "\r\n" if b"\r\n" in head else "\n"
            _refuse_duplicate_names(path, head, sep)
            _refuse_repeated_header(frame, path, packed, sep)
    except InputError:
        raise
    except (ValueError, OSError, EOFError, UnicodeDecodeError) as exc:
        # EOFError: a truncated gzip stream
        raise InputError(f"{path.name}: could not be read ({type(exc).__name__}: "
                         f"{printable(str(exc))})") from exc
    if len(frame) == 0:
        raise InputError(f"{path.name}: no records (the file has column names but no rows)")
    return frame


def _read_csv_text(path: Path, packed: str | None, sep: str, encoding: str = "utf-8"):
    """A CSV file's cells as text, decompressed by its content (``packed``, from
    :func:`detect_format`), not by its name. zstd and lz4 go through pyarrow's decompressor,
    as assess reads them: pandas would need the optional zstandard package (an ImportError
    before)."""
    import pandas as pd

    options = {"dtype": str, "keep_default_na": False, "sep": sep, "encoding": encoding}
    if packed in ("zstd", "lz4"):
        import pyarrow as pa

        with pa.input_stream(str(path), compression=packed) as stream:
            return pd.read_csv(stream, **options)
    return pd.read_csv(path, compression=packed if packed in ("gzip", "bz2") else None,
                       **options)


def _read_muargus(source):
    """mu-Argus microdata as text columns, a missing value (blank or a missing code) as
    None; ``attrs["muargus"]`` keeps the layout and ``attrs["muargus_missing"]`` ({column:
    {row: text}}) the text of each missing value, for :func:`write_frame` to write the
    file back as it was where protect changed nothing."""
    import pandas as pd

    meta = read_metadata(source)
    got, n = read_records(meta, meta.names, typed=False)
    data, restore = {}, {}
    for name, (values, miss) in got.items():
        col = values.astype(object)
        if miss is not None:
            rows = np.flatnonzero(miss)
            restore[name] = {int(i): str(values[i]) for i in rows}
            col[rows] = None
        data[name] = col
    frame = pd.DataFrame(data)
    frame.attrs["muargus"] = meta
    frame.attrs["muargus_missing"] = restore
    return frame


def _write_muargus(frame, tmp: str, path: Path) -> None:
    """The .asc data file in the input's layout, and its .rda beside ``path``."""
    import pandas as pd

    meta = frame.attrs.get("muargus")
    if meta is None:
        raise ParameterError(f"--out {str(path)!r}: a mu-Argus .asc file is written in the "
                             "layout of a mu-Argus input (its .rda); this input is not one: "
                             "write .csv or .parquet")
    lost = [v.name for v in meta.variables if v.name not in frame.columns]
    if lost:
        raise ParameterError(f"--out {str(path)!r}: variable {lost[0]!r} of {meta.path.name} "
                             "is not in the data any more; write .csv or .parquet")
    columns = {}
    for var in meta.variables:
        col = frame[var.name]
        text: list[str | None] = []
        for v in col.tolist():
            if v is None or (not isinstance(v, str) and pd.isna(v)):
                text.append(None)
            else:
                t = str(int(v)) if isinstance(v, float) and v.is_integer() else str(v).strip()
                text.append(t or None)
        columns[var.name] = text
    try:
        body = format_records(meta, columns, frame.attrs.get("muargus_missing"))
    except InputError as exc:
        raise ParameterError(f"--out {str(path)!r}: {exc}") from None
    Path(tmp).write_bytes(body)
    with atomic_path(path.with_suffix(".rda")) as rda:
        Path(rda).write_bytes(meta.path.read_bytes())


def _read_labelled(path: Path, kind: str):
    """A Stata, SPSS or SAS file as codes, with ``attrs["value_labels"]`` ({column: {code:
    label}}) and ``attrs["column_labels"]`` ({column: label}) for :func:`write_frame`."""
    try:
        import pyreadstat
    except ImportError:  # pragma: no cover - the extra is installed in dev
        raise InputError(f"{path.name}: reading {kind} files needs pyreadstat; "
                         "pip install 'sdcrisk[formats]'") from None
    try:
        frame, meta = getattr(pyreadstat, _LABELLED[kind])(str(path))
    except Exception as exc:  # noqa: BLE001 - pyreadstat raises its own and OSError
        raise InputError(f"{path.name}: could not be read as a {kind} file "
                         f"({printable(str(exc)) or type(exc).__name__})") from exc
    frame.attrs["value_labels"] = dict(meta.variable_value_labels or {})
    frame.attrs["column_labels"] = {c: lab for c, lab in zip(
        meta.column_names, meta.column_labels or [], strict=False) if lab}
    return frame


def _decode_values(frame, name: str) -> None:
    """A CSV read as Latin-1 (one character per byte, so each value's bytes are recovered
    exactly): decode each value with :func:`sdcrisk.data.text.decode_text`, the rule assess
    reads values by (UTF-8, else Windows-1252, else Latin-1), in place, and say so in
    ``frame.attrs`` (the note
    protect prints: the protected file is written in UTF-8).

    Raises
    ------
    InputError
        When a column name is not UTF-8, as assess does (remedy: re-save as UTF-8).
    """
    import pandas as pd

    for col in frame.columns:
        raw = str(col).encode("latin-1")
        if not _is_utf8(raw):
            raise names_not_utf8(name, raw)
    frame.columns = [decode_text(str(c).encode("latin-1")) for c in frame.columns]
    count = 0
    for col in frame.columns:
        values = frame[col]
        wide = values.str.contains("[\x80-\xff]", regex=True, na=False).to_numpy(bool)
        if not wide.any():
            continue
        fixed = values.to_numpy(dtype=object, copy=True)
        for i in np.flatnonzero(wide):
            raw = fixed[i].encode("latin-1")
            count += not _is_utf8(raw)
            fixed[i] = decode_text(raw)
        frame[col] = pd.Series(fixed, index=values.index, dtype=values.dtype)
    frame.attrs["read_note"] = (
        f"{name} is not UTF-8: {count} value{'s' if count != 1 else ''} read as "
        f"{NOT_UTF8_READ_AS} (as assess reads them); the protected file is written in UTF-8")


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _refuse_duplicate_names(path: Path, head: bytes, sep: str = ",") -> None:
    """A CSV header naming a column twice: pandas would write the second back as ``c.1``,
    so the protected file would not have the input's columns.

    Raises
    ------
    InputError
        Naming the column, its positions and the remedy.
    """
    import csv

    lines = head.decode("utf-8-sig", errors="replace").splitlines()
    names = next(csv.reader(lines[:1], delimiter=sep), []) if lines else []
    for name in dict.fromkeys(names):
        where = [i + 1 for i, n in enumerate(names) if n == name]
        if len(where) > 1:
            raise InputError(f"{path.name}: column {name!r} appears {len(where)} times "
                             f"(positions {', '.join(map(str, where))}); protect writes every "
                             "column back as read: rename the duplicates first")


def _refuse_repeated_header(frame, path: Path, packed: str | None, sep: str) -> None:
    """A CSV whose header line is repeated among its records (files joined): refused, as
    assess refuses it (:mod:`sdcrisk.data.repeated_header`). The first column is compared
    with its name (vectorised), the other columns on the rows that matched only, and the
    file is scanned for the line only when a row matches in every column."""
    import pyarrow as pa

    if not len(frame.columns):
        return
    first = str(frame.columns[0])
    hit = frame.iloc[:, 0].isin([first, "\ufeff" + first]).to_numpy(dtype=bool)
    if not hit.any():
        return
    rows = frame.iloc[np.flatnonzero(hit)]
    columns = {str(c): pa.array(rows.iloc[:, i].astype(object).tolist(), type=pa.string())
               for i, c in enumerate(rows.columns)}
    if could_be_header(columns, first):
        error = find_repeated_header(path, packed, sep)
        if error is not None:
            raise error


def write_frame(frame, path: str | os.PathLike) -> Path:
    """Write ``frame`` to ``path`` in the format of its extension, atomically, with the mode a
    plain write gives (:func:`sdcrisk.data.io.atomic_path`).

    A frame read from a Parquet file whose protected columns are named in
    ``frame.attrs["protected_keys"]`` (as :func:`sdcrisk.analyses.protect.protect` leaves
    it), written to Parquet with the input's columns, is written by Arrow
    (:func:`_write_parquet_keys`): every other column copied from the input file as it is,
    whatever its type (a map, a list, integers with nulls), the key columns from the frame.
    (A change made to another column of such a frame is not written: drop its
    ``protected_keys`` attribute first, and pandas writes the frame.)"""
    path = Path(path)
    fmt = output_format(path)
    source = frame.attrs.get("parquet_source")
    if (fmt == "parquet" and source is not None and "protected_keys" in frame.attrs
            and [str(c) for c in frame.columns] == source[3]):
        with atomic_path(path) as tmp:
            _write_parquet_keys(frame, tmp, source, list(frame.attrs["protected_keys"]))
        return path
    with atomic_path(path) as tmp:
        if fmt == "csv":  # the input's line ending (CSV input), else "\n"
            if "value_labels" in frame.attrs:
                frame = _whole_doubles_as_integers(frame)  # Stata or SPSS in, CSV out
            eol = frame.attrs.get("lineterminator", "\n")
            # and its separator (tab for a .tsv name)
            tsv = path.name.lower().endswith((".tsv", ".tsv.gz"))
            sep = "\t" if tsv else frame.attrs.get("delimiter", ",")
            if path.name.lower().endswith(".gz"):
                with gzip.open(tmp, "wt", encoding="utf-8", newline="") as fh:
                    frame.to_csv(fh, index=False, lineterminator=eol, sep=sep)
            else:
                frame.to_csv(tmp, index=False, lineterminator=eol, sep=sep)
        elif fmt == "asc":
            _write_muargus(frame, tmp, path)
        else:
            if "lineterminator" in frame.attrs or "muargus" in frame.attrs:
                frame = _typed(frame)  # text in, typed format out: as pandas reads its CSV
            elif fmt == "parquet" and "value_labels" in frame.attrs:
                frame = _missing_text_as_null(frame)  # Stata or SPSS in, Parquet out
            if fmt != "parquet":
                _refuse_inexact_codes(frame, fmt, path)
            try:
                if fmt == "parquet":
                    frame.to_parquet(tmp, index=False)
                else:
                    _write_labelled(frame, tmp, fmt)
            except (ValueError, TypeError, NotImplementedError) as exc:
                # a column the format cannot hold (lists or structs in Stata, a mixed
                # object column in Parquet); pyarrow's errors derive from these too
                what = {"parquet": "a Parquet", "dta": "a Stata", "sav": "an SPSS"}[fmt]
                other = ".csv" if fmt == "parquet" else ".parquet or .csv"
                raise ParameterError(f"--out {str(path)!r}: the data cannot be written to "
                                     f"{what} file ({printable(str(exc))}); write "
                                     f"{other} instead") from exc
    return path


def _write_parquet_keys(frame, tmp: str, source: tuple, keys: list[str]) -> None:
    """The input Parquet file row group by row group with its ``keys`` replaced by the
    frame's: the other columns are the input's own Arrow data (types, nulls, order, the
    schema's metadata); each key keeps its type where its new values fit it (a suppressed
    integer is a null of the integer column, not a float NaN), else takes the type of its
    new values (a recode to text). A key value that protect blanked (``""`` where the input
    had text) is written as null, a missing value as assess reads Parquet. Memory: the keys
    and one row group of the other columns.

    Raises
    ------
    InputError
        The input file changed since it was read.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    name, size, mtime, _ = source
    stat = Path(name).stat()
    if (stat.st_size, stat.st_mtime_ns) != (size, mtime):
        raise InputError(f"{Path(name).name}: the input changed after it was read; run protect "
                         "again")
    parquet = pq.ParquetFile(name)
    schema = parquet.schema_arrow
    if parquet.metadata.num_rows != len(frame):
        raise InputError(f"{Path(name).name}: the input changed after it was read; run protect "
                         "again")
    new = {}
    for key in keys:
        values = _arrow_key(frame[key])
        try:
            values = values.cast(schema.field(key).type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass  # a recode to text, say: the type of the new values
        if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
            old = parquet.read(columns=[key]).column(0).combine_chunks()
            if pa.types.is_dictionary(old.type):
                old = old.cast(old.type.value_type)
            blank = pc.equal(values, "")
            if pa.types.is_string(old.type) or pa.types.is_large_string(old.type):
                blank = pc.and_(blank, pc.not_equal(old, ""))  # "" as read stays ""
            values = pc.if_else(blank.fill_null(False), pa.scalar(None, values.type), values)
        new[key] = values
    fields = [schema.field(c).with_type(new[c].type) if c in new else schema.field(c)
              for c in schema.names]
    out_schema = pa.schema(fields, metadata=schema.metadata)
    others = [c for c in schema.names if c not in new]
    with pq.ParquetWriter(tmp, out_schema) as writer:
        start = 0
        for i in range(parquet.num_row_groups):
            group = parquet.read_row_group(i, columns=others)
            stop = start + group.num_rows
            columns = [new[c].slice(start, group.num_rows) if c in new else group.column(c)
                       for c in schema.names]
            writer.write_table(pa.table(columns, schema=out_schema))
            start = stop


def _arrow_key(col):
    """A protected key column (pandas) as an Arrow array, missing entries null; a column
    mixing numbers and text (a number column recoded to text) as text, whole numbers
    without ``.0``."""
    import pyarrow as pa

    values = col.astype(object).where(col.notna(), None)
    try:
        return pa.array(values, from_pandas=True)
    except OverflowError:  # integer codes past int64 (a uint64 column)
        return pa.array(values, type=pa.uint64(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else str(int(v)) if isinstance(v, float)
                         and v.is_integer() else str(v) for v in values], type=pa.string())


def _refuse_inexact_codes(frame, fmt: str, path: Path) -> None:
    """Stata and SPSS hold numbers as doubles (or 32-bit integers): integer codes past 2^53
    would lose digits there, and distinct codes would merge in the written file.

    Raises
    ------
    ParameterError
        Naming the column, a code and the formats that hold it.
    """
    for c in frame.columns:
        col = frame[c]
        if col.dtype.kind not in "iu" or not col.notna().any():
            continue
        present = col.dropna()
        big = (present > 2**53) | (present < -(2**53))  # exact for int64, uint64, Int64
        if big.any():
            what = "a Stata" if fmt == "dta" else "an SPSS"
            raise ParameterError(
                f"--out {str(path)!r}: column {str(c)!r} holds integer codes past 2^53 (e.g. "
                f"{present[big].iloc[0]}), which {what} file stores as doubles that lose "
                "digits, so distinct codes would merge; write .parquet or .csv instead")


def _write_labelled(frame, tmp: str, fmt: str) -> None:
    """A Stata or SPSS file with the value and column labels read with the input (those of
    numeric columns: a label maps a numeric code)."""
    import pandas as pd

    numeric = {c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])}
    values = {c: v for c, v in frame.attrs.get("value_labels", {}).items() if c in numeric}
    columns = {c: v for c, v in frame.attrs.get("column_labels", {}).items()
               if c in frame.columns}
    if fmt == "dta":
        frame.to_stata(tmp, write_index=False, value_labels=values or None,
                       variable_labels=columns or None)
        return
    try:
        import pyreadstat
    except ImportError:  # pragma: no cover - the extra is installed in dev
        raise ParameterError("writing an SPSS .sav file needs pyreadstat; pip install "
                             "'sdcrisk[formats]', or write .dta, .parquet or .csv") from None
    pyreadstat.write_sav(frame, tmp, variable_value_labels=values,
                         column_labels=[columns.get(c) for c in frame.columns])


def _whole_doubles_as_integers(frame):
    """A frame read from Stata or SPSS, which store numbers as doubles, with each column of
    whole numbers as nullable integers: its CSV then says ``3`` where pandas writes ``3.0``
    (a code as the file's own display shows it). The same numbers; columns with a fraction,
    or past 2^53 where a double holds no exact integer, stay as they are."""
    import pandas as pd

    frame = frame.copy()
    for name in frame.columns:
        col = frame[name]
        if not pd.api.types.is_float_dtype(col):
            continue
        values = col.to_numpy(dtype=float, na_value=np.nan)
        given = values[~np.isnan(values)]
        if given.size and exact_whole_numbers(given):
            frame[name] = col.astype("Int64")
    return frame


def _missing_text_as_null(frame):
    """A frame read from Stata or SPSS, whose missing text value is ``""``, with its ``""``
    text written as null: the missing value of Parquet (where ``""`` is a category, as
    assess reads it), so a suppressed key stays missing in a Parquet copy."""
    import pandas as pd

    frame = frame.copy()
    for name in frame.columns:
        col = frame[name]
        if col.dtype == object or pd.api.types.is_string_dtype(col):
            frame[name] = blank_text_as_missing(col)
    return frame


def _typed(frame):
    """A frame of CSV text with the column types pandas reads that CSV with (blank = NA),
    except where those types would change the file's values: a column holding a zero-padded
    number (``"07"``, ``"-01"``) stays text, since a number would drop the zeros of a code
    ("07" and "7" would be written alike); and a column of whole numbers with blanks (a
    suppressed integer key) is a nullable integer, not a float."""
    import io

    import pandas as pd

    typed = pd.read_csv(io.StringIO(frame.to_csv(index=False)))
    typed.columns = frame.columns
    for i, name in enumerate(frame.columns):
        text = frame.iloc[:, i]
        column = typed.iloc[:, i]
        if not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
            continue
        given = text.astype(str)
        filled = given != ""
        if given[filled].str.match(_PADDED).any():
            typed[name] = text.where(filled, None)
        elif (pd.api.types.is_float_dtype(column) and column.isna().any()
              and not given[filled].str.contains(r"[.eE]|inf|nan", case=False).any()):
            typed[name] = column.astype("Int64")
    return typed


#: a number written with a leading zero: a code, kept as text by :func:`_typed`
_PADDED = r"^[+-]?0\d"
