"""Bayesian model averaging over decomposable graphical models (Forster & Webb 2007).

Spec section D. The population table is Multinomial(N, pi); pi follows a decomposable
graphical model m on the key variables with the hyper-Dirichlet prior of total weight p;
models are averaged over Occam's window with posterior probabilities from the closed-form
marginal likelihoods. Per model the cell probabilities are approximated by gamma laws with
the exact posterior moments, giving negative-binomial predictives of the unseen counts; or,
with ``monte_carlo``, models and Dirichlet parameters are drawn (spec D.8).
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
import weakref
from typing import ClassVar, Literal

import numpy as np

from ..core.measures import (
    DESCRIPTIONS,
    Measure,
    cell_blocks,
    predictive_measures,
    theta_expectation,
)
from ..core.predictive import MixturePredictive, NegativeBinomialPredictive
from ..core.result import RiskResult, handed_over, provenance
from ..data.sizes import check_memory
from ..data.table import CellTable
from ..exceptions import ApproximationWarning, ParameterError, user_stacklevel
from ._base import MEMORY_REMEDIES, RECORD_ARRAYS, Estimator, check_int
from ._decomposable import DecomposableGraph, Margins, members, occam_window
from ._graphical_mc import run_monte_carlo
from ._graphical_predictive import (
    nb_parameters,
    observed_moments,
    unobserved_enumerated,
    unobserved_importance,
)

__all__ = ["GraphicalRisk"]

_MC_DENSE_BUDGET = 10**8  # K x draws up to which the Monte Carlo draws pi on the f = 0 cells
#: per table, the distinct counts of every margin a search scored (small: a few values per
#: margin), so that fits with other prior weights on the same table (auto fits two) do not
#: tabulate the margins again; dropped with the table
_MARGIN_COUNTS: weakref.WeakKeyDictionary[CellTable, dict] = weakref.WeakKeyDictionary()
_MC_DENSE_MAX_K = 1 << 22  # ... and K at most this (memory: a few arrays of K doubles)
#: the most Monte Carlo draws: 10^6 take 1.5 minutes on 500 records of 3 keys (2-core machine,
#: 2026-11), 10^8 (a slip of the exponent) hours; the memory check alone let them run
MAX_MONTE_CARLO = 1_000_000
#: the range of ``prior_weight``: FW use 1 (1/50 and 50 for sensitivity); beyond it the
#: hyper-Dirichlet's per-cell weights under- or overflow
MIN_PRIOR_WEIGHT, MAX_PRIOR_WEIGHT = 1e-100, 1e100
#: what a fit computes (``GraphicalRisk(scope=...)``)
SCOPES = ("all", "observed-cells", "sample-uniques")


class _Cached(NegativeBinomialPredictive):
    """A negative-binomial predictive that computes E[1/F] (a series per cell) once for all
    cells, read-only so that a result built from it shares it instead of copying. P(U = 0),
    a closed form, is computed where asked: a cached copy over every cell was 0.2 GB at the
    peak at 2.5x10^7 cells, for sums over the sample uniques only (issue 20)."""

    def expected_inverse(self, cells=None):
        cache = self.__dict__.setdefault("_cache", {})
        if "expected_inverse" not in cache:
            cache["expected_inverse"] = handed_over(super().expected_inverse(None))
        a = cache["expected_inverse"]
        return a if cells is None else a[cells]


def _is_number(value) -> bool:
    """A real number, not a bool (True would be read as 1)."""
    return not isinstance(value, bool | np.bool_) and isinstance(
        value, int | float | np.integer | np.floating)


#: float64 arrays of length n_cells the search and the first model's law hold at the peak,
#: with room: resident memory rose by 7-9 a cell at 5.9x10^6 and 2.5x10^7 cells, traced
#: allocations by up to 13 at 1.7-3.5x10^5 cells (tests/test_graphical.py)
GRAPHICAL_CELL_ARRAYS = 16
#: those each further model of the window adds: its law's two parameters and the two
#: expectations cached for its row and the measures
MODEL_CELL_ARRAYS = 4


@dataclasses.dataclass(frozen=True, kw_only=True)
class GraphicalRisk(Estimator):
    """Forster-Webb disclosure risk: model averaging over decomposable graphical models.

    Parameters
    ----------
    prior_weight : float
        Total weight p of the hyper-Dirichlet prior, derived from a symmetric Dirichlet with
        parameter p/K on every cell (default 1, FW's choice; they also try 1/50 and 50).
    window : float
        Occam's window ratio C >= 1: models whose posterior probability is below 1/C of the
        best model's are dropped (default 20, i.e. the threshold c = 1/20 of spec D.4).
    monte_carlo : int, optional
        Number of posterior draws of (model, pi) for the Monte Carlo version (spec D.8); None
        (default) uses the closed-form gamma/negative-binomial approximations (spec D.5-D.7).
    random_state : int, optional
        Seed of every random draw (importance sampling of the f = 0 cells, Monte Carlo).
    max_models : int
        Keep at most this many models of the window (the best ones; default 50).
    max_visited : int
        Stop the search after scoring this many models (default 500,000: a few seconds and
        about 50 MB). Only a sample that says almost nothing about the dependence between
        many keys comes near it (10 keys, 55 records: 22 million models within the window's
        ratio of the best); the average is then over the window of the models found, with an
        ``ApproximationWarning``.
    max_enumerated_cells : int
        P(PU) sums P(F = 1) over the cells with f = 0: exactly, over the whole key space, when
        K times the number of kept models is at most this (default 8,000,000: about a second);
        otherwise by importance sampling (an unbiased estimate with its standard error).
    unobserved_draws : int
        Importance-sampling draws of cells for that sum on large key spaces (default 200,000).
    scope : {"all", "observed-cells", "sample-uniques"}
        ``"all"`` (default): every measure, the per-cell and record-level risks.
        ``"observed-cells"``: the same figures but P(PU), whose sum over the cells the sample
        did not see (enumerated or importance-sampled) is left out; ``recommend`` and
        ``protect --target`` re-fit so, because their objectives never use it (half of
        ``auto``'s time there). ``"sample-uniques"``: tau1, tau2, P(PU | SU) and theta with
        their intervals only (the same figures), computed over the sample-unique cells;
        P(PU), expected re-identifications, the global risk, record risks and the risk
        threshold need every cell and are left out. ``auto`` fits its default-prior
        graphical candidate so, whose other figures it never uses (40% of that fit at 3x10^7
        records). Both need ``monte_carlo=None``.
    ci_level, max_global_risk : see :class:`~sdcrisk.estimators.Estimator`.

    Notes
    -----
    Model (FW 2007; spec D.1-D.7). F ~ Multinomial(N, pi); under the decomposable graph m with
    perfect numbering 1..J, pi_i = prod_j beta_j(i_j | i_pa(j)) with independent
    Dir(mu_j(. | i_pa(j))) factors, mu_j = p / |I_{j u pa(j)}|; posterior
    mu*_j = mu_j + f_{j u pa(j)}.
    P(m | f) is proportional to the marginal likelihood (eq 18; uniform prior over decomposable
    graphs) renormalised over Occam's window, searched from the independence graph by
    single-edge additions. Per model, pi_i | f is matched by a gamma law with the exact moments
    (eq 19), so U_i = F_i - f_i ~ NegBin(alpha_i, lambda_i / (lambda_i + N - n)) (eq 21):
    P(F_i = 1 | f) = p_i^alpha_i for sample uniques (eq 22), E[1/F_i | f] by eq (24) for every
    cell with f_i >= 1. Measures are averaged over the models (eq 11); theta is the model
    average of the corrected eq (25) (spec D.7). Survey weights are not used. No sdcMicro or
    mu-Argus equivalent.

    References
    ----------
    Forster, J. J. & Webb, E. L. (2007). Bayesian disclosure risk assessment: predicting small
    frequencies in contingency tables. JRSS C 56, 551-570.
    Dawid, A. P. & Lauritzen, S. L. (1993). Hyper Markov laws in the statistical analysis of
    decomposable graphical models. Ann. Statist. 21, 1272-1317.
    Madigan, D. & Raftery, A. E. (1994). Model selection and accounting for model uncertainty
    in graphical models using Occam's window. JASA 89, 1535-1546.

    Examples
    --------
    >>> from sdcrisk import Microdata, tabulate, GraphicalRisk
    >>> md = Microdata.from_source("example:uk_census2011", keys="region,sex,age_band",
    ...                            population_size=56_075_912)
    >>> res = GraphicalRisk().fit(tabulate(md))
    >>> res.fitted["models"][0]["posterior_probability"] > 0
    True
    """

    name: ClassVar[str] = "graphical"
    memory_options: ClassVar[tuple[str, ...]] = ("monte_carlo", "unobserved_draws")
    prior_weight: float = 1.0
    window: float = 20.0
    monte_carlo: int | None = None
    random_state: int | None = 0
    max_models: int = 50
    max_visited: int = 500_000
    max_enumerated_cells: int = 8_000_000
    unobserved_draws: int = 200_000
    scope: Literal["all", "observed-cells", "sample-uniques"] = "all"

    def _validate(self) -> None:
        if self.scope not in SCOPES:
            raise ParameterError(f"scope={self.scope!r}; use 'all' (every measure and the "
                                 "record risks), 'observed-cells' (all but P(PU)) or "
                                 "'sample-uniques' (tau1, tau2, P(PU|SU), theta)")
        if self.scope != "all" and self.monte_carlo is not None:
            raise ParameterError(f"scope={self.scope!r} computes the closed forms: leave "
                                 "monte_carlo=None, or use scope='all'")
        p = self.prior_weight
        # beyond 1e-100..1e100 the marginal likelihoods are NaN and the model search found no
        # model (1e308, 1e-320: "max() arg is an empty sequence")
        if not (_is_number(p) and MIN_PRIOR_WEIGHT <= p <= MAX_PRIOR_WEIGHT):
            raise ParameterError(f"prior_weight={p!r} must be a positive number from "
                                 f"{MIN_PRIOR_WEIGHT:g} to {MAX_PRIOR_WEIGHT:g} (FW use 1; "
                                 "1/50 and 50 for sensitivity)")
        w = self.window
        if not (_is_number(w) and w >= 1):
            raise ParameterError(f"window={w!r} must be a ratio >= 1 (20 keeps models within "
                                 "1/20 of the best posterior probability)")
        mc = self.monte_carlo
        if mc is not None and (isinstance(mc, bool) or not isinstance(mc, int | np.integer)
                               or mc < 2):
            raise ParameterError(f"monte_carlo={mc!r} must be a number of draws >= 2, or None "
                                 "for the closed forms (on the command line: leave "
                                 "--monte-carlo out)")
        if mc is not None and mc > MAX_MONTE_CARLO:
            raise ParameterError(f"monte_carlo={mc} draws is too many: at most "
                                 f"{MAX_MONTE_CARLO:,} (the time grows with draws x cells; "
                                 "the Monte Carlo error of tau1 and tau2 is small at a few "
                                 "thousand); give e.g. 4,000")
        if isinstance(self.max_models, bool) or not isinstance(self.max_models, int) \
                or self.max_models < 1:
            raise ParameterError(f"max_models={self.max_models!r} must be an integer >= 1")
        if isinstance(self.max_visited, bool) or not isinstance(self.max_visited, int) \
                or self.max_visited < 1:
            raise ParameterError(f"max_visited={self.max_visited!r} must be an integer >= 1 "
                                 "(the number of models the search may score; default "
                                 "500,000)")
        check_int("max_enumerated_cells", self.max_enumerated_cells, 0)
        check_int("unobserved_draws", self.unobserved_draws, 2)

    def memory_estimate(self, table: CellTable) -> int:
        """Bytes for the search and the first model of the window: GRAPHICAL_CELL_ARRAYS doubles per
        observed cell (the margins' counts, one clique's and one separator's cell index, the
        moments, the law's parameters and expectations, the result's cell risks), record-level
        arrays only with households, the f = 0 sum (dense margins of at most K cells, or the
        importance draws), and with ``monte_carlo`` the draw chunks (24 doubles per drawn cell
        value, chunks of at most ``max(2^21, n_cells)`` values), the kept rate draws and, on small
        key spaces, the dense pi tables. Each further model of the window holds MODEL_CELL_ARRAYS
        more, checked once the search has found them.
        """
        j = len(table.keys)
        k = int(table.cell_space)
        records = RECORD_ARRAYS * int(table.n) if table.household is not None else 0
        need = 8 * (GRAPHICAL_CELL_ARRAYS * int(table.n_cells) + records)
        if k <= self.max_enumerated_cells:
            need += 8 * (2 * k + 6 * min(k, 1 << 20))
        else:
            need += 8 * self.unobserved_draws * (j + 4)
        if self.monte_carlo is not None:
            from ._graphical_mc import CELLS_PER_CHUNK, KEEP_RATES

            draws = int(self.monte_carlo)
            values = draws * int(table.n_cells)
            need += 8 * (24 * min(values, max(CELLS_PER_CHUNK, int(table.n_cells)))
                         + min(values, KEEP_RATES) + 5 * draws)
            if k <= _MC_DENSE_MAX_K and k * draws <= _MC_DENSE_BUDGET:
                need += 8 * 6 * k
            need += 8 * 2 * j * int(table.n_cells)  # the margins' cell indexes the draws keep
        return int(need)

    # ---------------------------------------------------------------------------------------
    def _fit(self, table: CellTable) -> RiskResult:
        n_levels = [len(lv) for lv in table.levels]
        margins = Margins(table.cell_codes, table.counts, n_levels,
                          count_cache=_MARGIN_COUNTS.setdefault(table, {}))
        names = list(table.keys)
        p = float(self.prior_weight)
        u = float(table.population_size - table.n)
        seq = np.random.SeedSequence(self.random_state)
        is_seq, mc_seq = seq.spawn(2)
        is_rng = np.random.default_rng(is_seq)

        t0 = time.perf_counter()
        search = occam_window(margins, p, float(self.window), self.max_models,
                              max_visited=self.max_visited)
        search_seconds = time.perf_counter() - t0
        if search.stopped:
            warnings.warn(
                f"Occam's window search stopped after scoring max_visited={self.max_visited:,} "
                f"models, before it had finished ({table.n:,} records, {len(names)} keys: very "
                f"many models lie within 1/{self.window:g} of the best, as when a small sample "
                "has many keys); the average is over the best of the models found; raise "
                "max_visited (--max-visited) for the full search, at about 10 s and 100 MB "
                "per million models", ApproximationWarning, stacklevel=user_stacklevel())
        if search.truncated:
            warnings.warn(
                f"Occam's window holds {search.truncated + len(search.graphs)} models; only the "
                f"best max_models={self.max_models} are averaged (raise max_models or lower "
                "window)", ApproximationWarning, stacklevel=user_stacklevel())

        if len(search.graphs) > 1:  # each further model's law over the cells
            check_memory(self.memory_estimate(table) + 8 * MODEL_CELL_ARRAYS
                         * int(table.n_cells) * (len(search.graphs) - 1),
                         what=f"method {self.name!r} averaging {len(search.graphs)} models "
                         f"over {table.n_cells:,} observed cells",
                         remedies="lower max_models or window (fewer models averaged), or "
                         + MEMORY_REMEDIES.removeprefix("remedies: "))
        enumerate_k = table.cell_space * len(search.graphs) <= self.max_enumerated_cells
        su = np.flatnonzero(table.counts == 1)
        n1 = len(su)
        su_only = self.scope == "sample-uniques"
        big_n = table.population_size
        t0 = time.perf_counter()
        components, rows, unobs_se = [], [], []
        laws = [nb_parameters(observed_moments(g, margins, p, cells=su if su_only else None),
                              u, overwrite=True) for g in search.graphs]
        if self.monte_carlo is None:  # the Monte Carlo draws need them again
            margins.release_cell_index()
        unobserved = []
        for g, w in zip(search.graphs, search.posterior, strict=True):
            if self.scope != "all":  # P(PU) is not computed
                unobserved.append((None, 0.0))
            elif enumerate_k:
                unobserved.append((unobserved_enumerated(g, margins, p, u), 0.0))
            else:
                draws = max(2000, int(round(self.unobserved_draws * w)))
                unobserved.append(unobserved_importance(g, margins, p, u, draws, is_rng))
        margins_computed = len(margins)
        if self.monte_carlo is None:
            # the margins (their counts and the full margin's ids, two cell-long arrays) are
            # not needed past the f = 0 sums: free them before the per-cell series and the
            # record-risk threshold (0.4 GB at 2.5x10^7 cells, issue 20)
            del margins
        # sample-uniques scope: the laws of the sample-unique cells alone
        f = np.ones(n1) if su_only else table.counts.astype(float)
        if su_only:  # the laws are the sample uniques' own: every cell of them
            su = None
        for g, log_ml, w, (size, prob), (unobs, se) in zip(
                search.graphs, search.log_ml, search.posterior, laws, unobserved, strict=True):
            comp = _Cached(f, size=size, prob=prob, unobserved_prob_one=unobs,
                           law_name=f"NegBin(alpha_i, p_i), gamma approximation under "
                           f"{g.describe(names)}")
            components.append(comp)
            unobs_se.append(se)
            rows.append(_model_row(g, names, log_ml, w, comp, su, n1, big_n, se))
        del laws
        predictive_seconds = time.perf_counter() - t0
        weights = search.posterior
        pred = (components[0] if len(components) == 1 else MixturePredictive(
            tuple(components), weights,
            law_name=f"mixture over {len(components)} decomposable models of NegBin(alpha_i, "
            "p_i) (gamma approximation)"))
        unobs_method = (f"not computed (scope={self.scope!r})" if self.scope != "all" else
                        "enumerated over all K cells" if enumerate_k else
                        f"importance sampling ({self.unobserved_draws:,} draws split by model "
                        "weight, at least 2,000 per model) from E[pi | m, f]")
        unobs_total_se = float(np.sqrt(np.sum((weights * np.asarray(unobs_se)) ** 2)))
        diagnostics = {
            "model_search": {
                "models_visited": search.visited, "models_kept": len(search.graphs),
                "models_dropped_by_cap": search.truncated, "iterations": search.iterations,
                "stopped_at_max_visited": search.stopped,
                "window": float(self.window), "threshold": 1.0 / float(self.window),
                "margins_computed": margins_computed, "search_seconds": search_seconds,
            },
            "predictive_seconds": predictive_seconds,
            "unobserved_cells": {
                "method": unobs_method, "cells": table.cell_space - table.n_cells,
                "sum_prob_one": pred.unobserved_prob_one, "standard_error": unobs_total_se,
            },
        }
        assumptions = [
            "F ~ Multinomial(N, pi); exchangeable (equal-probability) sampling, so F - f | pi ~ "
            "Multinomial(N - n, pi); survey weights are not used",
            f"pi follows a decomposable graphical model with a hyper-Dirichlet prior of total "
            f"weight p = {p:g} (symmetric over all K = {table.cell_space:,} cells); uniform "
            "prior over decomposable models",
            f"models averaged over Occam's window (ratio {self.window:g}) searched from the "
            "independence model by single-edge additions; models outside get probability 0",
            "per model, pi_i | f approximated by a gamma law with the exact posterior mean and "
            "variance, and F_i - f_i | pi_i by a Poisson law (FW eqs 19-21)",
            f"P(PU) over the f = 0 cells: {unobs_method}",
        ]
        fitted = {"models": rows, "prior_weight": p, "window": float(self.window),
                  "method": "gamma approximation" if self.monte_carlo is None
                  else "Monte Carlo",
                  "model_values": "per-model tau1, tau2, P(PU), P(PU|SU), theta by the gamma "
                  "approximation (closed forms)"}
        theta_avg = float(np.dot(weights, [r["theta"] if r["theta"] is not None else np.nan
                                           for r in rows])) if n1 else None
        theta = Measure("theta", theta_avg, description=DESCRIPTIONS["theta"] + " (model "
                        "average of the corrected FW eq 25 per model)")
        if su_only:
            measures = predictive_measures(pred, population_size=big_n, level=self.ci_level)
            measures = {m: measures[m] for m in ("tau1", "tau2", "p_pu_given_su")}
            measures["theta"] = theta
            return RiskResult(
                method=self.name, measures=measures, table=table,
                parameters=self.get_params(), fitted={"predictive_law": pred.law, **fitted},
                thresholds={"ci_level": self.ci_level},
                assumptions=(*assumptions, "scope 'sample-uniques': tau1, tau2, P(PU|SU) and "
                             "theta only, from the sample-unique cells"),
                diagnostics=diagnostics, provenance=provenance(table, self.random_state))
        if self.monte_carlo is None:
            result = self._predictive_result(table, pred, fitted=fitted,
                                             assumptions=tuple(assumptions),
                                             diagnostics=diagnostics, seed=self.random_state)
            measures = dict(result.measures)
            measures["theta"] = theta
            if self.scope == "observed-cells":
                del measures["p_pu"]
                result = dataclasses.replace(result, assumptions=(
                    *result.assumptions, "scope 'observed-cells': P(PU), which needs the "
                    "cells the sample did not see, is not computed"))
            return dataclasses.replace(result, measures=measures)
        return self._fit_monte_carlo(table, margins, search, pred, u, mc_seq, fitted,
                                     assumptions, diagnostics)

    # ---------------------------------------------------------------------------------------
    def _fit_monte_carlo(self, table, margins, search, ga_pred, u, mc_seq, fitted,
                         assumptions, diagnostics) -> RiskResult:
        draws = int(self.monte_carlo)
        rng = np.random.default_rng(mc_seq)
        dense = (table.cell_space <= _MC_DENSE_MAX_K
                 and table.cell_space * draws <= _MC_DENSE_BUDGET)
        t0 = time.perf_counter()
        run = run_monte_carlo(search.graphs, search.posterior, margins, float(self.prior_weight),
                              u, draws, rng, dense_unobserved=dense)
        pred = run.predictive
        if not dense:
            pred = dataclasses.replace(pred, unobserved_prob_one=ga_pred.unobserved_prob_one)
            assumptions[-1] = ("P(PU) over the f = 0 cells: gamma approximation ("
                               + diagnostics["unobserved_cells"]["method"] + "), because K "
                               f"exceeds {_MC_DENSE_MAX_K:,} or K x draws exceeds "
                               f"{_MC_DENSE_BUDGET:.0e}")
        else:
            assumptions[-1] = ("P(PU) over the f = 0 cells: Monte Carlo over the whole key "
                               "space (pi drawn on every cell)")
        assumptions[3] = ("Monte Carlo: models drawn from P(m | f) over the window, Dirichlet "
                          "factors drawn exactly; F_i - f_i | pi_i ~ Poisson((N - n) pi_i) "
                          "averaged over the draws (Rao-Blackwellised); theta and the credible "
                          "intervals from simulated F - f ~ Multinomial(N - n, pi)")
        sqrt_s = math.sqrt(draws)

        def se(x):
            return float(np.std(x, ddof=1) / sqrt_s)

        level = self.ci_level
        q = [(1 - level) / 2, (1 + level) / 2]
        n1 = int(np.count_nonzero(table.counts == 1))
        diagnostics = dict(diagnostics)
        diagnostics["monte_carlo"] = {
            "draws": draws, "draws_per_model": run.model_draws.tolist(),
            "seconds": time.perf_counter() - t0,
            "standard_error": {
                "tau1": se(run.tau1_rb), "tau2": se(run.tau2_rb),
                "theta": se(run.theta_sim) if n1 else None,
                "unobserved_sum_prob_one": (se(run.unobserved_draws) if dense else
                                            diagnostics["unobserved_cells"]["standard_error"]),
            },
        }
        if dense:
            diagnostics["unobserved_cells"] = {
                **diagnostics["unobserved_cells"], "method": "Monte Carlo over all K cells",
                "sum_prob_one": pred.unobserved_prob_one,
                "standard_error": se(run.unobserved_draws)}
        result = self._predictive_result(table, pred, fitted=fitted,
                                         assumptions=tuple(assumptions),
                                         diagnostics=diagnostics, seed=self.random_state)
        measures = dict(result.measures)
        kind = (f"posterior credible interval from {draws} simulated populations "
                "(model, parameter and sampling uncertainty)")
        for name, sims in (("tau1", run.tau1_sim), ("tau2", run.tau2_sim)):
            lo, hi = np.quantile(sims, q)
            measures[name] = dataclasses.replace(measures[name], lower=float(lo),
                                                 upper=float(hi), level=level, interval=kind)
        if n1:
            lo, hi = np.quantile(run.tau1_sim / n1, q)
            measures["p_pu_given_su"] = dataclasses.replace(
                measures["p_pu_given_su"], lower=float(lo), upper=float(hi), level=level,
                interval=kind)
            lo, hi = np.quantile(run.theta_sim, q)
            measures["theta"] = Measure(
                "theta", float(np.mean(run.theta_sim)), float(lo), float(hi), level, kind,
                DESCRIPTIONS["theta"] + " (Monte Carlo mean over simulated populations)")
        return dataclasses.replace(result, measures=measures)


def _model_row(g: DecomposableGraph, names, log_ml, weight, comp, su, n1, big_n, se) -> dict:
    tau1 = tau2 = mean = var = 0.0
    for cells, _ in cell_blocks(su, len(comp.f)):
        tau1 += float(comp.prob_zero(cells).sum())
        tau2 += float(comp.expected_inverse(cells).sum())
        if n1:
            mean += float(comp.mean(cells).sum())
            var += float(comp.variance(cells).sum())
    theta = theta_expectation(n1, mean, var) if n1 else None
    return {
        "cliques": [[names[v] for v in members(c)] for c in g.cliques],
        "edges": [[names[a], names[b]] for a, b in sorted(g.edges)],
        "log_marginal_likelihood": float(log_ml),
        "posterior_probability": float(weight),
        "tau1": tau1,
        "tau2": tau2,
        "p_pu": (None if comp.unobserved_prob_one is None
                 else (tau1 + comp.unobserved_prob_one) / big_n),
        "p_pu_given_su": tau1 / n1 if n1 else None,
        "theta": theta,
        "unobserved_sum_prob_one": comp.unobserved_prob_one,
        "unobserved_standard_error": se,
    }
