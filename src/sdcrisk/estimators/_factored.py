"""Log-linear fits without the dense table: block products over join supports (issue 20).

The dense fitted table of an 8-key set of a real population has 3-5 x 10^8 cells, almost all
of them with a fitted value of (nearly) zero. Two exact facts remove it:

1. **Blocks.** Keys joined by generators (two generators sharing a key are in one block)
   form connected blocks b. The maximum-likelihood fit factorises over them:
   ``mu(x) = n prod_b m_b(x_b) / n``, where m_b is the fit of the block's margin table
   under the block's own generators (the likelihood of a model with independent blocks is a
   product over blocks). Independence has one block per key; independence plus a few 2-way
   terms has small blocks; all-2-way has one block of all keys.
2. **Join supports.** Within a block, the fitted value is 0 wherever a generator's sample
   margin is 0 (fitted margins equal the observed ones). The block is fitted on the list of
   cells where every generator margin is positive (a relational join of the positive
   margins), which for all-2-way on 15,000 records is about 1% of the key space. IPF runs on
   that list with a fused sparse kernel (update by one generator's ratio, accumulate the next
   generator's margin, in one pass).

The minimum-error statistic and P(PU) need sums over **all** cells of functions of mu
(:func:`._minerror.dense_sums`). With the blocks split into two groups A, B whose value lists
are materialised (each about sqrt(K) long, or one big block and the rest), a cell is a pair
(a, b) with lambda = (n / pi) a b: cells with lambda < 0.5 are summed by the power series of
each function (to order 24, with prefix sums of b^p over sorted B), the others (at most
n / (0.5 pi) of them) one by one. The result equals the dense sum to rounding.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Sequence

import numpy as np

from ..data.sizes import check_memory
from ..data.table import CellTable
from . import _ipf

__all__ = ["BlockFit", "blocks_of", "FactoredModel", "FactoredFitter", "fit_factored",
           "factored_sums", "series_coefficients", "support_size_limit", "warm_up"]

Generator = tuple[int, ...]

#: lambda below which a cell's terms are summed by their power series (see module doc)
LAMBDA_SERIES = 0.5
#: order of the power series (terms at most 3^p / p! lambda^p: below 1e-19 at p = 25)
SERIES_ORDER = 24
#: block fits a search keeps for reuse across steps (total support cells; a cell costs about
#: 50 bytes with its codes and margin indexes), and the largest block kept
_CACHE_CELLS = 2_000_000
_CACHE_BLOCK = 200_000
#: materialise the full product of the blocks' value lists up to this many cells
_DIRECT = 1 << 22


#: what a user can do about a join support too large for memory (flags and options)
_JOIN_REMEDIES = ("use fewer keys, fewer terms (--terms) or partition the table (--partition "
                  "KEY); in Python a small key space also fits densely "
                  "(LogLinearRisk(engine='dense'))")


def support_size_limit() -> int:
    """Largest join support one block may hold (float64 value + int16 codes per cell)."""
    return 200_000_000


def blocks_of(gens: Sequence[Generator]) -> list[tuple[tuple[int, ...], tuple[Generator, ...]]]:
    """Connected blocks of keys: (sorted keys, the generators on them, in model order)."""
    parent: dict[int, int] = {}

    def find(i):
        while parent.setdefault(i, i) != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for g in gens:
        for i in g:
            find(i)
        for i, j in itertools.pairwise(g):
            parent[find(i)] = find(j)
    groups: dict[int, list[Generator]] = {}
    for g in gens:
        groups.setdefault(find(g[0]), []).append(g)
    out = []
    for block_gens in groups.values():
        keys = tuple(sorted({i for g in block_gens for i in g}))
        out.append((keys, tuple(block_gens)))
    return sorted(out)


@dataclasses.dataclass(frozen=True, eq=False)
class BlockFit:
    """The fitted margin table of one block on its join support.

    ``codes[:, c]`` is the level of key ``order[c]``; rows are sorted by ``flat`` (the
    mixed-radix index in ``order``), so observed cells are found by binary search.
    """

    order: tuple[int, ...]
    gens: tuple[Generator, ...]
    codes: np.ndarray
    flat: np.ndarray
    values: np.ndarray
    iterations: int
    converged: bool
    deviations: tuple[float, ...]
    min_factor: float
    max_factor: float
    seconds: float
    #: margin index of every support cell per generator (shared by warm-started refits)
    index_cache: dict = dataclasses.field(default_factory=dict)

    @property
    def keys(self) -> tuple[int, ...]:
        return tuple(sorted(self.order))


# --------------------------------------------------------------------------------------------
# join support

def _join_order(keys, gens, shape):
    """Keys in an order where each next key is tied to the chosen ones by most generators
    (so the join is filtered at every step); ties: more levels first."""
    left = set(keys)
    order = []
    while left:
        def score(j):
            links = sum(1 for g in gens if j in g and len(g) > 1
                        and any(i in order for i in g))
            return (links, shape[j], -j)
        j = max(left, key=score)
        order.append(j)
        left.remove(j)
    return order


def join_support(positive: dict, keys, gens, shape, *, limit: int | None = None):
    """(order, codes) of the cells of a block where every generator margin is positive.

    ``positive[g]`` is the boolean positive-margin array of generator ``g`` (and of each
    single key). Built key by key; a generator filters as soon as all its keys are placed.
    """
    limit = support_size_limit() if limit is None else limit
    order = _join_order(keys, gens, shape)
    first = order[0]
    part = np.flatnonzero(positive[(first,)]).astype(np.int16)[:, None]
    placed = [first]
    for j in order[1:]:
        d = shape[j]
        candidates = float(part.shape[0]) * d
        held = part.nbytes
        # a candidate cell costs its mask byte and one of the generator filter's temporary
        # (checked before the step: a 30-key all-2-way join must not grow past the machine)
        check_memory(held + candidates * 2, what=f"the join of {part.shape[0]:,} x {d} "
                     "cells of a log-linear block", remedies=_JOIN_REMEDIES)
        ok = np.broadcast_to(positive[(j,)][None, :], (part.shape[0], d)).copy()
        for g in gens:
            if j not in g or len(g) == 1 or not set(g) <= set(placed) | {j}:
                continue
            index = tuple(np.arange(d)[None, :] if i == j
                          else part[:, placed.index(i)][:, None] for i in g)
            ok &= positive[g][index]
        # a kept cell: np.nonzero's two int64 indices, its int16 codes in part[rows] and in
        # the concatenation (before, every candidate was charged all of it: up to ~50 bytes
        # where a step keeps a few percent, refusing joins that fit)
        kept = int(np.count_nonzero(ok))
        check_memory(held + candidates + kept * (16.0 + 2 * len(placed) + 2 * (len(placed) + 1)),
                     what=f"the join support of a log-linear block ({kept:,} cells)",
                     remedies=_JOIN_REMEDIES)
        rows, new = np.nonzero(ok)
        del ok
        part = np.concatenate([part[rows], new.astype(np.int16)[:, None]], axis=1)
        placed.append(j)
        if part.shape[0] > limit:
            check_memory(float(part.shape[0]) * (8 + 2 * len(keys)) * 4, what="the join "
                         f"support of a log-linear block ({part.shape[0]:,} cells)",
                         remedies=_JOIN_REMEDIES)
    return tuple(order), part


def _flat(codes: np.ndarray, order, shape) -> np.ndarray:
    flat = np.zeros(codes.shape[0], np.int64)
    for c, j in enumerate(order):
        flat *= shape[j]
        flat += codes[:, c]
    return flat


def _margin_index(block_codes, order, gen, shape) -> np.ndarray:
    idx = np.zeros(block_codes.shape[0], np.int64)
    for i in gen:
        idx *= shape[i]
        idx += block_codes[:, order.index(i)]
    size = math.prod(shape[i] for i in gen)
    return idx.astype(np.int32 if size < (1 << 31) else np.int64)


# --------------------------------------------------------------------------------------------
# numba kernels

_KERNELS = None


def _kernels():
    global _KERNELS
    if _KERNELS is None:
        import numba
        from numba import njit, prange

        @njit(parallel=True, cache=True)
        def sparse_pass(mu, idx_u, ratio, do_update, idx_a, acc):
            # one pass over the support: scale by the ratio of one generator, accumulate the
            # margin of the next (per-chunk accumulators, summed by the caller)
            n = mu.shape[0]
            n_chunks = acc.shape[0]
            per = (n + n_chunks - 1) // n_chunks
            for c in prange(n_chunks):
                a = acc[c]
                for k in range(c * per, min(n, (c + 1) * per)):
                    if do_update:
                        mu[k] *= ratio[idx_u[k]]
                    a[idx_a[k]] += mu[k]

        @njit(parallel=True, cache=True)
        def pair_sums(a_vals, b_sorted, prefix, coef, scale, lam_eps, pi, n_chunks):
            # sum over all pairs (a, b) of the five terms at lambda = scale * a * b
            n_a = a_vals.shape[0]
            n_b = b_sorted.shape[0]
            order = coef.shape[1] - 1
            c = 1.0 - pi
            per = (n_a + n_chunks - 1) // n_chunks
            out = np.zeros((n_chunks, 5))
            for ch in prange(n_chunks):
                acc = np.zeros(5)
                for k in range(ch * per, min(n_a, (ch + 1) * per)):
                    u = scale * a_vals[k]
                    if u <= 0.0:
                        continue
                    i = np.searchsorted(b_sorted, lam_eps / u)
                    up = 1.0
                    for p in range(1, order + 1):
                        up *= u
                        s = prefix[i, p] * up
                        for f in range(5):
                            acc[f] += coef[f, p] * s
                    for j in range(i, n_b):
                        # the five per-cell terms of _minerror.dense_sums at lambda
                        lam = u * b_sorted[j]
                        mu = pi * lam
                        x = c * lam
                        em = np.exp(-mu)
                        ex = np.exp(-x)
                        e = em * ex
                        a = x * e
                        b = c * c / (2.0 * pi) * lam * e
                        acc[0] += -a * mu + b * mu * mu
                        acc[1] += a * a * mu + 2.0 * b * b * mu * mu
                        acc[4] += x * ex
                        if x > 0.5:
                            hh = (1.0 - ex) / x
                        elif x > 1e-12:
                            hh = -np.expm1(-x) / x
                        else:
                            hh = 1.0 - x / 2.0
                        g = em * hh
                        a = g - e
                        b = (g - e * (1.0 + 0.5 * x)) / (pi * lam)
                        acc[2] += -a * mu + b * mu * mu
                        acc[3] += a * a * mu + 2.0 * b * b * mu * mu
                out[ch] = acc
            return out.sum(axis=0)

        _KERNELS = (sparse_pass, pair_sums, numba.get_num_threads)
    return _KERNELS


def warm_up() -> None:
    """Load both kernels from numba's cache (and numba itself) on tiny inputs."""
    sparse_pass, pair_sums, _ = _kernels()
    idx = np.zeros(4, np.int32)
    sparse_pass(np.ones(4), idx, np.ones(1), True, idx, np.zeros((1, 1)))
    pair_sums(np.ones(2), np.ones(3), np.zeros((4, SERIES_ORDER + 1)),
              np.zeros((5, SERIES_ORDER + 1)), 1.0, LAMBDA_SERIES, 0.5, 1)


# --------------------------------------------------------------------------------------------
# block IPF

def fit_block(keys, gens, targets: dict, positive: dict, shape, *, max_iter: int, tol: float,
              initial: BlockFit | None = None) -> BlockFit:
    """IPF of one block on its join support (or on ``initial``'s support, warm-started).

    ``initial``: a fit of a sub-model on the same keys (the search's current model); its
    support contains the new one, and cells outside the new support go to 0 in the first
    sweep. IPF converges to the same MLE from any start in the model's family.
    """
    sparse_pass, _, n_threads = _kernels()
    start = time.perf_counter()
    if initial is not None and initial.keys == tuple(keys):
        order, codes, flat = initial.order, initial.codes, initial.flat
        mu = initial.values.copy()
        cache = initial.index_cache
    else:
        order, codes = join_support(positive, keys, gens, shape)
        flat = _flat(codes, order, shape)
        mu = np.ones(codes.shape[0])
        cache = {}
    idx = []
    for g in gens:
        if g not in cache:
            cache[g] = _margin_index(codes, order, g, shape)
        idx.append(cache[g])
    flat_targets = [np.asarray(targets[g], float).ravel() for g in gens]
    n_chunks = max(1, min(n_threads(), max(1, mu.size // 65536)))
    empty = np.zeros(1)

    def accumulate(gi, update_gi=None, ratio=None):
        acc = np.zeros((n_chunks, flat_targets[gi].size))
        if update_gi is None:
            sparse_pass(mu, idx[gi], empty, False, idx[gi], acc)
        else:
            sparse_pass(mu, idx[update_gi], ratio, True, idx[gi], acc)
        return acc.sum(axis=0)

    it, converged, deviations, fmin, fmax = _ipf.sweep(accumulate, flat_targets, max_iter, tol)
    return BlockFit(order=tuple(order), gens=tuple(gens), codes=codes, flat=flat, values=mu,
                    iterations=it, converged=converged, deviations=tuple(deviations),
                    min_factor=float(fmin), max_factor=float(fmax),
                    seconds=time.perf_counter() - start, index_cache=cache)


# --------------------------------------------------------------------------------------------
# sums over all cells

def series_coefficients(pi: float, order: int = SERIES_ORDER) -> np.ndarray:
    """(5, order + 1) power-series coefficients in lambda of the five per-cell terms of
    :func:`._minerror.dense_sums` (B and v of tau1, B and v of tau2, x e^-x)."""
    c = 1 - pi
    p = np.arange(order + 1)
    fact = np.array([math.factorial(int(k)) for k in p], float)

    def exp_series(k):  # e^{-k lambda}
        return (-k) ** p / fact

    def mul(*series):
        out = np.zeros(order + 1)
        out[0] = 1.0
        for s in series:
            s = np.asarray(s, float)
            full = np.convolve(out, np.pad(s, (0, max(0, order + 1 - s.size))))
            out = full[:order + 1]
        return out

    e1 = exp_series(1.0)
    h2 = (-c) ** p / np.array([math.factorial(int(k) + 1) for k in p], float)
    g = mul(exp_series(pi), h2)
    a2 = g - e1
    d2 = a2 - mul(e1, [0.0, c / 2])
    lam = np.zeros(order + 1)
    lam[1] = 1.0
    return np.stack([
        mul(e1, [0, 0, -c * pi, c * c * pi / 2]),
        mul(exp_series(2.0), [0, 0, 0, c * c * pi, c ** 4 / 2]),
        mul(e1, [0, 0, -c * pi / 2]),
        pi * mul(lam, a2, a2) + 2 * mul(d2, d2),
        mul(exp_series(c), [0, c]),
    ])


def _product(vectors: list[np.ndarray]) -> np.ndarray:
    out = np.ones(1)
    for v in vectors:
        out = np.multiply.outer(out, v).ravel()
    return out


def factored_sums(values: list[np.ndarray], n: float, pi: float) -> dict:
    """:func:`._minerror.dense_sums` of the table mu = n prod_b values[b] / n (all cells).

    ``values``: each block's fitted margin table on its support (cells outside every support
    are 0 and add 0).
    """
    from ._minerror import dense_sums

    sizes = [v.size for v in values]
    if math.prod(sizes) <= _DIRECT or len(values) == 1:
        mu = _product([v / n for v in values[:-1]]) if len(values) > 1 else np.ones(1)
        mu = np.multiply.outer(mu, values[-1]).ravel() if len(values) > 1 else values[0]
        return dense_sums(mu, pi)
    # two groups with balanced products of sizes: A is looped over, B sorted with prefix sums
    group_a: list[np.ndarray] = []
    group_b: list[np.ndarray] = []
    log_a = log_b = 0.0
    for v in sorted(values, key=lambda v: -v.size):
        if log_a <= log_b:
            group_a.append(v)
            log_a += math.log(v.size)
        else:
            group_b.append(v)
            log_b += math.log(v.size)
    if log_b > log_a:
        group_a, group_b = group_b, group_a
    cells = math.exp(log_a + log_b)
    check_memory((math.exp(log_a) + math.exp(log_b) * (SERIES_ORDER + 2)) * 8,
                 what=f"summing a log-linear model over all {cells:.3g} cells of the key "
                      "space",
                 remedies="use fewer keys or keys with fewer levels, or a method that "
                          "does not sum over every cell (--method graphical, nb or "
                          "pitman-yor)")
    a_vals = _product([v / n for v in group_a])
    b_sorted = np.sort(_product([v / n for v in group_b]))
    powers = b_sorted[:, None] ** np.arange(SERIES_ORDER + 1)[None, :]
    prefix = np.zeros((b_sorted.size + 1, SERIES_ORDER + 1))
    np.cumsum(powers, axis=0, out=prefix[1:])
    del powers
    _, pair_sums, n_threads = _kernels()
    coef = series_coefficients(pi)
    t = pair_sums(a_vals, b_sorted, prefix, coef, n / pi, LAMBDA_SERIES, float(pi),
                  max(1, 4 * n_threads()))
    return {"tau1": (float(t[0]), float(t[1])), "tau2": (float(t[2]), float(t[3])),
            "prob_one": float(t[4])}


# --------------------------------------------------------------------------------------------
# a whole model

@dataclasses.dataclass(frozen=True, eq=False)
class FactoredModel:
    """A fitted model as blocks; mu at the observed cells and the all-cell sums."""

    generators: tuple[Generator, ...]
    blocks: tuple[BlockFit, ...]
    observed_mu: np.ndarray
    sums: dict
    seconds: float

    @property
    def support_cells(self) -> int:
        return int(sum(b.values.size for b in self.blocks))

    def ipf_result(self) -> _ipf.IPFResult:
        """Diagnostics in the dense engine's form (the block with most sweeps; no table)."""
        main = max(self.blocks, key=lambda b: (b.iterations, b.values.size))
        return _ipf.IPFResult(
            fitted=np.empty(0), generators=self.generators, iterations=main.iterations,
            converged=all(b.converged for b in self.blocks),
            max_deviation=list(main.deviations),
            min_factor=min(b.min_factor for b in self.blocks),
            max_factor=max(b.max_factor for b in self.blocks),
            seconds=self.seconds, engine="sparse-join blocks")


class FactoredFitter:
    """Fits models of one table; shares its margins and positive-margin masks across fits."""

    def __init__(self, table: CellTable, *, max_iter: int = 40, tol: float = 1e-3):
        self.table = table
        self.shape = tuple(len(lv) for lv in table.levels)
        self.max_iter = max_iter
        self.tol = tol
        self._targets: dict = {}
        self._positive: dict = {}
        #: block fits by generating class: a search step's candidate often rebuilds a block
        #: of the previous step (its keys untouched by the term added since)
        self._blocks: dict = {}
        self._cached_cells = 0
        j = len(self.shape)
        self._cols = np.ascontiguousarray(table.cell_codes.T.astype(np.int64))
        self._margins([(i,) for i in range(j)])

    def _margins(self, gens):
        todo = [g for g in gens if g not in self._targets]
        if todo:
            for g, m in zip(todo, _ipf.margins_of_cells(self.table, todo), strict=True):
                self._targets[g] = m
                self._positive[g] = m > 0

    def fit(self, gens: Sequence[Generator], parent: FactoredModel | None = None
            ) -> FactoredModel:
        start = time.perf_counter()
        gens = tuple(gens)
        self._margins(gens)
        reuse = {} if parent is None else {b.gens: b for b in parent.blocks}
        by_keys = {} if parent is None else {b.keys: b for b in parent.blocks}
        blocks = []
        for keys, block_gens in blocks_of(gens):
            if block_gens in reuse:
                blocks.append(reuse[block_gens])
                continue
            if block_gens in self._blocks:
                blocks.append(self._blocks[block_gens])
                continue
            block = fit_block(keys, block_gens, self._targets, self._positive, self.shape,
                              max_iter=self.max_iter, tol=self.tol, initial=by_keys.get(keys))
            if (block.values.size <= _CACHE_BLOCK
                    and self._cached_cells + block.values.size <= _CACHE_CELLS):
                self._blocks[block_gens] = block
                self._cached_cells += block.values.size
            blocks.append(block)
        n = float(self.table.n)
        mu = np.full(self.table.n_cells, n)
        for b in blocks:
            flat = _flat(self.table.cell_codes[:, list(b.order)], b.order, self.shape)
            pos = np.searchsorted(b.flat, flat)
            pos = np.minimum(pos, b.flat.size - 1)
            found = b.flat[pos] == flat
            mu *= np.where(found, b.values[pos], 0.0) / n
        pi = self.table.n / self.table.population_size
        sums = factored_sums([b.values for b in blocks], n, pi)
        return FactoredModel(generators=gens, blocks=tuple(blocks), observed_mu=mu, sums=sums,
                             seconds=time.perf_counter() - start)


def fit_factored(table: CellTable, gens, *, max_iter: int = 40, tol: float = 1e-3,
                 parent: FactoredModel | None = None) -> FactoredModel:
    """One model fitted by blocks on join supports (see the module docstring)."""
    return FactoredFitter(table, max_iter=max_iter, tol=tol).fit(gens, parent)
