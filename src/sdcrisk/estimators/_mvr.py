"""The parametric grade-of-membership model of Manrique-Vallier & Reiter (2012) (spec E.1).

x_ij | z_ij = k ~ Cat(lambda_kj), z_ij | g_i ~ Cat(g_i), g_i ~ Dir(gamma), gamma = alpha_0 xi,
xi ~ Dir(1_K), alpha_0 ~ Gamma(a_0, b_0), lambda_kj ~ Dir(1). One Gibbs iteration updates
z, lambda, g (in log space, so that sum_i log g_ik stays finite) and then gamma by a
log-normal random-walk Metropolis-Hastings step (spec E.1 step 4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..runtime.mcmc import Kernel, Observation
from . import _mm_kernels as kern
from . import _mm_sz as szk
from ._mm_model import MMData, observe

_JIT = {"cache": True, "nogil": True}

#: BR's tuned MH step sizes by number of profiles K (spec E.1 step 4)
STEP_TABLE = ((2, 0.095), (5, 0.0375), (10, 0.0225), (12, 0.02), (15, 0.018), (18, 0.016),
              (20, 0.015), (30, 0.012), (40, 0.01))


def default_step(k: int) -> float:
    """BR's step size for K profiles, log-linearly interpolated between tabulated K."""
    table = dict(STEP_TABLE)
    if k in table:
        return table[k]
    ks = np.array([t[0] for t in STEP_TABLE], float)
    s = np.array([t[1] for t in STEP_TABLE], float)
    if k <= ks[0]:
        return float(s[0])
    if k >= ks[-1]:
        return float(s[-1])
    return float(np.exp(np.interp(np.log(k), np.log(ks), np.log(s))))


@njit(**_JIT)
def mh_log_ratio(gamma, proposal, logg_sum, n, a0, b0, jacobian):
    """log acceptance ratio of the gamma update (spec E.1 step 4).

    ``jacobian`` True uses (a_0 - K) (correct: the density of gamma = alpha_0 xi carries
    alpha_0^-(K-1)); False uses (a_0 - 1) as BR's code (spec H.1.2).
    """
    K = gamma.shape[0]
    al = 0.0
    al_new = 0.0
    for k in range(K):
        al += gamma[k]
        al_new += proposal[k]
    expo = (a0 - K) if jacobian else (a0 - 1.0)
    r = expo * np.log(al_new / al) - b0 * (al_new - al)
    lg = math.lgamma(al_new) - math.lgamma(al)
    for k in range(K):
        r += np.log(proposal[k] / gamma[k])
        lg -= math.lgamma(proposal[k]) - math.lgamma(gamma[k])
        r += (proposal[k] - gamma[k]) * logg_sum[k]
    return r + n * lg


@njit(**_JIT)
def mvr_sweep(rng, xo, offs, z, g, lam, gamma, aug_c, a0, b0, sigma, jacobian):
    """One Gibbs/MH iteration; returns 1 if the gamma proposal was accepted."""
    n, J = xo.shape
    K = lam.shape[0]
    w = np.empty(K)
    for i in range(n):
        for j in range(J):
            col = xo[i, j]
            for k in range(K):
                w[k] = g[i, k] * lam[k, col]
            z[i, j] = kern.categorical(rng, w, K)
    kern.draw_profiles(rng, xo, z, offs, aug_c, K, lam)
    logg_sum = np.zeros(K)
    conc = np.empty(K)
    row = np.empty(K)
    logrow = np.empty(K)
    cnt = np.zeros(K, np.int64)
    for i in range(n):
        for k in range(K):
            cnt[k] = 0
        for j in range(J):
            cnt[z[i, j]] += 1
        for k in range(K):
            conc[k] = gamma[k] + cnt[k]
        kern.dirichlet_into(rng, conc, K, row, logrow)
        for k in range(K):
            g[i, k] = row[k]
            logg_sum[k] += logrow[k]
    proposal = np.empty(K)
    for k in range(K):
        proposal[k] = gamma[k] * np.exp(sigma * rng.standard_normal())
    r = mh_log_ratio(gamma, proposal, logg_sum, n, a0, b0, jacobian)
    u = rng.random()
    if u > 0 and np.log(u) < r:
        for k in range(K):
            gamma[k] = proposal[k]
        return 1
    return 0


@dataclass(frozen=True)
class MvrParams:
    """Settings of the MVR12 sampler (see :class:`~sdcrisk.estimators.MixedMembershipRisk`)."""

    profiles: int = 10
    a0: float = 2.0
    b0: float = 1.0
    step: float = 0.0225
    jacobian: bool = True
    mc_draws: int = 500
    tau_mode: str = "mc"
    sz_method: str = "approximate"
    sz_free: str = "uniform"
    sz_memberships: str = "prior"
    sz_cap: float = np.inf


@dataclass(eq=False)
class MvrState:
    z: np.ndarray
    g: np.ndarray
    lam: np.ndarray
    gamma: np.ndarray
    aug_c: np.ndarray
    n_aug: int = 0


def mvr_init(rng, data: MMData, params: MvrParams) -> MvrState:
    """alpha_0, xi, lambda from their priors; g_i ~ Dir(gamma)."""
    K, D = params.profiles, int(data.offs[-1])
    alpha0 = rng.gamma(params.a0, 1.0 / params.b0)
    gamma = alpha0 * rng.dirichlet(np.ones(K))
    lam = np.zeros((K, D))
    for k in range(K):
        kern.profile_prior_row(rng, lam, k, data.offs, -1)
    g = np.empty((data.n, K))
    nolog = np.empty(0)
    for i in range(data.n):
        kern.dirichlet_into(rng, gamma, K, g[i], nolog)
    return MvrState(z=np.zeros((data.n, data.n_vars), np.int64), g=g, lam=lam, gamma=gamma,
                    aug_c=np.zeros((K, D)))


def _augment(rng, state: MvrState, data: MMData, params: MvrParams) -> None:
    alpha0 = float(state.gamma.sum())
    weights = state.gamma / alpha0
    if params.sz_method == "exact":
        sz = data.sz
        state.aug_c, _, state.n_aug, _ = szk.simulate_truncated(
            rng, data.n, params.sz_cap * data.n, data.offs, data.sizes, weights, state.lam,
            1.0, 1.0, alpha0, alpha0, False, False, sz.pat_fixed, sz.pat_offs, sz.pat_table)
        return
    W, _ = kern.membership_draws(rng, weights, params.mc_draws, 1.0, 1.0, alpha0)
    marg = W @ state.lam
    n0, n_c = szk.draw_counts(rng, data.n, szk.condition_probs(marg, data.sz),
                              params.sz_cap * data.n)
    state.n_aug = n0
    if n0 == 0:
        state.aug_c[:] = 0.0
    elif params.sz_method == "augment":
        state.aug_c, _ = szk.simulate(rng, n_c, data.sz.conds, data.offs, weights, state.lam,
                                      1.0, 1.0, alpha0, alpha0, False, False)
    else:
        state.aug_c, _ = szk.approximate(W, state.lam, marg, n_c, data.sz, data.offs,
                                         data.dsize, None, params.sz_free,
                                         params.sz_memberships == "conditional")


def mvr_step(rng, state: MvrState, data: MMData, params: MvrParams):
    if data.sz is not None:
        _augment(rng, state, data, params)
    acc = mvr_sweep(rng, data.xo, data.offs, state.z, state.g, state.lam, state.gamma,
                    state.aug_c, params.a0, params.b0, params.step, params.jacobian)
    info = {"accepted": float(acc), "alpha0": float(state.gamma.sum())}
    if data.sz is not None:
        info["n_augmented"] = float(state.n_aug)
    return state, info


def mvr_observe(rng, state: MvrState, data: MMData, params: MvrParams) -> Observation:
    alpha0 = float(state.gamma.sum())
    scalars = {"alpha0": alpha0}
    if data.sz is not None:
        scalars["n_augmented"] = float(state.n_aug)
    return observe(rng, data, weights=state.gamma / alpha0, theta_ext=state.lam,
                   law=(1.0, 1.0, alpha0), mc_draws=params.mc_draws, mode=params.tau_mode,
                   scalars=scalars)


MVR = Kernel(init=mvr_init, step=mvr_step, observe=mvr_observe, name="mixed-membership")
