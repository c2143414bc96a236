"""Protect a microdata file: user recodes, k-anonymity by local suppression, or the
recommended changes for a risk target; the protected file written with every other column
unchanged.

* :func:`local_suppression` - sdcMicro ``localSuppression`` semantics: missing values are
  wildcards (a suppressed value matches every category), and the least important key is
  suppressed first;
* :func:`apply_recodes` - a user's own category merges, ``{key: {old: new}}``;
* :func:`protect` - the whole workflow on a file or DataFrame, returning a
  :class:`Protection` with the protected frame, what changed, the information loss and the
  before/after figures; :func:`write_frame` (:mod:`sdcrisk.data.frames`) writes it
  atomically.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.columns import check_present
from ..data.frames import check_output_path, output_format, read_frame, write_frame
from ..data.io import source_name
from ..data.sizes import short_repr
from ..data.table import Microdata, check_keys, tabulate
from ..data.text import decode_text
from ..data.wildcard import RecordMatcher, wildcard_record_counts
from ..exceptions import InputError, ParameterError
from ..runtime.progress import progress

__all__ = ["Protection", "local_suppression", "apply_recodes", "protect", "read_frame",
           "write_frame", "output_format", "check_output_path", "default_importance",
           "information_loss", "k_anonymity_violations", "concrete_estimator"]

#: text read as a missing value in a CSV key column (pandas' defaults, and the empty string)
MISSING_TEXT = frozenset({"", "NA", "N/A", "n/a", "NaN", "nan", "-NaN", "-nan", "NULL", "null",
                          "None", "<NA>", "#N/A", "#NA", "1.#IND", "1.#QNAN", "-1.#IND",
                          "-1.#QNAN", "#N/A N/A"})


# --- key columns ---------------------------------------------------------------------------
def _decoded(col):
    """A key column with its byte values (a Parquet binary column, text that is not UTF-8)
    as text by the rule every reader uses (:func:`decode_text`); other columns as they are."""
    if col.dtype == object and col.map(lambda v: isinstance(v, bytes)).any():
        return col.map(lambda v: decode_text(v) if isinstance(v, bytes) else v)
    return col


def _missing_mask(col) -> np.ndarray:
    import pandas as pd

    col = _decoded(col)
    if col.dtype == object or pd.api.types.is_string_dtype(col):
        return col.isna().to_numpy() | col.astype(str).str.strip().isin(MISSING_TEXT).to_numpy()
    return col.isna().to_numpy()


def _distinct(col):
    """(codes, values) of a text key column: each entry's index among the column's distinct
    values (-1 where pandas sees a missing value), the values as a Series of objects; None
    unless every present value is text (or bytes): hashing would merge the number 1 with
    1.0 and True, whose texts differ. The rules below (bytes decoded, missing texts,
    stripped text, numbers) then run once per distinct value: on 10^6 records they took
    26 s run on every entry of five keys, three times."""
    import pandas as pd

    if pd.api.types.infer_dtype(col, skipna=True) not in ("string", "bytes", "empty"):
        return None
    codes, values = pd.factorize(col, use_na_sentinel=True)
    return codes, pd.Series(np.asarray(values, dtype=object), dtype=object)


def _same_number(col) -> tuple[str, str] | None:
    """Two different texts of a text key column that are the same number (``"07"`` and
    ``"7"``, ``"1"`` and ``"1.0"``), or None. The protected file writes each value's text, so
    an intruder reading it tells them apart: protect then counts the column's texts as its
    categories, not their numbers."""
    import pandas as pd

    if not (col.dtype == object or pd.api.types.is_string_dtype(col)):
        return None
    distinct = _distinct(col)
    col = _decoded(col if distinct is None else distinct[1])
    return _two_texts(col[~_missing_mask(col)].astype(str).str.strip())


def _two_texts(texts) -> tuple[str, str] | None:
    """:func:`_same_number` on a column's present values, stripped (work on distinct values)."""
    import pandas as pd

    distinct = pd.Series(texts.unique())
    numbers = pd.to_numeric(distinct, errors="coerce")
    if numbers.isna().any():
        return None
    twice = numbers.duplicated(keep=False)
    if not twice.any():
        return None
    same = distinct[numbers == numbers[twice].iloc[0]].sort_values().tolist()
    return same[0], same[1]


def _key_values(col):
    """A key column for Microdata: numbers where every present value is a number (each
    written one way: :func:`_same_number`), else text; missing entries as None/NaN."""
    import pandas as pd

    if col.dtype == object or pd.api.types.is_string_dtype(col):
        distinct = _distinct(col)
        if distinct is not None:  # the rules on the distinct values, then every entry
            codes, values = distinct
            done = _key_rules(values)
            if pd.api.types.is_float_dtype(done):  # numbers; code -1 (missing): NaN
                table = np.full(len(done) + 1, np.nan)
                table[:-1] = done.to_numpy(float)
                return pd.Series(table[codes], index=col.index)
            table = np.full(len(done) + 1, None, dtype=object)  # text; missing: None
            table[:-1] = done.astype(object).where(done.notna(), None).to_numpy()
            return pd.Series(table[codes], index=col.index, dtype=object)
    return _key_rules(col)


def _key_rules(col):
    """:func:`_key_values` entry by entry."""
    import pandas as pd

    col = _decoded(col)
    miss = _missing_mask(col)
    present = col[~miss]
    if col.dtype == object or pd.api.types.is_string_dtype(col):
        texts = present.astype(str).str.strip()
        num = pd.to_numeric(texts, errors="coerce")
        if not num.isna().any() and _two_texts(texts) is None:
            out = pd.Series(np.nan, index=col.index, dtype=float)
            out[~miss] = num.to_numpy(float)
            return out
        out = col.astype(object).where(~miss, None)
        return out.map(lambda v: v if v is None else str(v).strip())
    if pd.api.types.is_extension_array_dtype(col) and col.dtype.kind in "iu":
        # a suppressed integer key (Int64, UInt64): pd.NA as None, the codes as exact ints
        # (as floats, codes past 2^53 would lose digits)
        return col.astype(object).where(col.notna(), None)
    return col.where(~miss)


def _number(v) -> float | None:
    """``v`` (a number, or text) as a float; None when it is no number."""
    try:
        return float(v.strip() if isinstance(v, str) else v)
    except (TypeError, ValueError):
        return None


def _value_text(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v).strip()


def microdata_of(frame, keys: Sequence[str], **options) -> Microdata:
    """The validated Microdata of a frame's key columns, missing values as wildcards."""
    cols = {}
    check_present(list(keys), [str(c) for c in frame.columns], "data")
    for k in keys:
        cols[k] = _key_values(frame[k])
    w = options.pop("weights", None)
    if w is not None:
        if w not in frame.columns:
            raise InputError(f"weights column {w!r} not found")
        import pandas as pd

        col = frame[w]
        cols[w] = pd.to_numeric(col, errors="coerce")
        text = cols[w].isna().to_numpy() & ~_missing_mask(col)
        if text.any():  # '12,5' (a decimal comma) or 'heavy': read, or named, as assess does
            cols[w] = col.where(~_missing_mask(col))
    options.setdefault("missing", "wildcard")
    return Microdata.from_source(cols, list(keys), weights=w, **options)


# --- recodes -------------------------------------------------------------------------------
def apply_recodes(frame, keys: Sequence[str], recodes: Mapping[str, Mapping]) -> tuple[Any, dict]:
    """The frame with the user's category merges: ``{key: {old: new, ...}}``.

    Values are matched as text (``1`` and ``"1"`` are the same category; a float ``1.0``
    matches ``"1"``). Returns the new frame and, per key, ``{new: [old values merged]}``.

    Raises
    ------
    ParameterError
        A recode for a column that is not a key, a mapping that is not an object, or an old
        value that does not occur in the column.
    """
    import pandas as pd

    if not isinstance(recodes, Mapping):
        raise ParameterError("--recode: the JSON must be an object {key: {old: new}}")
    frame = frame.copy()
    merged: dict[str, dict[str, list[str]]] = {}
    for key, mapping in recodes.items():
        if key not in keys:
            raise ParameterError(f"--recode names {key!r}, which is not a key; keys: "
                                 f"{', '.join(keys)}")
        if not isinstance(mapping, Mapping):
            raise ParameterError(f"--recode {key!r}: give an object {{old: new}}")
        col = frame[key]
        miss = _missing_mask(col)
        text = col.map(lambda v: None if v is None else _value_text(v))
        present = set(text[~miss])
        bad = next(((old, new) for old, new in mapping.items()
                    if isinstance(new, bool) or not isinstance(new, str | int | float)), None)
        if bad is not None:
            import json

            raise ParameterError(f"--recode {key!r}: the new value of {bad[0]!r} is "
                                 f"{json.dumps(bad[1], default=repr)}; give a category as "
                                 'text or a number ("" leaves the value blank)')
        if col.dtype.kind in "iuf" or all(_number(v) is not None for v in present):
            # integer codes: 2.5 or 'inf' as a new code was refused later as "not
            # categorical ... band it", of a value the file does not hold
            frac = next(((old, nv) for old, nv in mapping.items()
                         if (f := _number(nv)) is not None
                         and not (math.isfinite(f) and f == round(f))), None)
            if frac is not None:
                raise ParameterError(f"--recode {key!r}: the new value of {frac[0]!r} is "
                                     f"{frac[1]!r}, not a code of this column of integer "
                                     "codes; give an integer code or a text label")
        table = {str(old).strip(): new for old, new in mapping.items()}
        unknown = [o for o in table if o not in present]
        if unknown:
            values = sorted(present, key=lambda v: (len(v), v))
            raise ParameterError(f"--recode {key!r}: value {unknown[0]!r} does not occur in "
                                 f"the column; its values: {short_repr(values, 80)}")
        hit = (text.isin(list(table)) & ~miss).to_numpy()
        new = text[hit].map(table)
        col = col.copy()
        if isinstance(col.dtype, pd.CategoricalDtype):
            # a dictionary-encoded Parquet or labelled column: a new label is no category
            # of it (pandas' TypeError), so it is recoded as its plain values
            col = col.astype(object)
        is_bool = col.dtype.kind == "b" or (col.dtype == object and col[~miss].map(
            lambda v: isinstance(v, bool | np.bool_)).all() and (~miss).any())
        if is_bool:
            flags = {"True": True, "False": False}
            if new.map(_value_text).isin(list(flags)).all():
                new = new.map(_value_text).map(flags)
                col = col.astype(object) if col.dtype.kind != "b" else col
            else:  # a new label such as 'yes': the column becomes text, as a CSV holds it
                col = col.astype(object).where(miss, col.map(_value_text)).where(~miss, None)
                new = new.map(_value_text)
        elif col.dtype.kind in "iuf":
            try:
                new = new.astype(float)
                if col.dtype.kind in "iu" and (new == new.round()).all():
                    new = new.astype(col.dtype)
            except (TypeError, ValueError):
                col = col.astype(object)
        else:  # text (CSV cells, strings): the new label as text
            new = new.map(_value_text)
        col[hit] = new.to_numpy()
        frame[key] = col
        groups: dict[str, list[str]] = {}
        for old, nv in table.items():
            groups.setdefault(_value_text(nv), []).append(old)
        merged[key] = groups
    return frame, merged


# --- local suppression ---------------------------------------------------------------------
def default_importance(md: Microdata) -> list[str]:
    """sdcMicro's default: keys with more categories are less important (suppressed first).
    Most important first; ties keep the key order."""
    order = sorted(range(len(md.keys)), key=lambda j: (len(md.levels[j]), j))
    return [md.keys[j] for j in order]


def _codes_matrix(md: Microdata) -> tuple[np.ndarray, np.ndarray]:
    codes = np.stack([np.asarray(c, np.int64) for c in md.codes], axis=1)
    miss = np.zeros_like(codes, dtype=bool)
    for j, lv in enumerate(md.levels):
        if None in lv:
            miss[:, j] = codes[:, j] == lv.index(None)
    return codes, miss


def k_anonymity_violations(md: Microdata, k: int) -> int:
    """Records whose wildcard fk (missing matches every category, alpha = 1) is below k."""
    fk, _ = wildcard_record_counts(md.codes, md.levels)
    return int(np.count_nonzero(fk < k))


def local_suppression(md: Microdata, k: int, *, importance: Sequence[str] | None = None
                      ) -> np.ndarray:
    """Key values to suppress so that every record shares its key values with at least
    k - 1 others, missing values matching every category (sdcMicro ``localSuppression``).

    Parameters
    ----------
    md : Microdata
        The records (missing key values, if any, already count as wildcards).
    k : int
        The k of k-anonymity (>= 2).
    importance : sequence of str or int, optional
        The keys from most to least important; the least important is suppressed first
        (default: :func:`default_importance`, sdcMicro's rule). Or, as sdcMicro's
        ``importance`` vector, one number per key in key order, 1 = most important (ties
        keep the key order); numbers that are all names of keys (keys named 0, 1, 2) are
        read as the names.

    Returns
    -------
    ndarray (m, 2)
        (record index, key index) of each value to suppress.

    Notes
    -----
    Records below k are taken from the rarest up (fk, then row order). For each, its fk is
    recomputed (earlier suppressions may have raised it); if it is still below k, the keys
    are tried from the least important up and the first whose suppression alone brings fk
    to k is suppressed; when none does, the least important key still present is suppressed
    and the record is tried again. With alpha = 1 a suppression never lowers another
    record's fk, so one pass suffices; the result is checked with
    :func:`sdcrisk.data.wildcard.wildcard_record_counts`. Greedy, not minimal (sdcMicro's
    ``localSuppression`` is also a heuristic).

    Examples
    --------
    >>> from sdcrisk import Microdata
    >>> md = Microdata.from_source({"a": [1, 1, 1, 2], "b": [1, 1, 1, 1]}, ["a", "b"],
    ...                            missing="wildcard")
    >>> local_suppression(md, 2, importance=["b", "a"]).tolist()
    [[3, 0]]
    """
    if not isinstance(k, int | np.integer) or k < 2:
        raise ParameterError(f"k-anonymity k={k!r} must be an integer >= 2")
    if k > md.n:
        raise ParameterError(f"k={k} is larger than the number of records n={md.n}; no "
                             f"suppression can reach it: choose k of at most {md.n}")
    order = list(importance) if importance is not None else default_importance(md)
    # sdcMicro's numeric vector; never the default order, nor names of keys named by numbers
    if (importance is not None and order and all(str(v).strip().isdigit() for v in order)
            and not set(map(str, order)) <= set(md.keys)):
        ranks = [int(str(v).strip()) for v in order]
        if len(ranks) != len(md.keys) or not all(1 <= r <= len(ranks) for r in ranks):
            raise ParameterError(f"--importance {','.join(map(str, order))}: as numbers, give "
                                 f"one per key in key order, 1 (most important) to "
                                 f"{len(md.keys)}; keys: {', '.join(md.keys)}")
        order = [md.keys[j] for j in sorted(range(len(ranks)), key=lambda j: (ranks[j], j))]
    unknown = [v for v in order if v not in md.keys]
    if unknown or len(set(order)) != len(order) or set(order) != set(md.keys):
        raise ParameterError(f"--importance {','.join(order)}: list every key once, most "
                             f"important first; keys: {', '.join(md.keys)}")
    least_first = [md.keys.index(v) for v in reversed(order)]
    codes, miss = _codes_matrix(md)
    fk, _ = wildcard_record_counts(md.codes, md.levels)
    todo = np.flatnonzero(fk < k)
    todo = todo[np.argsort(fk[todo], kind="stable")]
    done: list[tuple[int, int]] = []
    matcher = RecordMatcher(codes, miss, md.n_levels)
    with progress(total=len(todo), desc="local suppression") as bar:
        for i in todo:
            i = int(i)
            while matcher.count(i) < k:
                left = [j for j in least_first if not miss[i, j]]
                pick = next((j for j in left if matcher.count(i, skip=j) >= k), left[0])
                matcher.suppress(i, pick)
                done.append((i, pick))
            bar.update(1)
    return np.array(done, np.int64).reshape(-1, 2)


# --- the workflow --------------------------------------------------------------------------
def information_loss(before: Microdata, after: Microdata) -> dict:
    """Share of key values suppressed and the non-uniform entropy lost (in bits).

    The entropy loss of a published value y for an original value x is -log2 P(x | y), with
    P estimated from the original file: for an unchanged category 0, for a merged category
    count(x and y) / count(y), for a suppressed value (a wildcard) count(x) / n. It is also
    given as a share of the keys' information, the sum over records and keys of -log2 p(x).
    """
    n, per_key, total_bits, info, suppressed_total = before.n, {}, 0.0, 0.0, 0
    for j, key in enumerate(before.keys):
        lv_b, lv_a = before.levels[j], after.levels[j]
        cb = np.asarray(before.codes[j], np.int64)
        ca = np.asarray(after.codes[j], np.int64)
        counts = np.bincount(cb, minlength=len(lv_b)).astype(float)
        nz = counts > 0
        info += float(-(counts[nz] * np.log2(counts[nz] / n)).sum())
        miss_b = lv_b.index(None) if None in lv_b else -1
        sup = ((ca == lv_a.index(None)) & (cb != miss_b) if None in lv_a
               else np.zeros(n, bool))
        bits = float(-np.log2(counts[cb[sup]] / n).sum())
        kept = ~sup
        pair = ca[kept] * len(lv_b) + cb[kept]
        _, pair_inv, pair_n = np.unique(pair, return_inverse=True, return_counts=True)
        _, out_inv, out_n = np.unique(ca[kept], return_inverse=True, return_counts=True)
        bits += float(-np.log2(pair_n[pair_inv.ravel()] / out_n[out_inv.ravel()]).sum())
        per_key[key] = {"suppressed": int(sup.sum()), "entropy_loss_bits": bits}
        total_bits += bits
        suppressed_total += int(sup.sum())
    return {"values_suppressed": suppressed_total,
            "share_of_key_values_suppressed": suppressed_total / (n * len(before.keys)),
            "entropy_loss_bits": total_bits,
            "entropy_loss_share": total_bits / info if info > 0 else 0.0,
            "per_key": per_key}


def concrete_estimator(estimator, table):
    """For ``auto``'s validated rule: fit it once and return the estimator of its chosen
    candidate (the first of a blend), so that re-fits after each change cost one fit; other
    estimators, and the calibrated rule (cheap, re-fitted as a whole; fitting it here only
    repeated the caller's first fit and its warnings), as given. Returns (estimator, auto's
    result or None)."""
    from .validation import Candidate

    if getattr(estimator, "name", None) != "auto" or \
            getattr(estimator, "effective_rule", None) == "calibrated":
        return estimator, None
    res = estimator.fit(table)
    choice = res.fitted["choice"]
    if "settings" not in choice:  # the calibrated combination: cheap, re-fitted as a whole
        return estimator, res
    method, setting = choice["methods"][0], choice["settings"][0]
    cand = Candidate.parse(method if setting == "default" else f"{method}:{setting}")
    shared = {"ci_level": estimator.ci_level, "max_global_risk": estimator.max_global_risk,
              "random_state": getattr(estimator, "random_state", None)}
    return cand.estimator(**shared), res


@dataclass(frozen=True, eq=False, repr=False)
class Protection:
    """The protected file and what it cost.

    Attributes
    ----------
    frame : DataFrame
        The protected records; only key columns differ from the input.
    keys : tuple of str
    suppressed : dict
        Values suppressed per key.
    merged : dict
        Per key, categories merged: ``{new label: [old labels]}`` (user recodes and
        recommended recodes).
    k : int or None
        The k-anonymity asked for.
    k_violations_before, k_violations_after : int or None
        Records with wildcard fk < k before and after.
    risk_before, risk_after : dict
        Measures of the risk method (estimate of tau1, tau2, expected re-identifications,
        global risk), its name under ``"method"``, the intervals (``"intervals"``: measure
        -> lower, upper) at its ``"ci_level"`` and the ``"record_risk_threshold"`` for its
        ``"max_global_risk"``, as assess reports them.
    combinations_before, combinations_after : dict
        ``observed_cells``: observed cells of the key space (complete key combinations);
        ``patterns_with_missing_values``: combinations with a missing value, counted apart
        (each matches several cells under missing = wildcard).
    information_loss : dict
        :func:`information_loss`.
    notes : tuple of str
        How the risk was computed, what the recommendation chose.
    risk_missing_as_category : dict or None
        When the risk method cannot count suppressed values as wildcards (so that
        ``risk_before``/``risk_after`` are nb's, mode sdcmicro): that method's own figures
        (``"before"``, ``"after"``, each as ``risk_before``) with missing values as a
        category of their own, as ``assess`` reads the input and the protected file by
        default; None otherwise.
    """

    frame: Any
    keys: tuple[str, ...]
    suppressed: dict
    merged: dict
    k: int | None
    k_violations_before: int | None
    k_violations_after: int | None
    risk_before: dict
    risk_after: dict
    information_loss: dict
    notes: tuple[str, ...] = ()
    microdata_after: Microdata | None = field(default=None)
    combinations_before: dict | None = None
    combinations_after: dict | None = None
    risk_missing_as_category: dict | None = None

    def to_dict(self) -> dict:
        """Everything but the records (no key values)."""
        return {"keys": list(self.keys), "k_anonymity": self.k,
                "k_violations_before": self.k_violations_before,
                "k_violations_after": self.k_violations_after,
                "values_suppressed_per_key": dict(self.suppressed),
                "values_suppressed": int(sum(self.suppressed.values())),
                "categories_merged": {k: dict(v) for k, v in self.merged.items()},
                "key_combinations_before": self.combinations_before,
                "key_combinations_after": self.combinations_after,
                "risk_before": self.risk_before, "risk_after": self.risk_after,
                "risk_missing_as_category": self.risk_missing_as_category,
                "information_loss": self.information_loss, "notes": list(self.notes)}


_RISK_FIGURES = ("tau1", "tau2", "expected_reidentifications", "global_risk")


def _risk(estimator, table) -> dict:
    """The risk method's figures as assess reports them: the estimates, the intervals at
    the estimator's ``ci_level`` and the record-risk threshold for its ``max_global_risk``
    (None: the file already meets it)."""
    res = estimator.fit(table)
    out: dict[str, Any] = {"method": res.method}
    intervals = {}
    for name in _RISK_FIGURES:
        m = res.measures.get(name)
        if m is not None and m.estimate is not None:
            out[name] = float(m.estimate)
            if m.lower is not None and m.upper is not None:
                intervals[name] = {"lower": float(m.lower), "upper": float(m.upper)}
    out["intervals"] = intervals
    for name in ("ci_level", "max_global_risk", "record_risk_threshold"):
        if name in res.thresholds:
            out[name] = res.thresholds[name]
    return out


def _combinations(table) -> dict:
    """Observed cells of the key space, and apart the patterns with a missing (wildcard)
    value, which match several cells (as assess's ``observed_cells``)."""
    return {"observed_cells": int(table.key_cells),
            "patterns_with_missing_values": table.missing_patterns}


def _parse_target(spec: str):
    from .recommend import RiskTarget

    name, sep, value = str(spec).partition("=")
    name = name.strip().replace("-", "_")
    try:
        v = float(value)
    except ValueError:
        v = math.nan
    if not sep or not v == v:
        raise ParameterError(f"--target {spec!r}: use MEASURE=VALUE, e.g. tau2=5")
    if not (v >= 0 and math.isfinite(v)):
        raise ParameterError(f"--target {spec!r}: the value must be a non-negative number and "
                             "finite, e.g. tau2=5")
    if name != "tau2":
        raise ParameterError(f"--target {spec!r}: the recommended changes aim at tau2 "
                             "(expected correct matches of sample uniques); use tau2=VALUE, "
                             "or --k-anonymity K")
    return RiskTarget(objective="tau2", value=v)


def _frame_suppress(frame, key: str, rows: np.ndarray):
    """Blank ``rows`` of a key column: "" in a text column (CSV cells, Stata strings), a
    missing value otherwise (integer columns become pandas' nullable Int64 (UInt64) to hold it, so
    that a CSV output writes 3, not 3.0; booleans become float)."""
    import pandas as pd

    col = frame[key].copy()
    if isinstance(col.dtype, pd.CategoricalDtype):
        # a dictionary-encoded Parquet column or a labelled Stata/SPSS one: a blank is no
        # category of it, so the column is written as its plain values
        col = col.astype(object)
    if col.dtype.kind in "iu":  # unsigned 64-bit codes past int64 keep their type
        col = col.astype("UInt64" if col.dtype == np.uint64 else "Int64")
    elif col.dtype.kind == "b":
        col = col.astype(float)
    if pd.api.types.is_string_dtype(col) or col.dtype == object:
        col.iloc[rows] = "" if col.map(lambda v: isinstance(v, str)).all() else None
    else:
        col.iloc[rows] = np.nan
    frame[key] = col


def _frame_merges(frame, key: str, merges) -> dict:
    """Merge each group of categories into its first one, in the frame's own type."""
    col = frame[key]
    text = col.map(lambda v: None if v is None else _value_text(v))
    new, groups = col.copy(), {}
    for g in merges:
        labels = [_value_text(v) for v in g]
        mask = text.isin(labels).to_numpy()
        new[mask] = g[0] if col.dtype.kind in "iuf" else labels[0]
        groups[labels[0]] = labels
    frame[key] = new
    return groups


def protect(source: Any, keys: Sequence[str], *, k: int | None = None,
            target: str | None = None, importance: Sequence[str] | None = None,
            recodes: Mapping[str, Mapping] | None = None, estimator=None,
            weights: str | None = None, population_size: float | None = None,
            sampling_fraction: float | None = None, max_levels: int | None = 1000,
            ) -> Protection:
    """Recode, then suppress to k-anonymity or to a tau2 target; the protected records.

    Parameters
    ----------
    source : path, ``example:NAME`` or DataFrame
    keys : sequence of str
    k : int, optional
        k-anonymity by :func:`local_suppression` (missing = wildcard).
    target : str, optional
        ``"tau2=VALUE"``: the best plan of :func:`sdcrisk.analyses.recommend.recommend`.
        Exactly one of ``k`` and ``target`` (``recodes`` alone is also allowed).
    importance : sequence of str, optional
        Keys from most to least important (for ``k``).
    recodes : mapping, optional
        User recodes ``{key: {old: new}}``, applied first.
    estimator : Estimator, optional
        The risk method for the before/after figures (default nb, mode sdcmicro). ``auto``
        is fitted once and its choice re-used. A method that cannot count suppressed
        values as wildcards is replaced by nb (mode sdcmicro) for both figures, with a note.
    weights, population_size, sampling_fraction, max_levels : as in Microdata.from_source

    Returns
    -------
    Protection
    """
    from ..estimators import Estimator, NegativeBinomialRisk
    from .methods import get_estimator
    from .recommend import recommend

    if k is not None and target is not None:
        raise ParameterError("give --k-anonymity K or --target MEASURE=VALUE, not both")
    if k is None and target is None and not recodes:
        raise ParameterError("nothing to do: give --k-anonymity K, --target MEASURE=VALUE "
                             "or --recode FILE.json")
    keys = list(check_keys(keys, weights))
    if k is not None and (isinstance(k, bool) or not isinstance(k, int | np.integer)):
        raise ParameterError(f"k={k!r} must be an integer >= 2 (--k-anonymity K)")
    if isinstance(estimator, str):
        estimator = get_estimator(estimator)
    elif estimator is not None and not isinstance(estimator, Estimator):
        raise ParameterError(f"estimator={short_repr(estimator)}: give a method name such as "
                             "'nb' or an estimator such as NegativeBinomialRisk()")
    opts = {"weights": weights, "population_size": population_size,
            "sampling_fraction": sampling_fraction, "max_levels": max_levels}
    frame0 = read_frame(source)
    check_present(keys + ([weights] if weights else []), [str(c) for c in frame0.columns],
                  source_name(source))
    md0 = microdata_of(frame0, keys, **opts)
    notes: list[str] = [frame0.attrs["read_note"]] if "read_note" in frame0.attrs else []
    for key in keys:
        same = _same_number(frame0[key])
        if same is not None:
            notes.append(f"key {key!r}: {same[0]!r} and {same[1]!r} are the same number written "
                         "two ways; the protected file keeps each text, so protect counts "
                         "them as different categories (assess reads a CSV's numbers as one "
                         "category: write each code one way to make them one)")
    merged: dict = {}
    frame = frame0
    if recodes:
        frame, merged = apply_recodes(frame0, keys, recodes)
    md1 = microdata_of(frame, keys, **opts)
    suppress = np.zeros((0, 2), np.int64)
    if k is not None:
        suppress = local_suppression(md1, int(k), importance=importance)
    elif target is not None:
        est, _ = concrete_estimator(estimator if estimator is not None
                                    else NegativeBinomialRisk(), tabulate(md1))
        goal = _parse_target(target)
        rec = recommend(dataclasses.replace(md1, missing="category"), goal, estimator=est)
        plan = rec.best
        if plan is None:
            best = min(rec.plans, key=lambda p: p.objective_after)
            raise ParameterError(f"no plan reaches {goal.describe()} (best: {best.label()}, "
                                 f"tau2 {best.objective_after:.4g}); raise the target or "
                                 "recode coarser categories first (--recode)")
        if rec.objective_before <= goal.value:  # nothing to change
            notes.append(f"target tau2 <= {goal.value:g} already met before any change "
                         f"({est.name}: tau2 {rec.objective_before:.4g}): nothing changed")
        else:
            notes.append(f"recommended plan ({est.name}): {plan.label()}, tau2 "
                         f"{rec.objective_before:.4g} -> {plan.objective_after:.4g}, target "
                         f"<= {goal.value:g} met (a suppressed value counted as a category "
                         "of its own, as the search counts it)")
            if plan.merges:  # recoding, or recoding then suppression: merges first
                frame = frame.copy()
                merged.setdefault(plan.key, {}).update(_frame_merges(frame, plan.key,
                                                                     plan.merges))
            suppress = np.asarray(plan.suppressions)  # rows of the sample, as in the frame
    if len(suppress):
        frame = frame.copy() if frame is frame0 else frame
        for j, key in enumerate(keys):
            rows = suppress[suppress[:, 1] == j, 0]
            if len(rows):
                _frame_suppress(frame, key, rows)
    md2 = microdata_of(frame, keys, **opts)
    est = estimator if estimator is not None else NegativeBinomialRisk(mode="sdcmicro")
    has_wildcards = any(None in lv for lv in md2.levels) or any(None in lv for lv in md0.levels)
    as_category = None
    if has_wildcards and not est.supports_wildcards():
        notes.append(f"risk before and after by nb (mode sdcmicro) on wildcard counts, not by "
                     f"method {est.name!r}, which cannot count missing (suppressed) values as "
                     f"wildcards: the 'before' figures differ from assess --method {est.name} "
                     f"on the same file; {est.name}'s own figures follow, with missing values "
                     "as a category of their own, as assess reads the files by default (a "
                     "suppressed value then looks rarer than it is: those figures tend to "
                     "overstate the risk of the records with suppressed values)")
        own = [tabulate(dataclasses.replace(md, missing="category")) for md in (md0, md2)]
        mine, _ = concrete_estimator(est, own[0])
        as_category = {"missing": "category", "before": _risk(mine, own[0]),
                       "after": _risk(mine, own[1])}
        est = NegativeBinomialRisk(mode="sdcmicro", ci_level=est.ci_level,
                                   max_global_risk=est.max_global_risk)
    t0, t2 = tabulate(md0), tabulate(md2)
    est, _ = concrete_estimator(est, t0)
    risk_before, risk_after = _risk(est, t0), _risk(est, t2)
    # write_frame writes these columns from the frame and, to Parquet from Parquet, every
    # other one from the input file as it was (types, nulls, a map column)
    frame.attrs["protected_keys"] = list(keys)
    per_key = {key: 0 for key in keys}
    for _, j in suppress.tolist():
        per_key[keys[j]] += 1
    return Protection(
        frame=frame, keys=tuple(keys), suppressed=per_key, merged=merged,
        k=None if k is None else int(k),
        k_violations_before=None if k is None else k_anonymity_violations(md0, int(k)),
        k_violations_after=None if k is None else k_anonymity_violations(md2, int(k)),
        risk_before=risk_before, risk_after=risk_after,
        combinations_before=_combinations(t0), combinations_after=_combinations(t2),
        information_loss=information_loss(md0, md2),
        notes=tuple(notes), microdata_after=md2, risk_missing_as_category=as_category)

