"""Partitioned log-linear fits (``LogLinearRisk(partition=...)``): one key cut into bands, a
model fitted in each band's sub-table (spec C.6: the ONS's way to keep a large key space
tractable). The spec's forms (``VAR:BANDS``, ``auto:BANDS``, explicit groups), their checks,
the choice of the key by Cramer's V, and the band sub-tables.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable

import numpy as np

from ..data.sizes import short_repr
from ..data.table import CellTable
from ..exceptions import ParameterError
from . import _ipf

__all__ = ["cramers_v", "PARTITION_FORMS", "check_partition_syntax", "check_partition_key",
           "resolve_partition", "partition_tables"]


def cramers_v(table: CellTable, i: int, j: int) -> float:
    """Cramer's V of two keys from the sample: sqrt(chi2 / (n (min(r, c) - 1)))."""
    obs = _ipf.margin_of_cells(table, (i, j))
    obs = obs[obs.sum(1) > 0][:, obs.sum(0) > 0]
    r, c = obs.shape
    if min(r, c) < 2:
        return 0.0
    n = obs.sum()
    expected = np.outer(obs.sum(1), obs.sum(0)) / n
    chi2 = float(np.sum((obs - expected) ** 2 / expected))
    return float(np.sqrt(chi2 / (n * (min(r, c) - 1))))


PARTITION_FORMS = ("a string VAR:BANDS or auto:BANDS (e.g. 'age:4'), or a pair (variable, "
                   "[[levels of band 1], [levels of band 2], ...])")


def check_partition_syntax(spec) -> None:
    """``partition`` is None, a string, or a pair (variable name, list of lists of levels);
    the names and levels are checked against the table by :func:`resolve_partition`.

    Raises
    ------
    ParameterError
        Naming the value and the forms taken.
    """
    if spec is None or isinstance(spec, str):
        return
    ok = (isinstance(spec, tuple | list) and len(spec) == 2 and isinstance(spec[0], str)
          and isinstance(spec[1], list | tuple)
          and all(isinstance(g, list | tuple) and all(isinstance(v, Hashable) for v in g)
                  for g in spec[1]))
    if not ok:
        raise ParameterError(f"partition={short_repr(spec)} must be {PARTITION_FORMS}")


def check_partition_key(spec, keys) -> None:
    """The variable a partition spec bands (``VAR:BANDS`` or ``(VAR, groups)``; none for
    ``auto``) is one of ``keys`` (ParameterError naming it and the keys)."""
    name = spec.rsplit(":", 1)[0] if isinstance(spec, str) and ":" in spec else (
        spec[0] if isinstance(spec, tuple | list) else None)
    if name is not None and name != "auto" and name not in keys:
        raise ParameterError(f"partition={spec!r}: {name!r} is not a key; keys: "
                             f"{', '.join(map(str, keys))}")


def resolve_partition(spec, table: CellTable) -> tuple[int, list[list[int]], str]:
    """(key index, groups of level codes, how it was chosen) from a partition spec."""
    keys = list(table.keys)
    if isinstance(spec, str):
        if ":" not in spec:
            raise ParameterError(f"partition={spec!r}; use VAR:BANDS or auto:BANDS")
        name, bands = spec.rsplit(":", 1)
        try:
            n_bands = int(bands)
        except ValueError:
            raise ParameterError(f"partition={spec!r}: the number of bands {bands!r} is not an "
                                 "integer; use VAR:BANDS or auto:BANDS, e.g. age:3") from None
        groups = None
    else:
        name, groups = spec
        n_bands = None
    if name == "auto":
        scores = {v: np.mean([cramers_v(table, v, u) for u in range(len(keys)) if u != v])
                  for v in range(len(keys))}
        var = max(scores, key=scores.get)
        how = f"chosen by mean Cramer's V with the other keys ({scores[var]:.3f})"
    else:
        check_partition_key(spec, keys)
        var = keys.index(name)
        how = "given"
    d = len(table.levels[var])
    if groups is None:
        if not 1 <= n_bands <= d:
            raise ParameterError(f"partition={spec!r}: cannot cut {keys[var]!r} ({d} "
                                 f"levels) into {n_bands} bands; give between 1 and {d} bands")
        codes = [list(map(int, g)) for g in np.array_split(np.arange(d), n_bands)]
        how += f"; {n_bands} contiguous bands of equal numbers of categories"
    else:
        lookup = {lv: i for i, lv in enumerate(table.levels[var])}
        try:
            codes = [[lookup[v] for v in g] for g in groups]
        except KeyError as exc:
            raise ParameterError(f"partition group level {exc.args[0]!r} is not a level of "
                                 f"{keys[var]!r}") from None
        flat = sorted(c for g in codes for c in g)
        if flat != list(range(d)):
            raise ParameterError(f"partition groups must cover every level of {keys[var]!r} "
                                 "exactly once")
        how += "; user-given groups"
    return var, codes, how


def partition_tables(table: CellTable, var: int, groups: list[list[int]]):
    """Yield (label, cell indices, sub-table) for each band of key ``var``.

    The sub-table keeps only the band's levels of ``var`` and the same sampling fraction.
    """
    levels = table.levels[var]
    col = table.cell_codes[:, var]
    for group in groups:
        cells = np.flatnonzero(np.isin(col, group))
        label = f"{table.keys[var]} in [{levels[group[0]]} .. {levels[group[-1]]}]"
        if cells.size == 0:
            continue
        recode = np.full(len(levels), -1, np.int64)
        recode[group] = np.arange(len(group))
        codes = table.cell_codes[cells].copy()
        codes[:, var] = recode[codes[:, var]]
        counts = table.counts[cells]
        sub = dataclasses.replace(
            table,
            levels=table.levels[:var] + (tuple(levels[g] for g in group),)
            + table.levels[var + 1:],
            cell_codes=codes, counts=counts,
            weight_sums=None if table.weight_sums is None else table.weight_sums[cells],
            inclusion_sums=(None if table.inclusion_sums is None
                            else table.inclusion_sums[cells]),
            record_cell=np.repeat(np.arange(len(cells)), counts),
            household=None, population=None,
            population_size=table.population_size * counts.sum() / table.n,
        )
        yield label, cells, sub
