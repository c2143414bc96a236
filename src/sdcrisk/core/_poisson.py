"""Numerics of a Poisson predictive law U ~ Poisson(m) of the unseen count (log-linear models).

``E[1/(f+U)^p]`` for p = 1, 2: closed form for f = 1, p = 1 (``(1 - e^-m)/m``, spec C.2's h2);
for f = 1, p = 2, ``e^-m (Ei(m) - gamma - ln m) / m`` by its power series below m = 40 and
Ei's asymptotic series above; for p = 1, f >= 2 with m >= f the recursion
I_f = (1 - (f-1) I_{f-1}) / m (stable there: each step multiplies earlier errors by
(f-1)/m <= 1). Otherwise (f > m for p = 1, f >= 2 for p = 2) the pmf series for m <= 600
(positive terms, run past the mode); up to m = 1e7 the pmf summed in log space over mean +- 40
sd; beyond, a fourth-order expansion about the mean (its relative error falls like m^-3: about
2e-8 at m = 600, of order 1e-12 at m = 1e7, where a cell risk is below 1e-7)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["expected_inverse", "expected_inverse_square"]

_SERIES_MAX_MEAN = 600.0
_WINDOW_MAX_MEAN = 1e7


def _series(f: np.ndarray, m: np.ndarray, power: int) -> np.ndarray:
    term = np.exp(-m)
    total = term / f**power
    stop = m + 12 * np.sqrt(m) + 30
    active = np.arange(len(f))
    j = 0
    while active.size:
        term[active] *= m[active] / (j + 1)
        total[active] += term[active] / (f[active] + j + 1) ** power
        j += 1
        keep = (j < stop[active]) | (term[active] > 1e-17 * total[active])
        active = active[keep]
    return total


def _window(f: np.ndarray, m: np.ndarray, power: int) -> np.ndarray:
    from scipy.special import gammaln

    out = np.empty_like(m)
    for i, (fi, mi) in enumerate(zip(f, m, strict=True)):
        half = 40 * np.sqrt(mi) + 50
        j = np.arange(max(0.0, np.floor(mi - half)), np.ceil(mi + half) + 1)
        logpmf = j * np.log(mi) - mi - gammaln(j + 1)
        out[i] = np.sum(np.exp(logpmf) / (fi + j) ** power)
    return out


def _expansion(f: np.ndarray, m: np.ndarray, power: int) -> np.ndarray:
    # E g(U) ~ g(m) + g'' mu2/2 + g''' mu3/6 + g'''' mu4/24, Poisson central moments
    # mu2 = mu3 = m, mu4 = 3m^2 + m, with g(x) = (f + x)^-power
    a = f + m
    if power == 1:
        return 1 / a + m / a**3 - m / a**4 + (3 * m**2 + m) / a**5
    return 1 / a**2 + 3 * m / a**4 - 4 * m / a**5 + 5 * (3 * m**2 + m) / a**6


def _recursion(f: np.ndarray, m: np.ndarray) -> np.ndarray:
    """E[1/(f+U)] by I_k = (1 - (k-1) I_{k-1}) / m from I_1 = (1 - e^-m)/m (m >= f)."""
    out = -np.expm1(-m) / m
    active = np.flatnonzero(f > 1)
    k = 2
    while active.size:
        out[active] = (1 - (k - 1) * out[active]) / m[active]
        active = active[f[active] > k]
        k += 1
    return out


#: 1/(k k!), k = 1..160: the series S(m) = sum_k m^k/(k k!) = Ei(m) - gamma - ln m, summed by
#: Horner's rule below m = 40 (positive terms; the first neglected term is < 1e-17 of the sum)
_EIN_COEFFS = np.array([1.0 / (k * math.factorial(k)) for k in range(1, 161)])
_ASYMPTOTIC_FROM = 40.0
_EIN_TERMS = ((2.0, 24), (10.0, 60), (_ASYMPTOTIC_FROM, 160))
#: k!, k = 0..40: the asymptotic series e^-m Ei(m) ~ (1/m) sum_k k!/m^k from m = 40 (its
#: smallest term, 40!/40^40 < 1e-16, is where it is cut)
_ASYMPTOTIC_COEFFS = np.array([float(math.factorial(k)) for k in range(41)])


def _inverse_square_f1(m: np.ndarray) -> np.ndarray:
    """E[1/(1+U)^2] = e^-m S(m)/m with S(m) = Ei(m) - gamma - ln m, U ~ Poisson(m).

    S's power series by Horner's rule below m = 40 (24, 60 or 160 terms by the range of m);
    from m = 40 the asymptotic series of Ei, e^-m S(m)/m = sum_k k!/m^(k+2) - e^-m (gamma +
    ln m)/m. (The closed form through Ei cancels badly at small m; either series is exact to
    a few ulps where it is used, checked against mpmath in the tests.)
    """
    out = np.empty_like(m)
    lo = 0.0
    for hi, terms in _EIN_TERMS:
        sel = (m >= lo) & (m < hi)
        lo = hi
        if not sel.any():
            continue
        x = m[sel]
        acc = np.full_like(x, _EIN_COEFFS[terms - 1])
        for c in _EIN_COEFFS[terms - 2::-1]:
            acc *= x
            acc += c
        out[sel] = np.exp(-x) * acc
    big = m >= _ASYMPTOTIC_FROM
    if big.any():
        x = m[big]
        inv = 1.0 / x
        acc = np.full_like(x, _ASYMPTOTIC_COEFFS[-1])
        for c in _ASYMPTOTIC_COEFFS[-2::-1]:
            acc *= inv
            acc += c
        out[big] = acc * inv**2 - np.exp(-x) * (np.euler_gamma + np.log(x)) * inv
    return out


def _evaluate(f, m, power: int) -> np.ndarray:
    f, m = np.broadcast_arrays(np.asarray(f, float), np.asarray(m, float))
    f, m = f.ravel(), m.ravel()
    out = np.empty_like(m)
    tiny = m < 1e-12
    out[tiny] = 1.0 / f[tiny] ** power
    if power == 1:
        closed = ~tiny & (f == 1)
        out[closed] = -np.expm1(-m[closed]) / m[closed]
        rec = ~tiny & (f > 1) & (m >= f)
        if rec.any():
            out[rec] = _recursion(f[rec], m[rec])
        closed = closed | rec
    else:
        closed = ~tiny & (f == 1)
        if closed.any():
            out[closed] = _inverse_square_f1(m[closed])
    huge = ~tiny & ~closed & (m > _WINDOW_MAX_MEAN)
    out[huge] = _expansion(f[huge], m[huge], power)
    big = ~tiny & ~closed & ~huge & (m > _SERIES_MAX_MEAN)
    if big.any():
        out[big] = _window(f[big], m[big], power)
    mid = ~tiny & ~closed & ~huge & ~big
    if mid.any():
        out[mid] = _series(f[mid], m[mid], power)
    return out


def expected_inverse(f, m) -> np.ndarray:
    """E[1/(f + U)], U ~ Poisson(m), elementwise (f >= 1, m >= 0)."""
    return _evaluate(f, m, 1)


def expected_inverse_square(f, m) -> np.ndarray:
    """E[1/(f + U)^2], U ~ Poisson(m), elementwise."""
    return _evaluate(f, m, 2)
