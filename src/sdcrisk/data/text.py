"""Text files and text values: what a CSV file's first bytes say (its separator, its header
line), how a value's bytes become text, decimal commas, and one-line message fragments.

Every reader of text (assess's pyarrow reader, the streaming reader, protect's pandas reader,
the mu-Argus reader) takes these rules from here, so that the same file reads alike
everywhere; :mod:`sdcrisk.data.io` dispatches sources to their readers.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..exceptions import InputError

__all__ = ["printable", "csv_header", "csv_delimiter", "head_bytes", "decimal_comma_numbers",
           "decimal_comma_weights", "decode_array", "decode_text", "names_not_utf8", "utf8_text",
           "NOT_UTF8_READ_AS", "NULLS"]

#: the texts every CSV reader reads as a missing value
NULLS = ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "None")


def printable(text: str, limit: int = 160) -> str:
    """The first line of ``text`` with unprintable characters as ``?``, at most ``limit``
    characters: safe to put in a one-line message whatever bytes the file held (for
    pyarrow's dataset errors, the reason after their context)."""
    first = text.splitlines()[0] if text else ""
    if "Invalid: " in first:  # pyarrow's dataset errors: the reason comes after the context
        first = first.rsplit("Invalid: ", 1)[1]
    out = "".join(ch if ch.isprintable() else "?" for ch in first)
    return out if len(out) <= limit else out[: limit - 3] + "..."


def csv_header(path: Path, delimiter: str, compression: str | None = None) -> list[str]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    # a header line longer than a block (thousands of columns) read as "no line break":
    # the block grows to hold the first line, up to 16 MiB
    size = 1 << 16
    while size < 1 << 24:
        head = head_bytes(path, compression, size)
        if b"\n" in head or len(head) < size:  # a line, or the whole file in one block
            break
        size <<= 2
    opts = pacsv.ReadOptions(block_size=size)
    try:
        with pa.input_stream(str(path), compression=compression) as stream:
            reader = pacsv.open_csv(
                stream, read_options=opts, parse_options=pacsv.ParseOptions(delimiter=delimiter)
            )
            return list(reader.schema.names)
    except UnicodeDecodeError as exc:
        raise names_not_utf8(path.name, exc.object) from exc
    except Exception as exc:  # empty files and garbage end up here
        msg = printable(str(exc)) if str(exc) else type(exc).__name__
        if "Empty CSV file" in msg or "empty" in msg.lower():
            # pyarrow says "empty" for blank content and also for a first block without a
            # line break (a JSON file, a header line without records or line end)
            if not head_bytes(path, compression).strip():
                raise InputError(f"{path.name}: the file is empty") from exc
            raise InputError(
                f"{path.name}: no line break in the first {opts.block_size >> 10} KiB, so this "
                "is not a CSV file of a header line and records (JSON or another format?); "
                "give a CSV (one record per line), Parquet, Stata, SAS or SPSS file") from exc
        raise InputError(f"{path.name}: could not be read as CSV ({msg})") from exc


#: separators a CSV may use besides the comma, in the order a tie is settled
_OTHER_SEPARATORS = (";", "\t", "|")


def csv_delimiter(path: Path, compression: str | None = None, head: bytes | None = None
                  ) -> str:
    r"""The field separator of a CSV file, read from its header line.

    A ``.tsv`` name means tab. Otherwise the comma, unless the header line has no comma
    (outside double quotes) and does have semicolons, tabs or pipes: then the most frequent
    of those (a semicolon-separated export, as spreadsheets write it where the comma is the
    decimal mark). One column with none of them is read as comma-separated. ``head``: the
    file's first bytes when the caller has read them already (:func:`head_bytes`).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.csv").write_text("age;sex\n30;1\n")
    >>> csv_delimiter(d / "a.csv")
    ';'
    >>> _ = (d / "b.csv").write_text('"a;b",c\n1,2\n')
    >>> csv_delimiter(d / "b.csv")
    ','
    """
    if ".tsv" in [s.lower() for s in path.suffixes]:
        return "\t"
    if head is None:
        head = head_bytes(path, compression)
    first = head.split(b"\n", 1)[0].decode("utf-8", errors="replace")
    outside = "".join(re.split(r'"[^"]*"', first))  # drop quoted names
    if "," in outside:
        return ","
    counts = {sep: outside.count(sep) for sep in _OTHER_SEPARATORS}
    best = max(_OTHER_SEPARATORS, key=lambda sep: counts[sep])
    return best if counts[best] else ","


_DECIMAL_COMMA = r"^\s*[+-]?(\d+(,\d*)?|,\d+)([eE][+-]?\d+)?\s*$"


def decimal_comma_numbers(values) -> np.ndarray | None:
    """Text numbers written with a decimal comma (``"1234,5"``, as semicolon-separated exports
    write them) as floats; None unless every value is such a number. A value holding a
    point as well (``"1.234,5"``: a thousands separator) is not read, so it cannot be
    misread by a factor of 1,000. ``values``: a NumPy array of text or an Arrow string
    array (vectorised: a census file's weights take seconds, not minutes).

    >>> decimal_comma_numbers(np.array(["33,5", "12", "0,25"], dtype=object))
    array([33.5 , 12.  ,  0.25])
    >>> decimal_comma_numbers(np.array(["1.234,5"], dtype=object)) is None
    True
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        text = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(
            np.asarray(values, dtype=object), type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # not all text
        return None
    ok = pc.match_substring_regex(text, _DECIMAL_COMMA)
    if text.null_count or not pc.all(ok).as_py():
        return None
    swapped = pc.replace_substring(pc.utf8_trim_whitespace(text), ",", ".")
    return pc.cast(swapped, pa.float64()).to_numpy(zero_copy_only=False)


def decimal_comma_weights(name: str, values) -> np.ndarray:
    """A weights column of text that did not read as numbers with a decimal point, read
    with a decimal comma (:func:`decimal_comma_numbers`); every reader of weights falls back
    on this one step. InputError naming the first value that is no number, or saying that
    decimal points and commas are mixed."""
    got = decimal_comma_numbers(values)
    if got is not None:
        return got
    from .sizes import boolean_weights

    flags = {str(v).strip().lower() for v in values}
    if flags and flags <= {"true", "false"}:  # read as text (protect keeps the file's text)
        raise boolean_weights(name)
    for v in values:
        text = str(v)
        try:
            float(text)
        except ValueError:
            if not re.fullmatch(_DECIMAL_COMMA, text):
                raise InputError(f"weights column {name!r} is not numeric: value "
                                 f"{printable(text)!r}") from None
    raise InputError(f"weights column {name!r} mixes decimal points and decimal commas; "
                     "write every weight the same way")


def head_bytes(path: Path, compression: str | None, size: int = 1 << 16) -> bytes:
    """The first ``size`` bytes of a (possibly compressed) file; b"" if unreadable."""
    import pyarrow as pa

    try:
        with pa.input_stream(str(path), compression=compression) as stream:
            return stream.read(size)
    except (OSError, pa.ArrowException):
        return b""


def utf8_text(raw: bytes, what: str) -> str:
    """A small settings file's bytes (``--levels``, ``--recode``, ``--key-sets``) as UTF-8
    text (a leading byte-order mark dropped); ``what`` names the file and its option.

    Raises
    ------
    InputError
        The bytes are not UTF-8: the offending byte, its position and the remedy.
    """
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at position "
                         f"{exc.start}); save the file as UTF-8") from None


#: how a value that is not UTF-8 is read, in messages and notes
NOT_UTF8_READ_AS = "Windows-1252"


def decode_text(raw: bytes) -> str:
    """One value's bytes as text: UTF-8; else Windows-1252 (cp1252, what Windows exports
    write: 0x80 is '€', 0x96 '–'), where every byte is defined there; else Latin-1 (every
    byte is a character: a value holding one of the five bytes cp1252 leaves undefined,
    0x81, 0x8D, 0x8F, 0x90, 0x9D, which Latin-1 reads as control characters). Every reader
    of text values (assess's pyarrow reader in memory, the streaming reader, protect's
    pandas reader, the mu-Argus reader) decodes through this one rule, value by value.

    Distinct values of one encoding stay distinct (each decoding is one to one, and no
    Windows-1252 text holds the characters only Latin-1 gives those five bytes), but two
    encodings of one text are one label, hence one category: ``café`` written in UTF-8 on
    one line and in Windows-1252 on another, or '–' as UTF-8 and as the byte 0x96. That is
    meant: a file put together from a UTF-8 and a Windows export holds one category there,
    which an intruder reads as one, and counting its spellings apart would invent sample
    uniques. In memory and streamed alike (both code the decoded text).

    >>> decode_text(b"\\x80uro a\\x96b"), decode_text(b"caf\\xc3\\xa9"), decode_text(b"\\x81")
    ('€uro a–b', 'café', '\\x81')
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp1252")
    except UnicodeDecodeError:  # 0x81, 0x8D, 0x8F, 0x90 or 0x9D
        return raw.decode("latin-1")


def decode_array(arr):
    """An Arrow array of bytes as an Arrow array of text, each value decoded by
    :func:`decode_text`: a cast when every value is UTF-8, else the distinct values decoded
    one by one and taken back per value (O(distinct values) Python work)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return arr.cast(pa.string())
    except pa.ArrowInvalid:  # a value that is not UTF-8
        pass
    uniq = pc.unique(arr)
    text = pa.array([None if v is None else decode_text(v) for v in uniq.to_pylist()],
                    type=pa.string())
    return pc.take(text, pc.index_in(arr, value_set=uniq))


def names_not_utf8(name: str, raw: bytes) -> InputError:
    """The error for a CSV whose header line names a column ``raw`` that is not UTF-8: values
    are decoded by :func:`decode_text`, but a key or column named on the command line must
    match its name exactly, so a guessed encoding there is refused."""
    return InputError(f"{name}: the column name {raw!r} in the header line is not UTF-8 text; "
                      f"re-save the file as UTF-8 (values that are not UTF-8 are read as "
                      f"{NOT_UTF8_READ_AS}, column names are not)")
