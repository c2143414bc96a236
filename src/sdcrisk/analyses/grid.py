"""Evaluation grids: estimators over population x fraction x method x seed, one work unit
each, run wherever :func:`sdcrisk.runtime.executors.map_units` sends them (in this process,
local processes or a Dask cluster)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from ..data.table import Microdata
from ..estimators import options_of
from ..exceptions import SdcRiskError, SdcRiskWarning, user_stacklevel
from ..runtime.executors import map_units
from .evaluate import evaluate
from .methods import ESTIMATORS, get_estimator
from .sampling import Bernoulli

__all__ = ["evaluate_grid"]

_POPULATIONS: dict = {}


def _population(spec):
    """A population Microdata from a spec; file specs are read once per worker process."""
    if isinstance(spec, Microdata):
        return spec
    path, keys, options = spec
    # options may hold unhashable values (a levels dict of lists): key the cache by their repr
    cache_key = (str(path), tuple(keys), repr(sorted(options.items())))
    if cache_key not in _POPULATIONS:
        if len(_POPULATIONS) >= 4:
            _POPULATIONS.pop(next(iter(_POPULATIONS)))
        _POPULATIONS[cache_key] = Microdata.from_source(path, list(keys), **options)
    return _POPULATIONS[cache_key]


def _evaluate_unit(unit: dict) -> dict:
    pop = _population(unit["population_spec"])
    est = get_estimator(unit["method"], **unit["options"])
    with warnings.catch_warnings():  # a failed unit is reported once, by evaluate_grid
        warnings.filterwarnings("ignore", message=r"evaluate\(\): method ",
                                category=SdcRiskWarning)
        ev = evaluate(pop, [est], design=Bernoulli(unit["fraction"]), seed=unit["seed"],
                      all_failed="return")
    m = next(iter(ev.methods.values()))
    return {
        "population": unit["population"], "fraction": unit["fraction"], "seed": unit["seed"],
        "method": unit["label"], "K": ev.cell_space, "truth": dict(ev.truth),
        "estimates": dict(m.estimates), "relative_errors": dict(m.relative_errors),
        "auc": m.auc, "seconds": m.seconds, "mcmc": _mcmc_summary(m.result),
        "covered": None if m.covered is None else dict(m.covered),
        **({"error": m.error} if m.error is not None else {}),
    }


def _mcmc_summary(result) -> dict | None:
    """R-hat and bulk ESS of tau1 and the verdict of an MCMC fit (None for other methods)."""
    mcmc = None if result is None else result.diagnostics.get("mcmc")
    if not mcmc:
        return None
    return {"rhat_tau1": mcmc["rhat"].get("tau1"), "ess_tau1": mcmc["ess_bulk"].get("tau1"),
            "converged": bool(mcmc["converged"])}


def evaluate_grid(populations: dict, fractions: Sequence[float], methods: dict | Sequence[str],
                  *, seeds: Sequence[int] = (0,), seed_estimators: bool = False,
                  executor: Any = None, workers: int | None = None,
                  scheduler: str | None = None) -> list[dict]:
    """Evaluate estimators over population x fraction x method x seed, one unit each.

    Parameters
    ----------
    populations : dict
        Name -> a Microdata, or ``(path, keys)`` / ``(path, keys, from_source options)``; a
        file is read by each worker (once per process), so only the path travels - on a
        cluster it must be readable from the workers.
    fractions : sequence of float
        Bernoulli sampling fractions.
    methods : dict or sequence
        Label -> ``(method, options)``, or method names.
    seeds : sequence of int
        Sampling-design seeds; each unit draws its sample with its own seed, so results do
        not depend on where or in which order the units run.
    seed_estimators : bool
        Also pass each unit's seed to its estimator as ``random_state`` (as one
        ``sdcrisk evaluate --seed S`` run does), so every row can be re-run alone.
    executor, workers, scheduler
        See :func:`sdcrisk.runtime.executors.executor_scope`.

    Returns
    -------
    list of dict
        One row per unit in grid order (population, fraction, seed, method): truth,
        estimates, relative errors, AUC, seconds. A unit whose method failed with a
        :class:`~sdcrisk.SdcRiskError` (a sample too small for it, a memory limit) has an
        ``"error"`` with the message and no estimates; a warning per (population, fraction,
        method) counts them.

    Raises
    ------
    SdcRiskError
        When every unit failed (their distinct messages).
    """
    if not isinstance(methods, dict):
        methods = {m: (m, {}) for m in methods}
    units = []
    for name, spec in populations.items():
        if isinstance(spec, tuple):
            spec = (spec[0], tuple(spec[1]), dict(spec[2]) if len(spec) > 2 else {})
        for frac in fractions:
            for seed in seeds:
                for label, (method, options) in methods.items():
                    opts = dict(options)
                    if seed_estimators and "random_state" in options_of(ESTIMATORS[method]):
                        opts["random_state"] = int(seed)
                    units.append({"population": name, "population_spec": spec,
                                  "fraction": float(frac), "seed": int(seed), "label": label,
                                  "method": method, "options": opts})
    rows = map_units(_evaluate_unit, units, executor=executor, workers=workers,
                     scheduler=scheduler)
    failed: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("error") is not None:
            failed.setdefault((r["population"], r["fraction"], r["method"]), []).append(r)
    if rows and sum(map(len, failed.values())) == len(rows):
        reasons = dict.fromkeys(f"{r['method']}: {r['error']}" for r in rows)
        raise SdcRiskError("every unit of the grid failed: " + "; ".join(reasons))
    for (pop, frac, label), rs in failed.items():
        total = sum(1 for r in rows if (r["population"], r["fraction"], r["method"])
                    == (pop, frac, label))
        seeds = ", ".join(str(r["seed"]) for r in rs[:5]) + (", ..." if len(rs) > 5 else "")
        warnings.warn(f"evaluate_grid(): method {label!r} failed on {len(rs)} of {total} "
                      f"samples of {pop} at fraction {frac:g} (seeds {seeds}) and is left out "
                      f"of their summaries: {rs[0]['error']}", SdcRiskWarning,
                      stacklevel=user_stacklevel())
    return rows
