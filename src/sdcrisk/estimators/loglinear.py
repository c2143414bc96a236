"""Poisson log-linear risk (Skinner & Holmes 1998; Elamir & Skinner 2006; Skinner & Shlomo 2008).

Spec section C. f_k ~ Poisson(mu_k) with log mu_k a hierarchical log-linear model fitted by
IPF (:mod:`._ipf`); lambda_k = mu_k / pi; F_k - f_k ~ Poisson((1 - pi) lambda_k). Risk of a sample
unique: h1 = exp(-(1-pi) lambda), h2 = (1 - exp(-(1-pi) lambda)) / ((1-pi) lambda); tau1, tau2 are
their sums over sample uniques (totals, the textbook form). The model can be chosen by the
ONS forward search on the minimum-error statistic Z (spec C.5).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
import warnings
from typing import Any, ClassVar, Literal

import numpy as np

from ..core.measures import Measure
from ..core.predictive import PoissonPredictive
from ..core.result import RiskResult
from ..data.sizes import check_number, check_range
from ..data.structural_zeros import (
    structural_zeros_of_table,
    structural_zeros_option,
    structural_zeros_param,
)
from ..data.table import CellTable
from ..exceptions import ConvergenceWarning, ParameterError, user_stacklevel
from ..runtime.executors import current_executor, map_units
from . import _factored, _ipf
from ._base import Estimator, check_bool, check_bootstrap, check_int
from ._minerror import dense_sums, h1, h2, minimum_error, minimum_error_observed
from ._modrisk import modrisk_measures
from ._partition import (
    check_partition_key,
    check_partition_syntax,
    partition_tables,
    resolve_partition,
)

__all__ = ["LogLinearRisk", "fit_loglinear", "fit_loglinear_factored", "LogLinearFit"]

_CHUNK = 1 << 22
#: engine="auto" fits by blocks on join supports (:mod:`._factored`) above this many cells
FACTORED_ABOVE = 10**7
#: largest ``tol`` (deviation of a fitted margin from its count, in persons): beyond one
#: person the fitted margins need not match the sample's; tol=1e6 stopped IPF at its start
MAX_TOL = 1.0


@dataclasses.dataclass(frozen=True)
class LogLinearFit:
    """A fitted model and what the risk measures need from it."""

    generators: tuple[tuple[int, ...], ...]
    description: str
    ipf: _ipf.IPFResult
    observed_mu: np.ndarray
    pi: float
    tau1: float
    tau2: float
    z: dict[str, dict[str, float]]
    #: sum over all cells of x e^{-x}, x = (1 - pi) mu / pi (unweighted fits; else None)
    prob_one_all: float | None = None
    #: the blocks of a factored fit (engine "factored"; then there is no dense table)
    factored: _factored.FactoredModel | None = None

    @property
    def fitted(self) -> np.ndarray:
        return self.ipf.fitted


def _flat_index(table: CellTable) -> np.ndarray:
    shape = [len(lv) for lv in table.levels]
    idx = np.zeros(table.n_cells, np.int64)
    for j, d in enumerate(shape):
        idx = idx * d + table.cell_codes[:, j]
    return idx


def _saturated_note(fit: LogLinearFit, table: CellTable) -> tuple[str, ...]:
    if not _ipf.is_saturated(fit.generators, len(table.keys)):
        return ()
    return ("note: the saturated model reproduces the sample counts (mu_k = f_k), so it does "
            "not smooth across cells; tau1 then counts every sample unique as likely "
            "population unique at the sampling fraction",)


def fit_loglinear(table: CellTable, generators, *, max_iter: int = 40, tol: float = 1e-3,
                  dtype=np.float64, weighted: bool = False, structural_zeros=None,
                  flat_index: np.ndarray | None = None,
                  initial: np.ndarray | None = None) -> LogLinearFit:
    """Fit one model to a table and compute tau1, tau2 and both Z statistics.

    ``initial``: the fitted table of a sub-model to start IPF from (same MLE, fewer sweeps).
    """
    shape = tuple(len(lv) for lv in table.levels)
    values = table.weight_sums if weighted else None
    targets = _ipf.margins_of_cells(table, generators, values)
    res = _ipf.ipf(shape, generators, targets, max_iter=max_iter, tol=tol, dtype=dtype,
                   structural_zeros=structural_zeros, initial=initial)
    pi = table.n / table.population_size
    idx = _flat_index(table) if flat_index is None else flat_index
    mu_obs = res.fitted.reshape(-1)[idx].astype(np.float64)
    if weighted:  # the model was fitted to weighted counts: its fitted values are lambda
        mu_obs = mu_obs * pi
    su = table.counts == 1
    lam_su = mu_obs[su] / pi
    z = {}
    prob_one_all = None
    if not weighted:
        dense = dense_sums(res.fitted.reshape(-1), pi)
        prob_one_all = dense["prob_one"]
        for target in ("tau1", "tau2"):
            z[target] = minimum_error(res.fitted, idx, table.counts, pi, target, dense=dense)
    return LogLinearFit(
        generators=tuple(generators), description=_ipf.describe_terms(generators, table.keys),
        ipf=res, observed_mu=mu_obs, pi=pi, tau1=float(h1(lam_su, pi).sum()),
        tau2=float(h2(lam_su, pi).sum()), z=z, prob_one_all=prob_one_all,
    )


def fit_loglinear_factored(fitter: _factored.FactoredFitter, generators,
                           parent: LogLinearFit | None = None) -> LogLinearFit:
    """The same fit and measures as :func:`fit_loglinear` without the dense table.

    ``fitter`` holds the table and its margins; ``parent`` (a sub-model's fit) lends the
    blocks the new model leaves unchanged and warm-starts the block it changes.
    """
    table = fitter.table
    generators = tuple(generators)
    model = fitter.fit(generators, None if parent is None else parent.factored)
    pi = table.n / table.population_size
    mu_obs = model.observed_mu
    su = table.counts == 1
    lam_su = mu_obs[su] / pi
    z = {target: minimum_error_observed(mu_obs, table.counts, pi, target, model.sums)
         for target in ("tau1", "tau2")}
    return LogLinearFit(
        generators=generators, description=_ipf.describe_terms(generators, table.keys),
        ipf=model.ipf_result(), observed_mu=mu_obs, pi=pi, tau1=float(h1(lam_su, pi).sum()),
        tau2=float(h2(lam_su, pi).sum()), z=z, prob_one_all=model.sums["prob_one"],
        factored=model,
    )


def compact_levels(table: CellTable) -> CellTable:
    """The table with the levels that no sample record has removed from every key.

    Exact for every hierarchical model (each contains all main effects): a level with a zero
    sample margin gets fitted values 0, which add nothing to tau1, tau2, Z or P(PU); dropping
    it only shrinks the dense table. Cell order and counts are unchanged.
    """
    codes = table.cell_codes
    keep_all = True
    new_codes = np.empty_like(codes)
    levels = []
    for j, (lv, used) in enumerate(zip(table.levels, used_levels(table), strict=True)):
        if used.all():
            new_codes[:, j] = codes[:, j]
            levels.append(lv)
            continue
        keep_all = False
        recode = np.cumsum(used) - 1
        new_codes[:, j] = recode[codes[:, j]]
        levels.append(tuple(v for v, u in zip(lv, used, strict=True) if u))
    if keep_all:
        return table
    return dataclasses.replace(table, levels=tuple(levels), cell_codes=new_codes)


def used_levels(table: CellTable) -> list[np.ndarray]:
    """For each key, whether each of its levels occurs in the sample (bool, length d_j)."""
    out = []
    for j, lv in enumerate(table.levels):
        used = np.zeros(len(lv), bool)
        used[table.cell_codes[:, j]] = True
        out.append(used)
    return out


def _unobserved_prob_one(fit: LogLinearFit, observed_m: np.ndarray, weighted: bool) -> float:
    """Sum over f = 0 cells of P(F = 1) = m e^{-m}, m = (1 - pi) lambda (dense, chunked)."""
    total = fit.prob_one_all  # from the minimum-error pass (unweighted fits)
    if total is None:
        pi = fit.pi
        scale = (1 - pi) if weighted else (1 - pi) / pi
        flat = fit.fitted.reshape(-1)
        total = 0.0
        for s in range(0, flat.size, _CHUNK):
            m = flat[s:s + _CHUNK].astype(np.float64) * scale
            total += float(np.sum(m * np.exp(-m)))
    return max(total - float(np.sum(observed_m * np.exp(-observed_m))), 0.0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class LogLinearRisk(Estimator):
    """Poisson log-linear model risk with IPF and the ONS minimum-error model search.

    Parameters
    ----------
    terms : str or sequence
        ``"search"`` (default) for the forward search of spec C.5 from all-2-way by the
        minimum-error statistic, or a fixed model: ``"independence"``, ``"all-2-way"``,
        ``"all-3-way"``, a formula such as ``"all-2-way + age:sex:marital"`` or a list of
        variable tuples. The search is the default because it validates best on the 504-case
        calibration corpus (median |rel. error| of tau1 29.2% against 83.5% for all-2-way on
        the 46 cases both ran: ``benchmarks/RESULTS.md``); weighted fits need a fixed model.
    target : {"tau2", "tau1"}
        Measure whose minimum-error statistic Z drives the search (LV use tau2).
    max_added_terms : int, optional
        Cap on the number of terms the search adds.
    max_iter, tol : int, float
        IPF sweeps and convergence tolerance in count units (SDCNway defaults 40, 1e-3;
        ``tol`` in (0, 1]).
    dtype : {"auto", "float32", "float64"}
        Storage of the dense fitted table; ``auto`` uses float32 above 10^7 cells.
    engine : {"auto", "dense", "factored"}
        ``dense``: IPF on the dense table of all K cells. ``factored``: no dense table; the
        model is fitted block by block (keys joined by its terms) on the cells where every
        sample margin of the block's terms is positive, and the all-cell sums of Z and P(PU)
        come from the blocks (same fit and measures; memory and time grow with those cells,
        not with K). ``auto``: factored above 10^7 cells (unweighted, no bootstrap).
    weighted : bool
        Fit to the sums of survey weights (SDCNway's weighted variant); Z is then not given.
    bootstrap : int
        Parametric-bootstrap replicates for intervals that include estimation error
        (0: only the conditional-Poisson predictive interval; at most 10,000).
    random_state : int
        Seed of the bootstrap.
    partition : str or tuple, optional
        Fit a separate model within bands of one key variable and sum (spec C.6):
        ``"age:4"`` (4 contiguous bands of equal numbers of categories), ``"auto:4"`` (the key
        most associated with the others by Cramer's V), or ``(variable, [[levels], ...])``.
    mode : {"exact", "sdcmicro"}
        ``"sdcmicro"`` adds sdcMicro ``modRisk``'s gr1 and gr2 (measures ``sdcmicro_gr1``,
        ``sdcmicro_gr2``; keys as factors, method "default"/"IPF") to the textbook measures.
    sdcmicro_bound : float
        modRisk's ``bound``: only cells with f <= bound enter gr1/gr2 (default Inf).
    structural_zeros : path, StructuralZeros or sequence, optional
        Impossible key combinations (a CSV of marginal conditions, key names as columns,
        ``*`` or empty = free; a :class:`~sdcrisk.data.structural_zeros.StructuralZeros`; or
        conditions as in :meth:`StructuralZeros.from_tuples`), fitted as 0 from IPF's start
        (spec C.3: the quasi-log-linear model on the other cells). Needs the dense engine;
        not with ``partition``. A sample record in a structural zero is an input error.

    Notes
    -----
    With the dense engine the fitted table is dense over the K key cells (memory K x 4 or 8
    bytes, refused above the memory limit before allocation); the factored engine (default
    above 10^7 cells) holds only the join supports of the model's blocks. sdcMicro's
    ``modRisk`` computes related but different numbers (spec C.1): it is not an equivalent;
    ``mode="sdcmicro"`` reproduces them alongside.

    References
    ----------
    Skinner, C. & Shlomo, N. (2008). Assessing identification risk in survey microdata using
    log-linear models. JASA 103, 989-1001. Longhurst, J. & Vickers, P. Microdata risk
    assessment in an NSI context (ONS).

    Examples
    --------
    >>> from sdcrisk import Microdata, tabulate, LogLinearRisk
    >>> md = Microdata.from_source("example:uk_census2011", keys="region,sex,age_band",
    ...                            population_size=56_075_912)
    >>> LogLinearRisk(terms="all-2-way").fit(tabulate(md)).method
    'loglinear'
    """

    name: ClassVar[str] = "loglinear"
    memory_options: ClassVar[tuple[str, ...]] = ("bootstrap",)
    terms: Any = "search"
    target: Literal["tau1", "tau2"] = "tau2"
    max_added_terms: int | None = None
    max_iter: int = 40
    tol: float = 1e-3
    dtype: Literal["auto", "float32", "float64"] = "auto"
    weighted: bool = False
    bootstrap: int = 0
    random_state: int | None = 0
    partition: Any = None
    mode: Literal["exact", "sdcmicro"] = "exact"
    sdcmicro_bound: float = math.inf
    engine: Literal["auto", "dense", "factored"] = "auto"
    structural_zeros: Any = None

    def check_keys(self, keys) -> None:
        """The key variables named in ``terms`` and ``partition`` exist in ``keys``."""
        if not (isinstance(self.terms, str) and self.terms.strip() == "search"):
            _ipf.parse_terms(self.terms, keys)
        check_partition_key(self.partition, keys)

    def _validate(self) -> None:
        if self.mode not in ("exact", "sdcmicro"):
            raise ParameterError(f"mode={self.mode!r}; use 'exact' or 'sdcmicro' (modRisk)")
        if self.mode == "sdcmicro" and (self.partition is not None or self.weighted):
            raise ParameterError("mode='sdcmicro' reproduces modRisk, which fits one unweighted "
                                 "model: drop partition / weighted")
        if not check_number("sdcmicro_bound", self.sdcmicro_bound) >= 1:
            raise ParameterError(f"sdcmicro_bound={self.sdcmicro_bound} must be >= 1")
        if self.target not in ("tau1", "tau2"):
            raise ParameterError(f"target={self.target!r}; use 'tau1' or 'tau2'")
        check_int("max_iter", self.max_iter, 1)
        check_range("tol", self.tol, 0, MAX_TOL, low_open=True,
                    what="largest deviation of a fitted margin from its count, in persons, "
                    "at which IPF stops; e.g. 1e-3")
        if self.dtype not in ("auto", "float32", "float64"):
            raise ParameterError(f"dtype={self.dtype!r}; use auto, float32 or float64")
        check_bootstrap(self.bootstrap)
        if self.max_added_terms is not None:
            check_int("max_added_terms", self.max_added_terms, 0)
        check_bool("weighted", self.weighted)
        check_partition_syntax(self.partition)
        if self.terms == "search" and self.weighted:
            raise ParameterError("the search (the default terms) needs Z, which is not defined "
                                 "for weighted fits: give a fixed model with weighted=True, "
                                 "e.g. terms='all-2-way' (--terms all-2-way)")
        if not isinstance(self.terms, str | list | tuple):
            raise ParameterError(f"terms={self.terms!r} must be a formula string or a list "
                                 "of variable tuples")
        if not (isinstance(self.terms, str) and self.terms.strip() == "search"):
            _ipf.check_terms_syntax(self.terms)
        if self.partition is not None and self.bootstrap:
            raise ParameterError("bootstrap intervals are not available with partitioning")
        if self.engine not in ("auto", "dense", "factored"):
            raise ParameterError(f"engine={self.engine!r}; use auto, dense or factored")
        if self.engine == "factored" and (self.weighted or self.bootstrap):
            raise ParameterError("engine='factored' fits unweighted models without bootstrap "
                                 "(both need the dense table): use engine='dense'")
        object.__setattr__(self, "structural_zeros",
                           structural_zeros_option(self.structural_zeros))
        if self.structural_zeros is not None:
            if self.engine == "factored":
                raise ParameterError("structural zeros are fitted on the dense table: use "
                                     "engine='dense' or 'auto' with structural_zeros")
            if self.partition is not None:
                raise ParameterError("structural zeros cannot be combined with partition "
                                     "(--partition): drop one of them")

    def get_params(self) -> dict[str, Any]:
        out = super().get_params()
        out["structural_zeros"] = structural_zeros_param(out["structural_zeros"])
        return out

    def _dtype(self, k: int):
        if self.dtype == "auto":
            return np.float32 if k > 10**7 else np.float64
        return np.dtype(self.dtype).type

    def _factored(self, cell_space: int) -> bool:
        """Whether a (compacted) table of ``cell_space`` cells is fitted by blocks."""
        if self.engine == "auto":
            return (cell_space > FACTORED_ABOVE and not self.weighted
                    and not self.bootstrap and self.structural_zeros is None)
        return self.engine == "factored"

    def memory_estimate(self, table: CellTable) -> int:
        """The dense fitted table (of the largest band when partitioned) on top of the base.

        The factored engine holds join supports, not known before the fit (the join refuses
        one past the memory limit): counted here as 64 bytes per observed cell and key.

        A search also holds the current model's table while IPF copies it as a warm start;
        the bootstrap holds a Poisson draw, a float64 copy of mu and a refit.
        """
        compact = compact_levels(table)
        k = compact.cell_space
        if self.partition is not None:
            var, groups, _ = resolve_partition(self.partition, compact)
            k = k // len(compact.levels[var]) * max(len(g) for g in groups)
        if self._factored(k):
            return int(super().memory_estimate(table)
                       + 64 * table.n_cells * len(table.keys) + (64 << 20))
        item = np.dtype(self._dtype(k)).itemsize
        need = super().memory_estimate(table) + k * item
        if isinstance(self.terms, str) and self.terms.strip() == "search":
            need += 2 * k * item
        if self.bootstrap:
            need += k * (8 + 8 + item)
        if self.structural_zeros is not None:
            need += k  # the boolean mask
        return int(need)

    def _fit_table(self, table: CellTable, dtype, structural_zeros: np.ndarray | None = None
                   ) -> tuple[LogLinearFit, list[dict]]:
        is_search = isinstance(self.terms, str) and self.terms.strip() == "search"
        if self._factored(table.cell_space):
            fitter = _factored.FactoredFitter(table, max_iter=self.max_iter, tol=self.tol)

            def fit_model(gens, parent):
                return fit_loglinear_factored(fitter, gens, parent)

            if is_search:
                return search(table, target=self.target, max_added=self.max_added_terms,
                              fit=fit_model)
            return fit_model(_ipf.parse_terms(self.terms, table.keys), None), []
        kwargs = dict(max_iter=self.max_iter, tol=self.tol, dtype=dtype,
                      weighted=self.weighted, flat_index=_flat_index(table),
                      structural_zeros=structural_zeros)
        if is_search:
            fit, path = search(table, target=self.target, max_added=self.max_added_terms,
                               **kwargs)
        else:
            fit, path = fit_loglinear(table, _ipf.parse_terms(self.terms, table.keys),
                                      **kwargs), []
        return fit, path

    def _ipf_warning(self, fit: LogLinearFit) -> str | None:
        """The message of the IPF non-convergence warning, or None when IPF converged."""
        if fit.ipf.converged:
            return None
        return (f"IPF stopped after {fit.ipf.iterations} iterations with margins still "
                f"{fit.ipf.max_deviation[-1]:.3g} from their targets (tol {self.tol})")

    def check_table(self, table: CellTable) -> None:
        if self.weighted and table.weight_sums is None:
            raise ParameterError("weighted=True needs survey weights in the data")
        if self.partition is not None:
            resolve_partition(self.partition, table)  # a band of levels the key lacks
        structural_zeros_of_table(self.structural_zeros, table)  # records in a zero

    def _fit(self, table: CellTable) -> RiskResult:
        if self.partition is not None:
            return self._fit_partitioned(table)
        full = table
        sz = structural_zeros_of_table(self.structural_zeros, table)
        mask = None if sz is None else sz.restrict_levels(used_levels(table)).dense_mask()
        table = compact_levels(table)
        dtype = self._dtype(table.cell_space)
        fit, path = self._fit_table(table, dtype, mask)
        message = self._ipf_warning(fit)
        if message is not None:
            warnings.warn(message, ConvergenceWarning, stacklevel=user_stacklevel())
        pi = fit.pi
        m_obs = (1 - pi) * fit.observed_mu / pi
        pred = PoissonPredictive(
            table.counts, m_obs,
            unobserved_prob_one=_unobserved_prob_one(fit, m_obs, self.weighted),
            law_name=f"Poisson((1-pi) lambda_k), log-linear model {fit.description}",
        )
        diagnostics = {**_fit_diagnostics(fit), "dtype": np.dtype(dtype).name,
                       "fitted_cells": table.cell_space, "search_path": path}
        if fit.factored is not None:
            diagnostics.update(engine="factored", dtype="float64",
                               support_cells=fit.factored.support_cells,
                               blocks=len(fit.factored.blocks))
        fitted = {"model": fit.description, "pi": pi,
                  "minimum_error": {t: dict(v) for t, v in fit.z.items()},
                  "z_sign_convention": "published (+), spec C.4 / H.1.3"}
        assumptions = _ASSUMPTIONS + (f"log mu_k follows the hierarchical log-linear model "
                                      f"{fit.description}",) + _saturated_note(fit, table)
        if sz is not None:
            zeroed = int(mask.sum())
            fitted["structural_zeros"] = {**sz.to_dict(), "fitted_cells_zeroed": zeroed}
            assumptions += (f"structural zeros: {len(sz)} conditions; {zeroed:,} of the "
                            f"{table.cell_space:,} fitted cells (levels seen in the sample) "
                            "are impossible and fitted as 0 (spec C.3)",)
        result = self._predictive_result(
            full, pred, fitted=fitted, diagnostics=diagnostics, assumptions=assumptions,
            seed=self.random_state,
        )
        if self.bootstrap or self.mode == "sdcmicro":
            measures = dict(result.measures)
            if self.bootstrap:
                measures.update(self._bootstrap(table, fit, dtype, mask))
            if self.mode == "sdcmicro":
                extra, kept = modrisk_measures(table.counts, fit.observed_mu,
                                               table.inclusion_sums, bound=self.sdcmicro_bound)
                measures.update(extra)
                result = dataclasses.replace(
                    result, fitted={**result.fitted, "sdcmicro_kept_cells": kept})
            result = dataclasses.replace(result, measures=measures)
        return result

    def _fit_partitioned(self, table: CellTable) -> RiskResult:
        var, groups, how = resolve_partition(self.partition, table)
        pi = table.n / table.population_size
        bands = list(partition_tables(table, var, groups))
        executor = current_executor()
        if executor is None:  # one band after the other in this process
            outputs = [_fit_band((self, label, sub, pi)) for label, _, sub in bands]
        else:  # each band a work unit (spec C.6: the bands' fits are independent)
            outputs = map_units(_fit_band, [(self, label, sub, pi) for label, _, sub in bands],
                                executor=executor)
        m_obs = np.empty(table.n_cells)
        unobserved = 0.0
        rows = []
        for (label, cells, _), (m_sub, unobserved_band, row, message) in zip(
                bands, outputs, strict=True):
            m_obs[cells] = m_sub
            unobserved += unobserved_band
            rows.append(row)
            if message is not None:
                warnings.warn(f"{label}: {message}", ConvergenceWarning,
                              stacklevel=user_stacklevel())
        pred = PoissonPredictive(
            table.counts, m_obs, unobserved_prob_one=unobserved,
            law_name=f"Poisson((1-pi) lambda_k), log-linear models per band of {var}")
        variable = table.keys[var]
        result = self._predictive_result(
            table, pred,
            fitted={"pi": pi, "partition_variable": variable, "partition_choice": how,
                    "model": f"{self.terms} within each of {len(rows)} bands of {variable}"},
            diagnostics={"partitions": rows},
            assumptions=_ASSUMPTIONS + (
                f"a separate model in each of {len(rows)} bands of {variable} "
                f"({how}); the same pi = n/N in every band (spec C.6)",),
            seed=self.random_state,
        )
        return result

    def _bootstrap(self, table: CellTable, fit: LogLinearFit, dtype,
                   structural_zeros: np.ndarray | None = None) -> dict[str, Measure]:
        """Parametric bootstrap of the estimation + prediction error of tau1 and tau2.

        Replicate: f* ~ Poisson(mu_hat) over all cells; U* ~ Poisson((1-pi) lambda_hat) for
        the replicate's sample uniques gives the replicate truth; refitting the same model on
        f* gives tau_hat*. The interval is tau_hat - quantiles of (tau_hat* - tau*).
        """
        rng = np.random.default_rng(self.random_state)
        pi = fit.pi
        mu = fit.fitted.reshape(-1)
        shape = fit.fitted.shape
        errors = {"tau1": [], "tau2": []}
        for _ in range(self.bootstrap):
            f_star = rng.poisson(mu.astype(np.float64))
            obs = np.flatnonzero(f_star)
            if obs.size == 0:  # an empty replicate (tiny samples): no uniques, no error
                errors["tau1"].append(0.0)
                errors["tau2"].append(0.0)
                continue
            codes = np.stack(np.unravel_index(obs, shape), axis=1)
            counts = f_star[obs]
            star = dataclasses.replace(
                table, cell_codes=codes, counts=counts, weight_sums=None, inclusion_sums=None,
                record_cell=np.repeat(np.arange(len(obs)), counts),
                household=None, population=None)
            star = dataclasses.replace(star, population_size=star.n / pi)
            fit_star = fit_loglinear(star, fit.generators, max_iter=self.max_iter, tol=self.tol,
                                     dtype=dtype, structural_zeros=structural_zeros)
            su = counts == 1
            m = (1 - pi) * mu[obs[su]] / pi
            u = rng.poisson(m)
            errors["tau1"].append(fit_star.tau1 - float(np.sum(u == 0)))
            errors["tau2"].append(fit_star.tau2 - float(np.sum(1.0 / (1 + u))))
        level = self.ci_level
        out = {}
        for name, est in (("tau1", fit.tau1), ("tau2", fit.tau2)):
            e = np.asarray(errors[name])
            lo, hi = np.quantile(e, [(1 - level) / 2, (1 + level) / 2])
            out[name] = Measure(name, est, max(est - hi, 0.0), max(est - lo, 0.0), level,
                                f"parametric bootstrap ({self.bootstrap} replicates) of "
                                "estimation and prediction error",
                                f"{name} (log-linear)")
        return out


def _fit_band(unit: tuple) -> tuple[np.ndarray, float, dict, str | None]:
    """Fit one band of a partitioned model (the work unit of ``_fit_partitioned``).

    ``unit`` is ``(estimator, label, sub-table, pi)`` with pi = n/N of the whole sample (the
    same in every band, spec C.6). Returns the band's m_k = (1 - pi) lambda_k of its observed
    cells (in the sub-table's cell order), its sum over unobserved cells of P(F = 1), its
    diagnostics row and the IPF non-convergence message (None when IPF converged), which the
    caller emits as a warning: a unit may run in another process, where a warning is lost.
    A module-level function of one picklable argument, so that it runs on any executor.
    """
    est, label, sub, pi = unit
    sub = compact_levels(sub)
    dtype = est._dtype(sub.cell_space)
    fit, path = est._fit_table(sub, dtype)
    m_sub = (1 - pi) * fit.observed_mu / pi
    row = {"partition": label, "n": sub.n, "cells": sub.n_cells,
           "sample_uniques": sub.sample_uniques, "model": fit.description,
           "tau1": fit.tau1, "tau2": fit.tau2,
           "Z_tau1": fit.z.get("tau1", {}).get("Z"),
           "Z_tau2": fit.z.get("tau2", {}).get("Z"),
           **_fit_diagnostics(fit), "search_path": path}
    return m_sub, _unobserved_prob_one(fit, m_sub, est.weighted), row, est._ipf_warning(fit)


_ASSUMPTIONS = (
    "F_k ~ Poisson(lambda_k) independently; Bernoulli sampling at pi = n/N",
    "cells in a zero sample margin are fitted as 0 (treated as structural zeros)",
)


def _fit_diagnostics(fit: LogLinearFit) -> dict:
    return {
        "model": fit.description,
        "iterations": fit.ipf.iterations,
        "converged": fit.ipf.converged,
        "max_margin_deviation": fit.ipf.max_deviation,
        "last_sweep_min_factor": fit.ipf.min_factor,
        "last_sweep_max_factor": fit.ipf.max_factor,
        "ipf_seconds": fit.ipf.seconds,
        "ipf_engine": fit.ipf.engine,
    }


def _z_of(fit: LogLinearFit, target: str) -> float:
    return fit.z[target]["Z"]


def _path_row(fit: LogLinearFit, target: str, seconds: float, step: str) -> dict:
    return {"step": step, "model": fit.description, "tau1": fit.tau1, "tau2": fit.tau2,
            "Z": _z_of(fit, target), "Z_tau1": fit.z["tau1"]["Z"], "Z_tau2": fit.z["tau2"]["Z"],
            "iterations": fit.ipf.iterations, "seconds": seconds}


def search(table: CellTable, *, target: str = "tau2", max_added: int | None = None,
           fit=None, **fit_kwargs) -> tuple[LogLinearFit, list[dict]]:
    """ONS forward model search on the minimum-error statistic (spec C.5).

    Fit independence and all-2-way; accept all-2-way if 0 <= Z < 1.96; if Z < 0 start from
    independence and add 2-way terms, if Z >= 1.96 start from all-2-way and add 3-way terms.
    Each step fits every candidate term and keeps the one with the smallest Z >= 0 (or, when
    all are negative, the largest Z and stops); stop when 0 <= Z < 1.96 or at ``max_added``.
    Terms with a key that is constant in the sample are no candidates (they change nothing).

    ``fit(generators, parent)``: how a model is fitted (``parent``: the current model, of
    which the candidate is a super-model, or None); default :func:`fit_loglinear` on the dense
    table with ``fit_kwargs``, warm-started from the parent's fitted table.
    """
    if fit is None:
        def fit(gens, parent):
            return fit_loglinear(table, gens, **fit_kwargs,
                                 initial=None if parent is None else parent.fitted)
    j = len(table.keys)
    path: list[dict] = []

    def timed(gens, step):
        t0 = time.perf_counter()
        model = fit(gens, None)
        path.append(_path_row(model, target, time.perf_counter() - t0, step))
        return model

    indep = timed(_ipf.parse_terms("independence", table.keys), "independence")
    two = timed(_ipf.parse_terms("all-2-way", table.keys), "all-2-way")
    z2 = _z_of(two, target)
    if 0 <= z2 < 1.96:
        path[-1]["chosen"] = True
        return two, path
    if z2 < 0:
        current, order = indep, 2
    else:
        current, order = two, 3
    # a key with one observed level is constant in the sample: a term with it adds no
    # constraint beyond the term without it (its margins equal the lower margins), so it is
    # no step of the search (it was chosen as a no-op that ended the search early)
    varying = [v for v in range(j) if np.unique(table.cell_codes[:, v]).size > 1]
    if order > len(varying):
        path[-1]["chosen"] = True
        return current, path
    candidates = [c for c in itertools.combinations(varying, order)]
    added = 0
    while candidates and (max_added is None or added < max_added):
        best, best_z, best_term = None, None, None
        from tqdm.auto import tqdm  # progress on terminals only (disable=None)

        for term in tqdm(candidates, desc=f"log-linear search, step {added + 1}",
                         disable=None, leave=False):
            gens = _ipf._reduce(list(current.generators) + [term])
            t0 = time.perf_counter()
            # warm start from the current model's fit: the candidate's family contains it
            model = fit(gens, current)
            z = _z_of(model, target)
            row = _path_row(model, target, time.perf_counter() - t0, f"candidate +{order}-way")
            path.append(row)
            better = (best is None or (z >= 0 and (best_z < 0 or z < best_z))
                      or (z < 0 and best_z < 0 and z > best_z))
            if better:
                best, best_z, best_term = model, z, term
        current = best
        candidates.remove(best_term)
        added += 1
        path.append({**_path_row(current, target, 0.0, f"added {order}-way term"),
                     "chosen": False})
        if 0 <= best_z < 1.96 or best_z < 0:
            break
    path[-1]["chosen"] = True
    return current, path
