"""Data, observation and the HDP model for the mixed-membership estimators (spec E.2-E.4).

:class:`MMData` is the sample in kernel form (records rebuilt from the cell table: records
of one cell are exchangeable under the model), :func:`observe` computes tau1, tau2 and the
per-cell predictive quantities at a saved iteration for any mixed-membership model given its
membership weights and profiles, and :data:`HDP` is the HDP kernel for :mod:`sdcrisk.runtime.mcmc`
(``init``/``step``/``observe``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..data.table import CellTable
from ..runtime.mcmc import Kernel, Observation
from . import _mm_kernels as kern
from . import _mm_sz as szk
from . import _mm_tau as tau

_GROW = 32
#: spare components for those the exact augmentation instantiates in one iteration
_SPARE = 64


@dataclass(frozen=True, eq=False)
class MMData:
    """The sample and its cells in kernel form."""

    xo: np.ndarray          # (n, J) flattened column of each record's value
    dsize: np.ndarray       # (J,) d_j as floats
    offs: np.ndarray        # (J + 1,) column offsets
    sizes: np.ndarray       # (J,) d_j
    cell_codes: np.ndarray  # (cells, J)
    cell_cols: np.ndarray   # (cells, J)
    f: np.ndarray           # (cells,) sample counts
    su: np.ndarray          # indices of the sample-unique cells
    population_size: float
    sz: szk.SzData | None = None
    hash_sorted: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    hash_order: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def n(self) -> int:
        return int(self.xo.shape[0])

    @property
    def n_vars(self) -> int:
        return int(self.xo.shape[1])

    @property
    def remaining(self) -> float:
        """N - n, the number of non-sampled records."""
        return float(self.population_size) - self.n

    @classmethod
    def from_table(cls, table: CellTable, sz=None) -> MMData:
        sizes = np.array([len(lv) for lv in table.levels], dtype=np.int64)
        offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        codes = np.ascontiguousarray(table.cell_codes, dtype=np.int64)
        cols = codes + offs[:-1]
        xo = np.ascontiguousarray(np.repeat(cols, table.counts, axis=0))
        hashes = tau.cell_hashes(codes)
        order = np.argsort(hashes, kind="stable")
        return cls(xo=xo, dsize=sizes.astype(float), offs=offs, sizes=sizes,
                   cell_codes=codes, cell_cols=np.ascontiguousarray(cols),
                   f=table.counts.astype(float), su=np.flatnonzero(table.counts == 1),
                   population_size=float(table.population_size),
                   sz=None if sz is None else szk.SzData.build(sz, offs),
                   hash_sorted=hashes[order], hash_order=order.astype(np.int64))

    def uniform_row(self) -> np.ndarray:
        """The profile of a fresh component's mean: 1/d_j on every level."""
        return np.repeat(1.0 / self.dsize, np.diff(self.offs))

    def patterns(self):
        if self.sz is None:
            return (np.zeros((0, self.n_vars), dtype=np.bool_), np.zeros(1, np.int64),
                    np.zeros(1, dtype=np.bool_))
        return self.sz.pat_fixed, self.sz.pat_offs, self.sz.pat_table


def alpha_law(alpha: np.ndarray, mode: str, prior: tuple[float, float]
              ) -> tuple[float, float, float]:
    """(shape, rate, fixed) of the concentration of a new individual (spec E.3, H.1.5).

    ``moment``: Gamma moment-matched to the current alpha_i (BR's code); ``prior``: the
    Gamma(a, b) prior. With one common alpha (or no spread) the value itself (``fixed``).
    """
    if mode == "prior":
        return float(prior[0]), float(prior[1]), 0.0
    mean = float(alpha.mean())
    var = float(alpha.var())
    if not var > 1e-12 * mean**2:
        return 1.0, 1.0, mean
    return mean**2 / var, mean / var, 0.0


def observe(rng, data: MMData, *, weights: np.ndarray, theta_ext: np.ndarray,
            law: tuple[float, float, float], mc_draws: int, mode: str,
            scalars: dict[str, float]) -> Observation:
    """tau1, tau2 and per-cell predictive quantities at one saved iteration (spec E.3).

    ``weights`` (L,) and ``theta_ext`` (L, D) describe the model (see :mod:`._mm_sz`);
    ``law`` the concentration of a new individual.
    """
    shape, rate, fixed = law
    omega = 0.0
    exponent = data.remaining
    if mode == "sampling":
        pf, po, pt = data.patterns()
        u = tau.population_counts(rng, int(round(data.remaining)), weights, theta_ext,
                                  data.offs, shape, rate, fixed, data.hash_sorted,
                                  data.hash_order, data.cell_codes, pf, po, pt, data.sizes)
        q = tau.count_moments(u, data.f)
        bank = {"bank": u.astype(float)}
    else:
        W, _ = kern.membership_draws(rng, weights, mc_draws, shape, rate, fixed)
        marg = W @ theta_ext
        p = kern.cell_probabilities(marg, data.cell_cols)
        if data.sz is not None:
            omega = float(szk.condition_probs(marg, data.sz).sum())
            exponent = data.remaining / max(1.0 - omega, 1e-12)
        q = tau.binomial_moments(p, data.f, exponent)
        bank = {"bank": q.pop("lam")}
    su = data.su
    out = {"tau1": float(q["p0"][su].sum()), "tau2": float(q["inv"][su].sum()), **scalars}
    if data.sz is not None and mode != "sampling":
        out["omega"] = omega
    return Observation(scalars=out, sums=q, bank=bank)


# --- the HDP model (spec E.2) ------------------------------------------------------------------
@dataclass(frozen=True)
class HdpParams:
    """Settings of the HDP sampler (see :class:`~sdcrisk.estimators.HdpRisk`)."""

    a0: float = 2.0
    b0: float = 1.0
    a: float = 2.0
    b: float = 1.0
    concentration: Literal["multiple", "single"] = "multiple"
    compat: bool = False
    allocation: Literal["marginal", "collapsed", "sequential", "fast"] = "marginal"
    k_init: int = 10
    new_alpha: Literal["moment", "prior"] = "moment"
    mc_draws: int = 500
    tau_mode: Literal["mc", "sampling"] = "mc"
    sz_method: Literal["approximate", "augment", "exact"] = "approximate"
    sz_free: szk.FreeCounts = "uniform"
    sz_memberships: Literal["prior", "conditional"] = "prior"
    sz_cap: float = np.inf
    sz_tables: Literal["top", "individual"] = "top"
    init: Literal["partition", "bnpdr"] = "partition"
    block_moves: bool = False


@dataclass(eq=False)
class HdpState:
    """Mutable state of one chain (arrays have spare capacity beyond K)."""

    z: np.ndarray
    pi: np.ndarray
    pi0: np.ndarray
    beta: np.ndarray
    scal: np.ndarray        # [beta_0, alpha_0]
    theta: np.ndarray
    alpha: np.ndarray
    kk: np.ndarray          # [K]
    aug_c: np.ndarray
    aug_m: np.ndarray
    aug_m0: float = 0.0
    n_aug: int = 0
    omega: float = 0.0

    @property
    def K(self) -> int:
        return int(self.kk[0])

    def ensure_capacity(self, needed: int) -> None:
        cap = self.beta.shape[0]
        if needed <= cap:
            return
        new = max(needed, cap) + _GROW

        def grow(a, axis):
            shape = list(a.shape)
            shape[axis] = new
            out = np.zeros(shape, dtype=a.dtype)
            out[(slice(None),) * axis + (slice(0, cap),)] = a
            return out

        self.pi = grow(self.pi, 1)
        self.beta = grow(self.beta, 0)
        self.theta = grow(self.theta, 0)
        self.aug_c = grow(self.aug_c, 0)
        self.aug_m = grow(self.aug_m, 0)


def hdp_init(rng, data: MMData, params: HdpParams) -> HdpState:
    """Initial state: alpha_0, alpha_i and theta from their priors, K_init components.

    ``init="bnpdr"`` draws theta from its prior and beta and every pi_i from Dir(1) over the
    K_init components and the remainder (BR's code); ``"partition"`` (default) allocates
    every record wholly to one of K_init random groups and draws theta, beta and pi from
    their conditionals given that allocation.
    """
    n, D = data.n, int(data.offs[-1])
    K = int(params.k_init)
    cap = K + _GROW
    alpha0 = rng.gamma(params.a0, 1.0 / params.b0)
    if params.concentration == "multiple":
        alpha = rng.gamma(params.a, 1.0 / params.b, size=n)
    else:
        alpha = np.full(n, rng.gamma(params.a, 1.0 / params.b))
    theta = np.zeros((cap, D))
    for k in range(K):
        kern.profile_prior_row(rng, theta, k, data.offs, -1)
    z = np.zeros((n, data.n_vars), np.int64)
    if params.init == "bnpdr":
        bw = rng.dirichlet(np.ones(K + 1))
        pis = rng.dirichlet(np.ones(K + 1), size=n)
    else:
        # a random partition of the records into K groups: z_ij = group of record i, theta,
        # beta and pi from their conditionals given it (one table per record). Profiles then
        # fit the data from the start and the remainder beta_0 ~ alpha_0 / n is small, as at
        # equilibrium, so the first sweeps do not create hundreds of components.
        group = rng.integers(0, K, size=n)
        z[:] = group[:, None]
        counts = np.zeros((K, D))
        np.add.at(counts, (np.repeat(group, data.n_vars), data.xo.ravel()), 1.0)
        for k in range(K):
            for j in range(data.n_vars):
                sl = slice(data.offs[j], data.offs[j + 1])
                theta[k, sl] = rng.dirichlet(1.0 + counts[k, sl])
        conc = np.append(np.bincount(group, minlength=K).astype(float), alpha0)
        bw = np.empty(K + 1)
        kern.dirichlet_into(rng, conc, K + 1, bw, np.empty(0))
        pis = np.empty((n, K + 1))
        row = np.empty(K + 1)
        for i in range(n):
            row[:] = alpha[i] * bw
            row[group[i]] += data.n_vars
            kern.dirichlet_into(rng, row, K + 1, pis[i], np.empty(0))
    beta = np.zeros(cap)
    beta[:K] = bw[:K]
    pi = np.zeros((n, cap))
    pi[:, :K] = pis[:, :K]
    return HdpState(z=z, pi=pi,
                    pi0=np.ascontiguousarray(pis[:, K]), beta=beta,
                    scal=np.array([bw[K], alpha0]), theta=theta, alpha=alpha,
                    kk=np.array([K], np.int64), aug_c=np.zeros((cap, D)), aug_m=np.zeros(cap))


def _extended(state: HdpState, data: MMData) -> tuple[np.ndarray, np.ndarray]:
    K = state.K
    weights = np.append(state.beta[:K], state.scal[0])
    theta_ext = np.vstack([state.theta[:K], data.uniform_row()[None, :]])
    return weights, theta_ext


def _augment(rng, state: HdpState, data: MMData, params: HdpParams) -> None:
    """Steps 7-9 (or their App. C approximation) with the current beta, theta, alpha."""
    weights, theta_ext = _extended(state, data)
    shape, rate, fixed = alpha_law(state.alpha, params.new_alpha, (params.a, params.b))
    # CRP concentration of the augmented records' table counts: alpha_0 beta_k (BR's code,
    # spec H.1.1) or the record's own alpha beta_k
    top = params.compat or params.sz_tables == "top"
    if params.sz_method == "exact":
        # the augmented records' concentrations come from the model's own law: the prior
        # Gamma(a, b) (or the common alpha), not the moment-matched law used for tau
        if params.concentration == "multiple":
            shape, rate, fixed = params.a, params.b, 0.0
        else:
            shape, rate, fixed = 1.0, 1.0, float(state.alpha[0])
        state.ensure_capacity(state.K + _SPARE)
        keeps_pi = params.allocation in ("sequential", "fast")
        pi = state.pi if keeps_pi else state.pi[:0]
        n0, _, m0 = szk.simulate_truncated_hdp(
            rng, data.n, params.sz_cap * data.n, data.offs, data.sizes, state.beta,
            state.scal, state.theta, state.kk, pi, state.pi0, state.alpha, shape, rate,
            fixed, top, state.aug_c, state.aug_m, data.sz.pat_fixed, data.sz.pat_offs,
            data.sz.pat_table)
        state.n_aug, state.omega = n0, n0 / (n0 + data.n)
        state.aug_m0 = float(m0)
        return
    W, alphas = kern.membership_draws(rng, weights, params.mc_draws, shape, rate, fixed)
    marg = W @ theta_ext
    p_c = szk.condition_probs(marg, data.sz)
    n0, n_c = szk.draw_counts(rng, data.n, p_c, params.sz_cap * data.n)
    state.n_aug, state.omega = n0, float(p_c.sum())
    if n0 == 0:
        _store_augmented(state, None, None)
        return
    if params.sz_method == "augment":
        aug_c, aug_m = szk.simulate(rng, n_c, data.sz.conds, data.offs, weights, theta_ext,
                                    shape, rate, fixed, state.scal[1], top, True)
    else:
        base = np.full_like(alphas, state.scal[1]) if top else alphas
        conc = np.outer(base, weights)
        tilt = params.sz_memberships == "conditional"
        aug_c, aug_m = szk.approximate(W, theta_ext, marg, n_c, data.sz, data.offs,
                                       data.dsize, np.ascontiguousarray(conc), params.sz_free,
                                       tilt)
    _store_augmented(state, aug_c, aug_m)


def _store_augmented(state: HdpState, aug_c: np.ndarray | None, aug_m: np.ndarray | None
                     ) -> None:
    """The augmented statistics of rows 0..K-1 (row K: "new") into the state; None: none."""
    K = state.K
    state.aug_c[:] = 0.0
    state.aug_m[:] = 0.0
    state.aug_m0 = 0.0
    if aug_c is not None:
        state.aug_c[:K] = aug_c[:K]
        state.aug_m[:K] = aug_m[:K]
        state.aug_m0 = float(aug_m[K])


def _allocate_marginal(rng, state: HdpState, data: MMData, blocks: bool) -> int | None:
    """Step 1 with pi_i and theta integrated out (counts kept per column, then components),
    then (``blocks``) the block moves of :func:`~._mm_kernels.move_blocks`; returns the
    number of blocks moved (None without block moves)."""
    D, J = int(data.offs[-1]), data.n_vars

    def stats(cap):
        return np.zeros((D, cap)), np.zeros((J, cap)), np.zeros((J, cap))

    def grown(old, needed):
        """The statistics with room for ``needed`` components, old columns kept (the
        kernels stop where capacity runs out and resume with the grown arrays)."""
        state.ensure_capacity(needed)
        new = stats(state.beta.shape[0])
        for a, b in zip(new, old, strict=True):
            a[:, :b.shape[1]] = b
        return new

    counts, den, inv = stats(state.beta.shape[0])
    kern.profile_counts(data.xo, state.z, state.K, state.aug_c, data.dsize, data.offs,
                        counts, den, inv)
    pos = 0
    while True:
        pos = kern.allocate_marginal(rng, data.xo, data.dsize, state.z, state.beta,
                                     state.scal, state.alpha, state.kk, counts, den, inv, pos)
        if pos < 0:
            break
        counts, den, inv = grown((counts, den, inv), state.K + 1)
    if not blocks:
        return None
    moved = np.zeros(1, np.int64)
    pos = 0
    while True:
        pos = kern.move_blocks(rng, data.xo, data.dsize, state.z, state.beta, state.scal,
                               state.alpha, state.kk, counts, den, inv, pos, moved)
        if pos < 0:
            return int(moved[0])
        counts, den, inv = grown((counts, den, inv), state.K + J + 1)


def hdp_step(rng, state: HdpState, data: MMData, params: HdpParams):
    """One iteration: (structural zeros: steps 7-9), then steps 1-6 of spec E.2."""
    if data.sz is not None:
        _augment(rng, state, data, params)
    state.ensure_capacity(state.K + 1)
    moved = None
    if params.allocation == "sequential":
        pos = 0
        while True:
            pos = kern.allocate_sequential(rng, data.xo, data.dsize, data.offs, state.z,
                                           state.pi, state.pi0, state.beta, state.scal,
                                           state.theta, state.alpha, state.kk, pos)
            if pos < 0:
                break
            state.ensure_capacity(state.K + 1)
    elif params.allocation == "marginal":
        moved = _allocate_marginal(rng, state, data, params.block_moves)
    elif params.allocation == "collapsed":
        pos = 0
        while True:
            pos = kern.allocate_collapsed(rng, data.xo, data.dsize, data.offs, state.z,
                                          state.beta, state.scal, state.theta, state.alpha,
                                          state.kk, pos)
            if pos < 0:
                break
            state.ensure_capacity(state.K + 1)
    else:
        pending = kern.allocate_parallel(rng, data.xo, data.dsize, state.z, state.pi,
                                         state.pi0, state.theta, state.kk)
        while pending > 0:
            state.ensure_capacity(state.K + 1)
            pending = kern.resolve_new_round(rng, data.xo, data.offs, state.z, state.pi,
                                             state.pi0, state.beta, state.scal, state.theta,
                                             state.alpha, state.kk)
    kern.hdp_rest(rng, data.xo, state.z, state.pi, state.pi0, state.beta, state.scal,
                  state.theta, state.alpha, state.kk, state.aug_m, state.aug_c,
                  state.aug_m0, params.a0, params.b0, params.a, params.b,
                  params.concentration == "multiple", params.compat, data.offs,
                  params.allocation in ("sequential", "fast"))
    info = {"components": float(state.K), "alpha0": float(state.scal[1])}
    if data.sz is not None:
        info["n_augmented"] = float(state.n_aug)
    if moved is not None:
        info["blocks_moved"] = float(moved)
    return state, info


def hdp_observe(rng, state: HdpState, data: MMData, params: HdpParams) -> Observation:
    weights, theta_ext = _extended(state, data)
    law = alpha_law(state.alpha, params.new_alpha, (params.a, params.b))
    scalars = {"components": float(state.K), "alpha0": float(state.scal[1])}
    if data.sz is not None:
        scalars["n_augmented"] = float(state.n_aug)
    return observe(rng, data, weights=weights, theta_ext=theta_ext, law=law,
                   mc_draws=params.mc_draws, mode=params.tau_mode, scalars=scalars)


HDP = Kernel(init=hdp_init, step=hdp_step, observe=hdp_observe, name="hdp")
