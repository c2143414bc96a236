"""Edits of a :class:`Microdata` that the recommendation plans make: key values set to the
missing category (local suppression), categories of one key merged (global recoding), and the
grouping of records by their values on some keys that both searches use."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..data import _cells
from ..data.table import Microdata
from ..exceptions import InputError


def group_ids(codes: Sequence[np.ndarray], n_levels: Sequence[int], keep: Sequence[int],
               n: int) -> np.ndarray:
    """Dense ids 0..G-1 of the records' values on the keys ``keep``."""
    if not keep:
        return np.zeros(n, np.int64)
    ids, _ = _cells.cell_ids([codes[j] for j in keep], [n_levels[j] for j in keep])
    return np.unique(ids, return_inverse=True)[1].ravel()


def observed_levels(md: Microdata, keys: Sequence[bool]) -> Microdata:
    """``md`` with the categories no record holds any more dropped from each key flagged in
    ``keys`` (codes renumbered, order kept): the file a plan writes, read back, knows only
    the categories it holds, and a model over the cell space (auto, graphical, log-linear)
    estimates its risk on those. Keys not flagged keep their levels (a key whose levels the
    user declared, some of them absent from the file)."""
    codes, levels = list(md.codes), list(md.levels)
    changed = False
    for j, flag in enumerate(keys):
        if not flag:
            continue
        held = np.bincount(codes[j], minlength=len(levels[j])) > 0
        if held.all():
            continue
        keep = np.flatnonzero(held)
        renumber = np.full(len(levels[j]), -1, np.int64)
        renumber[keep] = np.arange(len(keep))
        codes[j] = renumber[codes[j]].astype(_cells._code_dtype(len(keep)))
        levels[j] = tuple(levels[j][i] for i in keep)
        changed = True
    if not changed:
        return md
    return dataclasses.replace(md, codes=tuple(codes), levels=tuple(levels))


def _with_missing_level(md: Microdata, j: int) -> tuple[Microdata, int]:
    levels = md.levels[j]
    if _cells.MISSING_LABEL in levels:
        return md, levels.index(_cells.MISSING_LABEL)
    new_levels = (*levels, _cells.MISSING_LABEL)
    codes = list(md.codes)
    codes[j] = codes[j].astype(_cells._code_dtype(len(new_levels)))
    all_levels = list(md.levels)
    all_levels[j] = new_levels
    return dataclasses.replace(md, codes=tuple(codes), levels=tuple(all_levels)), len(levels)


def suppress_values(md: Microdata, records: np.ndarray, key_idx: np.ndarray) -> Microdata:
    for j in np.unique(key_idx):
        md, na = _with_missing_level(md, int(j))
        codes = list(md.codes)
        c = codes[j].copy()
        c[records[key_idx == j]] = na
        codes[j] = c
        md = dataclasses.replace(md, codes=tuple(codes))
    return md


def label_text(v) -> str:
    return "NA" if v is None else str(v)


def _group_label(group: Sequence) -> str:
    if all(isinstance(v, int) for v in group) and sorted(group) == list(
            range(min(group), max(group) + 1)):
        return f"{min(group)}-{max(group)}"
    return "|".join(label_text(v) for v in group)


def merge_levels(md: Microdata, j: int, merges: Sequence[Sequence]) -> Microdata:
    """Merge groups of original labels of key j into one category each (label 'a-b' / 'a|b')."""
    levels = md.levels[j]
    position = {v: i for i, v in enumerate(levels)}
    target = list(range(len(levels)))
    for group in merges:
        missing = [v for v in group if v not in position]
        if missing:
            raise InputError(f"category {missing[0]!r} of {md.keys[j]!r} is not in the data's "
                             "levels")
        first = min(position[v] for v in group)
        for v in group:
            target[position[v]] = first
    heads = sorted(set(target))
    new_index = {h: i for i, h in enumerate(heads)}
    labels = {}
    for group in merges:
        labels[min(position[v] for v in group)] = _group_label(
            sorted(group, key=lambda v: position[v]))
    new_levels = tuple(labels.get(h, levels[h]) for h in heads)
    lookup = np.array([new_index[t] for t in target], dtype=np.int64)
    codes = list(md.codes)
    codes[j] = lookup[codes[j]].astype(_cells._code_dtype(len(new_levels)))
    all_levels = list(md.levels)
    all_levels[j] = new_levels
    return dataclasses.replace(md, codes=tuple(codes), levels=tuple(all_levels))


def missing_code(md: Microdata, j: int) -> int:
    """Code of the missing category of key j, or -1 when it has none yet."""
    levels = md.levels[j]
    return levels.index(_cells.MISSING_LABEL) if _cells.MISSING_LABEL in levels else -1
