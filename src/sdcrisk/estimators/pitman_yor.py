"""Pitman-Yor species-sampling estimator (Favaro, Panero & Rigon 2021; candidates.md K).

The cells of the key are species and the records draws from a Pitman-Yor process PY(alpha,
theta). (theta, alpha) are fitted by maximising the exchangeable partition probability
function (EPPF) of the sample's frequency-of-frequencies; given them, the number M of the
N - n unseen population members that fall in a cell seen f times follows the Polya-urn law

    M | f ~ BetaBinomial(N - n; a = f - alpha, b = theta + n - f + alpha),

so that for a sample unique P(M = 0) = B(a, b + N - n) / B(a, b) and E[1 / (1 + M)] has the
closed form of :func:`expected_inverse_unique`. Every cell seen once gets the same risk (an
exchangeable model).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import betaln, digamma, gammaln

from ..core.measures import Measure
from ..core.predictive import CellPredictive
from ..core.result import RiskResult
from ..data.frequencies import FrequencyTable
from ..data.table import CellTable
from ..exceptions import ConvergenceWarning, ParameterError, user_stacklevel
from ._base import Estimator, count_groups, grouped_memory

__all__ = [
    "PitmanYorRisk",
    "BetaBinomialPredictive",
    "eppf_loglik",
    "eppf_score",
    "fit_pitman_yor",
    "prob_zero_unique",
    "expected_inverse_unique",
    "log_gamma_ratio_step",
]

#: alpha above this is reported as the fit running to its bound (alpha -> 1)
ALPHA_BOUND = 0.95
#: theta above this many times n is reported as the fit running to infinity (all uniques)
THETA_BOUND = 1e5
#: exact summation of the beta-binomial law up to this count, integration beyond it
_EXACT_TERMS = 400
#: Newton steps from Nelder-Mead's point to the likelihood's stationary point (quadratic
#: convergence: 3-5 are used)
_NEWTON_STEPS = 30
_TAIL_POINTS = 3000


def eppf_loglik(theta: float, alpha: float, values: np.ndarray, mult: np.ndarray,
                n: int) -> float:
    """Log-EPPF of a partition with ``mult[j]`` blocks of size ``values[j]`` (candidates K.1).

    sum_{i=1}^{K-1} log(theta + i alpha) - log Gamma(theta + n) + log Gamma(theta + 1)
    + sum_k [log Gamma(f_k - alpha) - log Gamma(1 - alpha)].
    """
    k = int(np.sum(mult))
    if not (0 <= alpha < 1 and theta > -alpha):
        return -math.inf
    return float(_log_rising(theta, alpha, k) - gammaln(theta + n) + gammaln(theta + 1)
                 + np.dot(mult, gammaln(values - alpha) - gammaln(1 - alpha)))


#: above this many cells the sum of log(theta + i alpha) is taken in closed form
_CLOSED_FORM_CELLS = 5000


def _log_rising(theta: float, alpha: float, k: int) -> float:
    """sum_{i=1}^{k-1} log(theta + i alpha): summed term by term for few cells; for many,
    (k - 1) log alpha + log Gamma(c + k) - log Gamma(c + 1) with c = theta / alpha (a K-long
    sum at every likelihood evaluation cost seconds at census scale, issue 20), as long as
    the log-gammas keep about 1e-8 absolute accuracy (c + k below 1e7); beyond that (alpha
    running to 0 on a large file) by :func:`_log_rising_tail`, not by a K-long sum (which
    made one Pitman-Yor fit of a 1.5-million-cell table take a minute)."""
    if k <= _CLOSED_FORM_CELLS:
        i = np.arange(1, k)
        return float(np.sum(np.log(theta + i * alpha)))
    if alpha <= 0:
        return float((k - 1) * math.log(theta))
    c = theta / alpha
    if c + k > 1e7:
        return _log_rising_tail(theta, alpha, k)
    return float((k - 1) * math.log(alpha) + gammaln(c + k) - gammaln(c + 1))


#: terms of sum log(theta + i alpha) summed one by one before Euler-Maclaurin takes over
_HEAD_TERMS = 1000


def _log_rising_tail(theta: float, alpha: float, k: int) -> float:
    """sum_{i=1}^{k-1} log(theta + i alpha) for alpha > 0 and many terms.

    The first ``_HEAD_TERMS`` terms are summed one by one; the rest (i = a..b) by
    Euler-Maclaurin on g(x) = log(theta + x alpha), written about the tail's start as
    g = log s + log1p(y / d) with s = theta + a alpha, d = s / alpha, y = x - a, so that no
    large terms cancel when alpha is tiny: the integral (b - a) log s + (d + y) log1p(y / d)
    - y at y = b - a, the end terms (g(a) + g(b)) / 2 and the corrections with g' = 1 / (d +
    y) and g''' = 2 / (d + y)^3. As d >= a - 1 >= ``_HEAD_TERMS``, the first term left out
    is below 24 / d^5 / 30240, about 1e-18.

    >>> from math import log, fsum
    >>> exact = fsum(log(3e5 + i * 1e-13) for i in range(1, 1_500_000))
    >>> abs(_log_rising_tail(3e5, 1e-13, 1_500_000) - exact) < 1e-6
    True
    """
    head = min(k - 1, _HEAD_TERMS)
    total = float(np.sum(np.log(theta + np.arange(1, head + 1) * alpha)))
    a, b = head + 1, k - 1
    if b < a:
        return total
    s = theta + a * alpha
    d = s / alpha
    y = float(b - a)
    integral = y * math.log(s) + (d + y) * math.log1p(y / d) - y
    ends = 0.5 * (math.log(s) + math.log(theta + b * alpha))
    d1 = (1.0 / (d + y) - 1.0 / d) / 12.0
    d3 = -(2.0 / (d + y) ** 3 - 2.0 / d ** 3) / 720.0
    return total + integral + ends + d1 + d3


def eppf_score(theta: float, alpha: float, values: np.ndarray, mult: np.ndarray,
               n: int) -> tuple[float, float]:
    """Gradient of :func:`eppf_loglik` in (theta, alpha), in closed form.

    d/dtheta = S_1 - [psi(theta + n) - psi(theta + 1)] and d/dalpha = S_2 - sum_k [psi(f_k -
    alpha) - psi(1 - alpha)], with S_1 = sum_{i=1}^{K-1} 1 / (theta + i alpha) and S_2 =
    sum_{i=1}^{K-1} i / (theta + i alpha), in the branches of :func:`_log_rising`
    (:func:`_rising_sums`). It lets the fit stop at the
    likelihood's stationary point to the last digits rather than at an optimiser's
    tolerance, so the same file gives the same (theta, alpha) whatever the library versions
    (a finite-difference L-BFGS-B stop left 1e-8 of them to chance).
    """
    k = int(np.sum(mult))
    s1, s2 = _rising_sums(theta, alpha, k)
    d_theta = s1 - float(digamma(theta + n) - digamma(theta + 1))
    d_alpha = s2 - float(np.dot(mult, digamma(values - alpha) - digamma(1 - alpha)))
    return d_theta, d_alpha


def _rising_sums(theta: float, alpha: float, k: int) -> tuple[float, float]:
    """S_1 = sum_{i=1}^{k-1} 1 / (theta + i alpha) and S_2 = sum i / (theta + i alpha), in
    the branches of :func:`_log_rising`: term by term for few cells, by digammas for many,
    and by Euler-Maclaurin beyond ``_HEAD_TERMS`` terms where theta / alpha + K > 1e7 (a
    K-long sum per gradient made a fit of 10^7 cells take 1.3 s instead of 0.01 s)."""
    if k <= _CLOSED_FORM_CELLS:
        return _sums_by_term(theta, alpha, k - 1)
    if alpha <= 0:
        return (k - 1) / theta, k * (k - 1) / (2 * theta)
    c = theta / alpha
    if c + k <= 1e7:
        s1 = float(digamma(c + k) - digamma(c + 1)) / alpha
        return s1, (k - 1 - theta * s1) / alpha
    return _rising_sums_tail(theta, alpha, k)


def _sums_by_term(theta: float, alpha: float, top: int) -> tuple[float, float]:
    """sum_{i=1}^{top} 1 / (theta + i alpha) and sum i / (theta + i alpha), term by term."""
    i = np.arange(1, top + 1, dtype=float)
    inv = 1.0 / (theta + i * alpha)
    return float(np.sum(inv)), float(np.dot(i, inv))


def _rising_sums_tail(theta: float, alpha: float, k: int) -> tuple[float, float]:
    """S_1 and S_2 of :func:`_rising_sums` for alpha > 0 and many terms: the first
    ``_HEAD_TERMS`` one by one, the rest (i = a..b) by Euler-Maclaurin on g = 1 / t and
    h = i / t, t = theta + i alpha, to the third derivative (the first term left out is
    below 1e-17 of the sum, as t >= 1000 alpha there). With s = theta + a alpha, y = b - a
    and u = y alpha / s, the integrals are log1p(u) / alpha and y a / s + theta / alpha^2
    (u - log1p(u)), the latter without the cancellation of y / alpha - theta log1p(u) /
    alpha^2 as alpha -> 0."""
    s1, s2 = _sums_by_term(theta, alpha, _HEAD_TERMS)
    a, b = _HEAD_TERMS + 1, k - 1
    if b < a:
        return s1, s2
    s = theta + a * alpha
    y = float(b - a)
    u = y * alpha / s
    if u < 1e-2:  # u - log1p(u) by its series, exact to u^10
        u_minus_log = sum((-1) ** j * u ** j / j for j in range(2, 11))
    else:
        u_minus_log = u - math.log1p(u)
    t_a, t_b = s, theta + b * alpha
    s1 += (math.log1p(u) / alpha + (1 / t_a + 1 / t_b) / 2
           - alpha * (1 / t_b**2 - 1 / t_a**2) / 12 + alpha**3 * (1 / t_b**4 - 1 / t_a**4) / 120)
    s2 += (y * a / s + theta / alpha**2 * u_minus_log + (a / t_a + b / t_b) / 2
           + theta * (1 / t_b**2 - 1 / t_a**2) / 12
           - theta * alpha**2 * (1 / t_b**4 - 1 / t_a**4) / 120)
    return s1, s2


def _frequencies(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, mult = np.unique(np.asarray(counts, np.int64), return_counts=True)
    keep = values > 0
    return values[keep].astype(float), mult[keep].astype(float)


def _unpack(x) -> tuple[float, float]:
    alpha = 1.0 / (1.0 + math.exp(-x[0]))
    return math.exp(x[1]) - alpha, alpha


def fit_pitman_yor(counts: np.ndarray, cells: np.ndarray | None = None) -> dict:
    """Maximum-likelihood (theta, alpha) of the EPPF for the sample cell counts.

    Optimised over logit(alpha) and log(theta + alpha): Nelder-Mead from a grid start, then
    Newton's method on the analytic gradient (:func:`eppf_score`) to the stationary point.
    Returns theta, alpha, the log-likelihood, the observed-information covariance of (theta,
    alpha) (``None`` when it is not positive definite) and whether alpha ran towards its
    bound (``alpha_at_bound``: alpha > 0.95). With ``cells``, ``counts`` are the distinct
    counts and ``cells`` the number of cells with each.
    """
    from scipy import optimize  # lazy: slow to import

    if cells is None:
        values, mult = _frequencies(counts)
    else:
        values = np.asarray(counts, float)
        mult = np.asarray(cells, float)
    n = int(np.dot(values, mult))
    k = int(mult.sum())
    if k < 2 or n < 2:
        raise ParameterError(f"the Pitman-Yor fit needs at least two sample cells and two "
                             f"records (got {k} cells, {n} records): its two parameters are "
                             "estimated from how the records spread over cells; use another "
                             "method (e.g. nb) or more key variables")

    def nll(x):
        theta, alpha = _unpack(x)
        v = eppf_loglik(theta, alpha, values, mult, n)
        return -v if math.isfinite(v) else 1e300

    def grad(x):
        theta, alpha = _unpack(x)
        d_theta, d_alpha = eppf_score(theta, alpha, values, mult, n)
        # x = (logit alpha, log(theta + alpha)): theta = exp(x1) - alpha
        return -np.array([alpha * (1 - alpha) * (d_alpha - d_theta),
                          (theta + alpha) * d_theta])

    best = None
    for a0 in (0.05, 0.3, 0.6, 0.9):
        for t0 in (1.0, 30.0, 1000.0):
            x0 = np.array([math.log(a0 / (1 - a0)), math.log(t0 + a0)])
            v = nll(x0)
            if best is None or v < best[0]:
                best = (v, x0)
    # Nelder-Mead to 1e-6 in (logit alpha, log(theta + alpha)) (at 1e-10 / 1e-12 it took
    # 200-300 steps, and up to 16,000 where the likelihood is flat: two of 20 adult key sets),
    # L-BFGS-B on the analytic gradient, then Newton to the stationary point's last digits
    # (L-BFGS-B's own stop left (theta, alpha) 1e-8 apart between library versions)
    res = optimize.minimize(nll, best[1], method="Nelder-Mead",
                            options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 4000})
    res2 = optimize.minimize(nll, res.x, jac=grad, method="L-BFGS-B")
    x, fx = (res2.x, float(res2.fun)) if res2.fun <= res.fun else (res.x, float(res.fun))
    x = _stationary_point(nll, grad, x, fx)
    theta, alpha = _unpack(x)
    cov = _covariance(theta, alpha, values, mult, n)
    return {"theta": theta, "alpha": alpha, "log_likelihood": -float(nll(x)),
            "covariance": cov, "alpha_at_bound": bool(alpha > ALPHA_BOUND),
            "theta_at_bound": bool(theta > THETA_BOUND * n),
            "n": n, "n_cells": k}


def _stationary_point(nll, grad, x0: np.ndarray, f0: float) -> np.ndarray:
    """From the optimisers' point ``x0``, where the negative log-likelihood is ``f0``: Newton's
    method on the analytic gradient (its Jacobian by central differences) to the stationary
    point, to the last digits. Falls back to ``x0`` when the likelihood has none there (alpha
    running to 1 or theta to infinity: the gradient's root lies at the boundary) or a step
    would lower the likelihood by more than rounding."""
    x = np.asarray(x0, float)
    for _ in range(_NEWTON_STEPS):
        g = grad(x)
        if not np.all(np.isfinite(g)):
            return np.asarray(x0, float)
        h = np.empty((2, 2))
        for j in range(2):
            e = np.zeros(2)
            e[j] = 1e-5 * max(1.0, abs(x[j]))
            h[:, j] = (grad(x + e) - grad(x - e)) / (2 * e[j])
        h = (h + h.T) / 2
        if not np.all(np.isfinite(h)) or h[0, 0] <= 0 or np.linalg.det(h) <= 0:
            return np.asarray(x0, float)  # not a minimum's basin
        step = np.linalg.solve(h, g)
        x = x - step
        if np.max(np.abs(step)) < 1e-13 * max(1.0, float(np.max(np.abs(x)))):
            break
    else:
        return np.asarray(x0, float)
    return x if nll(x) <= f0 + 1e-9 * max(1.0, abs(f0)) else np.asarray(x0, float)


def _covariance(theta, alpha, values, mult, n):
    """Inverse observed information of (theta, alpha) by central differences (None if the
    Hessian is not negative definite or alpha sits at a boundary)."""
    if not (1e-4 < alpha < ALPHA_BOUND):
        return None
    ht = 1e-4 * max(1.0, abs(theta))
    ha = 1e-4 * min(alpha, 1 - alpha)

    def f(t, a):
        return eppf_loglik(t, a, values, mult, n)

    f0 = f(theta, alpha)
    h = np.empty((2, 2))
    h[0, 0] = (f(theta + ht, alpha) - 2 * f0 + f(theta - ht, alpha)) / ht**2
    h[1, 1] = (f(theta, alpha + ha) - 2 * f0 + f(theta, alpha - ha)) / ha**2
    h[0, 1] = h[1, 0] = (f(theta + ht, alpha + ha) - f(theta + ht, alpha - ha)
                         - f(theta - ht, alpha + ha) + f(theta - ht, alpha - ha)) / (4 * ht * ha)
    info = -h
    if not np.all(np.isfinite(info)) or np.linalg.det(info) <= 0 or info[0, 0] <= 0:
        return None
    return np.linalg.inv(info)


def prob_zero_unique(theta, alpha, n, unseen):
    """P(M = 0) for a sample unique: B(a, b + N - n) / B(a, b), a = 1 - alpha,
    b = theta + n - 1 + alpha."""
    a = 1.0 - np.asarray(alpha, float)
    b = np.asarray(theta, float) + n - 1 + np.asarray(alpha, float)
    return np.clip(np.exp(betaln(a, b + unseen) - betaln(a, b)), 0.0, 1.0)


#: above this b the log-gamma differences lose digits: Euler-Maclaurin takes over
_LARGE_B = 1e3


def log_gamma_ratio_step(b, m, alpha):
    """D = L(b + m + 1) - L(b) with L(x) = log Gamma(x) - log Gamma(x - alpha).

    Since L(x + 1) - L(x) = -log(1 - alpha / x), D = sum_{j=0}^{m} -log1p(-alpha / (b + j)).
    For b <= 1e3 from log-gamma differences; above, where those lose digits (theta running to
    infinity), by Euler-Maclaurin: the integral G(b + m) - G(b) with
    G(x) = alpha log x - (x - alpha) log1p(-alpha / x), plus (f(b) + f(b + m)) / 2 and the
    first-derivative term (the remainder is of order alpha / b^3).
    """
    b = np.asarray(b, float)
    alpha = np.asarray(alpha, float)
    large = b > _LARGE_B
    bs = np.where(large, 1.0, b)  # placeholders keep the unused branch finite
    small_d = (gammaln(bs + m + 1) - gammaln(bs + m + 1 - alpha) - gammaln(bs)
               + gammaln(bs - alpha))
    bl = np.where(large, b, 2 * _LARGE_B)
    top = bl + m

    def f(x):
        return -np.log1p(-alpha / x)

    def fp(x):
        return -alpha / (x * (x - alpha))

    # (x - alpha) log1p(-alpha / x) = -alpha + sum_k c_k / x^k: its difference between top and
    # bl by the series where x is large (the direct difference cancels to nothing there)
    direct = (top - alpha) * np.log1p(-alpha / top) - (bl - alpha) * np.log1p(-alpha / bl)
    inv_t, inv_b = 1.0 / top, 1.0 / bl
    series = (alpha**2 / 2 * (inv_t - inv_b) + alpha**3 / 6 * (inv_t**2 - inv_b**2)
              + alpha**4 / 12 * (inv_t**3 - inv_b**3))
    integral = alpha * np.log1p(m / bl) - np.where(bl > 1e6, series, direct)
    large_d = integral + (f(bl) + f(top)) / 2 + (fp(top) - fp(bl)) / 12
    return np.where(large, large_d, small_d)


def expected_inverse_unique(theta, alpha, n, unseen):
    """E[1 / (1 + M)] for a sample unique, M ~ BetaBin(m; 1 - alpha, b), b = theta+n-1+alpha.

    E = int_0^1 (1 - (1-p)^(m+1)) / ((m+1) p) Beta(p; a, b) dp
      = (b - alpha) / (alpha (m + 1)) * expm1(D),
    D = log G(b+m+1) - log G(b+m+1-alpha) - log G(b) + log G(b-alpha), by analytic continuation
    of B(a - 1, .) to a - 1 = -alpha in (-1, 0); as alpha -> 0 it tends to the Dirichlet-process
    value b (psi(b + m + 1) - psi(b)) / (m + 1).
    """
    alpha = np.asarray(alpha, float)
    theta = np.asarray(theta, float)
    m = float(unseen)
    b = theta + n - 1 + alpha
    small = alpha < 1e-7
    a_safe = np.where(small, 0.5, alpha)
    d = log_gamma_ratio_step(b, m, a_safe)
    general = (b - a_safe) / (a_safe * (m + 1)) * np.expm1(d)
    dp = b * (digamma(b + m + 1) - digamma(b)) / (m + 1)
    # E[1/(1+M)] lies in [P(M = 0), 1] (guards the last digits at extreme theta)
    return np.clip(np.where(small, dp, general), 0.0, 1.0)


def _betabin_moments(f: float, a: float, b: float, m: float) -> tuple[float, float]:
    """E[1/(f+M)] and E[1/(f+M)^2] for M ~ BetaBin(m; a, b): exact sum of the law up to
    ``_EXACT_TERMS``, then the law's continuous extension integrated on a log grid."""
    def logpmf(x):
        return (gammaln(m + 1) - gammaln(x + 1) - gammaln(m - x + 1)
                + betaln(x + a, m - x + b) - betaln(a, b))

    top = min(m, _EXACT_TERMS)
    x = np.arange(0, top + 1, dtype=float)
    p = np.exp(logpmf(x))
    e1 = float(np.sum(p / (f + x)))
    e2 = float(np.sum(p / (f + x) ** 2))
    if m > top:
        grid = np.unique(np.geomspace(top + 0.5, m + 0.5, _TAIL_POINTS))
        mid = np.minimum(grid, m)
        w = np.exp(logpmf(mid))
        g1, g2 = w / (f + mid), w / (f + mid) ** 2
        dx = np.diff(grid)
        e1 += float(np.sum((g1[1:] + g1[:-1]) / 2 * dx))
        e2 += float(np.sum((g2[1:] + g2[:-1]) / 2 * dx))
    return e1, e2


@dataclass(frozen=True, eq=False)
class BetaBinomialPredictive(CellPredictive):
    """U_k ~ BetaBinomial(m; f_k - alpha, theta + n - f_k + alpha) (Pitman-Yor Polya urn).

    P(U = 0) and E[1/F] of sample uniques are closed forms; E[1/F] for f >= 2 and E[1/F^2]
    are computed once per distinct f by summing the law (exact to 400, then integrated).
    """

    f: np.ndarray
    theta: float
    alpha: float
    n: int
    unseen: float
    unobserved_prob_one: float | None = None

    def __post_init__(self):
        f = np.asarray(self.f, float)
        object.__setattr__(self, "f", f)
        values, inverse = np.unique(f, return_inverse=True)
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_inverse", inverse.ravel())
        object.__setattr__(self, "_cache", {})

    @property
    def law(self) -> str:
        return (f"BetaBin(N-n={self.unseen:.0f}; f_k - alpha, theta + n - f_k + alpha), "
                f"theta={self.theta:.6g}, alpha={self.alpha:.6g} [Pitman-Yor]")

    def _ab(self, f):
        return f - self.alpha, self.theta + self.n - f + self.alpha

    def _moments(self):
        if "m" not in self._cache:
            e1 = np.empty(len(self._values))
            e2 = np.empty(len(self._values))
            for i, v in enumerate(self._values):
                a, b = self._ab(v)
                e1[i], e2[i] = _betabin_moments(v, a, b, self.unseen)
            self._cache["m"] = (e1, e2)
        return self._cache["m"]

    def _per_value(self, arr, cells):
        out = arr[self._inverse]
        return out if cells is None else out[cells]

    def prob_zero(self, cells=None):
        f = self.f if cells is None else self.f[cells]
        a, b = self._ab(f)
        return np.exp(betaln(a, b + self.unseen) - betaln(a, b))

    def expected_inverse(self, cells=None):
        out = self._per_value(self._moments()[0], cells)
        f = self.f if cells is None else self.f[cells]
        su = f == 1
        if np.any(su):
            out = out.copy()
            out[su] = expected_inverse_unique(self.theta, self.alpha, self.n, self.unseen)
        return out

    def expected_inverse_square(self, cells=None):
        return self._per_value(self._moments()[1], cells)

    def mean(self, cells=None):
        f = self.f if cells is None else self.f[cells]
        a, b = self._ab(f)
        return self.unseen * a / (a + b)

    def variance(self, cells=None):
        f = self.f if cells is None else self.f[cells]
        a, b = self._ab(f)
        s = a + b
        return self.unseen * a * b * (s + self.unseen) / (s**2 * (s + 1))

    def sample(self, rng, size, cells=None):
        f = self.f if cells is None else self.f[cells]
        a, b = self._ab(f)
        p = rng.beta(np.broadcast_to(a, (size, len(f))), np.broadcast_to(b, (size, len(f))))
        return rng.binomial(int(self.unseen), p)


#: most draws of (theta, alpha) for the interval (``draws=``): a larger number is a slip
MAX_DRAWS = 1_000_000


@dataclasses.dataclass(frozen=True, kw_only=True)
class PitmanYorRisk(Estimator):
    """Pitman-Yor species-sampling risk (Favaro, Panero & Rigon 2021).

    Parameters
    ----------
    draws : int
        Draws of (theta, alpha) from the normal approximation of their likelihood (inverse
        observed information) for the parameter part of the interval (default 400, seeded by
        ``random_state`` so that a fit is reproducible; 0: the predictive interval only; at
        most 1,000,000).
    random_state : int, optional
        Seed of those draws (default 0).
    ci_level, max_global_risk : see :class:`~sdcrisk.estimators.Estimator`.

    Notes
    -----
    (theta, alpha) maximise the EPPF of the sample partition (empirical Bayes). A cell seen f
    times has unseen count M ~ BetaBin(N - n; f - alpha, theta + n - f + alpha), so for a
    sample unique tau1 = SU B(1 - alpha, b + N - n) / B(1 - alpha, b) and tau2 = SU E[1/(1+M)]
    with b = theta + n - 1 + alpha (closed forms, no hypergeometric function). Record risk
    E[1/(f + M)] for every cell. Interval of tau1/tau2: the 2.5%/97.5% quantiles of tau over
    (theta, alpha) drawn from their Laplace approximation, widened in quadrature (on the log
    scale) by the predictive interval of the realised sum given the parameters (cells taken as
    independent: an approximation, the M's share the unseen mass). When the fit runs to
    alpha -> 1 (samples made almost only of uniques) tau1 explodes: the fit reports
    ``alpha_at_bound`` and warns. No sdcMicro or mu-Argus equivalent.

    References
    ----------
    Favaro, S., Panero, F. & Rigon, T. (2021). Bayesian nonparametric disclosure risk
    assessment. Electronic Journal of Statistics 15, 5626-5651. Pitman, J. & Yor, M. (1997).
    Ann. Probab. 25, 855-900.

    Examples
    --------
    >>> from sdcrisk import Microdata, tabulate, PitmanYorRisk
    >>> md = Microdata.from_source("example:uk_census2011",
    ...                            keys="region,sex,age_band,marital_status,ethnic_group",
    ...                            population_size=560_759)
    >>> res = PitmanYorRisk().fit(tabulate(md))
    >>> res.method, 0 < res.fitted["alpha"] < 1, res.measures["tau1"].lower > 0
    ('pitman-yor', True, True)
    """

    name: ClassVar[str] = "pitman-yor"
    draws: int = 400
    random_state: int | None = 0

    def _validate(self) -> None:
        if isinstance(self.draws, bool) or not isinstance(self.draws, int | np.integer) \
                or self.draws < 0:
            raise ParameterError(f"draws={self.draws!r} must be an integer >= 0 (draws of "
                                 "(theta, alpha) for the interval; 0: no parameter band)")
        if self.draws > MAX_DRAWS:
            raise ParameterError(f"draws={self.draws} is too many: at most {MAX_DRAWS:,} (16 "
                                 "bytes and two closed forms each; the band's 2.5% and 97.5% "
                                 "quantiles are steady at a few thousand); give e.g. 4,000")

    def supports_frequencies(self) -> bool:
        return True

    def memory_estimate(self, table) -> int:
        return grouped_memory(table)

    def _fit(self, table: CellTable | FrequencyTable) -> RiskResult:
        groups = count_groups(table)
        fit = fit_pitman_yor(groups.sizes, groups.cells)
        theta, alpha = fit["theta"], fit["alpha"]
        n, big_n = table.n, table.population_size
        unseen = float(big_n - n)
        pred = BetaBinomialPredictive(groups.sizes, theta=theta, alpha=alpha, n=n,
                                      unseen=unseen)
        diag = {"alpha_at_bound": fit["alpha_at_bound"],
                "theta_at_bound": fit["theta_at_bound"],
                "laplace_covariance": fit["covariance"] is not None}
        if fit["alpha_at_bound"]:
            warnings.warn(f"Pitman-Yor: the maximum-likelihood alpha ran to {alpha:.4f} (-> 1): "
                          "nearly every sample record is unique and tau1 is unreliable "
                          "(it grows without bound); use another method", ConvergenceWarning,
                          stacklevel=user_stacklevel())
        elif fit["theta_at_bound"]:
            warnings.warn(f"Pitman-Yor: the maximum-likelihood theta ran to {theta:.3g} "
                          "(-> infinity): the sample has (almost) no repeated cell, so the "
                          "partition carries no information on the population; use another "
                          "method", ConvergenceWarning, stacklevel=user_stacklevel())
        assumptions = (
            "records are exchangeable draws from a Pitman-Yor process over the key's cells; "
            "(theta, alpha) by maximum likelihood of the sample's EPPF (empirical Bayes)",
            "the N - n unseen records fall in a cell seen f times as in a Polya urn: "
            "BetaBin(N - n; f - alpha, theta + n - f + alpha) (Favaro, Panero & Rigon 2021)",
            "Bernoulli (equal-probability) sampling; survey weights are not used",
        )
        result = self._predictive_result(
            table, pred, fitted={"theta": theta, "alpha": alpha,
                                 "log_likelihood": fit["log_likelihood"]},
            assumptions=assumptions, diagnostics=diag, seed=self.random_state, groups=groups)
        su = int(table.sample_uniques)
        if su and fit["covariance"] is not None and self.draws:
            measures = dict(result.measures)
            lo_hi = self._parameter_band(fit, n, unseen, su)
            for name, (lo, hi) in lo_hi.items():
                measures[name] = _widen(measures[name], lo, hi, su)
            if measures["tau1"].lower is not None:
                t1 = measures["tau1"]
                measures["p_pu_given_su"] = dataclasses.replace(
                    measures["p_pu_given_su"], lower=t1.lower / su, upper=t1.upper / su,
                    interval=t1.interval)
            result = dataclasses.replace(result, measures=measures)
        return result

    def _parameter_band(self, fit, n, unseen, su):
        rng = np.random.default_rng(self.random_state)
        draws = rng.multivariate_normal([fit["theta"], fit["alpha"]], fit["covariance"],
                                        size=self.draws)
        th, al = draws[:, 0], draws[:, 1]
        ok = (al >= 0) & (al < 1) & (th > -al)
        th, al = th[ok], al[ok]
        if th.size < 10:
            return {}
        q = (1 - self.ci_level) / 2
        t1 = su * prob_zero_unique(th, al, n, unseen)
        t2 = su * expected_inverse_unique(th, al, n, unseen)
        return {"tau1": tuple(np.quantile(t1, [q, 1 - q])),
                "tau2": tuple(np.quantile(t2, [q, 1 - q]))}


def _widen(m: Measure, lo: float, hi: float, cap: float) -> Measure:
    """The predictive interval widened by the parameter band (log-scale half-widths added in
    quadrature)."""
    est = m.estimate
    if est is None or not est > 0 or not lo > 0:
        return m
    h_lo_pred = math.log(est / m.lower) if m.lower and m.lower > 0 else 0.0
    h_hi_pred = math.log(m.upper / est) if m.upper and m.upper > est else 0.0
    h_lo_par = max(math.log(est / lo), 0.0)
    h_hi_par = max(math.log(hi / est), 0.0)
    lower = est * math.exp(-math.hypot(h_lo_pred, h_lo_par))
    upper = min(cap, est * math.exp(math.hypot(h_hi_pred, h_hi_par)))
    return dataclasses.replace(
        m, lower=lower, upper=upper,
        interval="predictive interval given (theta, alpha), widened by their Laplace-"
                 "approximation band (log-scale half-widths in quadrature)")
