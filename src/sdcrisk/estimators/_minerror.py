"""Log-linear risk functions and the minimum-error statistic (methods spec C.2, C.4).

With c = 1 - pi: h1(lambda) = exp(-c lambda) = P(F=1 | f=1); h2(lambda) = (1 - exp(-c lambda)) /
(c lambda) = E[1/F | f=1]. The statistic Z = B / sqrt(v) estimates the bias of tau_hat over all
admissible cells (f = 0 included) with the published sign convention (spec C.4, H.1.3):

    B = sum_k a_k (f_k - mu_k) + b_k [(f_k - mu_k)^2 - f_k],
    v = sum_k a_k^2 mu_k + 2 b_k^2 mu_k^2.

Dense sums run over the fitted table in chunks (no K-long float64 temporaries beyond a chunk);
the f-dependent part is added at the observed cells only.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = ["h1", "h2", "coefficients", "dense_sums", "minimum_error", "minimum_error_dense",
           "minimum_error_observed"]

Target = Literal["tau1", "tau2"]
_CHUNK = 1 << 22


def h1(lam: np.ndarray, pi: float) -> np.ndarray:
    """P(F = 1 | f = 1) = exp(-(1 - pi) lambda)."""
    return np.exp(-(1 - pi) * np.asarray(lam, float))


def h2(lam: np.ndarray, pi: float) -> np.ndarray:
    """E[1/F | f = 1] = (1 - exp(-c lambda)) / (c lambda); 1 at lambda = 0."""
    x = (1 - pi) * np.asarray(lam, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(x > 1e-12, -np.expm1(-x) / np.where(x > 0, x, 1), 1.0 - x / 2)


def coefficients(lam: np.ndarray, pi: float, target: Target) -> tuple[np.ndarray, np.ndarray]:
    """a_k, b_k of the minimum-error statistic (spec C.4 table); 0 where lambda = 0."""
    lam = np.asarray(lam, float)
    c = 1 - pi
    e = np.exp(-lam)
    if target == "tau1":
        a = c * lam * e
        b = c * c / (2 * pi) * lam * e
    else:
        g = np.exp(-pi * lam) * h2(lam, pi)
        a = g - e
        with np.errstate(invalid="ignore", divide="ignore"):
            b = np.where(lam > 0, (g - e * (1 + 0.5 * c * lam)) / (pi * np.where(lam > 0, lam, 1)),
                         0.0)
    zero = lam <= 0
    return np.where(zero, 0.0, a), np.where(zero, 0.0, b)


_KERNEL = None


def dense_sums(flat: np.ndarray, pi: float) -> dict[str, tuple[float, float] | float]:
    """Everything the fit needs from the dense table, in one pass over it.

    ``"tau1"`` and ``"tau2"``: sum_k (-a mu + b mu^2) and sum_k (a^2 mu + 2 b^2 mu^2) of
    each target (:func:`coefficients`); ``"prob_one"``: sum_k x e^{-x} with x = (1 - pi) mu / pi,
    the expected number of population uniques over all cells (spec C.3). One parallel numba
    pass for large tables; NumPy (the reference) for small ones.
    """
    if flat.size < _CHUNK:
        m = flat.astype(np.float64)
        out: dict = {}
        for target in ("tau1", "tau2"):
            a, b = coefficients(m / pi, pi, target)
            out[target] = (float(np.sum(-a * m + b * m * m)),
                           float(np.sum(a * a * m + 2 * b * b * m * m)))
        x = m * ((1 - pi) / pi)
        out["prob_one"] = float(np.sum(x * np.exp(-x)))
        return out
    global _KERNEL
    if _KERNEL is None:
        from numba import get_num_threads, njit, prange

        @njit(parallel=True, cache=True)
        def kernel(flat, pi, n_chunks):
            c = 1.0 - pi
            per = (flat.size + n_chunks - 1) // n_chunks
            out = np.zeros((n_chunks, 5))
            for ch in prange(n_chunks):
                b1 = 0.0
                v1 = 0.0
                b2 = 0.0
                v2 = 0.0
                p1 = 0.0
                for k in range(ch * per, min(flat.size, (ch + 1) * per)):
                    mu = np.float64(flat[k])
                    if mu <= 0.0:
                        continue
                    # two exponentials per cell: lambda = mu + x, so e^-lambda = e^-mu e^-x
                    lam = mu / pi
                    x = c * lam
                    em = np.exp(-mu)
                    ex = np.exp(-x)
                    e = em * ex
                    a = c * lam * e
                    b = c * c / (2.0 * pi) * lam * e
                    b1 += -a * mu + b * mu * mu
                    v1 += a * a * mu + 2.0 * b * b * mu * mu
                    p1 += x * ex
                    if x > 0.5:  # 1 - e^-x loses nothing here; expm1 only for small x
                        hh = (1.0 - ex) / x
                    elif x > 1e-12:
                        hh = -np.expm1(-x) / x
                    else:
                        hh = 1.0 - x / 2.0
                    g = em * hh
                    a = g - e
                    b = (g - e * (1.0 + 0.5 * x)) / (pi * lam)
                    b2 += -a * mu + b * mu * mu
                    v2 += a * a * mu + 2.0 * b * b * mu * mu
                out[ch, 0] = b1
                out[ch, 1] = v1
                out[ch, 2] = b2
                out[ch, 3] = v2
                out[ch, 4] = p1
            return out.sum(axis=0)

        _KERNEL = (kernel, get_num_threads)
    kernel, n_threads = _KERNEL
    t = kernel(flat, float(pi), max(1, 4 * n_threads()))
    return {"tau1": (float(t[0]), float(t[1])), "tau2": (float(t[2]), float(t[3])),
            "prob_one": float(t[4])}


def minimum_error(mu: np.ndarray, observed: np.ndarray, f_observed: np.ndarray, pi: float,
                  target: Target, dense: dict | None = None) -> dict[str, float]:
    """B, v, Z for a fitted table ``mu`` (any shape; flattened) and the observed cells.

    Parameters
    ----------
    mu : ndarray
        Fitted sample means mu_k over all admissible cells (structural zeros are 0 and add 0).
    observed : ndarray of int
        Flat indices of the cells with f > 0.
    f_observed : ndarray
        Their counts.
    dense : dict, optional
        :func:`dense_sums` of ``mu`` when already computed (both targets share one pass).
    """
    flat = mu.reshape(-1)
    return minimum_error_observed(flat[observed], f_observed, pi, target,
                                  dense or dense_sums(flat, pi))


def minimum_error_observed(mu_observed: np.ndarray, f_observed: np.ndarray, pi: float,
                           target: Target, dense: dict) -> dict[str, float]:
    """B, v, Z from the fitted means of the observed cells and :func:`dense_sums` of the
    whole table (however computed: dense, or by blocks in :mod:`._factored`)."""
    base_b, v = dense[target]
    m = np.asarray(mu_observed, np.float64)
    f = np.asarray(f_observed, float)
    a, b = coefficients(m / pi, pi, target)
    big_b = base_b + float(np.sum(a * f + b * (f * f - 2 * f * m - f)))
    z = big_b / np.sqrt(v) if v > 0 else float("nan")
    return {"B": big_b, "v": v, "Z": float(z)}


def minimum_error_dense(f: np.ndarray, mu: np.ndarray, pi: float, target: Target
                        ) -> dict[str, float]:
    """The same from a dense f (for small tables and tests)."""
    f = np.asarray(f, float).ravel()
    obs = np.flatnonzero(f)
    return minimum_error(np.asarray(mu, float).ravel(), obs, f[obs], pi, target)
