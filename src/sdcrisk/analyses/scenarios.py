"""Many key-variable scenarios at once: run, rank, and attribute risk to variables.

An agency rarely knows which variables an intruder holds, so it assesses many key sets
(mu-Argus checks every combination up to a dimension). :func:`assess_scenarios` reads the
file once for the union of the keys, tabulates and fits every key set as an independent work
unit on the backend (:mod:`sdcrisk.runtime.executors`), ranks the key sets by a chosen measure and
computes each variable's marginal contribution across the scenarios.

Key-set files (:func:`read_key_sets`): a ``.json`` file holding a list of lists of names or
an object ``{name: [keys...]}``; otherwise a text file with one key set per line, keys
separated by commas, optionally preceded by ``NAME:``; blank lines and ``#`` comments are
skipped.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import json
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.base import ResultBase
from ..data.sizes import check_memory_limit, short_repr
from ..data.table import Microdata, check_keys, tabulate
from ..data.text import utf8_text
from ..data.wildcard import unique_records
from ..estimators import Estimator
from ..estimators._base import check_seed
from ..exceptions import InputError, ParameterError
from ..runtime.executors import describe_executor, map_units, unit_seed
from .methods import get_estimator

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["KeySet", "ScenarioReport", "all_subsets", "read_key_sets", "assess_scenarios",
           "marginal_contributions", "TABLE_FIGURES"]

#: figures a scenario can be ranked by besides the estimator's measures
TABLE_FIGURES = ("sample_uniques", "k2_violations", "k3_violations", "k5_violations",
                 "n_cells")


#: what ``**microdata_options`` of :func:`assess_scenarios` may name
MICRODATA_OPTIONS = frozenset(inspect.signature(Microdata.from_source).parameters) - {
    "source", "keys"}


@dataclass(frozen=True)
class KeySet:
    """A named key set (the name defaults to the keys joined by ``+``)."""

    keys: tuple[str, ...]
    name: str = ""

    def __post_init__(self):
        if isinstance(self.keys, str) or not isinstance(self.keys, tuple | list):
            # text, or not a sequence of names (a number: TypeError before): check_keys
            # reads the first and names the second
            object.__setattr__(self, "keys", tuple(check_keys(self.keys)))
        if self.keys and any(not isinstance(k, str) or not k.strip() for k in self.keys):
            check_keys(self.keys)  # names the key that is not a column name
        if not self.keys:
            raise ParameterError("a key set is empty; give at least one key variable")
        if len(set(self.keys)) != len(self.keys):
            raise ParameterError(f"key set {list(self.keys)} repeats a variable")
        if not self.name:
            object.__setattr__(self, "name", "+".join(self.keys))

    @property
    def tag(self) -> str:
        """Identity of the scenario for its seed: the sorted keys (order does not matter)."""
        return "+".join(sorted(self.keys))


def all_subsets(variables: Sequence[str], max_dimension: int, *,
                min_dimension: int = 1) -> list[KeySet]:
    """Every key set of ``min_dimension`` .. ``max_dimension`` of ``variables`` (in order).

    Raises
    ------
    ParameterError
        A dimension below 1 or above the number of variables, or repeated variables.

    Examples
    --------
    >>> [k.name for k in all_subsets(["a", "b", "c"], 2)]
    ['a', 'b', 'c', 'a+b', 'a+c', 'b+c']
    """
    variables = list(variables)
    if len(set(variables)) != len(variables):
        raise ParameterError(f"variables repeat: {variables}")
    if not 1 <= min_dimension <= max_dimension:
        raise ParameterError(f"dimensions {min_dimension}..{max_dimension}: need "
                             "1 <= min_dimension <= max_dimension")
    if max_dimension > len(variables):
        raise ParameterError(f"--all-subsets-up-to {max_dimension} exceeds the number of key "
                             f"variables ({len(variables)}: {', '.join(variables)})")
    return [KeySet(tuple(c)) for d in range(min_dimension, max_dimension + 1)
            for c in itertools.combinations(variables, d)]


def read_key_sets(path: str | Path) -> list[KeySet]:
    """Key sets from a file (see the module documentation for the formats).

    Raises
    ------
    InputError
        Unreadable file, bad JSON, or no key set in it.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"key-set file {str(path)!r} cannot be read ({exc.strerror})") from exc
    text = utf8_text(raw, f"key-set file {str(path)!r}")
    out: list[KeySet] = []
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path.name}: not valid JSON ({exc.msg} at line {exc.lineno})"
                             ) from exc
        except RecursionError as exc:  # [[[[...]]]] thousands deep: exit 1 before
            raise InputError(f"{path.name}: not valid JSON (nested too deep); give a list of "
                             "key sets") from exc
        if not isinstance(data, Mapping | list):
            raise InputError(f"{path.name}: the JSON must be a list of key sets or an object "
                             '{"name": ["key", ...]}, not ' + type(data).__name__)
        items = data.items() if isinstance(data, Mapping) else (("", v) for v in data)
        for name, keys in items:
            if isinstance(keys, str):
                keys = keys.split(",")
            if not isinstance(keys, list | tuple):
                raise InputError(f"{path.name}: key set {name or keys!r} is not a list of "
                                 "key names")
            out.append(KeySet(tuple(str(k).strip() for k in keys if str(k).strip()),
                              str(name)))
    else:
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, sep, rest = line.partition(":")
            if not sep:
                name, rest = "", line
            out.append(KeySet(tuple(k.strip() for k in rest.split(",") if k.strip()),
                              name.strip()))
    if not out:
        raise InputError(f"{path.name}: no key set found (one comma-separated set per line)")
    names = [k.name for k in out]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise InputError(f"{path.name}: key set {dup!r} appears twice")
    return out


@dataclass(frozen=True)
class _Unit:
    """One scenario: the microdata restricted to its keys and the estimator to fit."""

    key_set: KeySet
    microdata: Microdata
    estimator: Estimator
    memory_limit: int | None


def _run_unit(unit: _Unit) -> dict:
    """Tabulate and fit one scenario; only figures come back (no record-level data), and the
    warnings raised, as (category, text), for :func:`assess_scenarios` to issue in the calling
    process (a worker's own would print as Python's two-line warnings, naming no key set)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        row = _fit_unit(unit)
    row["warnings"] = [(w.category, str(w.message)) for w in caught]
    return row


def _fit_unit(unit: _Unit) -> dict:
    table = tabulate(unit.microdata)
    row: dict[str, Any] = {
        "name": unit.key_set.name, "keys": list(unit.key_set.keys),
        "dimension": len(unit.key_set.keys), "K": int(table.cell_space),
        "n_cells": table.n_cells,
    }
    for k, v in table.k_anonymity_violations().items():
        row[f"k{k}_violations"] = v
    row["sample_uniques"] = unique_records(table)  # records no other record matches
    try:
        result = unit.estimator.fit(table, memory_limit=unit.memory_limit)
    except Exception as exc:  # noqa: BLE001 - one scenario failing must not stop the rest
        row["error"] = f"{type(exc).__name__}: {exc}"
        return row
    row["measures"] = {name: {"estimate": m.estimate, "lower": m.lower, "upper": m.upper}
                       for name, m in result.measures.items()}
    seed = unit.estimator.get_params().get("random_state")
    row["seed"] = None if seed is None else int(seed)
    return row


def _value(row: Mapping, measure: str) -> float | None:
    if measure in TABLE_FIGURES:
        return float(row[measure])
    m = row.get("measures", {}).get(measure)
    return None if m is None or m["estimate"] is None else float(m["estimate"])


def marginal_contributions(rows: Sequence[Mapping], measure: str) -> dict[str, dict]:
    """Each variable's contribution to ``measure`` across the scenarios.

    Returns
    -------
    dict
        Per variable: ``mean_increase`` - the mean of value(S) - value(S minus v) over the
        pairs of scenarios S, S minus v that were both run (``pairs`` of them; None when
        there is none, e.g. for a 1-key scenario, the empty key set is not run);
        ``max_increase``; ``mean_with`` / ``mean_without`` - the mean value of the scenarios
        that contain / do not contain v; and ``share`` - the variable's ``mean_increase`` over
        the sum of the positive ones.

    Notes
    -----
    With every subset up to dimension D, the paired mean is the average marginal effect of
    adding v to a smaller key set; with an arbitrary list the with/without contrast is always
    defined, the paired one only where the list has nested sets.
    """
    values = {frozenset(r["keys"]): _value(r, measure) for r in rows}
    variables = list(dict.fromkeys(k for r in rows for k in r["keys"]))
    out: dict[str, dict] = {}
    for v in variables:
        diffs, with_v, without_v = [], [], []
        for keys, val in values.items():
            if val is None:
                continue
            if v in keys:
                with_v.append(val)
                rest = keys - {v}
                if rest and values.get(rest) is not None:
                    diffs.append(val - values[rest])
            else:
                without_v.append(val)
        out[v] = {
            "mean_increase": float(np.mean(diffs)) if diffs else None,
            "max_increase": float(np.max(diffs)) if diffs else None,
            "pairs": len(diffs),
            "mean_with": float(np.mean(with_v)) if with_v else None,
            "mean_without": float(np.mean(without_v)) if without_v else None,
        }
    positive = sum(max(o["mean_increase"] or 0.0, 0.0) for o in out.values())
    for o in out.values():
        inc = o["mean_increase"]
        o["share"] = None if inc is None or positive == 0 else max(inc, 0.0) / positive
    return out


@dataclass(frozen=True, eq=False, repr=False)
class ScenarioReport(ResultBase):
    """Scenarios ranked by a measure, with per-variable contributions.

    Attributes
    ----------
    rows : tuple of dict
        One per scenario, highest ``rank_by`` first (failed scenarios last, with ``error``).
    rank_by : str
        The measure or table figure used to rank.
    contributions : dict
        :func:`marginal_contributions` of ``rank_by``.
    method : str
    backend : str
        Where the units ran (``local processes``, ``dask client``...).
    """

    rows: tuple[dict, ...]
    rank_by: str
    contributions: Mapping[str, dict]
    method: str
    backend: str
    seed: int | None

    def _payload(self) -> dict[str, Any]:
        return {"method": self.method, "rank_by": self.rank_by, "seed": self.seed,
                "backend": self.backend, "scenarios": list(self.rows),
                "contributions": self.contributions}

    def summary(self) -> pd.DataFrame:
        """The ranking, narrow: key set, dimension, sample uniques and the ranking figure."""
        frame = self.to_frame()
        cols = [c for c in ("name", "dimension", "sample_uniques", self.rank_by, "error")
                if c in frame.columns]
        return frame[list(dict.fromkeys(cols))]

    def _repr_parts(self) -> list[str]:
        top = self.rows[0]["name"] if self.rows else None
        return [f"scenarios={len(self.rows)}", f"method={self.method!r}",
                f"rank_by={self.rank_by!r}", f"top={top!r}", f"backend={self.backend!r}"]

    def to_frame(self) -> pd.DataFrame:
        """The ranking as a pandas DataFrame (one row per scenario)."""
        import pandas as pd

        flat = []
        for r in self.rows:
            d = {k: v for k, v in r.items() if k not in ("measures", "keys")}
            for name, m in r.get("measures", {}).items():
                d[name] = m["estimate"]
            flat.append(d)
        return pd.DataFrame(flat)

    def to_text(self) -> str:
        lines = [f"{len(self.rows)} key sets, method {self.method}, ranked by {self.rank_by} "
                 f"(highest first; ran "
                 f"{'in this process' if self.backend == 'serial' else f'on {self.backend}'})",
                 "",
                 f"{'rank':>4}  {'key set':<40}{'K':>14}{'uniques':>9}{self.rank_by:>14}"]
        for i, r in enumerate(self.rows, 1):
            val = _value(r, self.rank_by) if "error" not in r else None
            shown = r.get("error", "-")[:40] if val is None else f"{val:.6g}"
            name = r["name"] if len(r["name"]) <= 39 else r["name"][:38] + "…"
            lines.append(f"{i:>4}  {name:<40}{r['K']:>14,}{r['sample_uniques']:>9,}"
                         f"{shown:>14}")
        if not any(c["pairs"] for c in self.contributions.values()):
            lines += ["", f"per-variable contribution to {self.rank_by}: not measured, because "
                      "no key set run is another one plus a single variable (list nested "
                      "sets, or use --all-subsets-up-to D)"]
            return "\n".join(lines)
        lines += ["", f"per-variable contribution to {self.rank_by} (mean increase when the "
                  "variable is added to a key set that was also run):",
                  f"{'variable':<24}{'mean +':>12}{'max +':>12}{'pairs':>7}{'share':>8}"]
        order = sorted(self.contributions.items(),
                       key=lambda kv: -(kv[1]["mean_increase"] or -math.inf))
        for v, c in order:
            def f(x):
                return "-" if x is None else f"{x:.4g}"
            share = "-" if c["share"] is None else f"{100 * c['share']:.0f}%"
            lines.append(f"{v[:23]:<24}{f(c['mean_increase']):>12}{f(c['max_increase']):>12}"
                         f"{c['pairs']:>7}{share:>8}")
        return "\n".join(lines)


def _restrict(md: Microdata, keys: Sequence[str]) -> Microdata:
    idx = [md.keys.index(k) for k in keys]
    return dataclasses.replace(md, keys=tuple(keys), codes=tuple(md.codes[i] for i in idx),
                               levels=tuple(md.levels[i] for i in idx))


def assess_scenarios(
    source: Any,
    key_sets: Sequence[KeySet | Sequence[str]],
    *,
    method: str | Estimator = "nb",
    options: Mapping[str, Any] | None = None,
    rank_by: str = "tau2",
    seed: int | None = 0,
    executor: Any = None,
    workers: int | None = None,
    scheduler: str | None = None,
    memory_limit: int | None = None,
    **microdata_options: Any,
) -> ScenarioReport:
    """Assess many key sets of one file and rank them by risk.

    Parameters
    ----------
    source : path, DataFrame, Microdata ...
        The sample (anything :meth:`Microdata.from_source` reads), or a Microdata holding
        every key used.
    key_sets : sequence of KeySet or of key-name sequences
        The scenarios (see :func:`all_subsets`, :func:`read_key_sets`).
    method : str or Estimator
        The estimator; ``options`` as for :func:`sdcrisk.get_estimator`.
    rank_by : str
        A measure of the estimator (``tau1``, ``tau2``, ``global_risk``, ``p_pu``...) or a
        table figure (``sample_uniques``, ``k3_violations``...).
    seed : int or None
        Root seed. Each scenario's ``random_state`` is drawn from
        ``SeedSequence(seed, spawn_key=<hash of its sorted keys>)``, so a key set gets the
        same result alone or among others, in any order, on any backend.
    executor, workers, scheduler
        Where the scenarios run (:func:`sdcrisk.runtime.executors.executor_scope`).
    memory_limit : int, optional
        Per-scenario memory limit in bytes for the estimator's guard.
    **microdata_options
        ``weights``, ``household``, ``population_size``, ``sampling_fraction``, ``levels``,
        ``missing``, ``max_levels`` for :meth:`Microdata.from_source`.

    Returns
    -------
    ScenarioReport

    Raises
    ------
    ParameterError
        No key set, or ``rank_by`` not given by the method.

    Examples
    --------
    >>> rep = assess_scenarios("example:uk_census2011", all_subsets(["region", "sex",
    ...     "age_band"], 2), population_size=56_075_912, rank_by="sample_uniques",
    ...     executor="serial")
    >>> len(rep.rows)
    6
    """
    if isinstance(key_sets, str | KeySet) or not isinstance(key_sets, Iterable):
        raise ParameterError(f"key_sets={short_repr(key_sets)}: give a list of key sets, each "
                             "a KeySet or a list of key names, e.g. [['age', 'sex'], ['age']]")
    check_seed(seed, "seed")
    check_memory_limit(memory_limit)
    sets = [k if isinstance(k, KeySet) else KeySet(k if isinstance(k, str) else tuple(k))
            for k in key_sets]
    if not sets:
        raise ParameterError("no key set to assess")
    names = [k.name for k in sets]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ParameterError(f"key set {dup!r} is given twice")
    union = list(dict.fromkeys(k for s in sets for k in s.keys))
    if isinstance(source, Microdata):
        missing = [k for k in union if k not in source.keys]
        if missing:
            raise InputError(f"key {missing[0]!r} is not among the microdata's keys "
                             f"{list(source.keys)}")
        md = source
    else:
        unknown = sorted(set(microdata_options) - MICRODATA_OPTIONS)
        if unknown:
            raise ParameterError(f"assess_scenarios() got an unknown option {unknown[0]!r}; "
                                 "it passes on the options of Microdata.from_source: "
                                 f"{', '.join(sorted(MICRODATA_OPTIONS))}")
        md = Microdata.from_source(source, union, **microdata_options)
    if options is not None and not isinstance(options, Mapping):
        raise ParameterError(f"options={short_repr(options)} must map option names to values, "
                             "e.g. {'mode': 'sdcmicro'}")
    base = method if isinstance(method, Estimator) else get_estimator(method, **(options or {}))
    seeded = "random_state" in {f.name for f in dataclasses.fields(base)}
    units = []
    for s in sets:
        est = base
        if seeded and seed is not None:
            child = unit_seed(seed, s.tag)
            est = dataclasses.replace(base, random_state=int(child.generate_state(1)[0]))
        units.append(_Unit(s, _restrict(md, s.keys), est, memory_limit))
    rows = map_units(_run_unit, units, executor=executor, workers=workers,
                     scheduler=scheduler)
    for r in rows:
        for category, text in r.pop("warnings", ()):
            warnings.warn(f"key set {r['name']}: {text}", category, stacklevel=2)
    ok = [r for r in rows if "error" not in r]
    if ok and rank_by not in TABLE_FIGURES and rank_by not in ok[0]["measures"]:
        known = ", ".join(list(ok[0]["measures"]) + list(TABLE_FIGURES))
        raise ParameterError(f"rank_by={rank_by!r} is not given by method {base.name!r}; "
                             f"choose one of {known}")
    ranked = sorted(ok, key=lambda r: -(_value(r, rank_by) if _value(r, rank_by) is not None
                                        else -math.inf))
    ranked += [r for r in rows if "error" in r]
    where = describe_executor(scheduler if scheduler is not None else executor)
    if executor is None and scheduler is None and workers == 1:
        where = "serial"
    return ScenarioReport(rows=tuple(ranked), rank_by=rank_by,
                          contributions=marginal_contributions(ok, rank_by),
                          method=base.name, backend=where, seed=seed)
