"""Structural zeros: impossible key combinations given as marginal conditions (spec E.4).

A *marginal condition* fixes some key variables and leaves the others free ("*"); it stands
for every cell that matches it on the fixed variables (spec E.4.1). Conditions come from a
CSV file (one column per key variable, ``*`` or empty = free, ``a|b`` = several values), from
Python tuples or dicts, or from level codes. :meth:`StructuralZeros.make_disjoint` rewrites an
overlapping list into pairwise-disjoint conditions with the same union (Manrique-Vallier &
Reiter 2014, section 4.2; spec E.4.2), which the mixed-membership samplers need, and
:meth:`StructuralZeros.contains` tests cells for membership (vectorised over cells).

Codes are 0-based indices into the levels of each key (as in :class:`sdcrisk.CellTable`);
``-1`` marks a free variable.
"""

from __future__ import annotations

import csv
import itertools
import math
import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..exceptions import InputError, ParameterError

__all__ = ["StructuralZeros", "FREE", "resolve_structural_zeros", "structural_zeros_option",
           "structural_zeros_param", "structural_zeros_of_table"]

#: code of a free variable in a condition
FREE = -1
_FREE_TOKENS = ("", "*")
_MAX_EXPANSION = 1_000_000

Coding = Literal["labels", "bnpdr"]


def _is_free(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str) and value.strip() in _FREE_TOKENS:
        return True
    return isinstance(value, float) and math.isnan(value)


def _level_lookup(levels: Sequence) -> dict:
    """Map level labels (and their string forms) to codes."""
    table: dict = {}
    for code, lab in enumerate(levels):
        table.setdefault(lab, code)
    for code, lab in enumerate(levels):
        table.setdefault(str(lab), code)
        if isinstance(lab, float) and float(lab).is_integer():
            table.setdefault(str(int(lab)), code)
    return table


_HOW = ("a structural-zeros file is a text CSV with a header row of key variable names and "
        "one impossible combination per line, e.g. 'age,married' then 'child,yes' (* = any)")


def _read_condition_rows(p: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header and non-blank rows (with their line numbers) of a structural-zeros CSV.

    Raises
    ------
    InputError
        Binary or compressed content, text that is not UTF-8, a malformed CSV line, or an
        empty file -- each naming the file and, where there is one, the line.
    """
    try:
        raw = p.read_bytes()
    except OSError as exc:  # no read permission, an I/O error
        raise InputError(f"{p.name}: the structural-zeros file could not be read "
                         f"({exc.strerror or exc}); check its permissions") from exc
    if raw[:2] == b"\x1f\x8b" or b"\x00" in raw[:4096]:
        raise InputError(f"{p.name}: binary content where a CSV of structural zeros was "
                         f"expected; {_HOW}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"{p.name} line {line}: not UTF-8 text (byte {raw[exc.start]:#04x}); "
                         f"save the file as UTF-8; {_HOW}") from None
    reader = csv.reader(text.splitlines(), strict=True)
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise InputError(f"{p.name} line {reader.line_num}: malformed CSV ({exc}); "
                         f"{_HOW}") from None
    if not rows or not any(c.strip() for c in rows[0]):
        raise InputError(f"{p.name}: the structural-zeros file is empty; {_HOW}")
    header = [h.strip() for h in rows[0]]
    if any(not h for h in header):
        raise InputError(f"{p.name} line 1: the header has an empty column name; {_HOW}")
    body = [(line, row) for line, row in enumerate(rows[1:], start=2)
            if any(c.strip() for c in row)]
    for line, row in body:  # files joined: read as a condition, 'age' is no level of age
        if [c.strip().lstrip("\ufeff") for c in row] == header:
            raise InputError(f"{p.name} line {line}: the header line is repeated as a "
                             "condition (were files joined?); keep only the first header "
                             f"line; {_HOW}")
    return header, body


@dataclass(frozen=True, eq=False, repr=False)
class StructuralZeros:
    """A list of marginal conditions over named key variables.

    Attributes
    ----------
    keys : tuple of str
        Key variables, in the order of the columns of ``conditions``.
    sizes : tuple of int
        Number of levels d_j of each key.
    conditions : ndarray of int64, shape (C, J)
        One condition per row: the fixed level code, or ``-1`` where the variable is free.

    Notes
    -----
    A condition c covers ``prod_{j: c_j free} d_j`` cells. Two conditions are disjoint iff some
    variable is fixed in both at different values (spec E.4.1).

    References
    ----------
    Manrique-Vallier, D. & Reiter, J. P. (2014). Bayesian estimation of discrete multivariate
    latent structure models with structural zeros. JCGS 23, 1061-1079.
    Battiston, M. & Rimella, L. (2024). Disclosure risk assessment with Bayesian
    non-parametric hierarchical modelling. arXiv:2408.12521, section 4.

    Examples
    --------
    >>> from sdcrisk.data.structural_zeros import StructuralZeros
    >>> sz = StructuralZeros.from_tuples(
    ...     [{"age": "child", "married": "yes"}, {"age": "child", "retired": "yes"}],
    ...     keys=["age", "married", "retired"],
    ...     levels=[["child", "adult"], ["no", "yes"], ["no", "yes"]])
    >>> sz.covered_cells(), sz.is_disjoint()
    (3, False)
    >>> sz.make_disjoint().conditions.tolist()
    [[0, -1, 1], [0, 1, 0]]
    """

    keys: tuple[str, ...]
    sizes: tuple[int, ...]
    conditions: np.ndarray

    def __post_init__(self):
        keys = tuple(str(k) for k in self.keys)
        sizes = tuple(int(d) for d in self.sizes)
        if len(keys) != len(sizes):
            raise ParameterError(f"{len(keys)} keys but {len(sizes)} level counts")
        if any(d < 1 for d in sizes):
            raise ParameterError(f"every key needs at least one level, got sizes {sizes}")
        cond = np.array(self.conditions, dtype=np.int64, copy=True).reshape(-1, len(keys))
        bad = (cond < FREE) | (cond >= np.array(sizes, dtype=np.int64))
        if bad.any():
            r, j = np.argwhere(bad)[0]
            raise InputError(f"structural-zero condition {r + 1}: code {cond[r, j]} for "
                             f"{keys[j]!r} is outside 0..{sizes[j] - 1} (or -1 = free)")
        cond.setflags(write=False)
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "conditions", cond)

    # --- constructors ----------------------------------------------------------------------
    @classmethod
    def from_codes(cls, codes, *, keys: Sequence[str], sizes: Sequence[int]) -> StructuralZeros:
        """Conditions from level codes (``-1`` = free)."""
        return cls(tuple(keys), tuple(sizes), np.asarray(codes, dtype=np.int64))

    @classmethod
    def from_tuples(cls, conditions: Iterable, *, keys: Sequence[str],
                    levels: Sequence[Sequence]) -> StructuralZeros:
        """Conditions from Python objects, by category label.

        Parameters
        ----------
        conditions : iterable
            Each condition is a mapping ``{key: value}`` (keys left out are free) or a
            sequence aligned with ``keys``. A value is a level label; ``None``, ``"*"`` or
            ``""`` mean free; a list, tuple or set of labels fixes several values and is split
            into one condition per value (spec E.4.1).
        keys : sequence of str
            Key variables.
        levels : sequence of sequences
            The levels of each key (e.g. ``CellTable.levels``).

        Raises
        ------
        InputError
            A label that is not a level of its key, or a key that is not among ``keys``.
        """
        keys = tuple(keys)
        lookups = [_level_lookup(lv) for lv in levels]
        rows: list[list[int]] = []
        for number, cond in enumerate(conditions, start=1):
            if isinstance(cond, Mapping):
                unknown = [k for k in cond if k not in keys]
                if unknown:
                    raise InputError(f"structural-zero condition {number}: {unknown[0]!r} is "
                                     f"not a key variable (keys: {', '.join(keys)})")
                values = [cond.get(k) for k in keys]
            else:
                if isinstance(cond, str | bytes) or not isinstance(cond, Iterable):
                    raise InputError(f"structural-zero condition {number} is {cond!r}: give a "
                                     "mapping {key: value} or a sequence of one value per key "
                                     f"({', '.join(keys)})")
                values = list(cond)
                if len(values) != len(keys):
                    raise InputError(f"structural-zero condition {number} has {len(values)} "
                                     f"values for {len(keys)} keys")
            options = []
            for j, v in enumerate(values):
                if isinstance(v, list | tuple | set | frozenset):
                    vs = sorted(v, key=str) if isinstance(v, set | frozenset) else list(v)
                    options.append([_code_of(keys[j], x, lookups[j], number) for x in vs])
                elif _is_free(v):
                    options.append([FREE])
                else:
                    options.append([_code_of(keys[j], v, lookups[j], number)])
            rows.extend(list(p) for p in itertools.product(*options))
        sizes = tuple(len(lv) for lv in levels)
        return cls(keys, sizes, np.array(rows, dtype=np.int64).reshape(-1, len(keys)))

    @classmethod
    def from_csv(cls, path: str | os.PathLike, *, keys: Sequence[str],
                 levels: Sequence[Sequence], coding: Coding = "labels") -> StructuralZeros:
        """Conditions from a CSV file with one column per key variable.

        Parameters
        ----------
        path : path-like
            CSV with a header row of variable names. Columns for keys not in the file are
            free; a column that is not a key must be free in every row.
        keys, levels : as in :meth:`from_tuples`
        coding : {"labels", "bnpdr"}
            ``labels``: cells hold category labels, ``*`` or empty = free, ``a|b`` = several
            values. ``bnpdr``: the format of Battiston & Rimella's files, 0 = free and
            k >= 1 = the level with 0-based code k - 1.

        Raises
        ------
        InputError
            Unreadable file, unknown label, or a fixed non-key column.
        """
        if coding not in ("labels", "bnpdr"):
            raise ParameterError(f"coding={coding!r}; use 'labels' or 'bnpdr'")
        p = Path(path)
        if not str(path).strip():
            raise InputError("the structural-zeros file name is empty; give a CSV file with "
                             "one column per key variable")
        if not p.exists():
            raise InputError(f"structural-zeros file not found: {str(path)!r}")
        if p.is_dir():
            raise InputError(f"structural-zeros file {str(path)!r} is a directory; give a CSV "
                             "file with one column per key variable")
        header, body = _read_condition_rows(p)
        keys = tuple(keys)
        dup = [h for h in header if header.count(h) > 1]
        if dup:
            raise InputError(f"{p.name}: column {dup[0]!r} appears twice")
        conditions = []
        for line, row in body:
            if len(row) != len(header):
                raise InputError(f"{p.name} line {line}: {len(row)} fields, the header has "
                                 f"{len(header)}")
            cond: dict[str, Any] = {}
            for name, cell in zip(header, row, strict=True):
                cell = cell.strip()
                if coding == "bnpdr":
                    try:
                        value = int(cell)
                    except ValueError:
                        raise InputError(f"{p.name} line {line}: {cell!r} in column {name!r} is "
                                         "not an integer (bnpdr coding)") from None
                    if value == 0:
                        continue
                    if name not in keys:
                        raise InputError(f"{p.name} line {line}: column {name!r} is not a key "
                                         "variable but is fixed")
                    j = keys.index(name)
                    if not 1 <= value <= len(levels[j]):
                        raise InputError(f"{p.name} line {line}: {name}={value} is outside "
                                         f"1..{len(levels[j])} (bnpdr coding, 0 = free)")
                    cond[name] = levels[j][value - 1]
                    continue
                if cell in _FREE_TOKENS:
                    continue
                if name not in keys:
                    raise InputError(f"{p.name} line {line}: column {name!r} is not a key "
                                     f"variable (keys: {', '.join(keys)}) but is fixed")
                cond[name] = [v.strip() for v in cell.split("|")] if "|" in cell else cell
            try:  # a label that is not a level: name the line, not the condition's number
                cls.from_tuples([cond], keys=keys, levels=levels)
            except InputError as exc:
                detail = str(exc).split(": ", 1)[-1]
                raise InputError(f"{p.name} line {line}: {detail}") from None
            conditions.append(cond)
        if not conditions:
            raise InputError(f"{p.name}: no conditions in the structural-zeros file; {_HOW}")
        return cls.from_tuples(conditions, keys=keys, levels=levels)

    # --- basic facts -----------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.conditions.shape[0])

    def __repr__(self) -> str:
        return (f"StructuralZeros({len(self)} conditions over {list(self.keys)}, "
                f"{'disjoint' if self.is_disjoint() else 'overlapping'})")

    @property
    def cell_space(self) -> int:
        """Number of cells of the full cross-classification."""
        return math.prod(self.sizes)

    def cells_per_condition(self) -> np.ndarray:
        """prod over free variables of d_j, for each condition (int64)."""
        d = np.array(self.sizes, dtype=np.int64)
        return np.prod(np.where(self.conditions == FREE, d, 1), axis=1)

    def is_disjoint(self) -> bool:
        """Whether the conditions are pairwise disjoint."""
        c = self.conditions
        for r in range(len(c) - 1):
            if not _disjoint_from(c[r + 1:], c[r]).all():
                return False
        return True

    def covered_cells(self) -> int:
        """Number of distinct cells covered by the union of the conditions."""
        if len(self) == 0:
            return 0
        dis = self if self.is_disjoint() else self.make_disjoint()
        return int(dis.cells_per_condition().sum())

    # --- the disjoint rewriting (spec E.4.2) ------------------------------------------------
    def make_disjoint(self, *, order: Literal["descending", "ascending"] = "descending",
                      ties: Literal["reverse", "listing"] = "reverse") -> StructuralZeros:
        """Pairwise-disjoint conditions with the same union (MVR14 section 4.2).

        Parameters
        ----------
        order : {"descending", "ascending"}
            Process the conditions by decreasing (Battiston & Rimella's code) or increasing
            (Manrique-Vallier's C++) number of covered cells.
        ties : {"reverse", "listing"}
            Among conditions covering equally many cells, process in reverse listing order
            (BR's ``argsort(...)[::-1]``, which gives their 557 NY conditions) or in listing
            order.

        Returns
        -------
        StructuralZeros
            Disjoint conditions. Each input condition either enters unchanged, or is expanded
            over the variables that overlapping earlier conditions fix, keeping only the
            expansions disjoint from them; a condition inside an earlier one is dropped.

        Notes
        -----
        Every expansion fixes all variables fixed by the earlier conditions it meets, so it
        lies either inside one of them or outside all of them: the union is preserved and the
        output is pairwise disjoint (spec E.4.2). Manrique-Vallier's C++ keeps a duplicate
        condition, creating an overlap; it is dropped here.

        Raises
        ------
        ParameterError
            Bad ``order``/``ties``, or an expansion of more than 10^6 conditions.
        """
        if order not in ("descending", "ascending"):
            raise ParameterError(f"order={order!r}; use 'descending' or 'ascending'")
        if ties not in ("reverse", "listing"):
            raise ParameterError(f"ties={ties!r}; use 'reverse' or 'listing'")
        c = self.conditions
        if len(c) == 0:
            return self
        size = self.cells_per_condition()
        # stable sort: ties keep listing order; reversing an ascending stable sort gives
        # descending with ties in reverse listing order
        if order == "descending":
            idx = (np.argsort(size, kind="stable")[::-1] if ties == "reverse"
                   else np.argsort(-size, kind="stable"))
        else:
            idx = (np.argsort(size, kind="stable") if ties == "listing"
                   else np.argsort(-size, kind="stable")[::-1])
        out = [c[idx[0]]]
        out_arr = c[idx[:1]].copy()
        for mu in c[idx[1:]]:
            comp = out_arr[~_disjoint_from(out_arr, mu)]
            if len(comp) == 0:
                out.append(mu)
                out_arr = np.vstack([out_arr, mu])
                continue
            cols = np.flatnonzero((comp != FREE).any(axis=0) & (mu == FREE))
            if cols.size == 0:
                continue  # mu lies inside an existing condition
            n_exp = math.prod(self.sizes[j] for j in cols)
            if n_exp > _MAX_EXPANSION:
                raise ParameterError(
                    f"making the structural-zero conditions disjoint needs {n_exp:,} "
                    "expansions of one condition; give fewer or coarser conditions")
            grid = np.array(list(itertools.product(*(range(self.sizes[j]) for j in cols))),
                            dtype=np.int64)
            exp = np.repeat(mu[None, :], len(grid), axis=0)
            exp[:, cols] = grid
            # keep the expansions disjoint from every intersecting condition
            ok = np.ones(len(exp), dtype=bool)
            for cc in comp:
                ok &= _disjoint_from(exp, cc)
            new = exp[ok]
            out.extend(new)
            out_arr = np.vstack([out_arr, new])
        return StructuralZeros(self.keys, self.sizes, np.array(out, dtype=np.int64))

    # --- membership -------------------------------------------------------------------------
    def patterns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lookup tables for membership tests, grouped by the set of fixed variables.

        Returns
        -------
        fixed : ndarray of bool, shape (P, J)
            The fixed variables of each pattern.
        offsets : ndarray of int64, shape (P + 1,)
            Start of each pattern's table in ``table``.
        table : ndarray of bool
            For pattern p, entry ``offsets[p] + r`` is True when the fixed values whose
            mixed-radix code (over the fixed variables in key order) is r form a condition.
        """
        c = self.conditions
        fixed_all = c != FREE
        pats, inverse = np.unique(fixed_all, axis=0, return_inverse=True)
        inverse = np.asarray(inverse).reshape(-1)
        sizes = np.array(self.sizes, dtype=np.int64)
        lens = [int(np.prod(sizes[p])) for p in pats]
        if sum(lens) > 1 << 28:
            raise ParameterError("structural-zero conditions fix too many variables at once "
                                 "for a lookup table; give coarser conditions")
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        table = np.zeros(int(offsets[-1]), dtype=bool)
        for p, pat in enumerate(pats):
            rows = c[inverse == p][:, pat]
            table[offsets[p] + _radix(rows, sizes[pat])] = True
        return pats.astype(bool), offsets, table

    def contains(self, codes) -> np.ndarray:
        """Whether each cell (row of level codes, shape (m, J)) is a structural zero."""
        codes = np.asarray(codes, dtype=np.int64)
        if codes.ndim != 2 or codes.shape[1] != len(self.keys):
            raise InputError(f"cells must have shape (m, {len(self.keys)}), got {codes.shape}")
        out = np.zeros(len(codes), dtype=bool)
        if len(self) == 0 or len(codes) == 0:
            return out
        fixed, offsets, table = self.patterns()
        columns = np.ascontiguousarray(codes.T)
        for p, pat in enumerate(fixed):
            code = np.full(len(codes), offsets[p], dtype=np.int64)
            scale = 1
            for j in np.flatnonzero(pat)[::-1]:
                code += columns[j] * scale
                scale *= self.sizes[j]
            out |= table[code]
        return out

    def condition_probabilities(self, marginals: np.ndarray, offsets: np.ndarray
                                ) -> np.ndarray:
        """prod over fixed j of ``marginals[..., offsets[j] + c_j]`` for each condition.

        ``marginals`` has the flattened levels of all keys on its last axis (length
        sum d_j); the result has shape ``marginals.shape[:-1] + (C,)``. Used with the
        per-variable predictive marginals of a mixed-membership draw (spec E.4.3 step 7).
        """
        c = self.conditions
        out = np.ones(marginals.shape[:-1] + (len(c),))
        for j in range(len(self.keys)):
            fixed = c[:, j] != FREE
            if fixed.any():
                out[..., fixed] *= marginals[..., offsets[j] + c[fixed, j]]
        return out

    def dense_mask(self) -> np.ndarray:
        """Boolean array of shape ``sizes``: True on every cell a condition covers.

        Memory is one byte per cell of the key space (the dense log-linear fit holds a
        table of that size anyway).
        """
        mask = np.zeros(self.sizes, dtype=bool)
        for row in self.conditions:
            mask[tuple(slice(None) if c == FREE else int(c) for c in row)] = True
        return mask

    def restrict_levels(self, keep: Sequence[np.ndarray]) -> StructuralZeros:
        """The conditions on the levels where ``keep[j]`` (bool, length d_j) is True.

        Kept levels are renumbered in order; a condition that fixes a dropped level covers
        no remaining cell and is left out.
        """
        keep = [np.asarray(k, dtype=bool) for k in keep]
        if len(keep) != len(self.keys) or any(
                len(k) != d for k, d in zip(keep, self.sizes, strict=True)):
            raise ParameterError(f"keep must give one mask of length d_j per key {self.sizes}")
        cond = self.conditions.copy()
        alive = np.ones(len(cond), dtype=bool)
        for j, k in enumerate(keep):
            fixed = cond[:, j] != FREE
            alive &= ~fixed | k[np.where(fixed, cond[:, j], 0)]
            recode = np.cumsum(k) - 1
            cond[fixed, j] = recode[cond[fixed, j]]
        sizes = tuple(int(k.sum()) for k in keep)
        return StructuralZeros(self.keys, sizes, cond[alive])

    def to_dict(self) -> dict:
        """JSON-ready summary (no cell values): counts of conditions and covered cells."""
        return {"keys": list(self.keys), "conditions": len(self),
                "disjoint": self.is_disjoint(), "covered_cells": self.covered_cells(),
                "cell_space": self.cell_space}


def _disjoint_from(rows: np.ndarray, cond: np.ndarray) -> np.ndarray:
    """For each row, whether it is disjoint from ``cond`` (some variable fixed differently)."""
    return ((rows != FREE) & (cond != FREE) & (rows != cond)).any(axis=1)


def _radix(codes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    out = np.zeros(len(codes), dtype=np.int64)
    for j in range(codes.shape[1]):
        out = out * sizes[j] + codes[:, j]
    return out


def _code_of(key: str, value: Any, lookup: dict, number: int) -> int:
    if not isinstance(value, Hashable):
        raise InputError(f"structural-zero condition {number}: {value!r} for {key!r} is not a "
                         "level label; give a label, a list of labels, or None / '*' (free)")
    if value in lookup:
        return lookup[value]
    text = str(value).strip()
    if text in lookup:
        return lookup[text]
    labels = list(dict.fromkeys(str(v) for v in lookup))
    shown = ", ".join(labels[:8]) + (f" (+{len(labels) - 8} more)" if len(labels) > 8 else "")
    raise InputError(f"structural-zero condition {number}: {value!r} is not a level of "
                     f"{key!r} (levels: {shown}); declare the level with levels= or fix "
                     "the condition")


def resolve_structural_zeros(spec, keys: Sequence[str], levels: Sequence[Sequence]
                             ) -> StructuralZeros | None:
    """A :class:`StructuralZeros` for the given keys from a path, conditions or an instance.

    ``spec`` is ``None``, a CSV path (label coding), a :class:`StructuralZeros` (its keys may
    be a subset of ``keys`` in any order; the sizes must match), or an iterable of conditions
    as in :meth:`StructuralZeros.from_tuples`.
    """
    if spec is None:
        return None
    keys = tuple(keys)
    if isinstance(spec, StructuralZeros):
        missing = [k for k in spec.keys if k not in keys]
        if missing:
            raise InputError(f"structural zeros refer to {missing[0]!r}, which is not a key "
                             f"variable (keys: {', '.join(keys)})")
        codes = np.full((len(spec), len(keys)), FREE, dtype=np.int64)
        for jj, k in enumerate(spec.keys):
            j = keys.index(k)
            if spec.sizes[jj] != len(levels[j]):
                raise InputError(f"structural zeros give {spec.sizes[jj]} levels for {k!r}, "
                                 f"the data have {len(levels[j])}; declare the levels")
            codes[:, j] = spec.conditions[:, jj]
        return StructuralZeros(keys, tuple(len(lv) for lv in levels), codes)
    if isinstance(spec, str | os.PathLike):
        return StructuralZeros.from_csv(spec, keys=keys, levels=levels)
    return StructuralZeros.from_tuples(spec, keys=keys, levels=levels)


def structural_zeros_option(value: Any) -> Any:
    """An estimator's ``structural_zeros`` option, checked: None, a CSV path, a
    :class:`StructuralZeros`, or conditions (made a tuple, so that the estimator stays
    hashable and immutable)."""
    if value is None or isinstance(value, str | os.PathLike | StructuralZeros):
        return value
    try:
        return tuple(value)
    except TypeError:
        raise ParameterError(f"structural_zeros={value!r}: give a CSV path, a "
                             "StructuralZeros or a list of conditions") from None


def structural_zeros_param(value: Any) -> Any:
    """The ``structural_zeros`` option as a JSON-ready parameter value."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, StructuralZeros):
        return value.to_dict()
    if isinstance(value, tuple):
        return f"{len(value)} conditions"
    return value


def structural_zeros_of_table(spec: Any, table: Any) -> StructuralZeros | None:
    """The disjoint structural zeros of ``spec`` for a cell table, checked against its data.

    ``table`` is a :class:`sdcrisk.CellTable` (keys, levels, cell codes, counts, record map).
    None when ``spec`` is None or holds no condition.

    Raises
    ------
    InputError
        Sample records fall in a structural zero (the first one is named): the conditions
        must describe impossible combinations only.
    """
    sz = resolve_structural_zeros(spec, table.keys, table.levels)
    if sz is None or len(sz) == 0:
        return None
    sz = sz if sz.is_disjoint() else sz.make_disjoint()
    bad = sz.contains(table.cell_codes)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        first = "" if table.record_cell is None else (
            f" (first: record {int(np.flatnonzero(table.record_cell == k)[0]) + 1})")
        raise InputError(
            f"{int(table.counts[bad].sum())} records fall in structural zeros{first}; the "
            "conditions must describe impossible combinations only: fix the data or the "
            "conditions")
    return sz
