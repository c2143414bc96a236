"""Checking the column names a user asked for against those a file has: a missing name gets
the closest column (case, spelling, spaces or a comma around the name) and, for a CSV
header read as one column, the separator it seems to use; a name given twice is refused."""

from __future__ import annotations

from collections.abc import Sequence

from ..exceptions import InputError

__all__ = ["check_present", "close_name"]


def check_present(columns: Sequence[str], available: Sequence[str], what: str) -> None:
    """Every name in ``columns`` occurs exactly once in ``available``.

    Raises
    ------
    InputError
        A missing column (listing those available) or one that appears more than once.
    """
    available = [str(a) for a in available]
    missing = [c for c in columns if c not in available]
    if missing:
        shown = ", ".join(map(repr, list(available)[:20])) or "none (no header)"
        more = "" if len(available) <= 20 else f" (+{len(available) - 20} more)"
        hint = close_name(missing[0], available)
        raise InputError(f"{what}: missing column {missing[0]!r}{hint}; available columns: "
                         f"{shown}{more}{_delimiter_hint(available, what)}")
    for c in columns:
        where = [i + 1 for i, a in enumerate(available) if a == c]
        if len(where) > 1:
            raise InputError(
                f"{what}: column {c!r} appears {len(where)} times (positions "
                f"{', '.join(map(str, where))}); rename the duplicates so that each column "
                "has one name")


def close_name(name: str, available: Sequence[str]) -> str:
    """`` (did you mean 'age'?)`` for a name that differs from a column in case or spelling."""
    import difflib

    padded = next((a for a in available if a != a.strip() and a.strip() == name.strip()), None)
    if padded is not None:  # ' age ': --keys drops the spaces around the names it is given
        return (f" (the file's column is {padded!r}, with spaces around its name: remove them "
                "from the header)")
    comma = next((a for a in available if "," in a and name in a.split(",")), None)
    if comma is not None:  # 'age,sex': --keys reads it as two names
        return (f" (the file's column {comma!r} has a comma in its name, which --keys cannot "
                "give: rename it in the file)")
    folded = {a.lower(): a for a in available}
    close = folded.get(name.lower()) or next(iter(difflib.get_close_matches(
        name, available, n=1, cutoff=0.8)), None)
    return "" if close is None else f" (did you mean {close!r}?)"


def _delimiter_hint(available: Sequence[str], what: str = "") -> str:
    """For a CSV whose header came back as one column holding another separator
    (``a;b;c``): what to do about it."""
    if len(available) != 1:
        return ""
    if "," in available[0] and ".tsv" in what.lower():  # a .tsv name means tab-separated
        return (". The header is one column holding commas: the file looks comma-separated "
                "but its name ends in .tsv (read as tab-separated); name it .csv")
    for sep, name in ((";", "semicolon"), ("|", "pipe"), ("\t", "tab")):
        if sep in available[0]:
            tsv = " or name it .tsv" if sep == "\t" else ""
            return (f". The header is one column holding {name}s: the file looks {name}-"
                    f"separated; save it comma-separated{tsv}")
    return ""
