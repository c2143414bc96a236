"""CSV files in the streaming reader (:mod:`sdcrisk.data.outofcore`): the dataset of record
batches, how its key columns are typed, and its errors in the in-memory reader's words.

A CSV that is not UTF-8 (a Windows-1252 or Latin-1 export) is read as the in-memory reader
reads it: its key columns come as bytes, and each distinct value is decoded by
:func:`~sdcrisk.data.text.decode_text` (UTF-8, else Windows-1252, else Latin-1; value by
value, so a file mixing them reads as in memory). Whether a file needs that is told by its
first 64 KiB (:func:`utf8_head`), or by pyarrow's UTF-8 error past them (:class:`NotUtf8`),
so a UTF-8 file is read as text, as before, at no cost.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ..exceptions import InputError
from .columns import check_present
from .repeated_header import find_repeated_header
from .sizes import boolean_weights
from .text import NULLS, csv_delimiter, csv_header, decode_array, head_bytes, printable

__all__ = ["NULLS", "NotUtf8", "csv_dataset", "csv_error", "infer_type",
           "keys_as_bytes", "typed_column", "utf8_head"]



def csv_dataset(path: Path, compression: str | None, columns: Sequence[str],
                weights: str | None, as_bytes: bool | None = None):
    """A CSV file as a ``pyarrow.dataset`` of ``columns`` (keys as text, or as bytes), and
    True (its columns are text to type).

    ``as_bytes``: read the columns as bytes (weights too, unless comma-separated: numbers
    then), to be decoded value by value as the in-memory reader decodes them
    (:func:`typed_column`, :func:`~sdcrisk.data.text.decode_array`); None: when the file's
    first 64 KiB are not UTF-8 (or its first block is not), so that a UTF-8 file pays
    nothing for it.

    Raises
    ------
    InputError
        An empty file, a column name that is not UTF-8 (as in memory), a missing column,
        a first block pyarrow cannot read (:func:`csv_error`).
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.dataset as ds

    head = head_bytes(path, compression)
    delimiter = csv_delimiter(path, compression, head)
    if path.stat().st_size == 0:
        raise InputError(f"{path.name}: the file is empty")
    if as_bytes is None:
        as_bytes = not utf8_head(head)
    if as_bytes:  # a column name that is not UTF-8 is refused, as in memory
        csv_header(path, delimiter, compression)
    types = {c: pa.binary() if as_bytes else pa.string() for c in columns}
    if weights is not None and delimiter == ",":  # elsewhere a decimal comma may be
        types[weights] = pa.float64()                # used: the weights check reads it
    def dataset(**read):
        fmt = ds.CsvFileFormat(
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(column_types=types, null_values=list(NULLS),
                                                 strings_can_be_null=True),
            read_options=pacsv.ReadOptions(block_size=1 << 24, **read))
        return ds.dataset(str(path), format=fmt)

    try:
        data = dataset()
        names = data.schema.names
    except (pa.ArrowInvalid, OSError) as exc:
        try:
            header = csv_header(path, delimiter, compression)
        except InputError:
            header = None
        if header is not None and "multiple columns named" in str(exc) and any(
                header.count(c) > 1 for c in columns):
            check_present(columns, header, path.name)  # a column read named twice: as in memory
        if header is not None and "multiple columns named" in str(exc):
            # names repeated among columns not read (a spreadsheet's trailing empty columns,
            # ',,' at the end of each line): named apart, as the in-memory reader passes
            # over them (this reader refused the file)
            renamed = [h if header.count(h) == 1 else f"{h}\x00{i}"
                       for i, h in enumerate(header)]
            data = dataset(column_names=renamed, skip_rows=1)
            check_present(columns, data.schema.names, path.name)
            return data, True
        error = csv_error(path.name, header, exc)
        if isinstance(error, NotUtf8) and not as_bytes:  # past the first 64 KiB
            return csv_dataset(path, compression, columns, weights, True)
        if header is not None and not isinstance(error, NotUtf8):
            # the header's text in the weights column, read as numbers
            error = find_repeated_header(path, compression, delimiter, header) or error
        raise error from exc
    check_present(columns, names, path.name)
    return data, True


def utf8_head(head: bytes) -> bool:
    """Whether a file's first bytes (:func:`~sdcrisk.data.text.head_bytes`) are UTF-8, a
    character cut at their end allowed."""
    import codecs

    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) < 1 << 16)
    except UnicodeDecodeError:
        return False
    return True


def keys_as_bytes(data, keys: Sequence[str]) -> bool:
    """Whether a CSV dataset reads ``keys`` as bytes (:func:`csv_dataset`'s ``as_bytes``)."""
    import pyarrow as pa

    return any(pa.types.is_binary(data.schema.field(k).type) for k in keys)


def typed_column(arr):
    """A CSV key column as the in-memory reader types it: text read as bytes (a file that is
    not UTF-8) stays bytes unless every value is UTF-8, when it is typed by :func:`infer_type`
    like any text; otherwise each value is decoded by
    :func:`~sdcrisk.data.text.decode_text` and kept as text, as pyarrow's reader makes such
    a column binary and :func:`~sdcrisk.data.column_values.arrow_column` decodes it. Only distinct
    values come here, so decoding costs O(cells)."""
    import pyarrow as pa

    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        return infer_type(arr)
    try:
        return infer_type(arr.cast(pa.string()))
    except pa.ArrowInvalid:  # a value that is not UTF-8: the column is text
        return decode_array(arr)


def infer_type(arr):
    """A CSV key column read as text, typed as pyarrow's reader would (int64, double, text)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        # pyarrow's CSV reader types ' 1' as the number 1 (its number parsers skip spaces
        # and tabs around the digits), a cast does not: trimmed, so that both passes agree
        trimmed = pc.utf8_trim(arr, characters=" \t")
    else:
        trimmed = arr
    try:
        return pc.cast(trimmed, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    flags = _true_false(arr)
    if flags is not None:
        return flags
    try:
        return pc.cast(trimmed, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return arr


def _true_false(arr):
    """``arr`` as booleans when every value is one of pyarrow's true/false spellings (its
    reader's order: after integers, before numbers), else None. The in-memory reader types
    such a column so (0 and 1, however spelt): as text, the streamed path counted 'True',
    'TRUE' and '1' as three categories where the same file in memory had one, and which
    path ran follows the file's size."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return None
    spelt = pacsv.ConvertOptions()
    true, false = pa.array(spelt.true_values), pa.array(spelt.false_values)
    is_true = pc.is_in(arr, value_set=true)
    if not pc.all(pc.or_(pc.or_(is_true, pc.is_in(arr, value_set=false)),
                         pc.is_null(arr))).as_py():
        return None
    return pc.if_else(pc.is_null(arr), pa.scalar(None, pa.bool_()), is_true)


class NotUtf8(InputError):
    """A CSV value that is not UTF-8 where the streaming reader reads text
    (:func:`csv_error`); keys are then read again as bytes
    (:func:`sdcrisk.data.outofcore.tabulate_file`)."""


def csv_error(name: str, names: Sequence[str] | None, exc: Exception) -> InputError:
    """pyarrow's error on a CSV value in the words of the in-memory reader: a weights value
    that is not a number, a line that is not UTF-8; else its own text, printable."""
    text = str(exc)
    line = re.search(r"Row #(\d+)", text)
    where = f" at line {line.group(1)}" if line else ""
    if "invalid UTF8" in text:
        column = re.search(r"In CSV column #(\d+)", text)
        what = f" in column {names[int(column.group(1))]!r}" if column and names \
            and int(column.group(1)) < len(names) else ""
        return NotUtf8(f"{name}: the text{where}{what} is not UTF-8; the streaming reader "
                        "(--out-of-core) could not read it as Windows-1252 either: convert "
                        "the file (e.g. iconv -f cp1252 -t utf-8) or read it without "
                        "--out-of-core")
    column = re.search(r"In CSV column #(\d+)", text)
    value = re.search(r"conversion error to double: invalid value '(.*)'", text)
    if column and value and names is not None and int(column.group(1)) < len(names):
        if value.group(1).strip().lower() in ("true", "false"):
            return boolean_weights(names[int(column.group(1))])
        return InputError(f"weights column {names[int(column.group(1))]!r} is not numeric: "
                          f"value {printable(value.group(1), 40)!r}{where}; survey weights "
                          "must be numbers > 0")
    return InputError(f"{name}: could not be read as CSV ({printable(text)})")
