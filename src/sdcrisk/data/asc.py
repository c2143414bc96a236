"""The records of a mu-Argus data file (``.asc``), read block by block without Python work per
record.

:func:`blocks` reads the file in blocks of bytes (:data:`BLOCK_BYTES`), each cut after a line
end. A **fixed-format** block is a run of records: where every line has the same length it
is viewed as a 2-D ``uint8`` array (records x bytes) and a variable is a slice of its
columns; otherwise each variable's bytes are gathered from the line starts. A variable's
bytes are packed into one unsigned integer a record (1, 2, 4 or 8 bytes; a variable wider
than 8 bytes stays a fixed-size binary value), so that telling values apart is integer work.
A **free-format** block is parsed by pyarrow's CSV reader (the ``.rda``'s separator).

Either way a block becomes an Arrow record batch of *raw* values: the bytes as written,
blanks included. What a raw value means - its text (surrounding blanks removed, decoded by
:func:`~sdcrisk.data.text.decode_text`), whether it is missing (blank, or one of the
variable's missing codes), whether the column is integers (every present value a whole
number without leading zeros) - depends only on the distinct raw values, so
:meth:`Stream.values` works out the distinct values alone and the records follow by lookup.
That is what lets the same records be read in memory (:func:`read`) and streamed
(:class:`Stream`, the source of :func:`sdcrisk.data.outofcore.tabulate_file` for mu-Argus
files) with the same result.

Memory in memory is the key columns (1-8 bytes a record each while reading, then the
values); streamed, one block.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..exceptions import InputError

# a parsed .rda (sdcrisk.data.muargus.Metadata) and one of its variables (muargus.Variable):
# not imported, since muargus reads its records through this module
Metadata = Any
Variable = Any

__all__ = ["BLOCK_BYTES", "blocks", "Stream", "read", "decode", "type_values"]

#: bytes of the data file read at a time (a test makes it tiny to cut a file everywhere)
BLOCK_BYTES = 16 << 20
_WHOLE = re.compile(r"[+-]?(0|[1-9][0-9]*)")
_SPACE = np.zeros(256, bool)
_SPACE[list(b" \t\n\r\x0b\x0c")] = True


def decode(values: np.ndarray) -> np.ndarray:
    """A bytes array (distinct values) as text, each value by the rule every reader uses
    (:func:`~sdcrisk.data.text.decode_text`: UTF-8, else Windows-1252, else Latin-1)."""
    if values.size and values.view(np.uint8).max() < 0x80:  # ASCII: numpy's cast, 10x faster
        return values.astype(f"U{max(values.itemsize, 1)}")
    try:
        return np.char.decode(values, "utf-8")
    except UnicodeDecodeError:  # value by value, as a CSV's
        from .text import decode_text

        return np.array([decode_text(v) for v in values.tolist()], dtype=str)


def type_values(var: Variable, raw: np.ndarray, typed: bool = True
                ) -> tuple[np.ndarray, np.ndarray]:
    """The values of raw bytes (an ``S`` array) of ``var`` and their missing mask.

    ``typed``: missing entries hold ``""`` (or 0), and values that are all whole numbers
    without leading zeros come back as int64. Else the text read, missing codes included.
    """
    values = decode(np.char.strip(raw))
    miss = values == ""
    for code in var.missing:
        miss |= values == code
    if typed:
        values = np.where(miss, "", values) if miss.any() else values
        present = values[~miss]
        if len(present) and all(_WHOLE.fullmatch(v) for v in np.unique(present)):
            ints = np.zeros(len(values), dtype=np.int64)
            ints[~miss] = present.astype(np.int64)
            values = ints
    return values, miss


def _last_text(arr: np.ndarray, end: int) -> int:
    """Index just past the last byte before ``end`` that is not white space (0 if none)."""
    step = 1 << 16
    hi = end
    while hi > 0:
        lo = max(hi - step, 0)
        text = np.flatnonzero(~_SPACE[arr[lo:hi]])
        if len(text):
            return lo + int(text[-1]) + 1
        hi = lo
        step *= 4
    return 0


def blocks(meta: Metadata, block_bytes: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """The data file as (number of its first line, ``uint8`` array of whole lines each ending
    in ``\\n``) blocks of about ``block_bytes``.

    A byte-order mark is dropped, the names line of ``<NAMESINFRONT>`` skipped, a last line
    without a line end completed, and blank lines at the end of the file dropped (they are
    held back from a block until a line with text follows).
    """
    size = int(block_bytes or BLOCK_BYTES)
    try:
        fh = open(meta.data, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise InputError(f"{meta.data.name}: could not be opened ({exc.strerror})") from exc
    with fh:
        carry, line, head = b"", 1, True
        while True:
            chunk = fh.read(size)
            data = carry + chunk
            if head:
                if data.startswith(b"\xef\xbb\xbf"):
                    data = data[3:]
                elif len(data) < 3 and chunk and b"\xef\xbb\xbf".startswith(data):
                    carry = data
                    continue
                if meta.names_in_front:
                    cut = data.find(b"\n")
                    if cut < 0 and chunk:
                        carry = data
                        continue
                    data = data[cut + 1:] if cut >= 0 else b""
                    line += 1
                head = False
            if not chunk:
                arr = np.frombuffer(data, np.uint8)
                end = _last_text(arr, len(arr))
                if end:
                    cut = data.find(b"\n", end)
                    body = data[:cut + 1] if cut >= 0 else data[:end] + b"\n"
                    yield line, np.frombuffer(body, np.uint8)
                return
            end = data.rfind(b"\n") + 1
            arr = np.frombuffer(data, np.uint8)
            last = _last_text(arr, end)
            if last == 0:
                carry = data
                continue
            cut = data.find(b"\n", last) + 1
            yield line, arr[:cut]
            line += data.count(b"\n", 0, cut)
            carry = data[cut:]


def _lines(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Line ends, starts and lengths (without ``\\r\\n``/``\\n``) of a block."""
    ends = np.flatnonzero(arr == 10)
    starts = np.empty(len(ends), np.int64)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    lens = ends - starts
    lens -= (lens > 0) & (arr[ends - 1] == 13)
    return ends, starts, lens


def _pack(field: np.ndarray) -> np.ndarray:
    """A variable's bytes (records x width) as one unsigned integer a record (width <= 8),
    else as they are."""
    n, width = field.shape
    if width > 8:
        return np.ascontiguousarray(field)
    size = 1 if width == 1 else 2 if width == 2 else 4 if width <= 4 else 8
    if size == width:
        return np.ascontiguousarray(field).view(f"<u{size}").ravel()
    buf = np.zeros((n, size), np.uint8)
    buf[:, :width] = field
    return buf.view(f"<u{size}").ravel()


def _unpack(arr: Any, width: int | None) -> np.ndarray:
    """Raw Arrow values (packed integers, fixed-size or variable binary) as an ``S`` array."""
    import pyarrow as pa

    if pa.types.is_fixed_size_binary(arr.type):
        w = arr.type.byte_width
        buf = np.frombuffer(arr.buffers()[1], np.uint8)[arr.offset * w:(arr.offset + len(arr)) * w]
        return buf.view(f"S{w}") if len(arr) else np.zeros(0, f"S{w}")
    if pa.types.is_integer(arr.type):
        assert width is not None
        packed = np.asarray(arr)
        raw = packed.view(np.uint8).reshape(len(packed), packed.itemsize)[:, :width]
        return np.ascontiguousarray(raw).view(f"S{width}").ravel()
    values = arr.to_numpy(zero_copy_only=False)
    return values.astype(bytes) if len(values) else np.zeros(0, "S1")


class Stream:
    """A mu-Argus data file as Arrow record batches, one a block of the file.

    The variables in ``text`` (weights, household ids) come as text with missing values
    null; the others (the keys) as raw values, whose meaning :meth:`values` gives.
    Quacks like the ``pyarrow.dataset`` that :mod:`sdcrisk.data.outofcore` streams.
    """

    def __init__(self, meta: Metadata, text: Sequence[str] = (), block_bytes: int | None = None):
        self.meta, self.text, self.block_bytes = meta, set(text), block_bytes
        self.index = {v.name: i for i, v in enumerate(meta.variables)}

    def variable(self, name: str) -> Variable:
        return self.meta.variables[self.index[name]]

    def to_batches(self, columns: Sequence[str], batch_size: int | None = None) -> Iterator[Any]:
        """Record batches of ``columns`` (``batch_size`` is not used: blocks are of bytes)."""
        import pyarrow as pa

        read = _fixed if self.meta.separator is None else _free
        for first, arr in blocks(self.meta, self.block_bytes):
            raw = read(self.meta, arr, first, [self.variable(c) for c in columns])
            cols = [self._text(c, raw[c]) if c in self.text else raw[c] for c in columns]
            yield pa.RecordBatch.from_arrays(cols, names=list(columns))

    def values(self, name: str, raw: Any, typed: bool = True
               ) -> tuple[np.ndarray, np.ndarray | None]:
        """The values of raw Arrow values of ``name`` and their missing mask (None if none);
        worked out on the distinct raw values."""
        import pyarrow.compute as pc

        var = self.variable(name)
        uniq = pc.unique(raw)
        values, miss = type_values(var, _unpack(uniq, var.width), typed)
        if values.dtype.kind == "i" and len(values):  # the smallest integers that hold them
            lo, hi = int(values.min()), int(values.max())
            values = values.astype(next(t for t in (np.int8, np.int16, np.int32, np.int64)
                                        if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max))
        if len(uniq) < len(raw):
            at = pc.index_in(raw, value_set=uniq).to_numpy(zero_copy_only=False)
            values, miss = values[at], miss[at]
        return values, (miss if miss.any() else None)

    def _text(self, name: str, raw: Any) -> Any:
        import pyarrow as pa

        values, miss = self.values(name, raw, typed=False)
        return pa.array(values, mask=miss, type=pa.string())


def _fixed(meta: Metadata, arr: np.ndarray, first: int, variables: list[Variable]) -> dict:
    """Raw Arrow values of ``variables`` in a block of fixed-format records."""
    import pyarrow as pa

    ends, starts, lens = _lines(arr)
    spans = [(int(v.start or 1) - 1, int(v.start or 1) - 1 + v.width) for v in variables]
    need = max((hi for _, hi in spans), default=0)
    short = np.flatnonzero(lens < need)
    if len(short):
        i = int(short[0])
        hi, var = min((h, v) for v, (_, h) in zip(variables, spans, strict=True)
                      if h > lens[i])
        raise InputError(
            f"{meta.data.name}, line {first + i}: the record has {int(lens[i])} "
            f"characters; variable {var.name!r} of {meta.path.name} (line {var.line}) "
            f"runs to column {hi}; check that the data file goes with this metadata "
            "(or correct START WIDTH there)")
    n = len(ends)
    stride = int(ends[0]) + 1
    grid = None
    if len(arr) == n * stride and (n < 2 or bool((np.diff(ends) == stride).all())):
        grid = arr.reshape(n, stride)  # records of one length: a 2-d view, no copy
    out = {}
    for var, (lo, hi) in zip(variables, spans, strict=True):
        field = grid[:, lo:hi] if grid is not None else \
            arr[starts[:, None] + np.arange(lo, hi)]
        packed = _pack(field)
        if packed.ndim == 2:
            out[var.name] = pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(var.width), n, [None, pa.py_buffer(packed)])
        else:
            out[var.name] = pa.array(packed)
    return out


def _free(meta: Metadata, arr: np.ndarray, first: int, variables: list[Variable]) -> dict:
    """Raw Arrow values (binary) of ``variables`` in a block of free-format records."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    sep = meta.separator or ";"
    count = len(meta.variables)
    names = [f"f{i}" for i in range(count)]
    index = {v.name: i for i, v in enumerate(meta.variables)}
    ends, starts, _ = _lines(arr)
    if count > 1:  # pyarrow reads an empty line as a record of empty values
        text = np.concatenate([[0], np.cumsum(~_SPACE[arr])])
        blank = np.flatnonzero(text[ends + 1] == text[starts])
        if len(blank):
            raise InputError(f"{meta.data.name}, line {first + int(blank[0])}: an empty "
                             f"line, but {meta.path.name} declares {count} variables a "
                             "record; remove the line")
    try:
        table = pacsv.read_csv(
            pa.py_buffer(arr),
            read_options=pacsv.ReadOptions(column_names=names),
            parse_options=pacsv.ParseOptions(delimiter=sep, newlines_in_values=False,
                                             ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(
                include_columns=[names[index[v.name]] for v in variables],
                column_types={n: pa.binary() for n in names}, null_values=[],
                quoted_strings_can_be_null=False))
    except pa.ArrowInvalid:
        table = None
    if table is None or table.num_rows != len(ends):
        import csv

        for i, line in enumerate(bytes(arr).split(b"\n")[:-1]):
            row = next(csv.reader([line.rstrip(b"\r").decode("latin-1")], delimiter=sep), [])
            if len(row) != count:
                raise InputError(
                    f"{meta.data.name}, line {first + i}: {len(row)} "
                    f"value{'s' if len(row) != 1 else ''} separated by {sep!r}, but "
                    f"{meta.path.name} declares {count} variables; check the separator "
                    "(<SEPARATOR>) and that the data file goes with this metadata")
        raise InputError(f"{meta.data.name}: could not be read as values separated by "
                         f"{sep!r}; check the separator (<SEPARATOR>) in {meta.path.name}")
    return {v.name: table.column(names[index[v.name]]).combine_chunks() for v in variables}


def read(meta: Metadata, columns: Sequence[str], *, typed: bool = True,
         block_bytes: int | None = None, text: Sequence[str] = ()
         ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray | None]], int]:
    """The named variables of the whole data file, in memory: ``{name: (values, missing
    mask or None)}`` and the record count (see :func:`sdcrisk.data.muargus.read_records`).
    The variables in ``text`` come as the text read (not typed), as :class:`Stream` gives
    them."""
    import pyarrow as pa

    stream = Stream(meta, block_bytes=block_bytes)
    chunks: dict[str, list] = {c: [] for c in columns}
    n = 0
    for batch in stream.to_batches(columns):
        n += batch.num_rows
        for c in columns:
            chunks[c].append(batch.column(c))
    if n == 0:
        raise InputError(f"{meta.data.name}: no records (the data file is empty)")
    out: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    for c in columns:
        out[c] = stream.values(c, pa.chunked_array(chunks.pop(c)), typed and c not in text)
    return out, n
