"""tau1, tau2 and the per-cell predictive inside the mixed-membership samplers (spec E.3).

Given the global parameters of one saved iteration, the N - n non-sampled records are
i.i.d. from the model's predictive p(x), so U_x = F_x - f_x ~ Bin(N - n, p(x)) for every
observed cell x:

* ``mc`` (BR App. B): p(x) by Monte Carlo over M membership draws (eq 10); then
  P(U_x = 0) = (1 - p)^E (eq 9), with E = N - n, or E = (N - n) / (1 - omega) with
  structural zeros (eq 11), and E[1/F_x] = (1 - (1 - p)^(E+1)) / ((E + 1) p) for sample
  uniques (the binomial identity of spec E.3). Cells with f >= 2 use the Poisson law with
  the same P(U = 0), mean lambda = -E log(1 - p) (relative difference O(p));
* ``sampling`` (MVR12): the N - n records are generated one by one (memory O(cells)) and
  counted in the observed cells; with structural zeros, generated records that fall in a
  structural zero are discarded until N - n admissible ones exist.

:class:`PosteriorMixturePredictive` is the posterior predictive of U: the average over saved
iterations of these laws, kept as per-cell posterior expectations plus a bounded bank of
draws for sampling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..core.predictive import CellPredictive
from . import _mm_kernels as kern

_JIT = {"cache": True, "nogil": True}
_EXPANSION_FROM = 600.0


def binomial_moments(p: np.ndarray, f: np.ndarray, exponent: float) -> dict[str, np.ndarray]:
    """Per-cell P(U=0), E[1/F], E[1/F^2], E[U], E[U^2] given cell probabilities ``p``."""
    p = np.clip(np.asarray(p, float), 0.0, 1.0 - 1e-16)
    logq = np.log1p(-p)
    p0 = np.exp(exponent * logq)
    lam = -exponent * logq
    inv, inv2 = poisson_inverse_moments(f, lam)
    # sample uniques: E[1/F] by the binomial identity, with its p -> 0 limit
    one = f == 1
    e1 = exponent + 1.0
    x = e1 * p
    big = one & (x >= 1e-8)
    small = one & (x < 1e-8)
    inv[big] = -np.expm1(e1 * logq[big]) / x[big]
    inv[small] = 1.0 - 0.5 * exponent * p[small]
    mean = exponent * p
    second = mean * (1.0 - p) + mean**2
    return {"p0": p0, "inv": inv, "inv2": inv2, "mean": mean, "second": second, "lam": lam}


@njit(**_JIT)
def poisson_inverse_moments(f, lam):
    """E[1/(f+U)] and E[1/(f+U)^2] for U ~ Poisson(lam), elementwise.

    Below lam = 600 the pmf series (positive terms, from j = 0 up to
    lam + 12 sqrt(lam) + 30 and on while terms matter); above, the fourth-order expansion
    about the mean of :mod:`sdcrisk.core._poisson` (relative error about 2e-8 at 600, falling as
    lam^-3).
    """
    n = f.shape[0]
    inv = np.empty(n)
    inv2 = np.empty(n)
    for c in range(n):
        m = lam[c]
        fc = f[c]
        if m < 1e-12:
            inv[c] = 1.0 / fc
            inv2[c] = 1.0 / (fc * fc)
        elif m > _EXPANSION_FROM:
            a = fc + m
            m4 = 3.0 * m * m + m
            inv[c] = 1 / a + m / a**3 - m / a**4 + m4 / a**5
            inv2[c] = 1 / a**2 + 3 * m / a**4 - 4 * m / a**5 + 5 * m4 / a**6
        else:
            term = np.exp(-m)
            s1 = term / fc
            s2 = term / (fc * fc)
            stop = m + 12.0 * np.sqrt(m) + 30.0
            j = 0
            while True:
                term *= m / (j + 1)
                d = fc + j + 1
                s1 += term / d
                s2 += term / (d * d)
                j += 1
                if j >= stop and term < 1e-17 * s1:
                    break
            inv[c] = s1
            inv2[c] = s2
    return inv, inv2


def count_moments(u: np.ndarray, f: np.ndarray) -> dict[str, np.ndarray]:
    """The same per-cell quantities from one draw of the unseen counts U."""
    u = np.asarray(u, float)
    big_f = f + u
    return {"p0": (u == 0).astype(float), "inv": 1.0 / big_f, "inv2": 1.0 / big_f**2,
            "mean": u, "second": u**2}


# --- population sampling ---------------------------------------------------------------------
def cell_hashes(codes: np.ndarray) -> np.ndarray:
    """64-bit polynomial hashes of cells (rows of level codes), wrapping arithmetic."""
    return _hash_rows(np.ascontiguousarray(codes, dtype=np.int64))


@njit(**_JIT)
def _hash_rows(codes):
    out = np.empty(codes.shape[0], np.int64)
    for r in range(codes.shape[0]):
        h = np.int64(1469598103934665603)
        for j in range(codes.shape[1]):
            h = h * np.int64(1099511628211) + np.int64(codes[r, j] + 1)
        out[r] = h
    return out


@njit(**_JIT)
def population_counts(rng, total, weights, theta_ext, offs, shape, rate, fixed_alpha,
                      sorted_hash, order, cell_codes, pat_fixed, pat_offs, pat_table, sizes):
    """Counts, per observed cell, of ``total`` admissible records drawn from the predictive.

    Each record: alpha ~ Gamma(shape, rate) (or ``fixed_alpha``), pi ~ Dir(alpha weights),
    then for each variable z ~ pi and x ~ theta_ext[z]. Records in a structural zero (any
    pattern table hit) are discarded and do not count toward ``total``.
    """
    L, D = theta_ext.shape
    J = offs.shape[0] - 1
    counts = np.zeros(cell_codes.shape[0], np.int64)
    pi = np.empty(L)
    conc = np.empty(L)
    w = np.empty(D)
    x = np.empty(J, np.int64)
    nolog = np.empty(0)
    made = 0
    P = pat_fixed.shape[0]
    while made < total:
        al = fixed_alpha if fixed_alpha > 0 else kern.gamma_variate(rng, shape) / rate
        for k in range(L):
            conc[k] = al * weights[k]
        kern.dirichlet_into(rng, conc, L, pi, nolog)
        h = np.int64(1469598103934665603)
        for j in range(J):
            z = kern.categorical(rng, pi, L)
            d = offs[j + 1] - offs[j]
            for v in range(d):
                w[v] = theta_ext[z, offs[j] + v]
            x[j] = kern.categorical(rng, w, d)
            h = h * np.int64(1099511628211) + np.int64(x[j] + 1)
        inadmissible = False
        for p in range(P):
            code = 0
            for j in range(J):
                if pat_fixed[p, j]:
                    code = code * sizes[j] + x[j]
            if pat_table[pat_offs[p] + code]:
                inadmissible = True
                break
        if inadmissible:
            continue
        made += 1
        pos = np.searchsorted(sorted_hash, h)
        while pos < sorted_hash.shape[0] and sorted_hash[pos] == h:
            cell = order[pos]
            same = True
            for j in range(J):
                if cell_codes[cell, j] != x[j]:
                    same = False
                    break
            if same:
                counts[cell] += 1
                break
            pos += 1
    return counts


# --- the posterior predictive ------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PosteriorMixturePredictive(CellPredictive):
    """Posterior predictive of U_k: the mixture over saved MCMC iterations.

    Parameters
    ----------
    f : ndarray
        Sample counts of the observed cells.
    p0, inv, inv2, mean_, second : ndarray
        Posterior means over the saved iterations of P(U=0), E[1/F], E[1/F^2], E[U], E[U^2].
    bank : ndarray (draws, cells)
        Poisson means (``bank_kind="poisson"``) or unseen counts (``"counts"``) at evenly
        spaced saved iterations, for :meth:`sample`.
    law_name : str
        Description for results.
    """

    f: np.ndarray
    p0: np.ndarray
    inv: np.ndarray
    inv2: np.ndarray
    mean_: np.ndarray
    second: np.ndarray
    bank: np.ndarray
    bank_kind: str = "poisson"
    unobserved_prob_one: float | None = None
    law_name: str = "posterior mixture"

    @property
    def law(self) -> str:
        return self.law_name

    @staticmethod
    def _sel(a, cells):
        return a if cells is None else a[cells]

    def prob_zero(self, cells=None):
        return np.array(self._sel(self.p0, cells), float)

    def expected_inverse(self, cells=None):
        return np.array(self._sel(self.inv, cells), float)

    def expected_inverse_square(self, cells=None):
        return np.array(self._sel(self.inv2, cells), float)

    def mean(self, cells=None):
        return np.array(self._sel(self.mean_, cells), float)

    def variance(self, cells=None):
        m = self._sel(self.mean_, cells)
        return np.maximum(self._sel(self.second, cells) - m**2, 0.0)

    def sample(self, rng, size, cells=None):
        rows = rng.integers(0, self.bank.shape[0], size=size)
        sel = self.bank[rows] if cells is None else self.bank[rows][:, cells]
        if self.bank_kind == "counts":
            return sel.astype(np.int64)
        return rng.poisson(sel)
