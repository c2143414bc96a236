"""Per-model predictive laws of the Forster-Webb graphical model (methods spec D.5-D.7).

Under a decomposable model m with the hyper-Dirichlet posterior, the cell probability
``pi_i = prod_j beta_j(i_j | i_pa(j))`` is a product of independent beta variables whose moments
are FW eq (19). With ``a_A = p / |I_A|``, ``mu* = a_A + f_A(i)`` (A = {j} u pa(j)) and
``Sigma* = a_B + f_B(i)`` (B = pa(j)):

    E[pi_i]   = prod_j mu* / Sigma*,
    E[pi_i^2] = prod_j mu* (mu* + 1) / (Sigma* (Sigma* + 1)),

so ``CV^2 = E[pi^2] / E[pi]^2 - 1 = prod_j (1 + 1/mu*) / (1 + 1/Sigma*) - 1``, computed here in
log space (no cancellation). The gamma law with these moments has shape ``alpha = 1 / CV^2``
and rate ``lambda = alpha / E[pi]``; with the Poisson approximation (eq 20) the unseen count
``U_i = F_i - f_i`` is ``NegBin(alpha, p = lambda / (lambda + u))``, ``u = N - n`` (eq 21), i.e.
``p = 1 / (1 + u E[pi] CV^2)``.

Unobserved cells (f_i = 0) enter only P(PU), through ``sum_{f_i = 0} P(U_i = 1 | f)``
(FW eq 13). :func:`unobserved_enumerated` sums it over every cell of the key space (exact;
memory proportional to K, so only for small key spaces). :func:`unobserved_importance` is the
stated approximation for large key spaces: cells are drawn from the posterior-mean cell
distribution ``q(i) = E[pi_i | m, f]`` (exact ancestral sampling along the perfect numbering)
and ``sum_{f=0} g(i) = E_q[g(i) / q(i) I(f_i = 0)]`` is estimated by the sample mean. With
``g = P(U = 1) = alpha q_nb p^alpha`` the weight is ``g / q(i) = u p^(alpha + 1) <= u``, so the
estimator is unbiased with bounded weights; its standard error is reported.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ._decomposable import COMPILED_FROM, DecomposableGraph, Margins, members, parent_index

__all__ = [
    "CellMoments",
    "factor_params",
    "dense_margin",
    "sample_cells",
    "cell_moments",
    "observed_flat_ids",
    "observed_moments",
    "moments_from_counts",
    "nb_parameters",
    "log_prob_one",
    "unobserved_enumerated",
    "unobserved_importance",
]


@dataclass(frozen=True)
class CellMoments:
    """log E[pi_i] and log CV^2(pi_i) for a set of cells under one model."""

    log_mean: np.ndarray
    log_cv2: np.ndarray

    @property
    def mean(self) -> np.ndarray:
        return np.exp(self.log_mean)

    @property
    def variance(self) -> np.ndarray:
        return np.exp(2 * self.log_mean + self.log_cv2)


def _log_expm1(x: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
    """log(exp(x) - 1) for x > 0, without overflow for large x (in ``x``'s own memory with
    ``overwrite``: one cell-long array instead of five temporaries at census scale)."""
    x = np.asarray(x, float)
    big = x > 30
    tail = x[big]
    out = x if overwrite else np.empty_like(x)
    np.minimum(x, 30.0, out=out)
    np.expm1(out, out=out)
    with np.errstate(divide="ignore"):
        np.log(out, out=out)
    out[big] = tail + np.log1p(-np.exp(-tail))
    return out


def factor_params(graph: DecomposableGraph, margins: Margins, prior_weight: float):
    """(A, B, log a_A, a_A, a_B) per factor of the perfect numbering, with a_B = d_j a_A."""
    out = []
    for (a_mask, b_mask), v in zip(graph.factors, graph.numbering, strict=True):
        # log |I_A| from the levels, as Margin.log_size sums it: computing the margin here
        # would index every observed cell on every factor's margin at once (issue 20)
        log_a = math.log(prior_weight) - float(sum(math.log(margins.n_levels[w])
                                                   for w in members(a_mask)))
        a_a = math.exp(log_a)
        out.append((a_mask, b_mask, a_a, margins.n_levels[v] * a_a))
    return out


def moments_from_counts(params, family_counts, parent_counts) -> CellMoments:
    """FW eq (19) moments from the family and parent margin counts of each cell.

    ``family_counts[j]`` / ``parent_counts[j]`` hold f_A(i) / f_B(i) of factor j for every cell
    (0 where the margin cell is empty).
    """
    log_mean, log_ratio = _moment_sums(params, family_counts, parent_counts)
    return CellMoments(log_mean, _log_expm1(log_ratio))


def observed_moments(graph: DecomposableGraph, margins: Margins, prior_weight: float,
                     cells: np.ndarray | None = None) -> CellMoments:
    """FW eq (19) moments of pi_i for every observed cell, or for the observed cells
    ``cells`` (indices) only (memory ~ those cells)."""
    # moments_from_counts term by term, accumulated factor by factor, with the logs taken
    # once per margin cell and gathered to the observed cells: lists of cell-long count
    # arrays for every factor held 16 such arrays at once (1.4 GB at 5.9 M cells, issue 20)
    n_cells = len(margins.counts) if cells is None else len(cells)
    log_mean = np.zeros(n_cells)
    log_ratio = np.zeros(n_cells)
    compiled = n_cells >= COMPILED_FROM
    rows = np.arange(0) if cells is None else cells  # the compiled pass: empty for every cell
    factors = factor_params(graph, margins, prior_weight)
    # each margin's per-cell index (4-8 bytes an observed cell) is let go after its last
    # factor (a later model of the window computes it again, one pass): holding every
    # clique's at once took 1.1 GB of the graphical fit at 2.5x10^7 cells (issue 20)
    uses = Counter(m for a_mask, b_mask, _, _ in factors for m in (a_mask, b_mask))
    for a_mask, b_mask, a_a, a_b in factors:
        for mask, shift, sign in ((a_mask, a_a, 1.0), (b_mask, a_b, -1.0)):
            x = shift + margins(mask).counts.astype(float)
            index = margins.cell_index(mask)
            if compiled:  # the same sums in one parallel pass (no gathered temporaries)
                _gather_kernel()(log_mean, log_ratio, np.log(x), np.log1p(1.0 / x), index,
                                 rows, sign)
            else:
                if cells is not None:
                    index = index[cells]
                log_mean += sign * np.log(x)[index]
                log_ratio += sign * np.log1p(1.0 / x)[index]
            del index
            uses[mask] -= 1
            if not uses[mask]:
                margins.release_cell_index(mask)
    np.maximum(log_ratio, 1e-6, out=log_ratio)  # the floor of moments_from_counts
    return CellMoments(log_mean, _log_expm1(log_ratio, overwrite=True))


_GATHER_KERNEL = None


def _gather_kernel():
    """``log_mean[i] += sign * log_x[index[c]]`` and ``log_ratio[i] += sign * log1p_x[index[c]]``
    with c = ``cells[i]`` (or i when ``cells`` is empty), over the cells in parallel: the
    NumPy form gathered two cell-long temporaries per margin and added them in four more
    passes (1.2 s of the two graphical fits at 5.9 million cells, issue 20). Each cell's
    terms are added in the same order, so the sums are the same bits."""
    global _GATHER_KERNEL
    if _GATHER_KERNEL is None:
        from numba import njit, prange

        @njit(parallel=True, cache=True)
        def gather(log_mean, log_ratio, log_x, log1p_x, index, cells, sign):
            every = cells.shape[0] == 0
            for i in prange(log_mean.shape[0]):
                j = index[i] if every else index[cells[i]]
                log_mean[i] += sign * log_x[j]
                log_ratio[i] += sign * log1p_x[j]

        _GATHER_KERNEL = gather
    return _GATHER_KERNEL


def nb_parameters(moments: CellMoments, u: float, *, overwrite: bool = False
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Negative-binomial (size alpha, prob p) of U = F - f from the gamma approximation.

    alpha = 1 / CV^2; p = lambda / (lambda + u) = 1 / (1 + u E[pi] CV^2) (FW eqs 20, 21).
    With ``overwrite`` the moments' own arrays become p and alpha (the same values; two
    cell-long arrays at the peak instead of five, issue 20).
    """
    if u <= 0:
        size = np.exp(-moments.log_cv2)
        return size, np.ones_like(size)
    # prob = 1 / (1 + exp(log u + log E[pi] + log CV^2)), computed in one cell-long array
    prob = np.add(math.log(u), moments.log_mean, out=moments.log_mean if overwrite else None)
    prob += moments.log_cv2
    np.exp(prob, out=prob)
    prob += 1.0
    np.reciprocal(prob, out=prob)
    if overwrite:
        size = np.negative(moments.log_cv2, out=moments.log_cv2)
        np.exp(size, out=size)
    else:
        size = np.exp(-moments.log_cv2)
    return size, prob


def log_prob_one(moments: CellMoments, u: float) -> np.ndarray:
    """log P(U = 1) = log(alpha q p^alpha) of the NB of FW eq (23); -inf when u = 0."""
    if u <= 0:
        return np.full(np.shape(moments.log_mean), -np.inf)
    log_x = math.log(u) + moments.log_mean + moments.log_cv2
    log1p_x = np.logaddexp(0.0, log_x)
    alpha = np.exp(-moments.log_cv2)
    return -moments.log_cv2 + (log_x - log1p_x) - alpha * log1p_x


# ------------------------------------------------------------------------------------------
# unobserved cells


def dense_margin(margins: Margins, mask: int) -> np.ndarray:
    """The margin over ``mask`` as a dense array shaped for broadcasting over all J keys."""
    m = margins(mask)
    shape = [1] * margins.n_vertices
    for v in m.variables:
        shape[v] = margins.n_levels[v]
    size = math.prod(shape)
    dense = np.zeros(size)
    if m.variables:
        dense[m.ids] = m.counts
    else:
        dense[0] = m.counts[0]
    return dense.reshape(shape)


def observed_flat_ids(margins: Margins) -> np.ndarray:
    """Row-major flat index of every observed cell in the full key space."""
    ids = np.zeros(len(margins.counts), np.int64)
    for j, d in enumerate(margins.n_levels):
        ids = ids * d + margins.cell_codes[:, j]
    return ids


def _moment_sums(params, family_counts, parent_counts) -> tuple[np.ndarray, np.ndarray]:
    """log E[pi] and log(1 + CV^2) of :func:`moments_from_counts` (the floor included),
    before CV^2 is taken (:func:`_prob_one` needs CV^2 itself). Each factor's difference of
    logs is taken on its margin's shape, then added once to the cells'."""
    log_mean = 0.0
    log_ratio = 0.0
    for (_, _, a_a, a_b), fa, fb in zip(params, family_counts, parent_counts, strict=True):
        mu = a_a + np.asarray(fa, float)
        sig = a_b + np.asarray(fb, float)
        log_mean = log_mean + (np.log(mu) - np.log(sig))
        log_ratio = log_ratio + (np.log1p(1.0 / mu) - np.log1p(1.0 / sig))
    # CV^2 -> 0 (a cell whose probability the data fix, e.g. a key space of one cell): the
    # gamma law tends to a point mass and U to Poisson(u E[pi]); a floor of 1e-6 keeps the
    # NB parameters p = 1/(1 + u E[pi] CV^2) representable (1 - p rounds to 0 as CV^2 -> 0) and
    # the NB mean u E[pi] exact; a CV of pi of 0.1% only adds u E[pi] CV^2 to its variance
    return (np.asarray(log_mean, float),
            np.maximum(np.asarray(log_ratio, float), 1e-6))


def _prob_one(log_mean: np.ndarray, log_ratio: np.ndarray, u: float) -> np.ndarray:
    """P(U = 1) = alpha q p^alpha of FW eq (23) per cell, from log E[pi] and log(1 + CV^2):
    with x = u E[pi] CV^2 and alpha = 1 / CV^2 it is u E[pi] / (1 + x) (1 + x)^(-alpha),
    four transcendental passes over the cells where exp(log_prob_one) took seven (P(PU)
    over every cell of the key space is most of a graphical fit on a small file). Cells
    whose CV^2 or E[pi] overflows take :func:`log_prob_one`."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        cv2 = np.expm1(log_ratio)
        mean_u = np.exp(log_mean)
        mean_u *= u
        x = mean_u * cv2
        out = np.log1p(x)
        out /= cv2
        np.negative(out, out=out)
        np.exp(out, out=out)
        x += 1.0
        mean_u /= x
        out *= mean_u
    bad = ~np.isfinite(out)
    if bad.any():
        out[bad] = np.exp(log_prob_one(CellMoments(log_mean[bad],
                                                   _log_expm1(log_ratio[bad])), u))
    return out


def unobserved_enumerated(graph: DecomposableGraph, margins: Margins, prior_weight: float,
                          u: float, *, slab_cells: int = 1 << 20) -> float:
    """sum over every cell with f = 0 of P(U = 1 | f) under the gamma approximation (exact sum).

    Time proportional to K: call only for small key spaces. The key space is visited in slabs
    along the first key (about ``slab_cells`` cells each), so the working memory is that of
    the dense family margins plus one slab.
    """
    if u <= 0:
        return 0.0
    params = factor_params(graph, margins, prior_weight)
    fams = [dense_margin(margins, a) for a, _, _, _ in params]
    pars = [dense_margin(margins, b) for _, b, _, _ in params]
    shape = margins.n_levels
    rest = math.prod(shape[1:])
    step = max(1, slab_cells // max(rest, 1))
    observed = np.sort(observed_flat_ids(margins))
    total = 0.0
    for lo in range(0, shape[0], step):
        hi = min(shape[0], lo + step)

        def cut(a, lo=lo, hi=hi):
            return a[lo:hi] if a.shape[0] > 1 else a

        log_mean, log_ratio = _moment_sums(params, [cut(a) for a in fams],
                                           [cut(b) for b in pars])
        slab = (hi - lo,) + tuple(shape[1:])
        g = _prob_one(np.broadcast_to(log_mean, slab).reshape(-1),
                      np.broadcast_to(log_ratio, slab).reshape(-1), u)
        a, b = np.searchsorted(observed, [lo * rest, hi * rest])
        g[observed[a:b] - lo * rest] = 0.0
        total += float(g.sum())
    return total


@dataclass(frozen=True)
class _Family:
    """The family margin A = {v} u pa(v) arranged for drawing v given its parents."""

    order: np.ndarray  # family cells sorted by parent cell
    cum: np.ndarray  # cumulative counts in that order
    offset: np.ndarray  # per parent cell: counts of the family cells of earlier parents
    code_col: int  # column of v in the family margin's codes
    #: the family cell of every record rank 0..n-1 in that order (``order[searchsorted(cum,
    #: rank, side="right")]`` by indexing); None above ``RANKS_MAX`` records
    by_rank: np.ndarray | None = None

    def cells_at(self, ranks: np.ndarray) -> np.ndarray:
        """The family cell holding each record rank (0 <= rank < n)."""
        if self.by_rank is not None:
            return self.by_rank[ranks]
        return self.order[np.searchsorted(self.cum, ranks, side="right")]


#: records up to which a family keeps the cell of every record rank (8 bytes each) instead
#: of a binary search per drawn cell (the importance sampling draws ~200,000 cells per fit)
RANKS_MAX = 1 << 22


def _family(margins: Margins, a_mask: int, b_mask: int, v: int) -> _Family:
    fam = margins(a_mask)
    par = margins(b_mask)
    parent = parent_index(fam, par, b_mask)
    order = np.argsort(parent, kind="stable")
    cum = np.cumsum(fam.counts[order])
    parent_totals = np.bincount(parent, weights=fam.counts, minlength=len(par.counts))
    offset = np.concatenate([[0], np.cumsum(parent_totals)[:-1]]).astype(np.int64)
    by_rank = (np.repeat(order, fam.counts[order]) if len(cum) and cum[-1] <= RANKS_MAX
               else None)
    return _Family(order, cum, offset, fam.variables.index(v), by_rank)


def _lookup(margins: Margins, mask: int, codes: np.ndarray, memo: dict | None) -> np.ndarray:
    """Margin cell of each row of ``codes`` on the margin ``mask`` (-1 if empty); ``memo``
    keeps them by mask for the same draws (the parents looked up while drawing are looked up
    again for the moments, and a family margin is often another factor's parent)."""
    got = None if memo is None else memo.get(mask)
    if got is None:
        m = margins(mask)
        got = m.lookup(codes[:, list(m.variables)])
        if memo is not None:
            memo[mask] = got
    return got


def sample_cells(graph: DecomposableGraph, margins: Margins, prior_weight: float, size: int,
                 rng: np.random.Generator, *, memo: dict | None = None) -> np.ndarray:
    """Draws of cells (codes, shape (size, J)) from q(i) = E[pi_i | m, f].

    Ancestral sampling along the perfect numbering: v given its parents i_B is drawn from
    ``(a_A + f_A(., i_B)) / (a_B + f_B(i_B))``, the mixture of the empirical conditional
    (weight f_B / (a_B + f_B)) and the uniform law on the d_v levels (weight a_B / (a_B + f_B)).
    ``memo`` (a dict) receives the parents' lookups, for :func:`cell_moments` on these draws.
    """
    params = factor_params(graph, margins, prior_weight)
    codes = np.zeros((size, margins.n_vertices), np.int64)
    for (a_mask, b_mask, _, a_b), v in zip(params, graph.numbering, strict=True):
        par = margins(b_mask)
        if b_mask == 0:
            pidx = np.zeros(size, np.int64)
        else:  # the parents come earlier in the numbering: their codes are final
            pidx = _lookup(margins, b_mask, codes, memo)
        f_b = np.where(pidx >= 0, par.counts[np.maximum(pidx, 0)], 0).astype(float)
        empirical = rng.random(size) * (a_b + f_b) < f_b
        out = rng.integers(0, margins.n_levels[v], size)
        idx = np.flatnonzero(empirical)
        if idx.size:
            fam = _family(margins, a_mask, b_mask, v)
            r = np.floor(rng.random(idx.size) * f_b[idx]).astype(np.int64)
            cell = fam.cells_at(fam.offset[pidx[idx]] + r)
            out[idx] = margins(a_mask).codes[cell, fam.code_col]
        codes[:, v] = out
    return codes


def cell_moments(graph: DecomposableGraph, margins: Margins, prior_weight: float,
                 codes: np.ndarray, *, memo: dict | None = None) -> CellMoments:
    """FW eq (19) moments of arbitrary cells given by their codes (empty margins count 0);
    ``memo``: the lookups already made on these codes, by margin mask (added to)."""
    params = factor_params(graph, margins, prior_weight)
    fams, pars = [], []
    for a_mask, b_mask, _, _ in params:
        for mask, out in ((a_mask, fams), (b_mask, pars)):
            m = margins(mask)
            idx = _lookup(margins, mask, codes, memo)
            out.append(np.where(idx >= 0, m.counts[np.maximum(idx, 0)], 0))
    return moments_from_counts(params, fams, pars)


def unobserved_importance(graph: DecomposableGraph, margins: Margins, prior_weight: float,
                          u: float, draws: int, rng: np.random.Generator
                          ) -> tuple[float, float]:
    """Importance-sampling estimate (and standard error) of sum_{f=0} P(U = 1 | f).

    Proposal q(i) = E[pi_i | m, f]; weight P(U_i = 1) / q(i) = u p_i^(alpha_i + 1) on cells
    with f_i = 0 and 0 on observed cells. Unbiased; memory ~ draws x J.
    """
    if u <= 0:
        return 0.0, 0.0
    full = (1 << margins.n_vertices) - 1
    values = np.zeros(draws)
    chunk = 1 << 16
    for start in range(0, draws, chunk):
        size = min(chunk, draws - start)
        memo: dict = {}  # margin lookups of this chunk's draws, made once each
        codes = sample_cells(graph, margins, prior_weight, size, rng, memo=memo)
        mom = cell_moments(graph, margins, prior_weight, codes, memo=memo)
        unseen = _lookup(margins, full, codes, memo) < 0
        w = np.exp(log_prob_one(mom, u) - mom.log_mean)
        values[start:start + size] = np.where(unseen, w, 0.0)
    est = float(values.mean())
    se = float(values.std(ddof=1) / math.sqrt(draws)) if draws > 1 else float("nan")
    return est, se
