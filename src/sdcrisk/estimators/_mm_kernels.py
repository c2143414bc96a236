"""Compiled (numba) kernels of the mixed-membership samplers: primitives and HDP sweeps.

Layout shared by all kernels (records are rows, variables columns):

* ``xo`` (n, J) int64: column index ``offs[j] + x_ij`` of each record's value in the
  flattened level axis of length D = sum_j d_j; ``dsize`` (J,) the d_j as floats;
* profiles ``theta`` (capacity, D): row k holds theta_k1, ..., theta_kJ side by side;
* memberships ``pi`` (n, capacity) with the remainder (uninstantiated mass) in ``pi0``
  (used by the ``sequential`` and ``fast`` allocations only: the default ``marginal`` and
  the ``collapsed`` allocations integrate pi out, and ``marginal`` theta as well, keeping
  profile counts per column, ``counts_t`` (D, capacity));
  global weights ``beta`` (capacity,) with the remainder in ``scal[0]``; ``scal[1]`` is the
  top-level concentration alpha_0; ``kk[0]`` the number K of instantiated components.

Random variates come from the ``np.random.Generator`` passed in (numba shares its state with
the Python object). Dirichlet vectors are drawn through log-gamma variates (a gamma variate
with shape a < 1 as G(a + 1) U^(1/a), in log space) and normalised in log space, so tiny
concentrations never give NaN rows (spec E.2, initialisation note).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_JIT = {"cache": True, "nogil": True}


# --- primitives ------------------------------------------------------------------------------
@njit(**_JIT)
def gamma_variate(rng, a):
    """A Gamma(a, 1) variate (Marsaglia & Tsang 2000; a < 1 as G(a + 1) U^(1/a)).

    For tiny ``a`` the boosted value may underflow to 0: callers that need the logarithm
    of such draws use :func:`log_gamma_variate`.
    """
    if a <= 0.0:
        return 0.0
    boost = 1.0
    if a < 1.0:
        u = rng.random()
        while u == 0.0:
            u = rng.random()
        boost = u ** (1.0 / a)
        a += 1.0
    d = a - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    while True:
        x = rng.standard_normal()
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = rng.random()
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2:
            return d * v * boost
        if np.log(u) < 0.5 * x2 + d * (1.0 - v + np.log(v)):
            return d * v * boost


@njit(**_JIT)
def log_gamma_variate(rng, a):
    """log of a Gamma(a, 1) variate, exact in log space for tiny a; -inf for a <= 0."""
    if a <= 0.0:
        return -np.inf
    if a >= 1.0:
        return np.log(gamma_variate(rng, a))
    u = rng.random()
    while u == 0.0:
        u = rng.random()
    return np.log(gamma_variate(rng, a + 1.0)) + np.log(u) / a


@njit(**_JIT)
def beta_pair(rng, a, b):
    """(v, 1 - v) for v ~ Beta(a, b), both computed without cancellation."""
    la = log_gamma_variate(rng, a)
    lb = log_gamma_variate(rng, b)
    if la == -np.inf and lb == -np.inf:
        return 0.5, 0.5
    d = lb - la
    if d > 0:
        e = np.exp(-d)
        return e / (1.0 + e), 1.0 / (1.0 + e)
    e = np.exp(d)
    return 1.0 / (1.0 + e), e / (1.0 + e)


@njit(**_JIT)
def dirichlet_into(rng, conc, length, out, log_out):
    """out[:length] ~ Dir(conc[:length]); log_out[:length] gets the logs if it is not empty.

    With some concentration >= 1 and no logs wanted, gamma variates are normalised
    directly (a coordinate whose variate underflows has mass below 1e-300 relative to one
    of order 1); otherwise the draw is made and normalised in log space.
    """
    want_log = log_out.shape[0] > 0
    if not want_log:
        big = False
        for k in range(length):
            if conc[k] >= 1.0:
                big = True
                break
        if big:
            s = 0.0
            for k in range(length):
                out[k] = gamma_variate(rng, conc[k])
                s += out[k]
            if s > 0.0:
                for k in range(length):
                    out[k] /= s
                return
    mx = -np.inf
    for k in range(length):
        v = log_gamma_variate(rng, conc[k])
        out[k] = v
        if v > mx:
            mx = v
    if mx == -np.inf:
        for k in range(length):
            out[k] = 1.0 / length
            if want_log:
                log_out[k] = -np.log(length)
        return
    s = 0.0
    for k in range(length):
        v = out[k] - mx
        if want_log:
            log_out[k] = v
        out[k] = np.exp(v)
        s += out[k]
    ls = np.log(s)
    for k in range(length):
        if want_log:
            log_out[k] -= ls
        out[k] /= s


@njit(**_JIT)
def categorical(rng, weights, length):
    """Index drawn with probabilities proportional to weights[:length] (>= 0)."""
    total = 0.0
    for k in range(length):
        total += weights[k]
    u = rng.random() * total
    acc = 0.0
    for k in range(length):
        acc += weights[k]
        if u < acc:
            return k
    # u == total (or total == 0): the last index with positive weight, else the last
    for k in range(length - 1, -1, -1):
        if weights[k] > 0:
            return k
    return length - 1


@njit(**_JIT)
def crp_tables(rng, customers, conc):
    """Number of tables of a CRP(conc) with ``customers`` customers (TJBB06 eq 40)."""
    if customers <= 0:
        return 0
    m = 1
    for seated in range(1, customers):
        # customer seated + 1 opens a table with probability conc / (conc + seated)
        if rng.random() * (conc + seated) < conc:
            m += 1
    return m


@njit(**_JIT)
def profile_prior_row(rng, theta, row, offs, col):
    """theta[row] ~ prod_j Dir(1), with one extra count at column ``col`` (or none if < 0)."""
    J = offs.shape[0] - 1
    buf = np.empty(theta.shape[1])
    nolog = np.empty(0)
    for j in range(J):
        d = offs[j + 1] - offs[j]
        conc = np.ones(d)
        if offs[j] <= col < offs[j + 1]:
            conc[col - offs[j]] += 1.0
        dirichlet_into(rng, conc, d, buf, nolog)
        for v in range(d):
            theta[row, offs[j] + v] = buf[v]


# --- HDP step 1: allocations (spec E.2 step 1) -------------------------------------------
@njit(**_JIT)
def new_component(rng, K, pi, pi0, beta, scal, alpha):
    """Instantiate component K from the remainder: split beta_0 (nu ~ Beta(1, alpha_0)) and
    every pi_i0 (rho_i ~ Beta(alpha_i beta_0 nu, alpha_i beta_0 (1 - nu))); no pi_i when
    ``pi`` has no rows."""
    nu, one_minus_nu = beta_pair(rng, 1.0, scal[1])
    b0 = scal[0]
    beta[K] = nu * b0
    scal[0] = one_minus_nu * b0
    for i in range(pi.shape[0]):
        rho, one_minus_rho = beta_pair(rng, alpha[i] * b0 * nu, alpha[i] * b0 * one_minus_nu)
        pi[i, K] = rho * pi0[i]
        pi0[i] = one_minus_rho * pi0[i]


@njit(**_JIT)
def allocate_sequential(rng, xo, dsize, offs, z, pi, pi0, beta, scal, theta, alpha, kk, start):
    """Exact sequential allocation of z_ij; returns the position where capacity ran out or -1.

    P(z_ij = k) is proportional to pi_ik theta_kj(x_ij) and P(new) to pi_i0 / d_j; a new
    component gets theta_{K+1,j} ~ Dir(1 + e_x) for the variable that created it and Dir(1)
    for the others, so later allocations see its likelihood.
    """
    n, J = xo.shape
    cap = pi.shape[1]
    K = kk[0]
    w = np.empty(cap + 1)
    first = start // J
    for i in range(first, n):
        # nested loops, not one over positions: the integer division costs a third more
        for j in range(start - first * J if i == first else 0, J):
            if K >= cap:
                kk[0] = K
                return i * J + j
            col = xo[i, j]
            for k in range(K):
                w[k] = pi[i, k] * theta[k, col]
            w[K] = pi0[i] / dsize[j]
            k = categorical(rng, w, K + 1)
            if k == K:
                new_component(rng, K, pi, pi0, beta, scal, alpha)
                profile_prior_row(rng, theta, K, offs, col)
                K += 1
            z[i, j] = k
    kk[0] = K
    return -1


@njit(**_JIT)
def allocate_collapsed(rng, xo, dsize, offs, z, beta, scal, theta, alpha, kk, start):
    """Allocations with pi_i integrated out (TJBB06 section 5.3, direct assignment).

    P(z_ij = k | z_i,-j) is proportional to (n_ik^-ij + alpha_i beta_k) theta_kj(x_ij) and
    P(new) to alpha_i beta_0 / d_j; a new component takes nu ~ Beta(1, alpha_0) of beta_0
    and theta_{K+1,j} ~ Dir(1 + e_x). Returns the position where capacity ran out, or -1.
    """
    n, J = xo.shape
    cap = beta.shape[0]
    K = kk[0]
    cnt = np.zeros(cap, np.int64)
    w = np.empty(cap + 1)
    first = start // J
    for i in range(first, n):
        _counts_of(z, i, K, cnt)
        a = alpha[i]
        for j in range(start - first * J if i == first else 0, J):
            if K >= cap:
                kk[0] = K
                return i * J + j
            col = xo[i, j]
            cnt[z[i, j]] -= 1
            for k in range(K):
                w[k] = (cnt[k] + a * beta[k]) * theta[k, col]
            w[K] = a * scal[0] / dsize[j]
            k = categorical(rng, w, K + 1)
            if k == K:
                nu, one_minus_nu = beta_pair(rng, 1.0, scal[1])
                b0 = scal[0]
                beta[K] = nu * b0
                scal[0] = one_minus_nu * b0
                profile_prior_row(rng, theta, K, offs, col)
                cnt[K] = 0
                K += 1
            z[i, j] = k
            cnt[k] += 1
    kk[0] = K
    return -1


@njit(**_JIT)
def allocate_parallel(rng, xo, dsize, z, pi, pi0, theta, kk):
    """All z_ij drawn given the current pi, theta ("new" = -1); returns the number of new."""
    n, J = xo.shape
    K = kk[0]
    w = np.empty(K + 1)
    count = 0
    for i in range(n):
        for j in range(J):
            col = xo[i, j]
            for k in range(K):
                w[k] = pi[i, k] * theta[k, col]
            w[K] = pi0[i] / dsize[j]
            k = categorical(rng, w, K + 1)
            if k == K:
                z[i, j] = -1
                count += 1
            else:
                z[i, j] = k
    return count


@njit(**_JIT)
def resolve_new_round(rng, xo, offs, z, pi, pi0, beta, scal, theta, alpha, kk):
    """One round of BR's vectorised resolution of "new" draws; returns how many remain.

    The first pending entry (row-major) instantiates a component; every other pending entry
    moves to it or stays new with probabilities proportional to (pi_i,new, pi_i0), ignoring
    the likelihood (BR's code; spec H.1.6).
    """
    n, J = z.shape
    K = kk[0]
    first = -1
    for pos in range(n * J):
        if z[pos // J, pos % J] == -1:
            first = pos
            break
    if first < 0:
        return 0
    new_component(rng, K, pi, pi0, beta, scal, alpha)
    i0 = first // J
    profile_prior_row(rng, theta, K, offs, xo[i0, first - i0 * J])
    z[i0, first - i0 * J] = K
    remaining = 0
    for pos in range(first + 1, n * J):
        i = pos // J
        j = pos - i * J
        if z[i, j] != -1:
            continue
        tot = pi[i, K] + pi0[i]
        if tot > 0 and rng.random() * tot < pi[i, K]:
            z[i, j] = K
        else:
            remaining += 1
    kk[0] = K + 1
    return remaining


@njit(**_JIT)
def profile_counts(xo, z, K, aug_c, dsize, offs, counts_t, den_t, inv_t):
    """Fill the statistics of :func:`allocate_marginal` for the current allocations.

    ``counts_t[x, k]`` = c_k(x) + aug_c[k, x] (observed plus augmented records of
    component k with value x in column x), ``den_t[j, k]`` = c_kj. + d_j (whole numbers,
    so exact in floating point) and ``inv_t[j, k]`` = 1 / den_t[j, k], for k < K; all have
    one column per unit of capacity.
    """
    n, J = xo.shape
    D = counts_t.shape[0]
    for x in range(D):
        for k in range(K):
            counts_t[x, k] = aug_c[k, x]
    for i in range(n):
        for j in range(J):
            counts_t[xo[i, j], z[i, j]] += 1.0
    for j in range(J):
        for k in range(K):
            tot = 0.0
            for x in range(offs[j], offs[j + 1]):
                tot += counts_t[x, k]
            den_t[j, k] = tot + dsize[j]
            inv_t[j, k] = 1.0 / den_t[j, k]


@njit(**_JIT)
def allocate_marginal(rng, xo, dsize, z, beta, scal, alpha, kk, counts_t, den_t, inv_t,
                      start):
    """Allocations with pi_i and the profiles theta integrated out (spec E.2 step 1, collapsed).

    P(z_ij = k | rest) is proportional to (n_ik^-ij + alpha_i beta_k) (c_k(x)^-ij + 1) /
    (c_kj.^-ij + d_j), the Dirichlet-multinomial predictive of x = x_ij under component k
    (augmented records included in the counts), and P(new) to alpha_i beta_0 / d_j; a new
    component takes nu ~ Beta(1, alpha_0) of beta_0. ``counts_t``, ``den_t`` and ``inv_t``
    (see :func:`profile_counts`) are kept up to date. Returns the position where capacity
    ran out, or -1.
    """
    n, J = xo.shape
    cap = beta.shape[0]
    D = counts_t.shape[0]
    K = kk[0]
    cnt = np.zeros(cap)
    w = np.empty(cap + 1)
    first = start // J
    for i in range(first, n):
        _counts_of(z, i, K, cnt)
        a = alpha[i]
        for j in range(start - first * J if i == first else 0, J):
            if K >= cap:
                kk[0] = K
                return i * J + j
            col = xo[i, j]
            dj = dsize[j]
            old = z[i, j]
            cnt[old] -= 1.0
            counts_t[col, old] -= 1.0
            den_t[j, old] -= 1.0
            inv_t[j, old] = 1.0 / den_t[j, old]
            c_row = counts_t[col]
            i_row = inv_t[j]
            for k in range(K):
                w[k] = (cnt[k] + a * beta[k]) * (c_row[k] + 1.0) * i_row[k]
            w[K] = a * scal[0] / dj
            k = categorical(rng, w, K + 1)
            if k == K:
                nu, one_minus_nu = beta_pair(rng, 1.0, scal[1])
                b0 = scal[0]
                beta[K] = nu * b0
                scal[0] = one_minus_nu * b0
                cnt[K] = 0.0
                for x in range(D):
                    counts_t[x, K] = 0.0
                for jj in range(J):
                    den_t[jj, K] = dsize[jj]
                    inv_t[jj, K] = 1.0 / dsize[jj]
                K += 1
            z[i, j] = k
            cnt[k] += 1.0
            counts_t[col, k] += 1.0
            den_t[j, k] += 1.0
            inv_t[j, k] = 1.0 / den_t[j, k]
    kk[0] = K
    return -1


@njit(**_JIT)
def _data_at(den_t, dsize, k):
    """Items (observed and augmented) allocated to component k, from den_t = c_kj. + d_j."""
    tot = 0.0
    for j in range(den_t.shape[0]):
        tot += den_t[j, k] - dsize[j]
    return tot


@njit(**_JIT)
def new_block_terms(g, ab, a0, terms):
    """Weights of a block of g items all going to one new component (pi_i integrated).

    With the remainder's mass b split by GEM(alpha_0), terms[r] = s(g, r) (alpha_i b)^r
    alpha_0 B(r, alpha_0) for r = 1..g (``ab`` = alpha_i b; s: unsigned Stirling numbers of
    the first kind, the coefficients of the rising factorial x (x + 1)...(x + g - 1)), since
    E[sum_l w_l^r] = alpha_0 B(r, alpha_0) for GEM(alpha_0) weights w. Their sum is the
    weight; given that the block took the new component, its share of the remainder is
    w ~ Beta(r, alpha_0) with r drawn in proportion to terms[r]. For g = 1: alpha_i b, the
    "new" weight of the allocation sweep.
    """
    poly = np.zeros(g + 1)
    poly[0] = 1.0
    for t in range(g):                       # multiply by (x + t)
        for r in range(t + 1, 0, -1):
            poly[r] = poly[r - 1] + t * poly[r]
        poly[0] = t * poly[0]
    total = 0.0
    terms[0] = 0.0
    for r in range(1, g + 1):
        v = poly[r] * ab ** r * a0 * np.exp(math.lgamma(r) + math.lgamma(a0)
                                             - math.lgamma(r + a0))
        terms[r] = v
        total += v
    return total


@njit(**_JIT)
def move_blocks(rng, xo, dsize, z, beta, scal, alpha, kk, counts_t, den_t, inv_t, start,
                moved):
    """Relabel whole blocks: a Gibbs step for the common component of each record's items
    that share a component (blocks of two or more).

    For record i and a block G (its items with component k0) the new component is drawn
    among the non-empty components none of i's other items use (k0 included unless G was all
    of its data) and one new component, with probability proportional to
    (alpha_i beta_k)(alpha_i beta_k + 1)...(alpha_i beta_k + |G| - 1) prod_{j in G}
    (c_k(x_ij) + 1) / (c_kj. + d_j) (counts without G) for an existing component and
    :func:`new_block_terms` times prod_{j in G} 1 / d_j for the new one, whose weight is then
    split off the remainder beta_0. This is the conditional of G's component given that G
    stays one block apart from i's other items, with pi_i and theta integrated out as in
    :func:`allocate_marginal`, in the representation of that sweep (the non-empty components
    and the remainder: an empty component's weight is returned to beta_0 first). Each
    record's partition of its items into blocks is unchanged, so the step keeps the
    posterior; it lets a record move between profiles in one step instead of item by item
    through mixed allocations of low probability.

    An earlier version offered no new component and kept empty components as candidates: a
    block leaving a component of its own emptied it for good (the pruning of step 2 removed
    it), and the chain's posterior was biased (5-record table: mean number of components
    3.04 against 3.83; Geweke's joint-distribution test: E[alpha_0] 1.63 against its prior
    mean 2; tests/test_hdp_geweke.py).

    Statistics as in :func:`allocate_marginal`, kept up to date. Processes records from
    ``start``; returns -1 when done, or the record to resume from once the capacity
    (``beta.shape[0]``) has been grown. ``moved[0]`` counts the blocks that changed
    component.
    """
    n, J = xo.shape
    cap = beta.shape[0]
    w = np.empty(cap + 1)
    terms = np.empty(J + 1)
    block = np.empty(J, np.int64)
    done = np.zeros(J, np.bool_)
    used = np.zeros(cap + 1, np.bool_)
    a0 = scal[1]
    if start == 0:
        for k in range(kk[0]):               # empty components: their mass to beta_0
            if _data_at(den_t, dsize, k) == 0.0 and beta[k] > 0.0:
                scal[0] += beta[k]
                beta[k] = 0.0
    for i in range(start, n):
        if kk[0] + J > cap:
            return i
        a = alpha[i]
        for j in range(J):
            done[j] = False
        for j0 in range(J):
            if done[j0]:
                continue
            k0 = z[i, j0]
            g = 0
            for j in range(j0, J):
                if z[i, j] == k0:
                    block[g] = j
                    g += 1
                    done[j] = True
            if g < 2:
                continue
            K = kk[0]
            lik_new = 1.0
            for t in range(g):
                j = block[t]
                counts_t[xo[i, j], k0] -= 1.0
                den_t[j, k0] -= 1.0
                inv_t[j, k0] = 1.0 / den_t[j, k0]
                lik_new /= dsize[j]
            if _data_at(den_t, dsize, k0) == 0.0:
                scal[0] += beta[k0]
                beta[k0] = 0.0
            for j in range(J):
                if z[i, j] != k0:
                    used[z[i, j]] = True
            for k in range(K):
                if used[k] or _data_at(den_t, dsize, k) == 0.0:
                    w[k] = 0.0
                    continue
                ab = a * beta[k]
                v = 1.0
                for t in range(g):
                    j = block[t]
                    v *= (ab + t) * (counts_t[xo[i, j], k] + 1.0) * inv_t[j, k]
                w[k] = v
            for j in range(J):
                used[z[i, j]] = False
            w[K] = new_block_terms(g, a * scal[0], a0, terms) * lik_new
            k1 = categorical(rng, w, K + 1)
            if k1 == K:                          # a new component, split off beta_0
                r = categorical(rng, terms[1:], g) + 1
                share, rest = beta_pair(rng, float(r), a0)
                beta[K] = scal[0] * share
                scal[0] *= rest
                for x in range(counts_t.shape[0]):
                    counts_t[x, K] = 0.0
                for jj in range(J):
                    den_t[jj, K] = dsize[jj]
                    inv_t[jj, K] = 1.0 / dsize[jj]
                kk[0] = K + 1
            if k1 != k0:
                moved[0] += 1
            for t in range(g):
                j = block[t]
                z[i, j] = k1
                counts_t[xo[i, j], k1] += 1.0
                den_t[j, k1] += 1.0
                inv_t[j, k1] = 1.0 / den_t[j, k1]
    return -1


# --- HDP steps 2-6 (spec E.2) ----------------------------------------------------------------
@njit(**_JIT)
def _counts_of(z, i, K, cnt):
    for k in range(K):
        cnt[k] = 0
    for j in range(z.shape[1]):
        cnt[z[i, j]] += 1


@njit(**_JIT)
def _update_concentrations(rng, K, m_total, mi, alpha, scal, a0, b0, a, b, multiple, J):
    # top level (EW95): m_total tables, K dishes
    eta = beta_pair(rng, scal[1] + 1.0, m_total)[0]
    rate = b0 - np.log(eta)
    p = m_total * rate / (a0 + K - 1.0 + m_total * rate)
    s = 1.0 if rng.random() < p else 0.0
    scal[1] = gamma_variate(rng, a0 + K - s) / rate
    n = alpha.shape[0]
    if multiple:
        for i in range(n):
            eta = beta_pair(rng, alpha[i] + 1.0, J)[0]
            rate = b - np.log(eta)
            p = J * rate / (a + mi[i] - 1.0 + J * rate)
            s = 1.0 if rng.random() < p else 0.0
            alpha[i] = gamma_variate(rng, a + mi[i] - s) / rate
    else:
        common = alpha[0]
        log_eta = 0.0
        s_sum = 0.0
        m_obs = 0.0
        for i in range(n):
            log_eta += np.log(beta_pair(rng, common + 1.0, J)[0])
            if rng.random() * (J + common) < J:
                s_sum += 1.0
            m_obs += mi[i]
        common = gamma_variate(rng, a + m_obs - s_sum) / (b - log_eta)
        for i in range(n):
            alpha[i] = common


@njit(**_JIT)
def hdp_rest(rng, xo, z, pi, pi0, beta, scal, theta, alpha, kk, aug_m, aug_c, aug_m0,
             a0, b0, a, b, multiple, compat, offs, draw_pi):
    """Steps 2-6 after the allocations: tables, pruning, concentrations, beta, pi, theta.

    Order 2 -> 6 -> 3 -> 4 -> 5 by default; 2 -> 3 -> 4 -> 5 -> 6 with ``compat`` (BR's
    code), which also uses alpha_0 beta_k instead of alpha_i beta_k as the CRP concentration
    of the table counts (spec H.1.1). ``aug_m`` (K,), ``aug_c`` (K, D) and ``aug_m0`` are
    the structural-zero augmentation statistics (zeros without structural zeros). Step 4
    (pi) is skipped when ``draw_pi`` is False (collapsed allocations). Returns the total
    number of tables m.. (observed only).
    """
    n, J = z.shape
    K = kk[0]
    D = theta.shape[1]
    cnt = np.zeros(K, np.int64)
    mk = np.zeros(K)
    nk = np.zeros(K)
    mi = np.zeros(n)
    # step 2: table counts
    for i in range(n):
        _counts_of(z, i, K, cnt)
        conc_i = scal[1] if compat else alpha[i]
        for k in range(K):
            c = cnt[k]
            if c > 0:
                t = crp_tables(rng, c, conc_i * beta[k])
                mk[k] += t
                mi[i] += t
                nk[k] += c
    # prune components with no observed allocation and no augmented tables
    newidx = np.full(K, -1, np.int64)
    K2 = 0
    for k in range(K):
        if nk[k] > 0 or aug_m[k] > 0:
            newidx[k] = K2
            K2 += 1
    if K2 < K:
        for k in range(K):
            t = newidx[k]
            if t >= 0 and t != k:
                beta[t] = beta[k]
                mk[t] = mk[k]
                aug_m[t] = aug_m[k]
                for c in range(D):
                    theta[t, c] = theta[k, c]
                    aug_c[t, c] = aug_c[k, c]
                for i in range(n if draw_pi else 0):
                    pi[i, t] = pi[i, k]
        for i in range(n):
            for j in range(J):
                z[i, j] = newidx[z[i, j]]
        for k in range(K2, K):
            aug_m[k] = 0.0
            for c in range(D):
                aug_c[k, c] = 0.0
        K = K2
        kk[0] = K
    m_obs = 0.0
    for k in range(K):
        m_obs += mk[k]
    m_total = m_obs + aug_m0
    for k in range(K):
        m_total += aug_m[k]
    if not compat:
        _update_concentrations(rng, K, m_total, mi, alpha, scal, a0, b0, a, b, multiple, J)
    # step 3: global weights
    conc = np.empty(K + 1)
    out = np.empty(K + 1)
    nolog = np.empty(0)
    for k in range(K):
        conc[k] = mk[k] + aug_m[k]
    conc[K] = scal[1] + aug_m0
    dirichlet_into(rng, conc, K + 1, out, nolog)
    for k in range(K):
        beta[k] = out[k]
    scal[0] = out[K]
    # step 4: memberships
    for i in range(n if draw_pi else 0):
        _counts_of(z, i, K, cnt)
        for k in range(K):
            conc[k] = alpha[i] * beta[k] + cnt[k]
        conc[K] = alpha[i] * scal[0]
        dirichlet_into(rng, conc, K + 1, out, nolog)
        for k in range(K):
            pi[i, k] = out[k]
        pi0[i] = out[K]
    # step 5: profiles
    draw_profiles(rng, xo, z, offs, aug_c, K, theta)
    if compat:
        _update_concentrations(rng, K, m_total, mi, alpha, scal, a0, b0, a, b, multiple, J)
    return m_obs


@njit(**_JIT)
def draw_profiles(rng, xo, z, offs, aug_c, K, profiles):
    """Profile step of both samplers: for k < K and each variable j, rows ``profiles[k, offs[j]:
    offs[j + 1]] ~ Dir(1 + counts of x_ij allocated to k + augmented counts aug_c[k, .])``."""
    n, J = xo.shape
    D = offs[J]
    counts = np.zeros((K, D))
    for i in range(n):
        for j in range(J):
            counts[z[i, j], xo[i, j]] += 1.0
    buf = np.empty(D)
    cbuf = np.empty(D)
    nolog = np.empty(0)
    for k in range(K):
        for j in range(J):
            d = offs[j + 1] - offs[j]
            for v in range(d):
                cbuf[v] = 1.0 + counts[k, offs[j] + v] + aug_c[k, offs[j] + v]
            dirichlet_into(rng, cbuf, d, buf, nolog)
            for v in range(d):
                profiles[k, offs[j] + v] = buf[v]


# --- membership draws for Monte Carlo expectations (spec E.3) ----------------------------
@njit(**_JIT)
def membership_draws(rng, weights, m_draws, shape, rate, fixed_alpha):
    """(M, L) draws of Dir(alpha weights), alpha ~ Gamma(shape, rate) or fixed (> 0).

    Returns the draws and the M concentrations alpha used.
    """
    L = weights.shape[0]
    out = np.empty((m_draws, L))
    alphas = np.empty(m_draws)
    conc = np.empty(L)
    buf = np.empty(L)
    nolog = np.empty(0)
    for m in range(m_draws):
        al = fixed_alpha if fixed_alpha > 0 else gamma_variate(rng, shape) / rate
        alphas[m] = al
        for k in range(L):
            conc[k] = al * weights[k]
        dirichlet_into(rng, conc, L, buf, nolog)
        for k in range(L):
            out[m, k] = buf[k]
    return out, alphas


@njit(**_JIT)
def _mean_of_products(marg_t, cols, lens):
    """out[c] = mean_m prod_{t < lens[c]} marg_t[cols[c, t], m] (marg_t is (D, M)).

    The products run over contiguous rows of ``marg_t`` (vectorised over the M draws); the
    factors are multiplied and the draws summed in the same order as a loop over draws
    would, so the result is the same to the last bit.
    """
    M = marg_t.shape[1]
    C = cols.shape[0]
    out = np.zeros(C)
    buf = np.empty(M)
    for c in range(C):
        if lens[c] == 0:
            out[c] = 1.0
            continue
        first = marg_t[cols[c, 0]]
        for m in range(M):
            buf[m] = first[m]
        for t in range(1, lens[c]):
            row = marg_t[cols[c, t]]
            for m in range(M):
                buf[m] *= row[m]
        s = 0.0
        for m in range(M):
            s += buf[m]
        out[c] = s / M
    return out


def cell_probabilities(marg, cols):
    """p(x) = mean_m prod_j marg[m, cols[x, j]] for each row of ``cols`` (spec E.3 eq 10)."""
    cols = np.ascontiguousarray(cols)
    lens = np.full(cols.shape[0], cols.shape[1], np.int64)
    return _mean_of_products(np.ascontiguousarray(np.asarray(marg).T), cols, lens)


def condition_probabilities(marg, cond_cols, cond_len):
    """p_c = mean_m prod over the fixed columns of condition c (spec E.4.3 step 7)."""
    return _mean_of_products(np.ascontiguousarray(np.asarray(marg).T),
                             np.ascontiguousarray(cond_cols), np.asarray(cond_len, np.int64))
