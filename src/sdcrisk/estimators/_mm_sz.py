"""Structural-zero data augmentation for the mixed-membership samplers (spec E.4.3-E.4.4).

The observed records are a truncated sample of the unrestricted model; the N_0 records that
fell into structural-zero cells are latent. At the start of every iteration:

7. ``p_c`` for each disjoint condition c, by Monte Carlo over M membership draws;
8. ``N_0 ~ NegBin(n, 1 - omega)`` (failures before the n-th success), omega = sum_c p_c,
   and ``(n_c) | N_0 ~ Multinomial(N_0, p_c / omega)``;
9. the augmented sufficient statistics: either simulated records (``method="augment"``,
   BR section 4.1 step 9) or their Monte Carlo expectations (``method="approximate"``, BR
   App. C): profile counts ``aug_c`` and, for the HDP, table counts ``aug_m`` (components
   0..K-1, then the "new" remainder).

The model is described to these functions by its membership weights and profiles:
``weights`` (L,) and ``theta_ext`` (L, D); for the HDP, L = K + 1 and the last row is the
"new component" profile (uniform 1/d_j); for the parametric model L = K.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numba import njit

from . import _mm_kernels as kern

_JIT = {"cache": True, "nogil": True}

FreeCounts = Literal["uniform", "indicator", "joint"]


@dataclass(frozen=True, eq=False)
class SzData:
    """Disjoint structural-zero conditions in kernel form."""

    conds: np.ndarray       # (C, J) codes, -1 free
    cols: np.ndarray        # (C, J) flattened columns of the fixed values, padded with 0
    lens: np.ndarray        # (C,) number of fixed variables
    nfree: np.ndarray       # (C,) number of free variables
    fixed_at: np.ndarray    # (C, D) 1.0 where condition c fixes column col
    free_var: np.ndarray    # (C, J) 1.0 where variable j is free in c
    pat_fixed: np.ndarray   # membership tables (see StructuralZeros.patterns)
    pat_offs: np.ndarray
    pat_table: np.ndarray

    @classmethod
    def build(cls, sz, offs: np.ndarray) -> SzData:
        conds = sz.conditions
        C, J = conds.shape
        fixed = conds >= 0
        lens = fixed.sum(axis=1).astype(np.int64)
        cols = np.zeros((C, max(1, int(lens.max(initial=0)))), dtype=np.int64)
        fixed_at = np.zeros((C, int(offs[-1])))
        for c in range(C):
            js = np.flatnonzero(fixed[c])
            cols[c, :len(js)] = offs[js] + conds[c, js]
            fixed_at[c, cols[c, :len(js)]] = 1.0
        pf, po, pt = sz.patterns()
        return cls(conds=conds, cols=cols, lens=lens, nfree=(J - lens).astype(np.int64),
                   fixed_at=fixed_at, free_var=(~fixed).astype(float), pat_fixed=pf,
                   pat_offs=po, pat_table=pt)


@dataclass(frozen=True)
class Augmentation:
    """Augmented statistics of one iteration (rows follow the model's L components)."""

    aug_c: np.ndarray     # (L, D) profile counts
    aug_m: np.ndarray     # (L,) table counts (HDP; zeros for the parametric model)
    n_aug: int            # N_0
    omega: float          # Monte Carlo estimate of sum_c p_c


def condition_probs(marg: np.ndarray, sz: SzData) -> np.ndarray:
    """p_c (spec E.4.3 step 7) from the per-draw marginals ``marg`` (M, D)."""
    return kern.condition_probabilities(marg, sz.cols, sz.lens)


def draw_counts(rng: np.random.Generator, n: int, p_c: np.ndarray) -> tuple[int, np.ndarray]:
    """Step 8: N_0 ~ NegBin(n, 1 - omega), (n_c) | N_0 ~ Multinomial(N_0, p_c / omega)."""
    omega = float(p_c.sum())
    if omega <= 0:
        return 0, np.zeros(len(p_c), dtype=np.int64)
    success = max(1.0 - omega, 1e-12)
    n0 = int(rng.negative_binomial(n, success))
    if n0 == 0:
        return 0, np.zeros(len(p_c), dtype=np.int64)
    return n0, rng.multinomial(n0, p_c / omega).astype(np.int64)


def approximate(W: np.ndarray, theta_ext: np.ndarray, marg: np.ndarray, n_c: np.ndarray,
                sz: SzData, offs: np.ndarray, dsize: np.ndarray, conc: np.ndarray | None,
                free_counts: FreeCounts) -> tuple[np.ndarray, np.ndarray]:
    """BR App. C: expected augmented counts (item 1) and table counts (item 2, eq 12).

    Parameters
    ----------
    W : (M, L) membership draws; theta_ext : (L, D); marg = W @ theta_ext.
    n_c : (C,) augmented records per condition.
    conc : (M, L) CRP concentrations for the table counts, or None (no tables).
    free_counts : {"uniform", "indicator", "joint"}
        Weight of category x of a free variable (spec H.1.4): 1/d_j (BR's code), 1 (the
        paper's indicator), or the model's joint E[pi_k theta_kj(x)] in place of w r.

    Returns
    -------
    aug_c : (L, D), rounded; aug_m : (L,), rounded (zeros when ``conc`` is None).

    Notes
    -----
    The responsibilities r_mkx = W_mk theta_kx / marg_mx are kept as an (D, M, L) array, so
    that the sums over a condition's fixed columns in :func:`_approx_tables` run over
    contiguous memory (M L values at a time).
    """
    M, L = W.shape
    var_of = np.repeat(np.arange(len(dsize)), np.diff(offs))
    resp_t, mean_r = _responsibilities(np.ascontiguousarray(W), np.ascontiguousarray(theta_ext),
                                       np.ascontiguousarray(marg))
    nc = n_c.astype(float)
    fixed_w = nc @ sz.fixed_at                          # (D,) sum_c n_c I(x = c_j)
    free_w = (nc @ sz.free_var)[var_of]                 # (D,) sum_c n_c I(j free in c)
    if free_counts == "uniform":
        free_part = mean_r * (free_w / dsize[var_of])
    elif free_counts == "indicator":
        free_part = mean_r * free_w
    else:
        joint = (W[:, :, None] * theta_ext[None, :, :]).mean(axis=0)
        free_part = joint * free_w
    aug_c = np.rint(mean_r * fixed_w + free_part)
    if conc is None:
        return aug_c, np.zeros(L)
    active = np.flatnonzero(n_c > 0)
    aug_m = _approx_tables(resp_t, W, conc, sz.cols[active], sz.lens[active],
                           sz.nfree[active], nc[active], len(dsize))
    return aug_c, np.rint(aug_m)


@njit(**_JIT)
def _responsibilities(W, theta, marg):
    """r[x, m, k] = W_mk theta_kx / marg_mx (0 where marg is 0) and its mean over m (L, D)."""
    M, L = W.shape
    D = theta.shape[1]
    resp = np.empty((D, M, L))
    total = np.zeros((L, D))
    for m in range(M):
        for k in range(L):
            wk = W[m, k]
            for x in range(D):
                den = marg[m, x]
                # marg is a sum of such terms, so it is 0 only when they all are: 0/0 -> 0
                v = wk * theta[k, x] / den if den != 0.0 else 0.0
                resp[x, m, k] = v
                total[k, x] += v
    return resp, total / M


@njit(**_JIT)
def _approx_tables(resp, W, conc, cols, lens, nfree, nc, J):
    """sum_c n_c mean_m E_CRP(round(sum_j rho_ckj); conc_mk) (BR App. C eq 12).

    rho_ckj is the responsibility r_kj(c_j) for a fixed variable and pi_k for a free one;
    E_CRP(t; a) = sum_{l=1..t} a / (a + l - 1) is the expected number of tables of a CRP.
    ``resp`` is (D, M, L), so each sum is a vector addition over the M L (draw, component)
    pairs; conditions are visited in the lexicographic order of their fixed columns and the
    partial sums over a common prefix of columns are shared (the 557 NY conditions have
    3,374 fixed columns but 1,230 distinct prefixes). Pairs whose rounded sum is 0 add
    nothing and are skipped (about 70% on the NY data).
    """
    M, L = W.shape
    C = cols.shape[0]
    ML = M * L
    width = cols.shape[1]
    etab = np.zeros((ML, J + 1))
    for m in range(M):
        for k in range(L):
            a = conc[m, k]
            acc = 0.0
            for t in range(1, J + 1):
                if a > 0:
                    # a + (t - 1), not (a + t) - 1: the latter is 0 for a below 1e-16
                    acc += a / (a + (t - 1.0))
                etab[m * L + k, t] = acc
    flat = resp.reshape(resp.shape[0], ML)
    w = W.ravel()
    # lexicographic order of the fixed columns (rows padded with -1 beyond their length)
    keys = np.full((C, width), -1, np.int64)
    for c in range(C):
        for t in range(lens[c]):
            keys[c, t] = cols[c, t]
    order = np.arange(C)
    for t in range(width - 1, -1, -1):
        order = order[np.argsort(keys[order, t], kind="mergesort")]
    prefix = np.zeros((width + 1, ML))     # prefix[t]: sum of the first t fixed columns
    total = np.zeros(ML)
    prev = -1
    for c in order:
        common = 0
        if prev >= 0:
            while (common < lens[c] and common < lens[prev]
                   and cols[c, common] == cols[prev, common]):
                common += 1
        for t in range(common, lens[c]):
            r = flat[cols[c, t]]
            src = prefix[t]
            dst = prefix[t + 1]
            for q in range(ML):
                dst[q] = src[q] + r[q]
        prev = c
        f = float(nfree[c])
        weight = nc[c]
        base = prefix[lens[c]]
        for q in range(ML):
            v = base[q] + f * w[q]
            if v >= 0.5:
                nt = int(np.rint(v))
                if nt > J:
                    nt = J
                total[q] += weight * etab[q, nt]
    out = np.zeros(L)
    for m in range(M):
        for k in range(L):
            out[k] += total[m * L + k] / M
    return out


@njit(**_JIT)
def simulate(rng, n_c, conds, offs, weights, theta_ext, shape, rate, fixed_alpha, top_conc,
             compat, tables):
    """BR section 4.1 step 9: simulate the augmented records, return (aug_c, aug_m).

    Each augmented record draws its concentration (Gamma(shape, rate), or ``fixed_alpha``)
    and memberships pi ~ Dir(alpha weights) from the prior (spec H.1.7). A fixed variable
    keeps its value and draws z with probability proportional to pi_k theta_kj(c_j); a free
    one draws z ~ pi, then x ~ theta_z. Table counts (``tables``) use the concentration
    alpha weights_k, or ``top_conc`` weights_k with ``compat`` (BR's code).
    """
    L, D = theta_ext.shape
    J = conds.shape[1]
    aug_c = np.zeros((L, D))
    aug_m = np.zeros(L)
    pi = np.empty(L)
    conc = np.empty(L)
    w = np.empty(max(L, D))
    cnt = np.zeros(L, np.int64)
    nolog = np.empty(0)
    for c in range(conds.shape[0]):
        for _ in range(n_c[c]):
            al = fixed_alpha if fixed_alpha > 0 else kern.gamma_variate(rng, shape) / rate
            for k in range(L):
                conc[k] = al * weights[k]
                cnt[k] = 0
            kern.dirichlet_into(rng, conc, L, pi, nolog)
            for j in range(J):
                if conds[c, j] >= 0:
                    col = offs[j] + conds[c, j]
                    for k in range(L):
                        w[k] = pi[k] * theta_ext[k, col]
                    z = kern.categorical(rng, w, L)
                else:
                    z = kern.categorical(rng, pi, L)
                    d = offs[j + 1] - offs[j]
                    for v in range(d):
                        w[v] = theta_ext[z, offs[j] + v]
                    col = offs[j] + kern.categorical(rng, w, d)
                aug_c[z, col] += 1.0
                cnt[z] += 1
            if tables:
                base = top_conc if compat else al
                for k in range(L):
                    if cnt[k] > 0:
                        aug_m[k] += kern.crp_tables(rng, cnt[k], base * weights[k])
    return aug_c, aug_m
