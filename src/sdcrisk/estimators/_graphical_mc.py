"""Monte Carlo version of the Forster-Webb graphical model risk (methods spec D.8).

For each draw s: a model m ~ P(m | f) over Occam's window; every Dirichlet factor
``beta_j(. | i_pa(j)) ~ Dir(mu*_j)``; ``pi = prod_j beta_j`` (FW eq 5). Only what the measures
need is drawn, so memory grows with the observed cells, not with K:

* for the observed cells, a Dirichlet over d_j categories whose parent configuration has k
  observed categories is drawn as k gamma variables with shapes ``a_A + f_A`` and one gamma
  for the other ``d_j - k`` categories together (shape ``(d_j - k) a_A``), then normalised;
* Rao-Blackwellised cell predictives: the law of U_i given pi is the Poisson of FW eq (20),
  and P(U_i = 0), E[1/F_i], E[1/F_i^2], E[U_i], E[U_i^2] are averaged over the draws;
* simulated F for theta and credible intervals: ``(U_i)_{i in SU} ~ Multinomial(N - n, pi)``
  restricted to the sample-unique cells (the remaining categories pooled), giving draws of the
  realised tau1, tau2 and theta;
* P(PU) needs the f = 0 cells: with a small key space the whole table pi is drawn (dense
  Dirichlet factors, log-gamma variates so that tiny shapes do not underflow) and
  ``sum_{f=0} u pi e^{-u pi}`` is averaged; otherwise the gamma-approximation value is used and
  the result says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.predictive import CellPredictive
from ._decomposable import DecomposableGraph, Margins, parent_index
from ._graphical_predictive import dense_margin, factor_params, observed_flat_ids

__all__ = ["RaoBlackwellPredictive", "ObservedDirichlet", "DenseDirichlet", "MonteCarloRun",
           "run_monte_carlo", "poisson_inverse"]

CELLS_PER_CHUNK = 1 << 21
KEEP_RATES = 1 << 22  # rate draws kept for RaoBlackwellPredictive.sample (float64 values)

_KERNEL = None


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        from numba import njit

        @njit(cache=True)
        def one(f, m, power):
            if m < 1e-12:
                return 1.0 / f**power
            if power == 1 and m >= f:
                # I_1 = (1 - e^-m)/m, I_k = (1 - (k-1) I_{k-1}) / m: stable for m >= k - 1
                val = -math.expm1(-m) / m
                k = 2.0
                while k <= f:
                    val = (1.0 - (k - 1.0) * val) / m
                    k += 1.0
                return val
            if m > 600.0:
                a = f + m
                if power == 1:
                    return 1 / a + m / a**3 - m / a**4 + (3 * m * m + m) / a**5
                return 1 / a**2 + 3 * m / a**4 - 4 * m / a**5 + 5 * (3 * m * m + m) / a**6
            term = math.exp(-m)
            total = term / f**power
            stop = m + 12.0 * math.sqrt(m) + 30.0
            j = 0.0
            while True:
                term *= m / (j + 1.0)
                total += term / (f + j + 1.0) ** power
                j += 1.0
                if j > stop and term < 1e-17 * total:
                    break
            return total

        @njit(cache=True)
        def grid(f, rate, power):
            out = np.empty(rate.shape)
            for s in range(rate.shape[0]):
                for i in range(rate.shape[1]):
                    out[s, i] = one(f[i], rate[s, i], power)
            return out

        _KERNEL = grid
    return _KERNEL


def poisson_inverse(f: np.ndarray, rate: np.ndarray, power: int = 1) -> np.ndarray:
    """E[1/(f + U)^power] for U ~ Poisson(rate), rate of shape (draws, cells), f of (cells,).

    Recursion for power 1 and rate >= f, the pmf series for rate <= 600, and the fourth-order
    expansion about the mean above (relative error below 1e-8 there).
    """
    rate = np.atleast_2d(np.asarray(rate, float))
    f = np.broadcast_to(np.asarray(f, float), rate.shape[1:]).copy()
    return _kernel()(f, np.ascontiguousarray(rate), int(power))


@dataclass(frozen=True)
class _FactorDraw:
    shape: np.ndarray  # a_A + f_A of the family cells, sorted by parent cell
    starts: np.ndarray  # first sorted family cell of each parent cell
    parent: np.ndarray  # parent cell of each sorted family cell
    rest: np.ndarray  # (d_v - k_b) a_A: shape of the pooled unobserved categories per parent
    cell_pos: np.ndarray  # sorted family position of each observed cell


class ObservedDirichlet:
    """Draws of pi_i for the observed cells under one model (exact Dirichlet factors)."""

    def __init__(self, graph: DecomposableGraph, margins: Margins, prior_weight: float):
        self.graph = graph
        self.n_cells = len(margins.counts)
        self.factors = []
        for (a_mask, b_mask, a_a, _), v in zip(factor_params(graph, margins, prior_weight),
                                               graph.numbering, strict=True):
            fam, par = margins(a_mask), margins(b_mask)
            parent = parent_index(fam, par, b_mask)
            order = np.argsort(parent, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            k_b = np.bincount(parent, minlength=len(par.counts))
            starts = np.concatenate([[0], np.cumsum(k_b)[:-1]]).astype(np.int64)
            rest = np.maximum(margins.n_levels[v] - k_b, 0) * a_a
            self.factors.append(_FactorDraw(a_a + fam.counts[order].astype(float), starts,
                                            parent[order], rest,
                                            rank[margins.cell_index(a_mask)]))

    def log_pi(self, rng: np.random.Generator, draws: int) -> np.ndarray:
        """log pi_i, shape (draws, n_cells)."""
        out = np.zeros((draws, self.n_cells))
        for fd in self.factors:
            g = rng.standard_gamma(fd.shape, size=(draws, len(fd.shape)))
            sums = np.add.reduceat(g, fd.starts, axis=1)
            if np.any(fd.rest > 0):
                sums = sums + rng.standard_gamma(fd.rest, size=(draws, len(fd.rest)))
            logb = np.log(g) - np.log(sums)[:, fd.parent]
            out += logb[:, fd.cell_pos]
        return out


class DenseDirichlet:
    """Draws of log pi over the whole key space (shape n_levels) under one model: small K only.

    Each factor's Dirichlet parameters a_A + f_A are held as a dense array over the family's
    cells; a draw of log Gamma(shape) is ``log G' + log(U) / shape`` with G' ~ Gamma(shape + 1),
    so tiny prior shapes (p / |I_A|) do not underflow; the factor is normalised over the axis of
    its vertex.
    """

    def __init__(self, graph: DecomposableGraph, margins: Margins, prior_weight: float):
        self.shape = margins.n_levels
        self.factors = [(a_a + dense_margin(margins, a_mask), v) for (a_mask, _, a_a, _), v
                        in zip(factor_params(graph, margins, prior_weight), graph.numbering,
                               strict=True)]

    def log_pi(self, rng: np.random.Generator) -> np.ndarray:
        total = 0.0
        for shape, v in self.factors:
            logg = np.log(rng.standard_gamma(shape + 1.0))
            logg += np.log(rng.random(shape.shape)) / shape
            top = logg.max(axis=v, keepdims=True)
            logg -= top + np.log(np.exp(logg - top).sum(axis=v, keepdims=True))
            total = total + logg
        return np.broadcast_to(total, self.shape)


@dataclass(frozen=True, eq=False)
class RaoBlackwellPredictive(CellPredictive):
    """Cell predictive averaged over posterior draws of pi (FW section 3, 'Rao-Blackwellised').

    Stores the per-cell averages; ``sample`` draws a stored pi draw and then Poisson counts
    (at most ``KEEP_RATES`` values of the draws are kept; beyond that an evenly spaced
    subset of the draws).
    """

    f: np.ndarray
    p0: np.ndarray
    e1: np.ndarray
    e2: np.ndarray
    mean_: np.ndarray
    second: np.ndarray
    rates: np.ndarray
    unobserved_prob_one: float | None
    law_name: str = "Monte Carlo"

    @property
    def law(self) -> str:
        return self.law_name

    @staticmethod
    def _s(a, cells):
        return a if cells is None else a[cells]

    def prob_zero(self, cells=None):
        return self._s(self.p0, cells)

    def expected_inverse(self, cells=None):
        return self._s(self.e1, cells)

    def expected_inverse_square(self, cells=None):
        return self._s(self.e2, cells)

    def mean(self, cells=None):
        return self._s(self.mean_, cells)

    def variance(self, cells=None):
        m = self._s(self.mean_, cells)
        return np.maximum(self._s(self.second, cells) - m * m, 0.0)

    def sample(self, rng, size, cells=None):
        rows = rng.integers(0, self.rates.shape[0], size)
        r = self.rates[rows] if cells is None else self.rates[rows][:, cells]
        return rng.poisson(r)


@dataclass(frozen=True)
class MonteCarloRun:
    """Outcome of :func:`run_monte_carlo`: the predictive and per-draw realised measures."""

    predictive: RaoBlackwellPredictive
    model_draws: np.ndarray  # draws per model
    tau1_rb: np.ndarray  # per draw: sum over SU of P(U = 0 | pi)
    tau2_rb: np.ndarray  # per draw: sum over SU of E[1/F | pi]
    tau1_sim: np.ndarray  # per draw: realised tau1 of a simulated F
    tau2_sim: np.ndarray
    theta_sim: np.ndarray
    unobserved_draws: np.ndarray | None  # per draw: sum_{f=0} P(U = 1 | pi) (dense path)


def run_monte_carlo(graphs, weights, margins: Margins, prior_weight: float, u: float,
                    draws: int, rng: np.random.Generator, *, dense_unobserved: bool
                    ) -> MonteCarloRun:
    """Draw models and Dirichlet parameters; accumulate Rao-Blackwellised cell predictives and
    simulate the unseen counts of the sample-unique cells (spec D.8)."""
    f = margins.counts.astype(float)
    n_cells = len(f)
    su = np.flatnonzero(f == 1)
    n1 = len(su)
    u_int = int(round(u))
    per_model = rng.multinomial(draws, np.asarray(weights, float))
    acc = {k: np.zeros(n_cells) for k in ("p0", "e1", "e2", "m1", "m2")}
    series = {k: np.empty(draws) for k in ("tau1_rb", "tau2_rb", "tau1_sim", "tau2_sim",
                                            "theta_sim")}
    unobs = np.empty(draws) if dense_unobserved else None
    keep_every = max(1, math.ceil(draws * n_cells / KEEP_RATES))
    kept = []
    chunk = max(1, CELLS_PER_CHUNK // max(n_cells, 1))
    obs_ids = observed_flat_ids(margins) if dense_unobserved else None
    pos = 0
    for graph, count in zip(graphs, per_model, strict=True):
        if count == 0:
            continue
        sampler = ObservedDirichlet(graph, margins, prior_weight)
        dense = DenseDirichlet(graph, margins, prior_weight) if unobs is not None else None
        for start in range(0, int(count), chunk):
            size = min(chunk, int(count) - start)
            sl = slice(pos, pos + size)
            pi = np.exp(sampler.log_pi(rng, size))
            rate = u * pi
            ez = np.exp(-rate)
            e1 = poisson_inverse(f, rate, 1)
            acc["p0"] += ez.sum(0)
            acc["e1"] += e1.sum(0)
            acc["e2"] += poisson_inverse(f, rate, 2).sum(0)
            acc["m1"] += rate.sum(0)
            acc["m2"] += (rate + rate * rate).sum(0)
            series["tau1_rb"][sl] = ez[:, su].sum(1)
            series["tau2_rb"][sl] = e1[:, su].sum(1)
            p_su = pi[:, su]
            pvals = np.concatenate([p_su, np.maximum(1.0 - p_su.sum(1, keepdims=True), 0.0)],
                                   axis=1)
            pvals /= pvals.sum(1, keepdims=True)
            sim = rng.multinomial(u_int, pvals)[:, :n1]
            series["tau1_sim"][sl] = (sim == 0).sum(1)
            series["tau2_sim"][sl] = (1.0 / (1.0 + sim)).sum(1)
            series["theta_sim"][sl] = n1 / (n1 + sim.sum(1)) if n1 else np.nan
            for s in range(size):
                if (pos + s) % keep_every == 0:
                    kept.append(rate[s])
            if unobs is not None:
                for s in range(size):
                    unobs[pos + s] = _dense_unobserved(dense, u, rng, obs_ids)
            pos += size
    for k in acc:
        acc[k] /= draws
    pred = RaoBlackwellPredictive(
        f=f, p0=acc["p0"], e1=acc["e1"], e2=acc["e2"], mean_=acc["m1"], second=acc["m2"],
        rates=np.array(kept), unobserved_prob_one=None if unobs is None else float(unobs.mean()),
        law_name=f"Monte Carlo over {draws} posterior draws of (model, pi): U_i | pi ~ "
        "Poisson((N - n) pi_i), averaged (Rao-Blackwellised)")
    return MonteCarloRun(pred, per_model, series["tau1_rb"], series["tau2_rb"],
                         series["tau1_sim"], series["tau2_sim"], series["theta_sim"], unobs)


def _dense_unobserved(dense: DenseDirichlet, u, rng, obs_ids) -> float:
    rate = u * np.exp(dense.log_pi(rng)).reshape(-1)
    g = rate * np.exp(-rate)
    g[obs_ids] = 0.0
    return float(g.sum())
