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


def draw_counts(rng: np.random.Generator, n: int, p_c: np.ndarray, cap: float = np.inf
                ) -> tuple[int, np.ndarray]:
    """Step 8: N_0 ~ NegBin(n, 1 - omega), (n_c) | N_0 ~ Multinomial(N_0, p_c / omega).

    N_0 is capped at ``cap`` records (BR's code stops simulating after 100 n of them).
    """
    omega = float(p_c.sum())
    if omega <= 0:
        return 0, np.zeros(len(p_c), dtype=np.int64)
    success = max(1.0 - omega, 1e-12)
    n0 = int(min(rng.negative_binomial(n, success), cap))
    if n0 == 0:
        return 0, np.zeros(len(p_c), dtype=np.int64)
    return n0, rng.multinomial(n0, p_c / omega).astype(np.int64)


def approximate(W: np.ndarray, theta_ext: np.ndarray, marg: np.ndarray, n_c: np.ndarray,
                sz: SzData, offs: np.ndarray, dsize: np.ndarray, conc: np.ndarray | None,
                free_counts: FreeCounts, tilt: bool = False
                ) -> tuple[np.ndarray, np.ndarray]:
    """BR App. C: expected augmented counts (item 1) and table counts (item 2, eq 12).

    Parameters
    ----------
    W : (M, L) membership draws; theta_ext : (L, D); marg = W @ theta_ext.
    n_c : (C,) augmented records per condition.
    conc : (M, L) CRP concentrations for the table counts, or None (no tables).
    free_counts : {"uniform", "indicator", "joint"}
        Weight of category x of a free variable (spec H.1.4): 1/d_j (BR's code), 1 (the
        paper's indicator), or the model's joint E[pi_k theta_kj(x)] in place of w r.
    tilt : bool
        Weight the M draws, for condition c, by P(x in c | pi_m) / sum_m' P(x in c | pi_m')
        (self-normalised importance sampling): expectations over pi given x in c, as the
        model implies, instead of over its prior (BR; spec H.1.7). See
        :func:`tilt_weights`.

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
    if tilt:
        return _approximate_tilted(W, theta_ext, marg, nc, sz, dsize, conc, free_counts,
                                   resp_t, var_of)
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
                           sz.nfree[active], nc[active], len(dsize),
                           np.full((len(active), M), 1.0 / M))
    return aug_c, np.rint(aug_m)


def tilt_weights(marg: np.ndarray, sz: SzData) -> np.ndarray:
    """(C, M) weights of the membership draws given x in condition c.

    w_cm = P(x in c | pi_m) / sum_m' P(x in c | pi_m'), with P(x in c | pi_m) the product
    over c's fixed columns of marg[m] (the unrestricted model's marginals for membership
    draw m); rows whose probabilities are all 0 get 1/M.

    Notes
    -----
    Given pi, a record falls in c with probability P(x in c | pi), so the memberships of a
    record known to be in c have density p(pi) P(x in c | pi) / p_c: drawing them from the
    prior p(pi) (BR; spec E.4.3 step 9, H.1.7) ignores that the record is in c. With prior
    draws pi_1..pi_M, self-normalised importance sampling with these weights estimates any
    expectation given x in c.
    """
    prob = _draw_products(np.ascontiguousarray(marg.T), sz.cols, sz.lens)
    tot = prob.sum(axis=1, keepdims=True)
    M = prob.shape[1]
    safe = np.where(tot > 0, tot, 1.0)
    return np.where(tot > 0, prob / safe, 1.0 / M)


@njit(**_JIT)
def _draw_products(marg_t, cols, lens):
    """out[c, m] = prod_{t < lens[c]} marg_t[cols[c, t], m]."""
    M = marg_t.shape[1]
    C = cols.shape[0]
    out = np.ones((C, M))
    for c in range(C):
        for t in range(lens[c]):
            row = marg_t[cols[c, t]]
            for m in range(M):
                out[c, m] *= row[m]
    return out


def _approximate_tilted(W, theta_ext, marg, nc, sz, dsize, conc, free_counts, resp_t, var_of):
    """App. C with the draws weighted by :func:`tilt_weights` (see :func:`approximate`).

    With v_cm = n_c w_cm: fixed columns get sum_m (sum_{c fixes x} v_cm) r_mk(x); a free
    variable j gets sum_m (sum_{c frees j} v_cm) times r_mk(x) / d_j, r_mk(x) or
    pi_mk theta_kj(x) (``free_counts``); the table counts weight each (c, m) by w_cm.
    With w_cm = 1/M these are the formulas of :func:`approximate`.
    """
    M, L = W.shape
    wt = tilt_weights(marg, sz)                          # (C, M)
    v = nc[:, None] * wt                                  # (C, M)
    fixed_u = sz.fixed_at.T @ v                           # (D, M)
    free_g = (sz.free_var.T @ v)[var_of]                  # (D, M)
    aug_c = np.einsum("xm,xmk->kx", fixed_u, resp_t)
    if free_counts == "joint":
        aug_c += np.einsum("xm,mk->kx", free_g, W) * theta_ext
    else:
        part = np.einsum("xm,xmk->kx", free_g, resp_t)
        aug_c += part / dsize[var_of] if free_counts == "uniform" else part
    aug_c = np.rint(aug_c)
    if conc is None:
        return aug_c, np.zeros(L)
    active = np.flatnonzero(nc > 0)
    aug_m = _approx_tables(resp_t, W, conc, sz.cols[active], sz.lens[active],
                           sz.nfree[active], nc[active], len(dsize),
                           np.ascontiguousarray(wt[active]))
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
def _approx_tables(resp, W, conc, cols, lens, nfree, nc, J, wt):
    """sum_c n_c sum_m wt_cm E_CRP(round(sum_j rho_ckj); conc_mk) (BR App. C eq 12: wt = 1/M).

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
        for m in range(M):
            wm = weight * wt[c, m]
            for q in range(m * L, (m + 1) * L):
                v = base[q] + f * w[q]
                if v >= 0.5:
                    nt = int(np.rint(v))
                    if nt > J:
                        nt = J
                    total[q] += wm * etab[q, nt]
    out = np.zeros(L)
    for m in range(M):
        for k in range(L):
            out[k] += total[m * L + k]
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
                _add_tables(rng, cnt, top_conc if compat else al, weights, aug_m)
    return aug_c, aug_m


@njit(**_JIT)
def _add_tables(rng, cnt, base, weights, aug_m):
    """One augmented record's table counts: aug_m[k] += CRP tables of its cnt[k]
    allocations to k with concentration base * weights[k]."""
    for k in range(weights.shape[0]):
        if cnt[k] > 0:
            aug_m[k] += kern.crp_tables(rng, cnt[k], base * weights[k])


@njit(**_JIT)
def in_structural_zero(x, sizes, pat_fixed, pat_offs, pat_table):
    """Whether the record with level codes ``x`` (J,) falls in a structural zero."""
    J = x.shape[0]
    for p in range(pat_fixed.shape[0]):
        code = 0
        for j in range(J):
            if pat_fixed[p, j]:
                code = code * sizes[j] + x[j]
        if pat_table[pat_offs[p] + code]:
            return True
    return False


@njit(**_JIT)
def simulate_truncated(rng, n, cap, offs, sizes, weights, theta_ext, shape, rate, fixed_alpha,
                       top_conc, compat, tables, pat_fixed, pat_offs, pat_table):
    """Exact steps 8-9: draw records from the unrestricted model until ``n`` are admissible.

    Each record draws its concentration alpha (Gamma(shape, rate), or ``fixed_alpha``) and
    its allocations z_1..z_J from the Polya urn of pi ~ Dir(alpha weights), i.e. with pi
    integrated out: P(z_j = k | z_1..z_{j-1}) = (alpha w_k + #{l < j: z_l = k}) /
    (alpha + j - 1); then x_j ~ theta_ext[z_j]. Admissible records are discarded (the
    observed sample takes their place); the others are the augmented records. Their number
    is NegBin(n, 1 - omega) and, given it, they are i.i.d. from the model conditional on
    the structural zeros, memberships and allocations included: this is spec E.4.3 steps
    8-9 without the approximation of H.1.7 (pi drawn from its prior, untilted by the
    condition). Stops after ``cap`` augmented records (BR's code: 100 n).

    Returns
    -------
    aug_c : (L, D) profile counts; aug_m : (L,) table counts (zeros unless ``tables``),
    with concentration alpha w_k, or ``top_conc`` w_k with ``compat``; n0 : the number of
    augmented records; capped : whether ``cap`` was reached.
    """
    L, D = theta_ext.shape
    J = offs.shape[0] - 1
    aug_c = np.zeros((L, D))
    aug_m = np.zeros(L)
    conc = np.empty(L)
    urn = np.empty(L)
    x = np.empty(J, np.int64)
    zz = np.empty(J, np.int64)
    cnt = np.zeros(L, np.int64)
    admissible = 0
    n0 = 0
    while admissible < n:
        if n0 >= cap:
            return aug_c, aug_m, n0, True
        al = fixed_alpha if fixed_alpha > 0 else kern.gamma_variate(rng, shape) / rate
        for k in range(L):
            conc[k] = al * weights[k]
            cnt[k] = 0
        for j in range(J):
            for k in range(L):
                urn[k] = conc[k] + cnt[k]
            z = kern.categorical(rng, urn, L)
            zz[j] = z
            cnt[z] += 1
            x[j] = kern.categorical(rng, theta_ext[z, offs[j]:offs[j + 1]], offs[j + 1] - offs[j])
        if not in_structural_zero(x, sizes, pat_fixed, pat_offs, pat_table):
            admissible += 1
            continue
        n0 += 1
        for j in range(J):
            aug_c[zz[j], offs[j] + x[j]] += 1.0
        if tables:
            _add_tables(rng, cnt, top_conc if compat else al, weights, aug_m)
    return aug_c, aug_m, n0, False


@njit(**_JIT)
def simulate_truncated_hdp(rng, n, cap, offs, sizes, beta, scal, theta, kk, pi, pi0, alpha,
                           shape, rate, fixed_alpha, top, aug_c, aug_m, pat_fixed, pat_offs,
                           pat_table):
    """The exact augmentation step of the HDP (spec E.4.3 steps 8-9 as a Gibbs step).

    As :func:`simulate_truncated`, records are drawn from the model until ``n`` are
    admissible and the others are the augmented records, but on the HDP's own state, so that
    an allocation to the remainder instantiates a component as the allocation sweeps do
    (:func:`~._mm_kernels.new_component`: beta_0 split by nu ~ Beta(1, alpha_0), every
    observed pi_i0 split when ``pi`` has rows, a profile drawn from its Dir(1) prior, then
    x_j from it). Later augmented records, and the complete-data steps 1-6, see it with its
    profile: the augmented records are a draw from their conditional given (beta, theta,
    alpha_0), not BR's aggregated remainder with a uniform profile. A candidate record that
    turns out admissible is discarded with the components it created. Each record's
    concentration is drawn from Gamma(shape, rate) (or ``fixed_alpha``); its table counts use
    alpha beta_k (or alpha_0 beta_k with ``top``, BR's code).

    ``beta``, ``theta`` (rows), ``aug_c``, ``aug_m`` need spare capacity beyond K = kk[0]:
    when it runs out, further remainder allocations are counted in the aggregated remainder
    as BR's App. C does (their tables are returned, their profile counts dropped).

    Returns
    -------
    n0 : augmented records; capped : whether ``cap`` was reached; m0 : tables in the
    aggregated remainder (0 unless the capacity ran out).
    """
    J = offs.shape[0] - 1
    D = theta.shape[1]
    capk = beta.shape[0] - 1
    for k in range(capk + 1):
        aug_m[k] = 0.0
        for col in range(D):
            aug_c[k, col] = 0.0
    x = np.empty(J, np.int64)
    zz = np.empty(J, np.int64)
    cnt = np.zeros(capk + 1, np.int64)
    # components visited in decreasing order of beta (new ones appended), so that the
    # linear scan of the urn stops early; the urn's total is known (sum beta + beta_0 = 1)
    order = np.empty(capk + 1, np.int64)
    K = kk[0]
    order[:K] = np.argsort(-beta[:K])
    mass = scal[0]
    for k in range(K):
        mass += beta[k]
    admissible = 0
    n0 = 0
    m0 = 0.0
    while admissible < n:
        if n0 >= cap:
            return n0, True, m0
        K = kk[0]
        k_start = K
        al = fixed_alpha if fixed_alpha > 0 else kern.gamma_variate(rng, shape) / rate
        rem = 0
        for j in range(J):
            # Polya urn of pi ~ Dir(al beta): weights al beta_k + cnt_k, remainder last
            u = rng.random() * (al * mass + j)
            acc = 0.0
            z = K
            for t in range(K):
                k = order[t]
                acc += al * beta[k] + cnt[k]
                if u < acc:
                    z = k
                    break
            if z == K:
                if K < capk and rem == 0:
                    kern.new_component(rng, K, pi, pi0, beta, scal, alpha)
                    kern.profile_prior_row(rng, theta, K, offs, -1)
                    cnt[K] = 0
                    order[K] = K
                    K += 1
                else:
                    z = -1                 # the aggregated remainder (capacity ran out)
            if z >= 0:
                zz[j] = z
                cnt[z] += 1
                x[j] = kern.categorical(rng, theta[z, offs[j]:offs[j + 1]],
                                        offs[j + 1] - offs[j])
            else:
                zz[j] = -1
                rem += 1
                x[j] = int(rng.random() * (offs[j + 1] - offs[j]))
        if not in_structural_zero(x, sizes, pat_fixed, pat_offs, pat_table):
            admissible += 1
            # discard the record and the components it created
            for k in range(k_start, K):
                scal[0] += beta[k]
                beta[k] = 0.0
                for i in range(pi.shape[0]):
                    pi0[i] += pi[i, k]
                    pi[i, k] = 0.0
            for k in range(K):
                cnt[k] = 0
            continue
        kk[0] = K
        n0 += 1
        base = scal[1] if top else al
        for j in range(J):
            if zz[j] >= 0:
                aug_c[zz[j], offs[j] + x[j]] += 1.0
        for k in range(K):
            if cnt[k] > 0:
                aug_m[k] += kern.crp_tables(rng, cnt[k], base * beta[k])
                cnt[k] = 0
        if rem > 0:
            m0 += kern.crp_tables(rng, rem, base * scal[0])
    return n0, False, m0
