"""A CSV's header line repeated among its records: two exports joined (``cat a.csv b.csv >
both.csv``) leave the second file's header line in the middle of the data. Read as a record it
makes the text ``age`` a category of the key ``age`` (and a numeric key a text key), so every
risk figure changes without a word; every reader of delimited text refuses it instead, naming
the line and the remedy.

Only a full match counts: a line whose every field equals its column's name (parsed as the
header line is: the same separator, quotes and encoding; a UTF-8 byte-order mark before it
allowed, as the second file of a joined pair of Excel exports has one). A record where some
fields equal their column's name (the value ``sex`` in the column ``sex``) is data, and so
is a line of numbers under a header of numbers (columns named 0, 1, 2, as pandas writes a frame
without names, holding codes 0, 1, 2): nothing tells it from a record.

Finding it costs nothing on a clean file. The readers check the columns they read
(:func:`could_be_header`): a column typed as numbers cannot hold its own name (unless the name
is itself that number), so with a numeric key the check ends at once; a text column is
compared with its name once, and the other columns only on the rows that matched. Only when
some record matches its column names in every column read is the file itself scanned
(:func:`header_lines`, a regular expression over the bytes, about 100 MB/s) to confirm the
full line and name its line number, as an editor numbers it. The streaming reader, which
reads a comma-separated weights column as numbers, scans the same way when a value does not
convert, before it reports that. A DuckDB table or query (``read_csv`` in DuckDB) has rows,
not lines: :func:`check_duckdb_rows` names the row.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..exceptions import InputError
from .text import NULLS, csv_delimiter, csv_header, head_bytes

__all__ = ["could_be_header", "header_lines", "repeated_header_error",
           "find_repeated_header", "check_columns", "check_duckdb_rows"]

_BOM = "\ufeff"
#: bytes read at a time by the scan
_CHUNK = 1 << 24
#: texts that can be an integer or a floating-point number as Arrow's cast reads them (a
#: superset: the cast itself decides those that match)
_AS_INTEGER = re.compile(r"[+-]?\d+|0[xX][0-9a-fA-F]+")
_AS_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)",
                       re.IGNORECASE)
#: line numbers named in the message at most
_SHOWN = 3
#: a column name that is a number: a line of such names is a valid record of numbers
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _names_are_numbers(names: Sequence[str]) -> bool:
    """Whether every column name is a number (columns named 0, 1, 2 as pandas writes a
    frame without names): a record equal to that header line is then a record of numbers
    like any other (codes 0, 1, 2), not a sign of joined files, and is never refused."""
    return all(_NUMBER.fullmatch(n.strip(" \t").lstrip(_BOM)) for n in names)


def _header_value(name: str, typ, first: bool) -> list | None:
    """The values a column of Arrow type ``typ`` holds where a record repeats its name
    ``name`` (and its name after a byte-order mark, for the file's ``first`` column), as
    Arrow scalars; None when no value of that type can be the name (a numeric column of a
    column named by text)."""
    import pyarrow as pa

    texts = [name] + ([_BOM + name] if first else [])
    # a column named "NA" (or any text the readers read as missing) holds a missing value
    # on a repeated header line
    nulls = [pa.scalar(None, typ)] if name in NULLS else []
    if pa.types.is_null(typ):  # a column with no value: a repeated name would be one
        return nulls or None
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return [pa.scalar(t, typ) for t in texts] + nulls
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return [pa.scalar(t.encode("utf-8"), typ) for t in texts] + nulls
    number = name.strip(" \t")
    if ((pa.types.is_integer(typ) and not _AS_INTEGER.fullmatch(number))
            or (pa.types.is_floating(typ) and not _AS_FLOAT.fullmatch(number))):
        # no number: the usual case, told without Arrow's cast (whose failure imports
        # pandas, a quarter of a second of every command's start)
        return nulls or None
    try:  # a column named "2020" typed as integers holds 2020 on a repeated header line
        return [pa.scalar(number).cast(typ)]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return nulls or None


def could_be_header(columns: Mapping[str, Any], first: str | None = None) -> bool:
    """Whether some record holds, in every one of ``columns`` (name -> Arrow array or chunked
    array, as a reader typed them), that column's own name: a repeated header line, if the
    columns not read match too (:func:`header_lines` tells). ``first``: the name of the
    file's first column, whose value may carry a byte-order mark.

    Columns that cannot hold their name (numbers) answer at once; one text column is
    compared with its name in full, the others only on the rows that matched.

    >>> import pyarrow as pa
    >>> could_be_header({"a": pa.array(["x", "a"]), "b": pa.array(["b", "b"])})
    True
    >>> could_be_header({"a": pa.array(["a", "x"]), "b": pa.array(["y", "b"])})
    False
    >>> could_be_header({"a": pa.array(["a"]), "n": pa.array([1])})
    False
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    targets = {}
    for name, arr in columns.items():
        typ = arr.type.value_type if pa.types.is_dictionary(arr.type) else arr.type
        values = _header_value(name, typ, name == first)
        if values is None:
            return False
        targets[name] = values
    rows = None
    for name, arr in columns.items():
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        if rows is not None:
            arr = arr.take(rows)
        hit = pc.is_in(arr, value_set=pa.array(targets[name], type=arr.type))
        if isinstance(hit, pa.ChunkedArray):
            hit = hit.combine_chunks()
        if rows is None:
            if not pc.any(hit).as_py():
                return False
            rows = pc.indices_nonzero(hit)
        else:
            rows = rows.filter(hit)
        if len(rows) == 0:
            return False
    return rows is not None and len(rows) > 0


def _field_pattern(name: str, delimiter: str) -> bytes:
    """The bytes one field holding ``name`` can be: quoted, or as it is where it needs no
    quotes."""
    quoted = re.escape(('"' + name.replace('"', '""') + '"').encode("utf-8"))
    if any(c in name for c in (delimiter, '"', "\n", "\r")):
        return quoted
    return b"(?:" + re.escape(name.encode("utf-8")) + b"|" + quoted + b")"


def header_lines(path: Path, compression: str | None, delimiter: str, names: Sequence[str]
                 ) -> tuple[list[int], int]:
    """The line numbers (1-based, as an editor numbers them; at most three) of the lines
    after the header line whose fields are ``names`` (the header's column names, read with
    ``delimiter``), and how many such lines there are. A scan of the (decompressed) file."""
    import pyarrow as pa

    fields = delimiter.encode("utf-8").join(_field_pattern(n, delimiter) for n in names)
    line = re.compile(rb"^(?:\xef\xbb\xbf)?" + fields + rb"\r?$", re.MULTILINE)
    found: list[int] = []
    count = 0
    lines_before = 0  # lines of the text before ``data``
    header_line = None  # the first line holding text: pyarrow skips empty lines before it
    carry = b""
    with pa.input_stream(str(path), compression=compression) as stream:
        while True:
            chunk = stream.read(_CHUNK)
            data = carry + chunk
            end = len(data) if not chunk else data.rfind(b"\n") + 1
            if header_line is None:
                blank = re.match(rb"(?:\r?\n)*", data[:end])
                if blank is not None and blank.end() < end:
                    header_line = lines_before + data.count(b"\n", 0, blank.end()) + 1
            pos, upto = 0, lines_before
            for m in line.finditer(data, 0, end):
                upto += data.count(b"\n", pos, m.start())
                pos = m.start()
                if upto + 1 != header_line:
                    count += 1
                    if len(found) < _SHOWN:
                        found.append(upto + 1)
            lines_before += data.count(b"\n", 0, end)
            carry = data[end:]
            if not chunk:
                break
    return found, count


def repeated_header_error(path: Path, lines: Sequence[int], count: int,
                          compression: str | None = None) -> InputError:
    """The refusal of a file whose header line is repeated at ``lines`` (``count`` in all)."""
    more = ""
    if count > 1:
        shown = ", ".join(map(str, lines[1:]))
        more = (f" (and {count - 1} more such line{'s' if count > 2 else ''}: {shown}"
                f"{', ...' if count > len(lines) else ''})")
    name = shlex.quote(str(path))
    if compression is None:
        fix = (f"keep only the first header line, e.g. awk -v h=\"$(head -n 1 {name})\" "
               f"'NR == 1 || $0 != h' {name} > fixed.csv")
    else:
        fix = (f"keep only the first header line (in the {compression}-decompressed file, "
               "then compress it again)")
    return InputError(f"{path.name}, line {lines[0]}: the header line is repeated as a "
                      f"record{more}; were files joined (cat a.csv b.csv)? Read as data it "
                      f"would make each column name a category; {fix}")


def find_repeated_header(path: Path, compression: str | None = None,
                         delimiter: str | None = None, names: Sequence[str] | None = None
                         ) -> InputError | None:
    """Scan ``path`` (:func:`header_lines`): :func:`repeated_header_error` when its header
    line is repeated, else None; ``delimiter`` and ``names`` are read from the file when not
    given. A file that cannot be scanned (its header unreadable, its compressed stream
    broken) gives None: the reader's own error says what is wrong with it."""
    import pyarrow as pa

    try:
        if delimiter is None:
            delimiter = csv_delimiter(path, compression, head_bytes(path, compression))
        if names is None:
            names = csv_header(path, delimiter, compression)
        if _names_are_numbers(names):
            return None
        lines, count = header_lines(path, compression, delimiter, names)
    except (InputError, OSError, pa.ArrowException):
        return None
    return repeated_header_error(path, lines, count, compression) if count else None


def check_columns(path: Path, compression: str | None, delimiter: str,
                  names: Sequence[str], columns: Mapping[str, Any]) -> None:
    """Refuse ``path`` when its header line is repeated among the records: ``columns`` (the
    Arrow columns read, :func:`could_be_header`) first, the file only when they could hold
    one (:func:`find_repeated_header`)."""
    if could_be_header(columns, names[0] if names else None):
        error = find_repeated_header(path, compression, delimiter, names)
        if error is not None:
            raise error


def check_duckdb_rows(con, relation: str, where: str, what: str, names: Sequence[str],
                      columns: Mapping[str, Any]) -> None:
    """Refuse a DuckDB table or query (``relation``, as it follows ``FROM``; ``where``: the
    database file's name, ``what``: "the query" or "table 't'", ``names``: its columns)
    that holds a row
    whose every column is that column's own name: a CSV read there (``read_csv``) with its
    header line repeated. ``columns``: the Arrow columns read (:func:`could_be_header`);
    only when they could hold one are all the columns compared, by a query. The row is
    numbered in the relation's order; the line of the file is not known here.

    Raises
    ------
    InputError
        Naming the row, how many there are, and the remedy.
    """
    if not names or _names_are_numbers(names) or not could_be_header(columns, names[0]):
        return
    quoted = ['"' + n.replace('"', '""') + '"' for n in names]
    test = [f"CAST({q} AS VARCHAR) = ?" for q in quoted]
    test[0] = f"({test[0]} OR CAST({quoted[0]} AS VARCHAR) = ?)"  # a byte-order mark
    params = [names[0], _BOM + names[0], *names[1:]]
    row = "__sdcrisk_row"
    try:
        found = con.execute(
            f"SELECT {row}, count(*) OVER () FROM (SELECT row_number() OVER () AS {row}, * "
            f"FROM {relation} AS q) WHERE {' AND '.join(test)} ORDER BY {row} "
            f"LIMIT {_SHOWN}", params).fetchall()
    except Exception:  # noqa: BLE001 - duckdb's own errors: the rows were read, unconfirmed
        return
    if not found:
        return
    count = int(found[0][1])
    more = ""
    if count > 1:
        shown = ", ".join(str(r[0]) for r in found[1:])
        more = (f" (and {count - 1} more such row{'s' if count > 2 else ''}: {shown}"
                f"{', ...' if count > len(found) else ''})")
    first = names[0].replace("'", "''")
    raise InputError(
        f"{where}: row {found[0][0]} of {what} holds every column's own name{more}: a CSV "
        "header line read as a record (were files joined, cat a.csv b.csv?); its line in the "
        "file is "
        "not known here: keep only the first header line in the CSV, or leave such rows out "
        f"of the query (WHERE {quoted[0]} <> '{first}')")
