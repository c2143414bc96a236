"""Numba kernels of the Gaussian-copula model: normal CDF and quantile, bivariate normal CDF
on a grid of thresholds, and Genz's separation-of-variables quasi-Monte-Carlo for
multivariate normal rectangle probabilities (candidates.md L.3).

Written from the published algorithms:

- the bivariate normal CDF from Sheppard's / Plackett's identity
  Phi2(h, k; r) = Phi(h) Phi(k) + (1 / 2 pi) int_0^{asin r} exp(-(h^2 - 2 h k sin t + k^2)
  / (2 cos^2 t)) dt, integrated by Gauss-Legendre (the route of Genz 2004, Statist. Comput.
  14, 251-260, without its high-correlation expansion: more nodes instead);
- the normal quantile from the Abramowitz & Stegun 26.2.23 rational start (|error| < 4.5e-4)
  refined by two Halley steps on Phi(x) - u (relative error near machine precision);
- the rectangle probability P(a < Z < b), Z ~ N(0, Sigma), by Genz (1992, J. Comput. Graph.
  Statist. 1, 141-149): after a Cholesky factor L of Sigma, with variables sorted per cell by
  their marginal interval probability (narrowest first, Genz & Bretz 2009 sec. 4.1.3),
  p = E_w[prod_i (e_i - d_i)] with d_i, e_i = Phi((a_i or b_i - sum_{j<i} L_ij y_j) / L_ii),
  y_j = Phi^-1(d_j + w_j (e_j - d_j)), w uniform on [0, 1]^(d-1): a d-1 dimensional smooth
  integrand, averaged over a randomly shifted Richtmyer (Kronecker) lattice
  w_k = frac(k sqrt(prime_j) + shift_j) (Genz & Bretz 2009 sec. 4.2.2).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

_JIT = {"cache": True, "nogil": True}

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
#: the first primes, whose square roots generate the Richtmyer lattice
PRIMES = np.array([2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71,
                   73, 79, 83, 89, 97, 101, 103, 107, 109, 113], dtype=np.float64)


@njit(**_JIT)
def norm_cdf(x):
    """Phi(x), accurate in the lower tail (erfc)."""
    return 0.5 * math.erfc(-x / _SQRT2)


@njit(**_JIT)
def norm_ppf(u):
    """Phi^-1(u): A&S 26.2.23 start, two Halley steps; -inf / inf at 0 / 1."""
    if u <= 0.0:
        return -np.inf
    if u >= 1.0:
        return np.inf
    q = u if u < 0.5 else 1.0 - u  # exact for u > 0.5 (Sterbenz): refine in the lower tail
    t = math.sqrt(-2.0 * math.log(q))
    x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (
        1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t))
    for _ in range(2):
        e = norm_cdf(x) - q
        dens = _INV_SQRT_2PI * math.exp(-0.5 * x * x)
        if dens <= 0.0:
            break
        step = e / dens
        x = x - step / (1.0 + 0.5 * x * step)
    return x if u < 0.5 else -x


@njit(**_JIT)
def bvn_grid(h, k, r, nodes, weights):
    """Phi2(h_i, k_j; r) for every pair of finite thresholds (array len(h) x len(k)).

    ``nodes``/``weights``: Gauss-Legendre on [-1, 1] for the Sheppard integral over
    t in [0, asin r].
    """
    out = np.empty((h.shape[0], k.shape[0]))
    top = math.asin(r)
    nn = nodes.shape[0]
    sn = np.empty(nn)
    c2 = np.empty(nn)
    wt = np.empty(nn)
    for q in range(nn):
        t = 0.5 * top * (nodes[q] + 1.0)
        sn[q] = math.sin(t)
        c = math.cos(t)
        c2[q] = 2.0 * c * c
        wt[q] = 0.5 * top * weights[q] / (2.0 * math.pi)
    ph = np.empty(h.shape[0])
    pk = np.empty(k.shape[0])
    for i in range(h.shape[0]):
        ph[i] = norm_cdf(h[i])
    for j in range(k.shape[0]):
        pk[j] = norm_cdf(k[j])
    for i in range(h.shape[0]):
        hi = h[i]
        for j in range(k.shape[0]):
            kj = k[j]
            hk = hi * hi + kj * kj
            s = 0.0
            for q in range(nn):
                if c2[q] > 0.0:
                    s += wt[q] * math.exp(-(hk - 2.0 * hi * kj * sn[q]) / c2[q])
            v = ph[i] * pk[j] + s
            out[i, j] = min(max(v, 0.0), min(ph[i], pk[j]))
    return out


@njit(**_JIT)
def _cholesky(a, out):
    """Lower Cholesky factor of a (small) positive definite matrix into ``out``."""
    d = a.shape[0]
    for i in range(d):
        for j in range(i + 1):
            s = a[i, j]
            for m in range(j):
                s -= out[i, m] * out[j, m]
            if i == j:
                out[i, i] = math.sqrt(max(s, 1e-300))
            else:
                out[i, j] = s / out[j, j]
        for j in range(i + 1, d):
            out[i, j] = 0.0


@njit(cache=True, nogil=True, parallel=True)
def genz_rectangles(lower, upper, corr, points, shifts, replicates):
    """P(lower < Z < upper), Z ~ N(0, corr), for every row of the (cells x d) limit arrays.

    ``shifts`` (replicates x d) are the random shifts of the Richtmyer lattice; each replicate
    averages ``points`` lattice points. Returns (cells x replicates) estimates: their mean
    over replicates is the probability, their spread its quasi-Monte-Carlo error. Cells run in
    parallel (numba threads); each cell's result does not depend on the thread.
    """
    n_cells, d = lower.shape
    out = np.zeros((n_cells, replicates))
    sq = np.sqrt(PRIMES[:d])
    for c in prange(n_cells):
        _genz_cell(lower[c], upper[c], corr, points, shifts, replicates, sq, out[c])
    return out


@njit(**_JIT)
def _genz_cell(low, up, corr, points, shifts, replicates, sq, out):
    d = low.shape[0]
    width = np.empty(d)
    for i in range(d):
        width[i] = norm_cdf(up[i]) - norm_cdf(low[i])
        if width[i] <= 0.0:
            return  # an empty interval (a category with zero mass): the rectangle is empty
    # narrowest interval first (Genz & Bretz's ordering heuristic, without the conditional
    # refinement)
    order = np.argsort(width)
    sub = np.empty((d, d))
    chol = np.empty((d, d))
    a = np.empty(d)
    b = np.empty(d)
    y = np.empty(d)
    for i in range(d):
        a[i] = low[order[i]]
        b[i] = up[order[i]]
        for j in range(d):
            sub[i, j] = corr[order[i], order[j]]
    _cholesky(sub, chol)
    d0 = norm_cdf(a[0] / chol[0, 0])
    e0 = norm_cdf(b[0] / chol[0, 0])
    for r in range(replicates):
        acc = 0.0
        for p in range(points):
            di = d0
            ei = e0
            f = ei - di
            for i in range(1, d):
                w = (p + 1) * sq[i - 1] + shifts[r, i - 1]
                w = w - math.floor(w)
                w = abs(2.0 * w - 1.0)  # baker's (tent) transform: smoother periodisation
                y[i - 1] = min(max(norm_ppf(di + w * (ei - di)), -38.0), 38.0)
                s = 0.0
                for j in range(i):
                    s += chol[i, j] * y[j]
                di = norm_cdf((a[i] - s) / chol[i, i])
                ei = norm_cdf((b[i] - s) / chol[i, i])
                f *= ei - di
                if f <= 0.0:
                    break
            if f > 0.0:
                acc += f
        out[r] = acc / points
