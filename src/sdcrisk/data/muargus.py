"""mu-Argus microdata: an ASCII data file (``.asc``) described by a metadata file (``.rda``).

mu-Argus (Statistics Netherlands' disclosure-control tool) keeps microdata as a text file
of records, either **fixed format** (each variable at a start column, with a width) or
**free format** (values separated by the ``.rda``'s ``<SEPARATOR>``), and a metadata file
that lists the variables in order, one line each::

    // fixed format: NAME START WIDTH [MISSING1 [MISSING2]]
    REGION 1 2 99
      <RECODEABLE>
      <IDLEVEL> 1
    SEX 3 1 9
      <RECODEABLE>
      <IDLEVEL> 2
    WEIGHT 4 8
      <NUMERIC>
      <WEIGHT>
      <DECIMALS> 2

and, for free format, a first line ``<SEPARATOR> ";"`` and variable lines without the start
(``NAME WIDTH [MISSING1 [MISSING2]]``). Start columns count from 1. Lines starting with
``//`` are comments; ``<TAGS>`` are read without regard to case; a token may be quoted
(``"Total"``). The tags read here:

* ``<IDLEVEL> n``: the variable is identifying (a key) when n > 0 (1 most identifying);
  the keys when the user names none;
* ``<WEIGHT>``, ``<HOUSE_ID>``: the weight variable and the household id (used only when
  the user asks for them: ``--weights``, ``--household``);
* ``<SEPARATOR> "c"`` (free format), ``<NAMESINFRONT>`` (free format whose first data line
  names the variables: skipped).

The other tags mu-Argus and tau-Argus write (``<RECODEABLE>``, ``<NUMERIC>``,
``<DECIMALS>``, ``<CODELIST>``, ``<TRUNCABLE>``, ``<SUPPRESSWEIGHT>``, ``<HOUSEHOLD>``,
``<RELATED>``, ``<TOTCODE>``, the hierarchy tags...) are accepted and play no part in the
risk. A tag not in that list is refused (a misspelt ``<IDLEVL>`` would otherwise lose a key).

Values are read as text with surrounding spaces removed; a blank value, or one equal to
one of the variable's missing codes, is a missing value. Columns are bytes (mu-Argus files
use one byte a character); text that is not UTF-8 is read as Windows-1252 (else Latin-1),
value by value, as a CSV's. A column whose
values are all whole numbers written without leading zeros is read as integers (so labels
print as in a CSV), any other as text (``"01"`` stays ``"01"``). Numbers are read as written
(``<DECIMALS>`` does not move a decimal point).

This module knows only the mu-Argus layout; :mod:`sdcrisk.data.io` turns what it reads into
columns, :mod:`sdcrisk.data.frames` into protect's frame (and writes the protected file
back in the same layout).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..exceptions import InputError

__all__ = ["Variable", "Metadata", "is_muargus", "locate", "read_metadata", "read_records",
           "format_records", "SUFFIXES"]

#: what names a mu-Argus source: the metadata file or the data file
SUFFIXES = (".rda", ".asc")

#: tags of a variable that play no part in the risk (mu-Argus and tau-Argus metadata)
_IGNORED = {"<RECODEABLE>", "<RECODABLE>", "<NUMERIC>", "<DECIMALS>", "<CODELIST>",
            "<TRUNCABLE>", "<SUPPRESSWEIGHT>", "<HOUSEHOLD>", "<RELATED>", "<TOTCODE>",
            "<HIERARCHICAL>", "<HIERLEVELS>", "<HIERCODELIST>", "<HIERLEADSTRING>",
            "<HOLDING>", "<REQUEST>", "<DISTANCE>", "<MAXSCORE>", "<STRING>", "<SUPPRESS>",
            "<SAFE>", "<UNSAFE>", "<PROTECT>", "<PEEPCODE>", "<SHADOW>", "<COST>"}
#: tags of the file (before the first variable)
_FILE_TAGS = {"<SEPARATOR>", "<NAMESINFRONT>", "<SPSS>", "<SAFE>", "<UNSAFE>", "<PROTECT>"}


@dataclass(frozen=True)
class Variable:
    """One variable of a ``.rda`` file: its place in the record and its roles."""

    name: str
    #: first column (from 1) in a fixed-format record; None in free format
    start: int | None
    width: int
    missing: tuple[str, ...]
    idlevel: int = 0
    weight: bool = False
    house_id: bool = False
    #: line of the ``.rda`` that declares it (for messages)
    line: int = 0


@dataclass(frozen=True)
class Metadata:
    """A parsed ``.rda`` file and the data file it describes."""

    path: Path
    data: Path
    variables: tuple[Variable, ...]
    #: the field separator of free format; None for fixed format
    separator: str | None = None
    names_in_front: bool = False

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variables]

    @property
    def keys(self) -> list[str]:
        """The identifying variables (``<IDLEVEL>`` above 0), in the file's order."""
        return [v.name for v in self.variables if v.idlevel > 0]

    @property
    def weight(self) -> str | None:
        return next((v.name for v in self.variables if v.weight), None)

    @property
    def house_id(self) -> str | None:
        return next((v.name for v in self.variables if v.house_id), None)

    def variable(self, name: str) -> Variable:
        return next(v for v in self.variables if v.name == name)

    def describe(self) -> str:
        """What the metadata declares beyond the layout, for a note: keys, weight, household."""
        parts = []
        if self.weight:
            parts.append(f"weight variable {self.weight!r} (used with --weights "
                         f"{self.weight})")
        if self.house_id:
            parts.append(f"household id {self.house_id!r} (used with --household "
                         f"{self.house_id})")
        return "; ".join(parts)


def _split_spec(text: str) -> tuple[str, str | None]:
    """``FILE.rda::DATA`` -> (``FILE.rda``, ``DATA``); anything else -> (text, None)."""
    head, sep, tail = text.partition("::")
    return (head, tail.strip() or None) if sep else (text, None)


def is_muargus(source) -> bool:
    """Whether ``source`` names mu-Argus microdata: a path (or ``FILE.rda::DATA``) ending
    in ``.rda`` or ``.asc``."""
    if not isinstance(source, str | os.PathLike):
        return False
    head, _ = _split_spec(str(source))
    return head.lower().endswith(SUFFIXES)


def _beside(path: Path, suffix: str) -> Path | None:
    """``path`` with ``suffix`` (either case) when that file exists."""
    for s in (suffix, suffix.upper()):
        other = path.with_suffix(s)
        if other.is_file():
            return other
    return None


def locate(source: str | os.PathLike) -> tuple[Path, Path]:
    """(metadata, data) files of a mu-Argus source.

    ``survey.rda`` reads ``survey.asc`` beside it; ``survey.asc`` reads its metadata from
    ``survey.rda`` beside it; ``survey.rda::other.asc`` names the data file (a relative
    path is looked for from the current folder, then from the ``.rda``'s folder).

    Raises
    ------
    InputError
        A file that does not exist, naming the one that was looked for and the remedy.
    """
    head, data_name = _split_spec(str(source))
    path = Path(head)
    if not path.is_file():
        raise InputError(f"file not found: {head!r}")
    if path.suffix.lower() == ".asc":
        if data_name is not None:
            raise InputError(f"{source!r}: name the data file after the metadata file: "
                             "FILE.rda::DATA.asc")
        rda = _beside(path, ".rda")
        if rda is None:
            raise InputError(f"{path.name}: a mu-Argus data file is read with its metadata "
                             f"file; {path.with_suffix('.rda').name} is not beside it: put the "
                             "metadata there, or give FILE.rda::" + path.name)
        return rda, path
    if data_name is None:
        data = _beside(path, ".asc")
        if data is None:
            raise InputError(f"{path.name}: its data file {path.with_suffix('.asc').name} is "
                             f"not beside it; give the data file as {path.name}::DATAFILE")
        return path, data
    data = Path(data_name)
    if not data.is_absolute() and not data.is_file() and (path.parent / data).is_file():
        data = path.parent / data
    if not data.is_file():
        raise InputError(f"{path.name}: data file not found: {data_name!r}")
    return path, data


def _tokens(line: str) -> list[str]:
    """The tokens of a metadata line: blank-separated, or double-quoted (quotes dropped)."""
    out, rest = [], line.replace("\t", " ").strip()
    while rest:
        if rest.startswith('"'):
            end = rest.find('"', 1)
            if end < 0:
                raise ValueError("a quote that is not closed")
            out.append(rest[1:end])
            rest = rest[end + 1:].strip()
        else:
            token, _, rest = rest.partition(" ")
            out.append(token)
            rest = rest.strip()
    return out


def read_metadata(source: str | os.PathLike) -> Metadata:
    """Parse the ``.rda`` file of a mu-Argus source (see :func:`locate`).

    Raises
    ------
    InputError
        A line that is not a variable or a known tag, a start or width that is not a
        positive whole number, overlapping variables, a missing code wider than its
        variable, a name declared twice, a tag before any variable, no variables. The
        message names the file, the line and what to write instead.
    """
    rda, data = locate(source)
    try:
        raw = rda.read_bytes()
    except OSError as exc:
        raise InputError(f"{rda.name}: could not be opened ({exc.strerror})") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:  # Windows-1252, else Latin-1, as values are read
        from .text import decode_text

        text = decode_text(raw)
    separator, names_in_front, fixed = None, False, True
    variables: list[dict] = []

    def bad(number: int, what: str) -> InputError:
        return InputError(f"{rda.name}, line {number}: {what}")

    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        try:
            tokens = _tokens(stripped)
        except ValueError as exc:
            raise bad(number, f"{exc}; close it (\"...\")") from None
        first = tokens[0]
        if first.startswith("<"):
            tag = first.upper()
            args = tokens[1:]
            if not variables and tag in _FILE_TAGS:
                if tag == "<SEPARATOR>":
                    if len(args) != 1 or len(_separator(args[0])) != 1:
                        raise bad(number, f"<SEPARATOR> needs one character in quotes, e.g. "
                                  f"<SEPARATOR> \";\" (got {' '.join(args) or 'nothing'})")
                    separator, fixed = _separator(args[0]), False
                elif tag == "<NAMESINFRONT>":
                    names_in_front, fixed = True, False
                    separator = separator or ";"
                elif tag == "<SPSS>":
                    raise bad(number, "<SPSS>: the data are in an SPSS file; give the .sav "
                              "file itself (sdcrisk reads SPSS files)")
                continue
            if not variables:
                raise bad(number, f"{first} comes before any variable; a tag describes the "
                          "variable on the line above it (NAME START WIDTH)")
            var = variables[-1]
            if tag == "<IDLEVEL>":
                if len(args) != 1 or not args[0].isdigit():
                    raise bad(number, "<IDLEVEL> needs a whole number (0 not identifying, "
                              f"1 most identifying), got {' '.join(args) or 'nothing'!r}")
                var["idlevel"] = int(args[0])
            elif tag == "<WEIGHT>":
                var["weight"] = True
            elif tag == "<HOUSE_ID>":
                var["house_id"] = True
            elif tag not in _IGNORED:
                raise bad(number, f"unknown tag {first}; the tags of a variable are "
                          "<IDLEVEL> n, <WEIGHT>, <HOUSE_ID>, <RECODEABLE>, <NUMERIC>, "
                          "<DECIMALS> n, <CODELIST> FILE, <TRUNCABLE> ... (check its spelling)")
            continue
        fields = tokens[1:]
        need = 2 if fixed else 1
        shape = "NAME START WIDTH [MISSING1 [MISSING2]]" if fixed else \
            "NAME WIDTH [MISSING1 [MISSING2]] (free format: no start column)"
        if len(fields) < need or len(fields) > need + 2:
            raise bad(number, f"{stripped[:60]!r} is not a variable line: write {shape}")
        numbers = fields[:need]
        if not all(f.isdigit() and int(f) > 0 for f in numbers):
            what = "start and width" if fixed else "width"
            raise bad(number, f"variable {first!r}: the {what} must be whole numbers >= 1 "
                      f"(got {' '.join(numbers)}); write {shape}")
        width = int(numbers[-1])
        missing = tuple(m.strip() for m in fields[need:] if m.strip())
        if fixed:
            long = next((m for m in missing if len(m) > width), None)
            if long is not None:
                raise bad(number, f"variable {first!r}: the missing code {long!r} is wider "
                          f"than the variable ({width} characters)")
        if any(v["name"] == first for v in variables):
            other = next(v for v in variables if v["name"] == first)
            raise bad(number, f"variable {first!r} is declared twice (also on line "
                      f"{other['line']}); rename one of them")
        variables.append({"name": first, "start": int(numbers[0]) if fixed else None,
                          "width": width, "missing": missing, "line": number})
    if not variables:
        raise InputError(f"{rda.name}: no variables; a mu-Argus metadata file lists one "
                         "variable a line (NAME START WIDTH, then its <TAGS>)")
    out = tuple(Variable(**v) for v in variables)
    if fixed:
        _check_overlaps(rda.name, out)
    return Metadata(path=rda, data=data, variables=out, separator=separator,
                    names_in_front=names_in_front)


def _separator(token: str) -> str:
    return {"TAB": "\t", "\\t": "\t"}.get(token.upper(), token)


def _check_overlaps(name: str, variables: tuple[Variable, ...]) -> None:
    ordered = sorted(variables, key=lambda v: v.start or 0)
    for a, b in zip(ordered, ordered[1:], strict=False):
        assert a.start is not None and b.start is not None
        if b.start < a.start + a.width:
            raise InputError(
                f"{name}, line {b.line}: variable {b.name!r} (columns {b.start}-"
                f"{b.start + b.width - 1}) overlaps {a.name!r} (columns {a.start}-"
                f"{a.start + a.width - 1}, line {a.line}); correct the start or width")


def read_records(meta: Metadata, columns: list[str], *, typed: bool = True,
                 text: Sequence[str] = ()
                 ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray | None]], int]:
    """The named variables of the data file: ``{name: (values, missing mask or None)}``
    and the record count.

    ``typed`` (for the risk): missing entries hold ``""`` (or 0), and columns of whole
    numbers without leading zeros come back as int64. Else (for protect, which writes the
    file back) every column is the text read, missing codes included; so are the columns in
    ``text`` (household ids, labels: :mod:`sdcrisk.data.ids`). Read block by block
    without Python work per record (:mod:`sdcrisk.data.asc`).

    Raises
    ------
    InputError
        A record too short for a variable (fixed format), a record with another number of
        values than variables (free format), an empty data file.
    """
    from .asc import read

    return read(meta, columns, typed=typed, text=text)


def format_records(meta: Metadata, columns: dict[str, list[str | None]],
                   restore: dict[str, dict[int, str]] | None = None) -> bytes:
    """The records of ``columns`` (text, None for a missing value) in the layout of
    ``meta``: fixed columns (text right-aligned in its width, as numbers are written) or
    values joined by the separator.

    A missing value is written as ``restore[name][row]`` when given (the text it had in
    the input: blank or one of the missing codes), else as the variable's first missing
    code (blank when it has none), as mu-Argus writes a suppressed value.

    Raises
    ------
    InputError
        A value wider than its variable (fixed format), naming it and the remedy.
    """
    restore = restore or {}
    n = len(next(iter(columns.values()))) if columns else 0
    cols = []
    for var in meta.variables:
        values = columns[var.name]
        back = restore.get(var.name, {})
        fill = var.missing[0] if var.missing else ""
        text = [back.get(i, fill) if v is None else v for i, v in enumerate(values)]
        if meta.separator is None:
            wide = next((t for t in text if len(t.encode("utf-8")) > var.width), None)
            if wide is not None:
                raise InputError(
                    f"variable {var.name!r}: the value {wide!r} does not fit its "
                    f"{var.width} columns in {meta.path.name}; write the protected file as "
                    ".csv or .parquet, or widen the variable in the .rda")
            text = [t.rjust(var.width) for t in text]
        elif any(meta.separator in t for t in text):
            text = ['"' + t.replace('"', '""') + '"' if meta.separator in t else t
                    for t in text]
        cols.append(text)
    if meta.separator is None:
        order = sorted(range(len(meta.variables)), key=lambda j: meta.variables[j].start or 0)
        gaps, pos = [], 0
        for j in order:  # spaces before each variable: columns no variable covers
            start = meta.variables[j].start
            assert start is not None
            gaps.append(" " * (start - 1 - pos))
            pos = start - 1 + meta.variables[j].width
        lines = ["".join(gap + cols[j][i] for gap, j in zip(gaps, order, strict=True))
                 for i in range(n)]
    else:
        lines = [meta.separator.join(row[i] for row in cols) for i in range(n)]
    if meta.names_in_front:
        lines.insert(0, (meta.separator or ";").join(meta.names))
    return ("\n".join(lines) + "\n").encode("utf-8")
