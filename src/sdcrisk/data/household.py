"""Household-level keys (spec C.7; Longhurst & Vickers section 4).

An intruder who matches whole households sees the key variables of every member at once. The
household-level file has one record per household of a given size, whose key holds the member
variables of each member (``age_1, sex_1, age_2, sex_2, ...``) plus household variables, with
members in a canonical order so that two identical households give identical records. Every
estimator then runs on it unchanged; simple random sampling of households holds when the survey
samples whole households.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..exceptions import InputError, ParameterError
from .sizes import check_number
from .table import Microdata

__all__ = ["household_microdata", "household_sizes"]


def household_sizes(microdata: Microdata) -> dict[int, int]:
    """Number of households of each size (members present in the file)."""
    if not isinstance(microdata, Microdata):
        raise ParameterError(f"household_sizes() takes a Microdata, not "
                             f"{type(microdata).__name__}")
    if microdata.household is None:
        raise InputError("household-level keys need household ids (household=...)")
    sizes = np.bincount(microdata.household)
    sizes = sizes[sizes > 0]
    values, counts = np.unique(sizes, return_counts=True)
    return {int(v): int(c) for v, c in zip(values, counts, strict=True)}


def household_microdata(
    microdata: Microdata,
    member_keys: Sequence[str],
    *,
    size: int,
    household_keys: Sequence[str] = (),
    order: Sequence[str] | None = None,
    population_households: float | None = None,
) -> Microdata:
    """One record per household of ``size`` members, keyed on every member's variables.

    Parameters
    ----------
    microdata : Microdata
        Person-level records with household ids; its keys include ``member_keys`` and
        ``household_keys``.
    member_keys : sequence of str
        Person variables repeated for each member: key ``"{name}_{i}"`` for member i = 1..size.
    size : int
        Household size analysed (LV fit each size separately).
    household_keys : sequence of str
        Variables that are constant within a household (e.g. region); checked.
    order : sequence of str, optional
        Member variables that order the members (lexicographically by their codes, the rest of
        ``member_keys`` breaking ties). Default: ``member_keys`` in the given order. LV recommend
        sex then age, which creates fewer structural zeros than age then sex.
    population_households : float, optional
        Number of households of this size in the population. Default: from the survey weights
        (the sum of household weights, each the mean of its members' weights) or from the person
        sampling fraction n/N applied to households (whole households sampled).

    Returns
    -------
    Microdata
        Household records; no household column (each record is a household).

    Raises
    ------
    InputError
        No household ids, a household variable that varies within a household, no household of
        that size.
    ParameterError
        Unknown or repeated variable names, size < 1.

    Examples
    --------
    >>> from sdcrisk import Microdata
    >>> persons = Microdata.from_source(
    ...     {"hid": [1, 1, 2, 2, 3], "sex": [0, 1, 1, 0, 0], "age": [30, 28, 50, 52, 40]},
    ...     ["sex", "age"], household="hid")
    >>> hh = household_microdata(persons, ["sex", "age"], size=2)
    >>> hh.keys, hh.n
    (('sex_1', 'age_1', 'sex_2', 'age_2'), 2)
    """
    md = microdata
    if md.household is None:
        raise InputError("household-level keys need household ids (household=...)")
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
        # size=2.0 or True was a TypeError from numpy
        raise ParameterError(f"household size {size!r} must be an integer >= 1, e.g. 2")
    member_keys = list(member_keys)
    household_keys = list(household_keys)
    order = member_keys if order is None else list(order)
    names = member_keys + household_keys
    if not member_keys or len(set(names)) != len(names):
        raise ParameterError("member_keys must be non-empty and not overlap household_keys")
    for name in names:
        if name not in md.keys:
            raise ParameterError(f"{name!r} is not a key of the person file "
                                 f"(keys: {', '.join(md.keys)})")
    for name in order:
        if name not in member_keys:
            raise ParameterError(f"order variable {name!r} is not among member_keys")
    col = {k: j for j, k in enumerate(md.keys)}
    sort_keys = order + [k for k in member_keys if k not in order]
    # lexsort: last key is primary -> household first, then the order variables
    perm = np.lexsort([md.codes[col[k]] for k in reversed(sort_keys)] + [md.household])
    hh_sorted = md.household[perm]
    members = np.bincount(md.household)
    chosen = members[hh_sorted] == size
    if not chosen.any():  # before the reshape: size=10**30 exceeded numpy's dimensions
        raise InputError(f"no household of size {size} in the file "
                         f"(sizes present: {household_sizes(md)})")
    rows = perm[chosen].reshape(-1, size)  # (households, size), members in canonical order
    n_h = rows.shape[0]
    codes, levels, keys = [], [], []
    for name in household_keys:
        c = md.codes[col[name]][rows]
        varies = np.any(c != c[:, :1], axis=1)
        if varies.any():
            raise InputError(f"household variable {name!r} differs between members of "
                             f"{int(varies.sum())} households of size {size}; a household "
                             "variable is the same for every member (e.g. region): keep "
                             f"{name!r} as a member variable instead")
        codes.append(c[:, 0].copy())
        levels.append(md.levels[col[name]])
        keys.append(name)
    for i in range(size):
        for name in member_keys:
            codes.append(md.codes[col[name]][rows[:, i]].copy())
            levels.append(md.levels[col[name]])
            keys.append(f"{name}_{i + 1}")
    weights = None if md.weights is None else md.weights[rows].mean(axis=1)
    if population_households is not None:
        if not math.isfinite(check_number("population_households", population_households)):
            raise ParameterError(f"population_households={population_households} is not "
                                 "finite; give the number of households of this size in the "
                                 "population")
        if population_households < n_h:
            raise InputError(f"population_households={population_households:g} is smaller "
                             f"than the {n_h} sampled households of size {size}")
        big_n, how = float(population_households), "given"
    elif weights is not None:
        big_n, how = float(weights.sum()), "weights"
    elif md.population_size_source == "assumed_population":
        big_n, how = float(n_h), "assumed_population"
    else:
        big_n, how = n_h * md.population_size / md.n, "sampling_fraction"
    return Microdata(
        keys=tuple(keys),
        codes=tuple(codes),
        levels=tuple(levels),
        weights=weights,
        household=None,
        population_size=big_n,
        population_size_source=how,
        source=f"{md.source} (households of size {size})",
        weights_column=md.weights_column,
        household_column=None,
    )
