"""Value labels of Stata and SPSS files as the category labels the readers give keys."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["code_text", "shared_labels"]


def shared_labels(meta, columns: Sequence[str]) -> dict[str, dict]:
    """{column: {code: label}} for the columns of a Stata or SPSS file whose value labels
    give one label to several codes (SPSS's "Other" on 7 and 8): each such label gets its
    code, "Other (7)", so that distinct codes stay distinct categories. Read by label, they
    merged into one cell, and assess counted fewer sample uniques than the file holds."""
    out = {}
    for name in columns:
        labels = (meta.variable_value_labels or {}).get(name) or {}
        seen: dict[str, int] = {}
        for label in labels.values():
            seen[label] = seen.get(label, 0) + 1
        if any(count > 1 for count in seen.values()):
            out[name] = {code: f"{label} ({code_text(code)})" if seen[label] > 1 else label
                         for code, label in labels.items()}
    return out


def code_text(code) -> str:
    return str(int(code)) if isinstance(code, float) and code.is_integer() else str(code)
