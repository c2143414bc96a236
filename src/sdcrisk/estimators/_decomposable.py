"""Decomposable graphical models on the key variables (methods spec D.1-D.4).

* graphs as adjacency bitmasks: chordality by maximum cardinality search (Tarjan & Yannakakis
  1984), perfect numbering, cliques and separators of a junction tree, the single-edge
  additions that keep a graph decomposable;
* :class:`Margins`: margins of the sparse sample table over subsets of the keys, computed
  from the observed cells only and cached (memory grows with the number of non-empty margin
  cells, never with the key space);
* the hyper-Dirichlet marginal likelihood in both forms: FW eq (18), a product over the
  vertices of a perfect numbering and their parent configurations, and the clique/separator
  form of spec D.3; they are equal for every decomposable graph;
* Occam's window search (FW section 4, spec D.4).

The prior is the hyper-Dirichlet law derived from a symmetric Dirichlet with total weight p
over all K cells: on any variable set A it is Dirichlet with parameter ``a_A = p / |I_A|`` per
cell of A (spec D.2), so ``mu_j(i_j | i_pa(j)) = p / |I_{j u pa(j)}|``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations

import numpy as np
from scipy.special import gammaln

__all__ = [
    "DecomposableGraph",
    "Margins",
    "Margin",
    "mcs_order",
    "perfect_numbering",
    "is_decomposable",
    "log_ml_vertex_form",
    "log_ml_clique_form",
    "occam_window",
    "separates",
    "SearchResult",
    "parent_index",
    "members",
]

_MAX_RADIX = 2**62
#: margins over at most this many cells (or 4 per observed cell) are counted densely
_DENSE_MIN = 1 << 22


# ------------------------------------------------------------------------------------------
# graphs


def members(mask: int) -> list[int]:
    """The vertices of a bitmask, in increasing order."""
    out = []
    v = 0
    while mask:
        if mask & 1:
            out.append(v)
        mask >>= 1
        v += 1
    return out


def mcs_order(adj: tuple[int, ...]) -> list[int]:
    """Maximum cardinality search: repeatedly number the vertex with most numbered neighbours.

    Ties go to the smallest vertex index, so the order is deterministic. For a chordal graph
    the order is a perfect numbering (Tarjan & Yannakakis 1984).
    """
    n = len(adj)
    weight = [0] * n
    numbered = 0
    order = []
    for _ in range(n):
        best, best_w = -1, -1
        for v in range(n):
            if not numbered >> v & 1 and weight[v] > best_w:
                best, best_w = v, weight[v]
        order.append(best)
        numbered |= 1 << best
        for u in members(adj[best] & ~numbered):
            weight[u] += 1
    return order


def _is_complete(mask: int, adj: tuple[int, ...]) -> bool:
    return all((adj[v] | 1 << v) & mask == mask for v in members(mask))


def perfect_numbering(adj: tuple[int, ...]) -> list[int] | None:
    """A perfect numbering (earlier neighbours of every vertex form a complete set), or None.

    The MCS order is checked: a graph is chordal iff its MCS order is perfect.
    """
    order = mcs_order(adj)
    earlier = 0
    for v in order:
        if not _is_complete(adj[v] & earlier, adj):
            return None
        earlier |= 1 << v
    return order


def is_decomposable(adj: tuple[int, ...]) -> bool:
    """True when the graph has no chordless cycle of length >= 4."""
    return perfect_numbering(adj) is not None


@dataclass(frozen=True)
class DecomposableGraph:
    """An undirected decomposable graph on vertices 0..n_vertices-1 (one per key variable).

    Parameters
    ----------
    n_vertices : int
        Number of key variables.
    edges : frozenset of (int, int)
        Edges as pairs (i, j) with i < j.

    Raises
    ------
    ValueError
        When the graph is not decomposable (has a chordless cycle of length >= 4).
    """

    n_vertices: int
    edges: frozenset = field(default_factory=frozenset)

    def __post_init__(self):
        edges = frozenset((min(a, b), max(a, b)) for a, b in self.edges)
        for a, b in edges:
            if a == b or not (0 <= a < self.n_vertices and 0 <= b < self.n_vertices):
                raise ValueError(f"bad edge ({a}, {b}) for {self.n_vertices} vertices")
        object.__setattr__(self, "edges", edges)
        if self.numbering is None:
            raise ValueError(f"graph with edges {sorted(edges)} is not decomposable")

    @classmethod
    def independence(cls, n_vertices: int) -> DecomposableGraph:
        return cls(n_vertices, frozenset())

    @classmethod
    def saturated(cls, n_vertices: int) -> DecomposableGraph:
        return cls(n_vertices, frozenset((a, b) for a in range(n_vertices)
                                         for b in range(a + 1, n_vertices)))

    @cached_property
    def adj(self) -> tuple[int, ...]:
        adj = [0] * self.n_vertices
        for a, b in self.edges:
            adj[a] |= 1 << b
            adj[b] |= 1 << a
        return tuple(adj)

    @cached_property
    def numbering(self) -> list[int] | None:
        return perfect_numbering(self.adj)

    @cached_property
    def factors(self) -> tuple[tuple[int, int], ...]:
        """(A_j, B_j) bitmasks per vertex of the perfect numbering: A = {j} u pa(j), B = pa(j)."""
        out = []
        earlier = 0
        for v in self.numbering:
            pa = self.adj[v] & earlier
            out.append((pa | 1 << v, pa))
            earlier |= 1 << v
        return tuple(out)

    @cached_property
    def cliques(self) -> tuple[int, ...]:
        """Maximal complete sets (bitmasks), ordered so that they have the running
        intersection property."""
        cands = [a for a, _ in self.factors]
        keep = []
        for i, c in enumerate(cands):
            if any(c != d and c & d == c for d in cands) or c in cands[:i]:
                continue
            keep.append(c)
        return tuple(keep)

    @cached_property
    def separators(self) -> tuple[int, ...]:
        """Separators with multiplicity: S_k = C_k n (C_1 u ... u C_{k-1}), k >= 2 (may be 0)."""
        seps = []
        union = 0
        for i, c in enumerate(self.cliques):
            if i:
                seps.append(c & union)
            union |= c
        return tuple(seps)

    def edge_mask(self) -> int:
        """The edge set as one integer (bit a*n+b for edge (a, b)): a hashable model id."""
        return sum(1 << (a * self.n_vertices + b) for a, b in self.edges)

    def additions(self) -> list[DecomposableGraph]:
        """Graphs with one more edge that are still decomposable (the search's moves; the
        search itself scores them without building them, see :func:`occam_window`)."""
        out = []
        n = self.n_vertices
        for a in range(n):
            for b in range(a + 1, n):
                if (a, b) in self.edges:
                    continue
                adj = list(self.adj)
                adj[a] |= 1 << b
                adj[b] |= 1 << a
                if is_decomposable(tuple(adj)):
                    out.append(DecomposableGraph(n, self.edges | {(a, b)}))
        return out

    def describe(self, names) -> str:
        """Cliques by variable name, e.g. ``[age, sex] [race]``."""
        return " ".join("[" + ", ".join(names[v] for v in members(c)) + "]" for c in self.cliques)


# ------------------------------------------------------------------------------------------
# margins of the sparse table


@dataclass(frozen=True)
class Margin:
    """Non-empty cells of the margin of the sample over a variable set A.

    ``counts[k]`` is f_A of margin cell k, ``codes[k]`` its level codes (columns in
    ``variables`` order), ``inverse[i]`` the margin cell of observed cell i (``None`` where
    :class:`Margins` keeps it apart: use :meth:`Margins.cell_index`), ``log_size`` the log of
    |I_A|, the number of cells of A (sample zeros included).
    """

    variables: tuple[int, ...]
    counts: np.ndarray
    codes: np.ndarray
    inverse: np.ndarray | None
    log_size: float
    ids: np.ndarray | None  # sorted mixed-radix ids of the margin cells (None if too large)
    radices: tuple[int, ...]

    def lookup(self, query: np.ndarray) -> np.ndarray:
        """Index of the margin cell of each query row (codes on ``variables``), -1 if empty."""
        m = query.shape[0]
        if not self.variables:
            return np.zeros(m, np.int64)
        if self.ids is not None:
            qid = _radix_ids(query, self.radices)
            dense = self._positions()
            if dense is not None:  # the same answer as the search below, by indexing
                return dense[qid].astype(np.int64)
            pos = np.searchsorted(self.ids, qid)
            pos = np.minimum(pos, len(self.ids) - 1)
            return np.where(self.ids[pos] == qid, pos, -1)
        both = np.concatenate([self.codes, query], axis=0)
        _, inv = np.unique(both, axis=0, return_inverse=True)
        inv = inv.ravel()
        table = np.full(int(inv.max()) + 1, -1, np.int64)
        table[inv[: len(self.codes)]] = np.arange(len(self.codes))
        return table[inv[len(self.codes):]]

    def _positions(self) -> np.ndarray | None:
        """Margin cell of every id over the margin's whole cell space (-1 where empty), for a
        margin of at most ``DENSE_LOOKUP_MAX`` cells; built on the first lookup and kept.
        The importance sampling of the f = 0 cells looks up hundreds of thousands of drawn
        cells per fit: a binary search each was most of a fit at 8 keys (issue: recommend)."""
        got = self.__dict__.get("_positions_table", False)
        if got is False:
            got = None
            if math.prod(self.radices) <= DENSE_LOOKUP_MAX:
                got = np.full(math.prod(self.radices), -1, np.int32)
                got[self.ids] = np.arange(len(self.ids), dtype=np.int32)
            self.__dict__["_positions_table"] = got  # frozen: a cache, not a field
        return got


#: observed cells from which margin ids are computed in one compiled pass over the rows
#: (numba costs about 1 s to import; a NumPy pass per variable cost 2 s over 101 margins
#: of 5.9 M cells, issue 20)
COMPILED_FROM = 100_000
_IDS_KERNEL = None
_NO_LOOKUP = np.zeros(0, np.int64)


def _ids_kernel():
    """Mixed-radix id of every observed cell's margin cell (int64), or with a ``position``
    table ``position[id]`` in its type, the id computed on the fly (one pass: the ids and
    their gather cost two, with a cell-long int64 array between them)."""
    global _IDS_KERNEL
    if _IDS_KERNEL is None:
        from numba import njit, prange

        @njit(parallel=True, cache=True)
        def ids_of(codes, variables, radices, position):
            out = np.empty(codes.shape[0], position.dtype)
            lookup = position.shape[0] > 0
            for i in prange(codes.shape[0]):
                v = np.int64(0)
                for j in range(variables.shape[0]):
                    v = v * radices[j] + codes[i, variables[j]]
                out[i] = position[v] if lookup else v
            return out

        _IDS_KERNEL = ids_of
    return _IDS_KERNEL


_COUNTS_KERNEL = None


def _counts_kernel():
    """Dense margin counts in one compiled pass over the cells (ids and the sum together;
    ``blocks`` private accumulators summed at the end, so the blocks run in parallel)."""
    global _COUNTS_KERNEL
    if _COUNTS_KERNEL is None:
        from numba import njit, prange

        @njit(parallel=True, cache=True)
        def dense_counts(codes, variables, radices, counts, size, blocks):
            n = codes.shape[0]
            acc = np.zeros((blocks, size), np.int64)
            per = (n + blocks - 1) // blocks
            for b in prange(blocks):
                for i in range(b * per, min(n, (b + 1) * per)):
                    v = np.int64(0)
                    for j in range(variables.shape[0]):
                        v = v * radices[j] + codes[i, variables[j]]
                    acc[b, v] += counts[i]
            out = acc[0].copy()
            for b in range(1, blocks):
                out += acc[b]
            return out

        _COUNTS_KERNEL = dense_counts
    return _COUNTS_KERNEL


#: margins with at most this many cells (sample zeros included) answer lookups from a table of
#: positions (4 bytes a cell: 8 MB at most) instead of a binary search
DENSE_LOOKUP_MAX = 1 << 21


def _radix_ids(codes: np.ndarray, radices: tuple[int, ...]) -> np.ndarray:
    ids = np.zeros(codes.shape[0], np.int64)
    for j, d in enumerate(radices):
        ids = ids * d + codes[:, j]
    return ids


class Margins:
    """Cache of margins of the sample over subsets of the keys (bitmask -> :class:`Margin`).

    Parameters
    ----------
    cell_codes : ndarray (n_cells, J)
        Level codes of the observed cells.
    counts : ndarray (n_cells,)
        f of the observed cells.
    n_levels : sequence of int
        Number of levels d_j of each key (zero-count levels included).
    """

    def __init__(self, cell_codes: np.ndarray, counts: np.ndarray, n_levels,
                 count_cache: dict | None = None):
        self.cell_codes = np.asarray(cell_codes)
        self.counts = np.asarray(counts, np.int64)
        self.n_levels = tuple(int(d) for d in n_levels)
        self.n = int(self.counts.sum())
        self._cache: dict[int, Margin] = {}
        # the search needs only the multiset of each margin's counts (``count_cache``, which
        # may be shared by searches over the same table): kept apart from the full margins,
        # whose per-cell ``inverse`` costs 4-8 bytes an observed cell (issue 20)
        self._counts: dict[int, tuple[np.ndarray, np.ndarray, float]] = (
            {} if count_cache is None else count_cache)
        # margin cell of every observed cell, per margin (4-8 bytes an observed cell each):
        # needed while the models' cell moments are computed, then released
        self._index: dict[int, np.ndarray] = {}
        # log ML per (margin, prior weight): a search scores each margin for many models
        self._log_ml: dict[tuple[int, float], float] = {}

    @property
    def _compiled(self) -> bool:
        """Whether margins are counted and indexed by the compiled passes over the cells."""
        return len(self.counts) >= COMPILED_FROM and self.cell_codes.flags.c_contiguous

    @property
    def n_vertices(self) -> int:
        return len(self.n_levels)

    def __len__(self) -> int:
        """Number of margins computed so far."""
        return len(self._cache.keys() | self._counts.keys())

    def __call__(self, mask: int) -> Margin:
        got = self._cache.get(mask)
        if got is None:
            got = self._compute(mask)
            self._cache[mask] = got
        return got

    def cell_index(self, mask: int) -> np.ndarray:
        """For each observed cell, the index of its cell in the margin over ``mask``."""
        m = self(mask)
        if m.inverse is not None:
            return m.inverse
        got = self._index.get(mask)
        if got is None:
            got = np.searchsorted(m.ids, self._ids(m.variables, m.radices))
            self._index[mask] = got
        return got

    def release_cell_index(self, mask: int | None = None) -> None:
        """Forget the per-cell indexes, or the one over ``mask`` (recomputed by
        :meth:`cell_index` if asked again)."""
        if mask is None:
            self._index.clear()
        else:
            self._index.pop(mask, None)

    def margin_counts(self, mask: int) -> tuple[np.ndarray, np.ndarray, float]:
        """The distinct counts f_A of the non-empty cells of the margin over A, how many cells
        have each, and log |I_A| (what the marginal likelihood needs; no per-cell index)."""
        got = self._counts.get(mask)
        if got is None:
            full = self._cache.get(mask)
            variables = tuple(members(mask))
            radices = tuple(self.n_levels[v] for v in variables)
            dense = self._dense_size(radices)
            if full is not None or dense is None:
                counts = self(mask).counts
            else:
                counts = self._dense_counts(variables, radices, dense)
                counts = counts[counts > 0]
            top = int(counts.max())
            if top <= 4 * len(counts) + 64:
                mult = np.bincount(counts)
                values = np.flatnonzero(mult)
                mult = mult[values]
            else:
                values, mult = np.unique(counts, return_counts=True)
            got = (values, mult, float(sum(math.log(d) for d in radices)))
            self._counts[mask] = got
        return got

    def _dense_counts(self, variables: tuple[int, ...], radices: tuple[int, ...],
                      size: int) -> np.ndarray:
        """f_A of every cell of the margin over ``variables`` (int64, dense, length ``size``)."""
        if self._compiled:
            return _counts_kernel()(self.cell_codes, np.asarray(variables, np.int64),
                                    np.asarray(radices, np.int64), self.counts, size,
                                    2 if size <= (1 << 22) else 1)
        counts = np.bincount(self._ids(variables, radices), weights=self.counts,
                             minlength=size)
        return counts.astype(np.int64)

    def _dense_size(self, radices: tuple[int, ...]) -> int | None:
        """|I_A| when a dense count over it costs no more than a sort of the cells."""
        size = math.prod(radices)
        return size if size <= max(_DENSE_MIN, 4 * len(self.counts)) else None

    def _ids(self, variables: tuple[int, ...], radices: tuple[int, ...]) -> np.ndarray:
        """Mixed-radix id of each observed cell's margin cell over ``variables``."""
        if self._compiled:
            return _ids_kernel()(self.cell_codes, np.asarray(variables, np.int64),
                                 np.asarray(radices, np.int64), _NO_LOOKUP)
        ids = np.zeros(len(self.counts), np.int64)
        for v, d in zip(variables, radices, strict=True):
            ids *= d
            ids += self.cell_codes[:, v]
        return ids

    def _compute(self, mask: int) -> Margin:
        variables = tuple(members(mask))
        radices = tuple(self.n_levels[v] for v in variables)
        log_size = float(sum(math.log(d) for d in radices))
        n_cells = len(self.counts)
        if not variables:
            return Margin((), np.array([self.n], np.int64), np.zeros((1, 0), np.int64),
                          np.zeros(n_cells, np.int64), 0.0, None, ())
        if mask == (1 << self.n_vertices) - 1:
            got = self._identity(variables, radices, log_size)
            if got is not None:
                return got
        dense = self._dense_size(radices)
        if dense is not None:  # one bincount instead of a sort: same cells, same order
            total = self._dense_counts(variables, radices, dense)
            uniq = np.flatnonzero(total)
            counts = total[uniq]
            del total
            position = np.zeros(dense, np.int32 if len(uniq) < 2**31 else np.int64)
            position[uniq] = np.arange(len(uniq), dtype=position.dtype)
            if self._compiled:
                self._index[mask] = _ids_kernel()(
                    self.cell_codes, np.asarray(variables, np.int64),
                    np.asarray(radices, np.int64), position)
            else:
                self._index[mask] = position[self._ids(variables, radices)]
            del position
            # in the cells' own (small) integer type: an int64 copy of a large margin's codes
            # weighed 8 bytes x keys per margin cell (0.38 GB for the full 8-key margin)
            codes = np.empty((len(uniq), len(variables)), self.cell_codes.dtype
                             if np.issubdtype(self.cell_codes.dtype, np.integer) else np.int64)
            rest = uniq.copy()
            for j in range(len(variables) - 1, -1, -1):
                rest, codes[:, j] = np.divmod(rest, radices[j])
            return Margin(variables, counts, codes, None, log_size, uniq, radices)
        sub = self.cell_codes[:, list(variables)].astype(np.int64)
        if math.prod(radices) < _MAX_RADIX:
            ids = _radix_ids(sub, radices)
            uniq, first, inv = np.unique(ids, return_index=True, return_inverse=True)
        else:
            _, first, inv = np.unique(sub, axis=0, return_index=True, return_inverse=True)
            uniq = None
        inv = inv.ravel()
        counts = np.bincount(inv, weights=self.counts, minlength=len(first)).astype(np.int64)
        return Margin(variables, counts, sub[first], inv, log_size, uniq, radices)

    def _identity(self, variables: tuple[int, ...], radices: tuple[int, ...],
                  log_size: float) -> Margin | None:
        """The margin over every key when the observed cells are distinct, non-empty and in id
        order, as a CellTable keeps them: the cells themselves, in one pass for their ids.
        The importance sampling of the f = 0 cells asks whether drawn cells are observed;
        counting, sorting and decoding the full margin for it took 0.9 s at 5.9 million cells
        (issue 20). None otherwise (the margin is then counted as any other)."""
        if (math.prod(radices) >= _MAX_RADIX
                or not np.issubdtype(self.cell_codes.dtype, np.integer)):
            return None
        ids = self._ids(variables, radices)
        if np.any(ids[1:] <= ids[:-1]) or np.any(self.counts <= 0):
            return None
        return Margin(variables, self.counts, self.cell_codes, None, log_size, ids, radices)

    def log_ml(self, mask: int, prior_weight: float) -> float:
        """log ML(A) of spec D.3 for the variable set A (0 for the empty set)."""
        if mask == 0:
            return 0.0
        key = (mask, prior_weight)
        got = self._log_ml.get(key)
        if got is None:
            values, mult, log_size = self.margin_counts(mask)
            got = self._log_ml[key] = _log_ml_margin(values, log_size, prior_weight, mult)
        return got


def _log_gamma_ratio(log_a: float, f: np.ndarray) -> np.ndarray:
    """log Gamma(a + f) - log Gamma(a) for a = exp(log_a) > 0, f >= 1, stable as a -> 0.

    Uses Gamma(a) = Gamma(1 + a) / a: the difference is log a + lgamma(a + f) - lgamma(1 + a).
    """
    a = math.exp(log_a)
    return log_a + gammaln(a + f) - gammaln(1.0 + a)


def _log_ml_margin(counts: np.ndarray, log_size: float, p: float, mult: np.ndarray
                   ) -> float:
    """log ML of a margin whose non-empty cells have the distinct counts ``counts``,
    ``mult[k]`` cells having ``counts[k]``."""
    n = float(np.dot(counts, mult))
    terms = float(np.dot(mult, _log_gamma_ratio(math.log(p) - log_size, counts)))
    return float(gammaln(p) - gammaln(p + n) + terms)


def log_ml_clique_form(graph: DecomposableGraph, margins: Margins, prior_weight: float
                       ) -> float:
    """log P(f | m) = sum over cliques of log ML(C) - sum over separators of log ML(S).

    Spec D.3; the multinomial coefficient (common to all models) is omitted.
    """
    return (sum(margins.log_ml(c, prior_weight) for c in graph.cliques)
            - sum(margins.log_ml(s, prior_weight) for s in graph.separators))


def log_ml_vertex_form(graph: DecomposableGraph, margins: Margins, prior_weight: float
                       ) -> float:
    """log P(f | m) by FW eq (18): product over vertices j of a perfect numbering and over the
    parent configurations i_pa(j) of

        Gamma(sum_ij mu_j) prod_ij Gamma(mu*_j) / (Gamma(sum_ij mu*_j) prod_ij Gamma(mu_j)),

    with mu_j = p / |I_{j u pa(j)}| and mu*_j = mu_j + f_{j u pa(j)} (FW eq 6). Parent
    configurations with no sample count contribute a factor 1 and are skipped.
    """
    p = prior_weight
    total = 0.0
    for (a_mask, b_mask), v in zip(graph.factors, graph.numbering, strict=True):
        fam = margins(a_mask)
        par = margins(b_mask)
        log_mu = math.log(p) - fam.log_size
        d_j = margins.n_levels[v]
        sum_mu = d_j * math.exp(log_mu)  # sum over i_j of mu_j(i_j | i_pa)
        # f_pa(i_pa) = sum over i_j of f_{j u pa}(i_j, i_pa): the parent margin of the family
        parent_counts = np.bincount(parent_index(fam, par, b_mask), weights=fam.counts,
                                    minlength=len(par.counts))
        parent_counts = parent_counts[parent_counts > 0]
        total += float(np.sum(gammaln(sum_mu) - gammaln(sum_mu + parent_counts)))
        total += float(np.sum(_log_gamma_ratio(log_mu, fam.counts)))
    return total


def parent_index(fam: Margin, par: Margin, b_mask: int) -> np.ndarray:
    """For each cell of the family margin, the index of its parent-configuration cell."""
    if b_mask == 0:
        return np.zeros(len(fam.counts), np.int64)
    cols = [fam.variables.index(v) for v in par.variables]
    idx = par.lookup(fam.codes[:, cols])
    return idx


# ------------------------------------------------------------------------------------------
# Occam's window


@dataclass(frozen=True)
class SearchResult:
    """Models kept by Occam's window, best first, and what the search did."""

    graphs: tuple[DecomposableGraph, ...]
    log_ml: np.ndarray
    posterior: np.ndarray
    visited: int
    iterations: int
    window: float
    truncated: int  # models in the window dropped by the cap on kept models
    stopped: bool = False  # the search stopped at its budget of visited models


def separates(adj: tuple[int, ...], u: int, v: int, cut: int) -> bool:
    """True when every path from u to v in the graph passes through the vertex set ``cut``."""
    seen = frontier = 1 << u
    allowed = ~cut
    while frontier:
        reach = 0
        for w in members(frontier):
            reach |= adj[w]
        reach &= allowed & ~seen
        if reach >> v & 1:
            return False
        seen |= reach
        frontier = reach
    return True


def _edges_of(key: int, j: int) -> list[tuple[int, int]]:
    """The edges (u < v) of the graph on j vertices whose edge mask
    (:meth:`DecomposableGraph.edge_mask`) is ``key``."""
    return [(u, v) for u, v in combinations(range(j), 2) if key >> (u * j + v) & 1]


def _adjacency(key: int, j: int) -> tuple[int, ...]:
    """Adjacency bitmasks of the graph whose edge mask is ``key``."""
    adj = [0] * j
    for u, v in _edges_of(key, j):
        adj[u] |= 1 << v
        adj[v] |= 1 << u
    return tuple(adj)


#: the moves' running sums of log P(f | m) and the clique form differ by rounding only; the
#: models kept past ``max_models`` are chosen by the sums rounded to this many decimals (ties,
#: common when every record is unique, by edge mask), then ranked by the clique form
RANK_DIGITS = 6


def occam_window(margins: Margins, prior_weight: float, window: float,
                 max_models: int | None = None, *, max_iterations: int = 10_000,
                 max_visited: int | None = None) -> SearchResult:
    """Occam's window search from the independence model (FW section 4; spec D.4).

    ``S <- {independence}``; repeat: add every decomposable one-edge extension of every model
    in S; keep the models whose posterior ratio to the best one found is at least
    ``1 / window``; stop when S no longer changes. Posterior model probabilities are
    renormalised over S (uniform prior over decomposable models). ``max_models`` keeps only
    the best models of the final window (``truncated`` says how many were dropped).
    ``max_visited`` bounds the number of models scored: on a sample that says almost nothing
    about the dependence between many keys the window holds millions of models (10 keys,
    55 records: 22 million); the search then stops where it is, keeps the window of the
    models found so far, and says so (``stopped``).

    A move is scored without building the new graph. For a decomposable G and non-adjacent
    u, v with common neighbours S, G + uv is decomposable iff S separates u from v in G, and
    then log P(f | G + uv) - log P(f | G) = ml(S u {u, v}) + ml(S) - ml(S u {u}) - ml(S u {v})
    (the new clique and its two separators; Deshpande, Garofalakis & Jordan 2001). The kept
    models' log P(f | m) are then recomputed by the clique form, and ranked by it.
    """
    j = margins.n_vertices
    log_c = -math.log(window)

    def ml(mask: int) -> float:
        return margins.log_ml(mask, prior_weight)

    start = DecomposableGraph.independence(j)
    # every model scored: edge mask -> log P(f | m) by the moves
    scores: dict[int, float] = {0: log_ml_clique_form(start, margins, prior_weight)}
    budget = math.inf if max_visited is None else max_visited
    current = {0}
    iterations = 0
    expanded: set[int] = set()
    stopped = False
    while iterations < max_iterations and not stopped:
        iterations += 1
        candidates = set(current)
        for key in current:
            if key in expanded or stopped:
                continue
            expanded.add(key)
            base, adj = scores[key], _adjacency(key, j)
            for u, v in combinations(range(j), 2):
                if adj[u] >> v & 1:
                    continue
                k = key | 1 << (u * j + v)
                if k in scores:
                    candidates.add(k)
                    continue
                cut = adj[u] & adj[v]
                if not separates(adj, u, v, cut):
                    continue
                if len(scores) >= budget:  # a new model past the budget: stop here
                    stopped = True
                    break
                bu, bv = 1 << u, 1 << v
                scores[k] = base + ml(cut | bu | bv) + ml(cut) - ml(cut | bu) - ml(cut | bv)
                candidates.add(k)
        best = max(scores[k] for k in candidates)
        new_window = {k for k in candidates if scores[k] - best >= log_c}
        if new_window == current:
            break
        current = new_window
    # the clique form is recomputed only for the models kept: building a graph per model of
    # a window of 444,000 (12 keys on 1,000 records) took 35 of a fit's 50 s
    kept = current
    if max_models is not None and len(current) > max_models:
        kept = set(sorted(current, key=lambda k: (-round(scores[k], RANK_DIGITS), k))
                   [:max_models])
    graphs = {k: DecomposableGraph(j, frozenset(_edges_of(k, j))) for k in kept}
    exact = {k: log_ml_clique_form(g, margins, prior_weight) for k, g in graphs.items()}
    ranked = sorted(kept, key=lambda k: (-exact[k], k))
    truncated = len(current) - max_models if max_models is not None else 0
    truncated = max(truncated, 0)
    ranked = ranked[:max_models] if max_models is not None else ranked
    log_ml = np.array([exact[k] for k in ranked])
    w = np.exp(log_ml - log_ml.max())
    return SearchResult(
        graphs=tuple(graphs[k] for k in ranked), log_ml=log_ml, posterior=w / w.sum(),
        visited=len(scores), iterations=iterations, window=window, truncated=truncated,
        stopped=stopped)
