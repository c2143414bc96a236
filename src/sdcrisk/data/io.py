"""Files and frames in: the one entry for every file format and DataFrame library (the
mu-Argus layout itself is parsed by :mod:`sdcrisk.data.muargus`).

Sources accepted by :func:`read_columns`:

* a path to a CSV file (``.csv``, ``.txt``, ``.tsv``; gzip/bz2/zstd compression is detected from
  the file's first bytes, not its name) or a Parquet file (``.parquet``, ``.pq``), read with
  pyarrow and only the needed columns;
* a Stata (``.dta``), SAS (``.sas7bdat``, ``.xpt``) or SPSS (``.sav``, ``.zsav``) file, read with
  pyreadstat (``pip install 'sdcrisk[formats]'``); value labels become the category labels;
* ``duckdb:FILE.db::TABLE`` (a table or view of a DuckDB database) or
  ``duckdb:FILE.db::SELECT ...`` (the rows of a query; anything after ``::`` that starts with
  ``SELECT``, ``WITH``, ``FROM`` or ``(`` is a query), read with duckdb
  (``pip install 'sdcrisk[duckdb]'``) from a read-only connection;
* mu-Argus microdata: ``FILE.rda`` (the metadata; the data file ``FILE.asc`` beside it),
  ``FILE.asc`` (its ``FILE.rda`` beside it) or ``FILE.rda::DATAFILE``, fixed or free format,
  missing codes read as missing values (:mod:`sdcrisk.data.muargus`);
* an Excel workbook (``.xlsx``, ``.xlsm``; ``.xls`` with xlrd): the first sheet, or
  ``FILE.xlsx::SHEET``, read with pandas and openpyxl (``pip install 'sdcrisk[excel]'``);
* ``example:NAME`` for a bundled dataset (see :mod:`sdcrisk.data.datasets`);
* a pandas or polars DataFrame, a pyarrow Table, or a mapping of column name to array.

Each column comes back as a NumPy array plus a boolean mask of missing values (or ``None``).
A column the caller needs that appears twice in the source is an error naming it (a reader
would otherwise silently use one of the two).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import InputError
from .column_values import Column, arrow_column, frame_columns
from .columns import check_present, close_name
from .labels import code_text, shared_labels
from .outputs import special_file
from .repeated_header import check_columns, check_duckdb_rows
from .text import NULLS, csv_delimiter, csv_header, printable

__all__ = ["Column", "iter_columns", "read_columns", "source_name", "sniff", "detect_format",
           "resolve_path", "atomic_path", "named_file", "excel_frame", "parquet_parts"]

_PARQUET = (".parquet", ".pq")
_COMPRESSED = (".gz", ".bz2", ".zst", ".lz4")
#: extension -> pyreadstat reader
_READSTAT = {".dta": "read_dta", ".sas7bdat": "read_sas7bdat", ".xpt": "read_xport",
             ".sav": "read_sav", ".zsav": "read_sav"}
_DUCKDB_PREFIX = "duckdb:"
#: Excel workbooks (read with pandas: openpyxl, or xlrd for .xls)
_EXCEL = (".xlsx", ".xlsm", ".xls")
#: mu-Argus metadata and data files (:mod:`sdcrisk.data.muargus`)
_MUARGUS = (".rda", ".asc")
_QUERY_STARTS = ("select", "with", "from", "(", "values", "table ")
#: first bytes -> (compression for pyarrow, or a format name)
_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\x04\x22\x4d\x18", "lz4"),
    (b"PAR1", "parquet"),
    (b"$FL2", ".sav"),
    (b"$FL3", ".zsav"),
    (b"<stata_dta>", ".dta"),
    (b"HEADER RECORD*******LIB", ".xpt"),
    (b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xc2\xea\x81\x60", ".sas7bdat"),
    (b"SQLite format 3\x00", "sqlite"),
    (b"PK\x03\x04", "zip"),
)


def source_name(source: Any) -> str:
    """A short, non-identifying description of a source for provenance."""
    if isinstance(source, str | os.PathLike):
        text = str(source)
        if text.startswith("example:"):
            return text
        if text.startswith(_DUCKDB_PREFIX):
            db, _, what = text[len(_DUCKDB_PREFIX):].partition("::")
            what = "query" if _is_query(what) else what.strip()
            return f"duckdb:{Path(db).name}::{what}"
        return Path(source).name
    return type(source).__module__.split(".")[0] + "." + type(source).__name__


def resolve_path(source: str | os.PathLike, *, formats: str | None = None) -> Path:
    """The file a data argument names: ``example:NAME`` or a path that exists and is a file.

    ``formats`` ("a CSV, Parquet or Stata file") is what the messages ask for instead; by
    default the readers of this module's formats.

    Raises
    ------
    InputError
        An empty path, a missing file or a directory.
    """
    text = str(source)
    if text.startswith("example:"):
        from .datasets import example_path

        return example_path(text.split(":", 1)[1])
    path = Path(text)
    if not text.strip():
        raise InputError("the data path is empty; give "
                         f"{formats or 'a CSV, Parquet, Stata, SAS or SPSS file'}")
    if not path.exists():
        raise not_found(text)
    if path.is_dir():
        parts = " (a folder of Parquet parts is streamed by assess only)" \
            if any(path.glob("*.parquet")) else ""
        raise InputError(f"{text!r} is a directory{parts}; give "
                         f"{formats or 'a CSV or Parquet file'}")
    return path


def not_found(text: str) -> InputError:
    """The error for a data path that does not exist: a ``duckdb:`` source where only files
    are read (protect, --out-of-core) said "file not found"."""
    if text.startswith(_DUCKDB_PREFIX):
        return InputError(f"{text!r}: a DuckDB table is read by assess, report, recommend, "
                          "evaluate and decide in memory, not here; export it to a file first "
                          "(in duckdb: COPY t TO 't.parquet')")
    return InputError(f"file not found: {text!r}")


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[str]:
    """A new empty file beside ``target`` (same suffix) that replaces it (``os.replace``)
    when the block ends without an exception: a reader never sees half a file, and an
    interrupted write leaves the previous file as it was (the temporary file is removed).
    Every file sdcrisk writes on a user's behalf (protect's file, the CLI's ``--out``,
    ``--csv``, ``--plot``) goes through here.

    The new file gets the mode a plain ``open(target, "w")`` gives: created with 0o666, the
    process's umask applied by the system (``tempfile.mkstemp`` would give 0o600, readable by
    its owner only), or ``target``'s own permission bits when it exists already. The umask is
    never changed (reading it needs ``os.umask``, process-wide and racy with other threads).
    """
    target = Path(target)
    special = special_file(target)
    if special:  # os.replace would put a regular file in place of /dev/null (as root)
        raise InputError(f"{str(target)!r} is {special}, not a regular file; give a file name")
    folder = target.parent if str(target.parent) else Path(".")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = str(folder / f".{target.name}.{secrets.token_hex(4)}.tmp{target.suffix}")
        try:
            os.close(os.open(tmp, flags, 0o666))
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 32 random bits
        raise FileExistsError(f"no free temporary name beside {str(target)!r}")
    try:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def sniff(path: Path) -> str | None:
    """What the first bytes of ``path`` say it is: a compression (``gzip``, ``bz2``, ``zstd``,
    ``lz4``), ``parquet``, a pyreadstat extension (``.dta``, ``.sav``...), ``sqlite``, ``zip``,
    ``utf16`` (UTF-16 text), ``binary`` (NUL bytes in the first 4 KiB) or None (text, as far
    as can be told)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise InputError(f"{path.name}: could not be opened ({printable(str(exc))})") from exc
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head[:1] in (b"\x71", b"\x72", b"\x73") and head[1:2] in (b"\x01", b"\x02"):
        return ".dta"  # Stata 8-12: format byte, then byte order
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or (
            len(head) >= 8 and not any(head[1:512:2]) and all(head[0:512:2])):
        return "utf16"  # Excel's "Unicode Text": a byte-order mark, or ASCII with NULs between
    if b"\x00" in head:
        return "binary"
    return None


def detect_format(path: Path) -> tuple[str, str | None]:
    """(format, compression) of a file from its first bytes (then its name): ``csv``,
    ``parquet`` or a pyreadstat extension (``.dta``...), and ``gzip``/``bz2``/``zstd``/``lz4``
    or None.

    Raises
    ------
    InputError
        Binary content, a zip archive or an SQLite database.
    """
    return _format_of(path)


def _format_of(path: Path) -> tuple[str, str | None]:
    """(format, compression) of a file: ``csv``, ``parquet``, a pyreadstat extension, or
    ``muargus`` / ``excel`` (by name: read by :func:`read_columns`, not streamed)."""
    suffix = path.suffix.lower()
    if suffix in _MUARGUS:
        return "muargus", None
    kind = sniff(path)
    if suffix in _EXCEL and kind in ("zip", "binary"):
        return "excel", None
    if kind in _READSTAT or (kind is None and suffix in _READSTAT and suffix != ".xpt"):
        return (kind if kind in _READSTAT else suffix), None
    if suffix == ".xpt" and kind in (None, ".xpt"):
        return ".xpt", None
    if kind == "parquet":  # a Parquet file starts with PAR1; text named .parquet is CSV
        return "parquet", None
    if kind in ("gzip", "bz2", "zstd", "lz4"):
        return "csv", kind
    if kind == "utf16":
        raise InputError(
            f"{path.name}: the file is UTF-16 text (as Excel saves 'Unicode Text'), which is "
            "not read; save it as 'CSV UTF-8' (or convert it: iconv -f UTF-16 -t UTF-8)")
    if kind in ("sqlite", "zip", "binary"):
        what = {"sqlite": "an SQLite database",
                "zip": "a zip archive (an Excel workbook? name it .xlsx)",
                "binary": "binary data"}[kind]
        raise InputError(
            f"{path.name}: the file holds {what}, not text; give a CSV (plain or gzip/bz2/zstd "
            "compressed), Parquet, Excel (.xlsx), Stata (.dta), SAS (.sas7bdat, .xpt) or SPSS "
            "(.sav) file, or mu-Argus microdata (.rda with its .asc)")
    return "csv", None


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in _PARQUET


def _read_arrow(path: Path, columns: Sequence[str], text: Sequence[str] = ()):
    """A CSV or Parquet file's ``columns`` as a pyarrow Table; CSV columns in ``text`` (ids)
    as bytes, not typed, for :func:`~sdcrisk.data.ids.id_labels`."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if path.stat().st_size == 0:
        raise InputError(f"{path.name}: the file is empty")
    kind, compression = _format_of(path)
    try:
        if kind == "parquet":
            schema_names = pq.read_schema(path).names
            check_present(columns, schema_names, path.name)
            if path.is_file():  # ParquetFile: no pyarrow.dataset (which imports pandas)
                return pq.ParquetFile(path).read(columns=list(columns))
            return pq.read_table(path, columns=list(columns))
        delimiter = csv_delimiter(path, compression)
        header = csv_header(path, delimiter, compression)
        check_present(columns, header, path.name)
        convert = pacsv.ConvertOptions(
            include_columns=list(columns),
            null_values=list(NULLS),
            strings_can_be_null=True,
            column_types={c: pa.binary() for c in text},
        )
        with pa.input_stream(str(path), compression=compression) as stream:
            table = pacsv.read_csv(
                stream,
                parse_options=pacsv.ParseOptions(delimiter=delimiter),
                convert_options=convert,
            )
        # (read_csv types a column from all its blocks: the header's text past the first
        # block makes a numeric column text, no conversion error)
        check_columns(path, compression, delimiter, header,
                      {c: table.column(c) for c in table.column_names})
        return table
    except InputError:
        raise
    except (pa.ArrowInvalid, OSError, UnicodeDecodeError) as exc:
        first = printable(str(exc)) if str(exc) else type(exc).__name__
        raise InputError(f"{path.name}: could not be read ({first}); check that it is a "
                         "well-formed CSV (or Parquet) file") from exc


def _read_readstat(path: Path, kind: str, columns: Sequence[str]) -> dict[str, Column]:
    """Columns of a Stata, SAS or SPSS file via pyreadstat; value labels become the labels."""
    try:
        import pyreadstat
    except ImportError:  # pragma: no cover - the extra is installed in dev
        raise InputError(f"{path.name}: reading {kind} files needs pyreadstat; "
                         "pip install 'sdcrisk[formats]'") from None
    reader = getattr(pyreadstat, _READSTAT[kind])
    try:
        _, meta = reader(str(path), metadataonly=True)
        check_present(columns, list(meta.column_names), path.name)
        labels = {} if kind == ".xpt" else {"apply_value_formats": True,
                                            "formats_as_category": False}
        frame, _ = reader(str(path), usecols=list(columns), **labels)
        shared = shared_labels(meta, columns) if labels else {}
        if shared:  # codes that share a label stay apart, as in the file (and in protect)
            codes, _ = reader(str(path), usecols=list(shared))
            for name, names in shared.items():
                frame[name] = codes[name].map(lambda v, names=names: names.get(v, v))
        clash = _labels_like_codes(frame, columns)
        if clash:  # a label "2" on code 1, and code 2 unlabelled: two categories, not one
            codes, _ = reader(str(path), usecols=list(clash))
            for name, texts in clash.items():
                given = shared.get(name) or meta.variable_value_labels[name]
                names = {code: f"{label} ({code_text(code)})" if label in texts else label
                         for code, label in given.items()}
                frame[name] = codes[name].map(lambda v, names=names: names.get(v, v))
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyreadstat raises its own and OSError
        raise InputError(f"{path.name}: could not be read as a {kind} file "
                         f"({printable(str(exc)) or type(exc).__name__})") from exc
    for name in columns:
        col = frame[name]
        if col.dtype == object or str(col.dtype).startswith(("str", "string")):
            col = blank_text_as_missing(col)
            if col.dtype == object:  # partly labelled: an unlabelled code is a double (2.0)
                col = col.map(_unlabelled_code, na_action="ignore")
            frame[name] = col
    return frame_columns(frame, columns)


def _labels_like_codes(frame, columns: Sequence[str]) -> dict[str, set]:
    """{column: labels} for the partly labelled columns where a code's label is the text of
    an unlabelled code that occurs (label "2" on code 1, code 2 without a label): shown as
    :func:`_unlabelled_code` shows it, that code would join the labelled one's category."""
    out = {}
    for name in columns:
        col = frame[name]
        if col.dtype != object:
            continue
        values = col.dropna().unique()
        bare = {code_text(v) for v in values if isinstance(v, float)}
        texts = {v for v in values if isinstance(v, str)} & bare
        if texts:
            out[name] = texts
    return out


def _unlabelled_code(value):
    """A code without a value label, in a column whose other codes have one, written as the
    file shows it: ``2``, not the double ``2.0`` Stata and SPSS store (a label is text)."""
    return code_text(value) if isinstance(value, float) else value


def parquet_parts(path: str | os.PathLike) -> list[Path]:
    """The files of a dataset: a folder's Parquet files (recursively, in path order, as
    ``pyarrow.dataset`` lists them) or the file itself."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"file not found: {str(path)!r}")
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file()
                   and not p.name.startswith((".", "_")))
    if not files:
        raise InputError(f"{path.name}: the folder holds no Parquet files")
    return files


def named_file(source: Any) -> str | None:
    """``muargus`` or ``excel`` when ``source`` names such a file by its extension
    (``FILE.rda``, ``FILE.asc``, ``FILE.rda::DATA``, ``FILE.xlsx``, ``FILE.xlsx::SHEET``);
    else None. These are read whole, by :func:`read_columns`."""
    if not isinstance(source, str | os.PathLike):
        return None
    head = str(source).partition("::")[0].lower()
    if head.endswith(_MUARGUS):
        return "muargus"
    if head.endswith(_EXCEL):
        return "excel"
    return None


def _read_muargus(source: str | os.PathLike, columns: Sequence[str], ids: Sequence[str] = ()
                  ) -> tuple[dict[str, Column], int]:
    from . import muargus

    meta = muargus.read_metadata(source)
    check_present(columns, meta.names, meta.path.name)
    got, n = muargus.read_records(meta, list(columns), text=ids)
    return {name: Column(name, values, miss) for name, (values, miss) in got.items()}, n


def excel_frame(source: str | os.PathLike, columns: Sequence[str] | None = None):
    """The sheet a ``FILE.xlsx`` or ``FILE.xlsx::SHEET`` source names (the first sheet by
    default) as a pandas DataFrame, its first row the column names; ``columns``: only these.

    Raises
    ------
    InputError
        openpyxl (xlrd for .xls) not installed, an unknown sheet (listing those there), a
        file that is not a workbook.
    """
    import pandas as pd

    head, sep, sheet = str(source).partition("::")
    path = resolve_path(head)
    if path.stat().st_size == 0:
        raise InputError(f"{path.name}: the file is empty")
    engine = "xlrd" if path.suffix.lower() == ".xls" else "openpyxl"
    try:
        __import__(engine)
    except ImportError:
        extra = "pip install xlrd" if engine == "xlrd" else "pip install 'sdcrisk[excel]'"
        raise InputError(f"{path.name}: reading an Excel file needs {engine}; {extra} (or "
                         "save the sheet as CSV)") from None
    try:
        with pd.ExcelFile(path, engine=engine) as book:
            names = [str(n) for n in book.sheet_names]
            name: Any = 0
            if sep:
                if sheet not in names:
                    raise InputError(f"{path.name}: no sheet {sheet!r}"
                                     f"{close_name(sheet, names)}; sheets: "
                                     f"{', '.join(map(repr, names))}")
                name = sheet
            if columns is not None:
                header = [str(c) for c in pd.read_excel(book, sheet_name=name, nrows=0).columns]
                where = f"{path.name}::{names[0] if name == 0 else name}"
                named = [h for h in header if not h.startswith("Unnamed: ")]
                if len(named) <= 1 and any(c not in header for c in columns) and len(
                        pd.read_excel(book, sheet_name=name, header=None, nrows=20)
                        .dropna(how="all")) > 1:
                    # blank or title rows above the table: "no header" was all it said
                    raise InputError(
                        f"{where}: the sheet's first row holds no column names (found: "
                        f"{', '.join(map(repr, named)) or 'an empty row'}); the first row must "
                        "be the header: delete the title or blank rows above the table")
                check_present(columns, header, where)
            frame = pd.read_excel(book, sheet_name=name)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - openpyxl/xlrd/zipfile raise their own
        raise InputError(f"{path.name}: could not be read as an Excel workbook "
                         f"({printable(str(exc)) or type(exc).__name__})") from exc
    frame.columns = [str(c) for c in frame.columns]
    return frame if columns is None else frame[list(columns)]


def _read_excel(source: str | os.PathLike, columns: Sequence[str]
                ) -> tuple[dict[str, Column], int]:
    frame = excel_frame(source, columns)
    out = frame_columns(frame, columns) or {}
    for name, col in out.items():
        # a column of whole numbers with empty cells comes back as float (1.0): read it as
        # the integers a CSV reader gives, so that the labels print alike
        if col.values.dtype.kind == "f":
            present = col.values if col.missing is None else col.values[~col.missing]
            if exact_whole_numbers(present):
                values = np.where(np.isnan(col.values), 0, col.values).astype(np.int64)
                out[name] = Column(name, values, col.missing)
    return out, len(frame)


def exact_whole_numbers(values: np.ndarray) -> bool:
    """Whether doubles (the present values of a column) are all whole numbers that a double
    holds exactly (below 2^53): only then can they be written or read as integer codes
    without merging distinct codes. Excel, Stata and SPSS store every number as a double."""
    values = np.asarray(values, dtype=float)
    return bool(np.isfinite(values).all() and (np.abs(values) < 2.0 ** 53).all()
                and (values == np.round(values)).all())


def blank_text_as_missing(series):
    """A pandas text column with its blank values (``""`` or spaces) as missing: ``""`` is
    the missing text value of Stata and SPSS, as an empty cell is a CSV's."""
    return series.where(series.astype(str).str.strip() != "", None)


def _is_query(text: str) -> bool:
    return text.strip().lower().startswith(_QUERY_STARTS)


def _read_duckdb(source: str, columns: Sequence[str]):
    """A table, view or query of a DuckDB database as a pyarrow Table of ``columns``."""
    spec = source[len(_DUCKDB_PREFIX):]
    db, sep, what = spec.partition("::")
    what = what.strip()
    if not sep or not db.strip() or not what:
        raise InputError(f"{source!r}: write duckdb:FILE.db::TABLE or duckdb:FILE.db::SELECT ...")
    path = Path(db)
    if not path.exists():
        raise InputError(f"DuckDB database not found: {db!r}")
    try:
        import duckdb
    except ImportError:  # pragma: no cover - the extra is installed in dev
        raise InputError("reading a DuckDB database needs duckdb; "
                         "pip install 'sdcrisk[duckdb]'") from None
    inner = f"({what})" if _is_query(what) else '"' + what.replace('"', '""') + '"'
    label = "the query" if _is_query(what) else f"table {what!r}"
    with open(path, "rb") as fh:
        if fh.read(12)[8:12] != b"DUCK":
            raise InputError(f"{path.name}: not a DuckDB database file (for CSV or Parquet "
                             "give the path itself, without duckdb:)")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except Exception as exc:  # noqa: BLE001 - duckdb's own errors
        raise InputError(f"{path.name}: could not be opened as a DuckDB database "
                         f"({printable(str(exc))})") from exc
    try:
        try:
            names = [d[0] for d in con.execute(f"SELECT * FROM {inner} AS q LIMIT 0")
                     .description]
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"{path.name}: {label} could not be read "
                             f"({printable(str(exc))})") from exc
        check_present(columns, names, f"{path.name}::{what if label != 'the query' else 'query'}")
        cols = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
        rel = con.sql(f"SELECT {cols} FROM {inner} AS q")
        fetch = getattr(rel, "to_arrow_table", None) or rel.arrow
        table = fetch()
        check_duckdb_rows(con, inner, path.name, label, names,
                          {c: table.column(c) for c in columns})
        return table
    finally:
        con.close()


def read_columns(source: Any, columns: Sequence[str], ids: Sequence[str] = ()
                 ) -> tuple[dict[str, Column], int]:
    """Read the named columns of a file or frame; those in ``ids`` (household ids) as
    labels, by :func:`sdcrisk.data.ids.id_labels` (a CSV's as their text, not typed).

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
    ids = [c for c in ids if c in columns]
    if isinstance(source, str) and source.startswith(_DUCKDB_PREFIX):
        table = _read_duckdb(source, columns)
        out = {name: _arrow_or_ids(name, table.column(name), ids) for name in columns}
        return out, table.num_rows
    special = named_file(source)
    if special in ("muargus", "excel"):
        out, n_rows = _read_muargus(source, columns, ids) if special == "muargus" \
            else _read_excel(source, columns)
        return _as_ids(out, ids), n_rows
    if isinstance(source, str | os.PathLike):
        path = resolve_path(source)
        kind = _format_of(path)[0] if path.stat().st_size else "csv"
        if kind in _READSTAT:
            out = _as_ids(_read_readstat(path, kind, columns), ids)
            return out, (len(next(iter(out.values())).values) if out else 0)
        table = _read_arrow(path, columns, ids)
        out = {name: _arrow_or_ids(name, table.column(name), ids) for name in columns}
        n_rows = table.num_rows
    else:
        out = frame_columns(source, columns)
        if out is None:
            raise InputError(
                f"unsupported data source of type {type(source).__name__}; give a path (CSV, "
                "Parquet, Stata, SAS, SPSS), duckdb:FILE.db::TABLE, a pandas or polars "
                "DataFrame, a pyarrow Table or a dict of arrays"
            )
        lengths = {len(c.values) for c in out.values()}
        if len(lengths) > 1:
            raise InputError(f"columns have different lengths: {sorted(lengths)}")
        n_rows = lengths.pop() if lengths else 0
        out = _as_ids(out, ids)
    return out, n_rows


def _arrow_or_ids(name: str, chunked, ids: Sequence[str]) -> Column:
    """An Arrow column as :func:`arrow_column` reads it, or as household id labels."""
    if name not in ids:
        return arrow_column(name, chunked)
    from .ids import id_labels

    return Column(name, id_labels(name, chunked), None)


def _as_ids(out: dict[str, Column], ids: Sequence[str]) -> dict[str, Column]:
    """``out`` with its columns in ``ids`` read as household id labels
    (:func:`~sdcrisk.data.ids.id_labels`), a missing entry an error naming its row."""
    if not ids:
        return out
    import pyarrow as pa

    from .ids import id_labels

    for name in ids:
        col = out[name]
        values: Any = col.values
        if col.missing is not None:
            values = pa.array(values, mask=col.missing)
        out[name] = Column(name, id_labels(name, values), None)
    return out


def iter_columns(source: Any, columns: Sequence[str], ids: Sequence[str] = ()
                 ) -> tuple[int, Iterator[Column]]:
    """The named columns one at a time, each released once the caller moves on; those in
    ``ids`` as household id labels (:func:`read_columns`).

    A Parquet file is read column by column (the next one decoded on a second thread while
    the caller works on this one: two columns' values in memory at most); any other source
    is read as by :func:`read_columns` and its Arrow columns are converted and dropped one
    after the other. Errors (missing file or column, unreadable file) are raised here,
    before the first column is yielded.

    Returns
    -------
    n_rows : int
    columns : iterator of :class:`Column`, in the order of ``columns``
    """
    columns = list(dict.fromkeys(columns))
    path = None
    if (isinstance(source, str | os.PathLike) and not str(source).startswith(_DUCKDB_PREFIX)
            and named_file(source) is None):
        path = resolve_path(source)
    if path is not None and path.is_file() and _format_of(path)[0] == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            parquet = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InputError(f"{path.name}: could not be read ({first})") from exc
        check_present(columns, parquet.schema_arrow.names, path.name)

        def read(name: str):
            try:
                return parquet.read(columns=[name], use_threads=False).column(0)
            except (pa.ArrowInvalid, OSError) as exc:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise InputError(f"{path.name}: could not be read ({first})") from exc

        def parquet_columns() -> Iterator[Column]:
            # the next column is decoded on a second thread while the caller codes this one
            # (Arrow and NumPy release the GIL): a column's read and its coding each took
            # about 0.2 s at 3x10^7 records, one after the other (issue 20)
            with ThreadPoolExecutor(1) as pool:
                ahead = pool.submit(read, columns[0]) if columns else None
                for i, name in enumerate(columns):
                    chunked = ahead.result()
                    ahead = (pool.submit(read, columns[i + 1]) if i + 1 < len(columns)
                             else None)
                    column = _arrow_or_ids(name, chunked, ids)
                    del chunked
                    # hand the decoded pages back: Arrow's allocator would keep them (0.2 GB
                    # of resident memory at 3e7 records, issue 20)
                    pa.default_memory_pool().release_unused()
                    yield column
                    del column

        return parquet.metadata.num_rows, parquet_columns()
    # CSV (plain or compressed), Stata/SAS/SPSS, DuckDB, frames: read by their own readers
    out, n_rows = read_columns(source, columns, ids)
    return n_rows, (out.pop(name) for name in columns)
