"""Latent-class model of the key cross-table (a finite mixture of product-multinomials;
issue 17 "what to build" 2, last bullet).

A record x = (x_1..x_d) comes from one of K latent classes, and within a class the keys are
independent:

    P(x) = sum_k w_k prod_j theta_kj(x_j).

K = 1 is the independence model (the product of the marginals); growing K lets the model
express any dependence between keys while its parameters grow linearly in the levels
(K - 1 + K sum_j (L_j - 1)), not with the cross-table. The parameters are fitted by EM on
the sample's distinct observed cells weighted by their counts (memory grows with the observed
cells, never with the key space), with Dirichlet smoothing of every theta_kj (posterior-mode
EM), several random starts, and K chosen by the likelihood of held-out records (default),
BIC or AIC, or averaged over K with BIC weights. Given a
cell's probability p the N - n unseen population members fall in it independently:
U = F - f ~ Binomial(N - n, p), the law the Gaussian copula uses
(:class:`~sdcrisk.estimators.copula.BinomialPredictive`), so

    P(F = 1 | f = 1) = (1 - p)^(N - n),   E[1 / F | f = 1] = (1 - (1 - p)^(N-n+1)) / ((N-n+1) p).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..core.result import RiskResult
from ..data.sizes import check_range
from ..data.table import CellTable
from ..exceptions import ParameterError
from ._base import (
    CELL_ARRAYS,
    RECORD_ARRAYS,
    Estimator,
    check_bootstrap,
    normal_intervals,
)
from .copula import BinomialPredictive

__all__ = [
    "LatentClassRisk",
    "LatentClassFit",
    "fit_latent_classes",
    "cell_probabilities",
    "indicator_matrix",
]

CLASS_RULES = ("bic", "aic", "heldout", "average")
#: share of the records held out by ``classes="heldout"``
HELDOUT = 0.2
#: EM iterations of each random start before only the best start is carried on
START_ITERATIONS = 15
#: EM iterations of each warm-started bootstrap replicate
BOOTSTRAP_ITERATIONS = 20
#: largest ``tol`` (change of the EM objective per record, in nats): at 0.01 a fit already
#: stops on its first steps; a larger value (tol=1e6) stopped EM at its start
MAX_TOL = 0.01


def indicator_matrix(codes: np.ndarray, sizes: list[int]):
    """Sparse (cells x sum_j L_j) 0/1 matrix: row i has a 1 at each key's level of cell i."""
    from scipy.sparse import csr_matrix

    codes = np.asarray(codes, np.int64)
    m, d = codes.shape
    offs = np.concatenate([[0], np.cumsum(sizes)])[:-1].astype(np.int64)
    cols = (codes + offs[None, :]).ravel()
    indptr = np.arange(0, m * d + 1, d, dtype=np.int64)
    return csr_matrix((np.ones(m * d), cols, indptr), shape=(m, int(sum(sizes))))


@dataclass(frozen=True)
class LatentClassFit:
    """A fitted latent-class model: class weights ``weights`` (K,), the per-level class
    probabilities ``theta`` (sum_j L_j, K; key j's block sums to 1 down each column), the
    sample log-likelihood ``loglik``, the penalised objective ``objective`` (log-likelihood
    plus the Dirichlet log-prior), its value after every EM iteration ``trace``, whether EM
    met its tolerance ``converged``, and ``bic``."""

    weights: np.ndarray
    theta: np.ndarray
    loglik: float
    objective: float
    trace: tuple[float, ...]
    converged: bool
    bic: float

    @property
    def classes(self) -> int:
        return len(self.weights)


def _log_joint(z, weights, theta) -> np.ndarray:
    """log w_k + sum_j log theta_kj(x_j) for every cell (rows of ``z``) and class."""
    with np.errstate(divide="ignore"):
        return z @ np.log(theta) + np.log(weights)[None, :]


def _logsumexp_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log sum_k exp a_ik, the row maxima)."""
    top = a.max(axis=1)
    return top + np.log(np.exp(a - top[:, None]).sum(axis=1)), top


def _m_step(z, mass, resp, blocks, smoothing) -> tuple[np.ndarray, np.ndarray]:
    wr = resp * mass[:, None]
    nk = wr.sum(axis=0)
    weights = nk / nk.sum()
    counts = np.asarray(z.T @ wr)  # (sum L, K): expected level counts per class
    theta = np.empty_like(counts)
    for lo, hi in blocks:
        theta[lo:hi] = (counts[lo:hi] + smoothing) / (nk[None, :] + (hi - lo) * smoothing)
    return weights, theta


def _objective(loglik: float, theta: np.ndarray, smoothing: float) -> float:
    """Log-likelihood plus the log of the Dirichlet(1 + smoothing) prior of theta (up to its
    constant): the quantity posterior-mode EM never decreases."""
    return loglik + (smoothing * float(np.sum(np.log(theta))) if smoothing > 0 else 0.0)


def _em(z, mass, blocks, weights, theta, smoothing, max_iter, tol):
    """EM from (weights, theta); returns (weights, theta, loglik, trace, converged)."""
    trace = []
    total = float(mass.sum())
    converged = False
    loglik = -math.inf
    for _ in range(max_iter):
        lj = _log_joint(z, weights, theta)
        lse, _ = _logsumexp_rows(lj)
        loglik = float(mass @ lse)
        obj = _objective(loglik, theta, smoothing)
        if trace and abs(obj - trace[-1]) <= tol * total:
            trace.append(obj)
            converged = True
            break
        trace.append(obj)
        resp = np.exp(lj - lse[:, None])
        weights, theta = _m_step(z, mass, resp, blocks, smoothing)
    else:
        lse, _ = _logsumexp_rows(_log_joint(z, weights, theta))
        loglik = float(mass @ lse)
        trace.append(_objective(loglik, theta, smoothing))
    return weights, theta, loglik, trace, converged


def fit_latent_classes(codes: np.ndarray, mass: np.ndarray, sizes: list[int], classes: int, *,
                       smoothing: float = 0.5, starts: int = 4, max_iter: int = 300,
                       tol: float = 1e-6, rng: np.random.Generator | None = None,
                       z=None) -> LatentClassFit:
    """Posterior-mode EM of a ``classes``-class model on the cells ``codes`` (cells x keys,
    level codes) with counts ``mass``; ``sizes`` the number of levels of each key.

    Each of ``starts`` random starts (responsibilities drawn from a flat Dirichlet per cell)
    runs ``START_ITERATIONS`` EM steps; the start with the highest objective is run on to
    convergence (change of the objective below ``tol`` per record) or ``max_iter`` steps.
    ``classes = 1`` is the independence model, in closed form.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    z = indicator_matrix(codes, sizes) if z is None else z
    mass = np.asarray(mass, float)
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    blocks = [(int(offs[j]), int(offs[j + 1])) for j in range(len(sizes))]
    n = float(mass.sum())
    if classes == 1:
        resp = np.ones((len(mass), 1))
        weights, theta = _m_step(z, mass, resp, blocks, smoothing)
        lse, _ = _logsumexp_rows(_log_joint(z, weights, theta))
        loglik = float(mass @ lse)
        best = (weights, theta, loglik, (_objective(loglik, theta, smoothing),), True)
    else:
        cands = []
        for _ in range(max(1, starts)):
            resp = rng.dirichlet(np.ones(classes), size=len(mass))
            weights, theta = _m_step(z, mass, resp, blocks, smoothing)
            cands.append(_em(z, mass, blocks, weights, theta, smoothing, START_ITERATIONS,
                             tol))
        w0, th0, _, trace0, _ = max(cands, key=lambda c: c[3][-1])
        w, th, ll, trace, conv = _em(z, mass, blocks, w0, th0, smoothing,
                                     max(1, max_iter - START_ITERATIONS), tol)
        best = (w, th, ll, tuple(trace0[:-1]) + tuple(trace), conv)
    weights, theta, loglik, trace, conv = best
    npar = (classes - 1) + classes * sum(s - 1 for s in sizes)
    return LatentClassFit(weights=weights, theta=theta, loglik=loglik,
                          objective=float(trace[-1]), trace=tuple(float(t) for t in trace),
                          converged=bool(conv), bic=-2.0 * loglik + npar * math.log(n))


def cell_probabilities(fit: LatentClassFit, codes: np.ndarray | None = None,
                       sizes: list[int] | None = None, *, z=None) -> np.ndarray:
    """P(x) = sum_k w_k prod_j theta_kj(x_j) of the cells ``codes`` (or of the rows of the
    indicator matrix ``z``)."""
    z = indicator_matrix(codes, sizes) if z is None else z
    lse, _ = _logsumexp_rows(_log_joint(z, fit.weights, fit.theta))
    return np.exp(lse)


#: most random EM starts per number of classes (``starts=``): a larger number is a slip
MAX_STARTS = 1_000


@dataclasses.dataclass(frozen=True, kw_only=True)
class LatentClassRisk(Estimator):
    """Latent-class (finite mixture of product-multinomials) model of the key cross-table.

    Parameters
    ----------
    classes : int or {"heldout", "bic", "aic", "average"}
        Number of latent classes K; K = 1, 2, ... up to ``max_classes`` are fitted until two
        successive K fail to improve the criterion. ``"heldout"`` (default): the K whose fit
        on a fixed 80% of the records (binomial thinning of the cell counts, seeded by
        ``random_state``) gives the other 20% the highest log-likelihood, then refitted on all
        records. ``"bic"``: the lowest BIC. ``"aic"``: the lowest AIC. ``"average"``: the cell
        probabilities averaged over the fitted K with weights exp(-BIC / 2) (normalised). An
        integer fixes K (1 = independence). On the corpus BIC chose too few classes (tau1
        high); see docs/latent_class.md for every rule's figures.
    max_classes : int
        Largest K tried by ``"bic"`` and ``"average"`` (default 8).
    smoothing : float
        Dirichlet pseudo-count added to every level of every key in every class (default 0.5):
        theta_kj(l) = (expected count of level l in class k + smoothing) / (class size +
        L_j smoothing), the posterior mode under a Dirichlet(1 + smoothing) prior. Levels the
        table declares but the sample lacks keep a small probability.
    starts : int
        Random starts per K (default 4, at most 1,000); each runs 15 EM steps and the best
        goes on.
    max_iter : int
        EM iterations per K at most (default 300).
    tol : float
        EM stops when the objective changes by less than ``tol`` per record (default 1e-6;
        in [0, 0.01]).
    bootstrap : int
        Bayesian-bootstrap replicates of the fit for the interval (default 16; 0 = the
        predictive interval given the fit only; at most 10,000). Each re-weights the
        observed cells by Gamma(f, 1) draws and runs 20 EM steps from the fitted parameters
        at the chosen K.
    random_state : int, optional
        Seed of the random starts and the bootstrap (default 0).
    ci_level, max_global_risk : see :class:`~sdcrisk.estimators.Estimator`.

    Notes
    -----
    Fit: the sample's distinct cells and their counts (memory proportional to the observed
    cells and the levels; the cross-table is never built), EM with the E-step as a sparse
    (cells x levels) product and the M-step as its transpose. The objective (log-likelihood
    plus the Dirichlet log-prior) never decreases along EM (tested). BIC = -2 log L + q log n,
    q = K - 1 + K sum_j (L_j - 1).

    Score: every observed cell's p(x) from the fitted mixture; given p, U = F - f ~
    Binomial(N - n, p) (the population is N independent draws from the model, the sample a
    Bernoulli subset). tau1 = sum over sample uniques of (1 - p)^(N - n), tau2 = sum of
    (1 - (1 - p)^(N-n+1)) / ((N - n + 1) p); record risk ranks sample uniques by p.

    Interval: normal, with the variance of the realised sum given the model (independent
    cells) plus the variance of tau over the bootstrap replicates (uncertainty of the fitted
    parameters at the chosen K; the choice of K is not re-made per replicate).

    Departures and limits: a latent-class model for disclosure risk is a choice of this
    implementation for issue 17 (no published estimator is reproduced; Dunson & Xing 2009
    give the Bayesian nonparametric version of the model). Counts only: survey weights,
    households, structural zeros and wildcards are not used. No sdcMicro or mu-Argus
    equivalent.

    References
    ----------
    Goodman, L. A. (1974). Exploratory latent structure analysis using both identifiable and
    unidentifiable models. Biometrika 61, 215-231. Dunson, D. B. & Xing, C. (2009).
    Nonparametric Bayes modeling of multivariate categorical data. JASA 104, 1042-1051.

    Examples
    --------
    >>> from sdcrisk import Microdata, tabulate
    >>> from sdcrisk.estimators import LatentClassRisk
    >>> md = Microdata.from_source("example:uk_census2011",
    ...                            keys="region,sex,age_band,marital_status,ethnic_group",
    ...                            population_size=560_759)
    >>> res = LatentClassRisk(bootstrap=0).fit(tabulate(md))
    >>> res.method, 0 < res.measures["tau1"].estimate <= res.sample_uniques
    ('latent-class', True)
    """

    name: ClassVar[str] = "latent-class"
    memory_options: ClassVar[tuple[str, ...]] = ("classes", "max_classes", "bootstrap")
    classes: int | str = "heldout"
    max_classes: int = 8
    smoothing: float = 0.5
    starts: int = 4
    max_iter: int = 300
    tol: float = 1e-6
    bootstrap: int = 16
    random_state: int | None = 0

    def _validate(self) -> None:
        def count(value, name, low, example):
            if (isinstance(value, bool) or not isinstance(value, int | np.integer)
                    or value < low):
                raise ParameterError(f"{name}={value!r} must be an integer >= {low} "
                                     f"({example})")

        if isinstance(self.classes, str):
            if self.classes not in CLASS_RULES:
                raise ParameterError(f"classes={self.classes!r} is not a rule for the number of "
                                     "latent classes; use 'heldout', 'bic', 'aic', 'average' "
                                     "or an integer >= 1")
        else:
            count(self.classes, "classes", 1, "the number of latent classes, e.g. 4")
        count(self.max_classes, "max_classes", 1, "the largest number of classes tried, e.g. 8")
        count(self.starts, "starts", 1, "random starts of EM per number of classes, e.g. 4")
        if self.starts > MAX_STARTS:
            raise ParameterError(f"starts={self.starts} is too many: at most {MAX_STARTS:,} "
                                 "(each runs EM for every number of classes tried; a few "
                                 "starts find the best optimum); give e.g. 10")
        count(self.max_iter, "max_iter", 1, "EM iterations, e.g. 300")
        check_bootstrap(self.bootstrap)
        value = self.smoothing
        if (isinstance(value, bool) or not isinstance(value, int | float | np.number)
                or not math.isfinite(value) or value < 0):
            raise ParameterError(f"smoothing={value!r} must be a finite number >= 0 "
                                 "(pseudo-count per level, e.g. 0.5)")
        check_range("tol", self.tol, 0, MAX_TOL, what="change of the EM objective per "
                    "record, in nats, below which EM stops; e.g. 1e-6")

    def memory_estimate(self, table: CellTable) -> int:
        d = len(table.keys)
        k = self.classes if isinstance(self.classes, int) else self.max_classes
        per_cell = CELL_ARRAYS + 2 * d + 6 * k + 2 * (self.bootstrap + 1)
        levels = sum(len(lv) for lv in table.levels)
        return 8 * (per_cell * int(table.n_cells) + RECORD_ARRAYS * int(table.n)
                    + 4 * levels * k)

    # -- fitting ----------------------------------------------------------------------------
    def select(self, table: CellTable) -> dict:
        """The fitted models (one per K tried), the chosen one and the cell probabilities."""
        sizes = [len(lv) for lv in table.levels]
        codes = table.cell_codes
        mass = np.asarray(table.counts, float)
        z = indicator_matrix(codes, sizes)
        rng = np.random.default_rng(self.random_state)
        opts = {"smoothing": float(self.smoothing), "starts": int(self.starts),
                "max_iter": int(self.max_iter), "tol": float(self.tol), "z": z}
        rule = self.classes if isinstance(self.classes, str) else None
        ks = (list(range(1, int(self.max_classes) + 1)) if rule is not None
              else [int(self.classes)])
        train = held = None
        if rule == "heldout":  # a fixed fifth of the records (binomial thinning of the counts)
            held = rng.binomial(table.counts.astype(np.int64), HELDOUT).astype(float)
            train = mass - held
        fits: list[LatentClassFit] = []
        crit: list[float] = []
        worse = 0
        for k in ks:
            if rule == "heldout":
                part = fit_latent_classes(codes, train, sizes, k, rng=rng, **opts)
                crit.append(-2.0 * float(held @ np.log(cell_probabilities(part, z=z))))
            fit = fit_latent_classes(codes, mass, sizes, k, rng=rng, **opts)
            if rule != "heldout":
                npar = fit.bic + 2.0 * fit.loglik  # q log n
                crit.append(fit.bic if rule != "aic"
                            else -2.0 * fit.loglik + 2.0 * npar / math.log(mass.sum()))
            worse = worse + 1 if len(crit) > 1 and crit[-1] >= min(crit[:-1]) else 0
            fits.append(fit)
            if rule is not None and worse >= 2:
                break
        crit_a = np.array(crit)
        best = int(np.argmin(crit_a))
        probs = [cell_probabilities(f, z=z) for f in fits]
        if rule == "average":
            bw = np.exp(-(crit_a - crit_a.min()) / 2)
            bw /= bw.sum()
            p = sum(w * q for w, q in zip(bw, probs, strict=True))
        else:
            bw = np.eye(len(fits))[best]
            p = probs[best]
        return {"fits": fits, "best": best, "criterion": crit, "bic_weights": bw,
                "p": np.asarray(p), "z": z, "mass": mass, "sizes": sizes, "rng": rng}

    def _bootstrap(self, sel: dict, su: np.ndarray, unseen: float) -> np.ndarray:
        """(replicates, 2): tau1 and tau2 of each Bayesian-bootstrap refit."""
        fit = sel["fits"][sel["best"]]
        z, mass, sizes, rng = sel["z"], sel["mass"], sel["sizes"], sel["rng"]
        offs = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        blocks = [(int(offs[j]), int(offs[j + 1])) for j in range(len(sizes))]
        zs = z[su]
        out = np.empty((int(self.bootstrap), 2))
        for b in range(int(self.bootstrap)):
            g = rng.gamma(mass)
            g *= mass.sum() / g.sum()
            w, th, *_ = _em(z, g, blocks, fit.weights, fit.theta, float(self.smoothing),
                            BOOTSTRAP_ITERATIONS, 0.0)
            lse, _ = _logsumexp_rows(_log_joint(zs, w, th))
            rep = BinomialPredictive(np.ones(su.size), np.exp(lse), unseen)
            out[b] = rep.prob_zero().sum(), rep.expected_inverse().sum()
        return out

    def _fit(self, table: CellTable) -> RiskResult:
        sel = self.select(table)
        p = sel["p"]
        n, big_n = table.n, table.population_size
        unseen = float(big_n - n)
        fits, best = sel["fits"], sel["best"]
        chosen = fits[best]
        pred = BinomialPredictive(
            table.counts, p, unseen,
            law_name=f"Binomial(N-n={unseen:.0f}, p_k), p_k = latent-class mixture of "
            f"product-multinomials (K={chosen.classes}"
            + (", BIC-averaged" if self.classes == "average" else "") + ")")
        su = np.flatnonzero(table.counts == 1)
        boot = (self._bootstrap(sel, su, unseen) if su.size and self.bootstrap >= 2
                else np.empty((0, 2)))
        diag = {"classes": chosen.classes,
                "classes_tried": [f.classes for f in fits],
                "bic": [round(f.bic, 3) for f in fits],
                "criterion": [round(float(c), 3) for c in sel["criterion"]],
                "bic_weights": [round(float(w), 6) for w in sel["bic_weights"]],
                "loglik": chosen.loglik, "em_iterations": len(chosen.trace) - 1,
                "converged": chosen.converged,
                "bootstrap_replicates": int(boot.shape[0])}
        assumptions = (
            f"records are independent draws from a mixture of {chosen.classes} latent classes "
            "within which the keys are independent (latent-class model)"
            + (", averaged over K by BIC weights" if self.classes == "average" else ""),
            "the N - n unseen records fall in a cell independently with the model's cell "
            "probability p: F - f ~ Binomial(N - n, p)",
            "Bernoulli (equal-probability) sampling; counts only (no survey weights)",
        )
        result = self._predictive_result(
            table, pred,
            fitted={"classes": chosen.classes,
                    "class_weights": np.round(chosen.weights, 6).tolist(),
                    "smoothing": float(self.smoothing)},
            assumptions=assumptions, diagnostics=diag, seed=self.random_state)
        if su.size:
            result = self._widen(result, pred, su, boot)
        return result

    def _widen(self, result: RiskResult, pred: BinomialPredictive, su: np.ndarray,
               boot: np.ndarray) -> RiskResult:
        """Intervals of tau1/tau2: predictive variance given the fit plus the bootstrap's."""
        extra = ({"tau1": float(np.var(boot[:, 0], ddof=1)),
                  "tau2": float(np.var(boot[:, 1], ddof=1))} if boot.shape[0] >= 2 else {})
        kind = ("predictive given the fitted latent-class model (independent cells, normal "
                "approximation)" + (f" plus the spread of {boot.shape[0]} Bayesian-bootstrap "
                                    "refits" if boot.shape[0] >= 2 else "")
                + "; the choice of K not included")
        return normal_intervals(result, pred, su, extra, self.ci_level, kind)
