"""Minimal sample uniques (MSUs): the search kernel behind :func:`sdcrisk.suda2`.

A subset S of the key variables is an MSU of record r when r's values on S occur in no
other record and no proper subset of S has that property. Only records that are unique on
all keys (cells with f = 1) can have MSUs, so the search runs over the observed *cells* with
their counts f_k, never over records.

Algorithm
---------
A depth-first walk over the subsets of the (reordered) variables. A node is a set S; its
children add one variable with a larger index than every variable of S, visited from the
largest index down. In this order every subset of a set is visited before the set itself
(at the first sorted position where two sets differ, the set holding the larger variable
comes first; a prefix comes before its extensions), so when a record becomes unique at S
the MSUs it has inside S are already known and minimality is a subset test against them.

Each node holds a partition of the *active* cells by their values on S, groups stored
contiguously. Refining a group by variable j buckets its cells by their code of j (codes are
stamped per group, so nothing is cleared between groups): O(cells of the group). A bucket

* with total count 1 holds one sample-unique cell r: r is unique on S + {j}; it is an MSU
  unless one of r's MSUs found so far is a proper subset; either way r leaves the subtree
  (every superset is unique and not minimal);
* with count >= 2 and a cell that can still become unique below becomes a group of the
  child node. Every set below the root's child {j} lies inside {j, ..., M-1}, so such a
  cell has f = 1 and is unique on {j, ..., M-1} (:func:`_deepest_unique`, computed once);
* without such a cell, or whose code of j is the "missing" level, is dropped: its
  refinements can never isolate a sample unique, and it never changes another group's count.

A group whose cells all share one code of j is dropped as well: j then adds nothing to the
group (the cells matching it on S + {j} are those matching it on S), and for any superset
T of S + {j}, T without j singles out exactly the same cells, so no T through this node is
minimal for them (SUDA2's observation that an MSU has no redundant variable).

Minimality test: a set is an MSU of r when none of r's MSUs is a proper subset. r's MSUs
are kept in a linked list; when the list is longer than the 2^|S| proper subsets of the
candidate, a bitset with one bit per subset of the variables (kept for every sample-unique
cell while it fits in ``bitset_bytes``) is probed instead.

This is the pruning of SUDA2 (Manning, Haglin & Keane 2008) expressed on cells: uniques are
removed once found and subtrees without candidates are never entered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.sizes import check_memory

__all__ = ["find_msus", "msus_up_to", "bounded_msus", "MsuSearch", "variable_order", "WORK_BUDGET",
           "FULL_SEARCH_KEYS"]

_KERNEL = None
#: default memory for the bitsets of the minimality test
BITSET_BYTES = 256 * 1024**2
#: up to this many keys :func:`bounded_msus` searches every size (2^M - 1 subsets at most:
#: the ordinary key sets, whose figures never depend on a budget), on tables where that
#: search's worst case is at most FULL_SEARCH_WORK
FULL_SEARCH_KEYS = 10
#: worst-case work ((2^M - 1) subsets x observed cells) up to which a key set of at most
#: FULL_SEARCH_KEYS keys gets every size whatever the budget: 3x10^7 census records x 8
#: keys (5.9x10^6 cells, 1.5x10^9) took 12 s; 10^8 records x 10 keys (2.5x10^7 cells,
#: 2.6x10^10) ran past 15 minutes, so such a table is searched within the budget
FULL_SEARCH_WORK = 5_000_000_000
#: work (cells scanned plus minimality probes) :func:`bounded_msus` may spend on wider key
#: sets, twice at most (the search over every size, then size by size): 10^8 units take 1.5
#: to 6 s on one core of a 2026 2-core server (1.7 to 6 x 10^7 units a second, slowest when
#: cells have hundreds of MSUs each). 2 x 10^8 covers every size of 15 census keys on
#: 15,000 records (1.6 x 10^8); 30 keys stop at size 3 (size 4 alone: 4.4 x 10^8, 43 s)
WORK_BUDGET = 200_000_000


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        from numba import njit

        @njit(cache=True)
        def search(codes_t, counts, n_levels, missing, max_size, use_bits,
                   max_work, deepest):  # pragma: no cover
            n_vars, n_cells = codes_t.shape
            cap_lv = 1
            for j in range(n_vars):
                if n_levels[j] > cap_lv:
                    cap_lv = n_levels[j]
            depth_cap = max_size + 1
            # per depth: active cells (grouped contiguously) and group boundaries
            idx = np.empty((depth_cap, n_cells), np.int32)
            bounds = np.empty((depth_cap, n_cells + 1), np.int32)
            length = np.zeros(depth_cap, np.int64)
            n_groups = np.zeros(depth_cap, np.int64)
            mask = np.zeros(depth_cap, np.int64)
            last = np.zeros(depth_cap, np.int64)
            next_j = np.zeros(depth_cap, np.int64)
            # per code of the variable being refined (stamped: no clearing between groups)
            stamp = np.full(cap_lv, -1, np.int64)
            c_total = np.zeros(cap_lv, np.int64)
            c_unique = np.zeros(cap_lv, np.bool_)
            c_cell = np.zeros(cap_lv, np.int64)
            c_pos = np.zeros(cap_lv, np.int64)
            touched = np.empty(cap_lv, np.int64)
            head = np.full(n_cells, -1, np.int64)
            n_list = np.zeros(n_cells, np.int64)
            # bitset mode: one bit per subset of the variables for every sample-unique cell
            one = np.uint64(1)
            slot = np.full(n_cells, -1, np.int64)
            n_rows = 0
            if use_bits:
                for k in range(n_cells):
                    if counts[k] == 1:
                        slot[k] = n_rows
                        n_rows += 1
            words = max(1, (1 << n_vars) // 64) if use_bits else 1
            bits = np.zeros((n_rows if use_bits else 0, words), np.uint64)
            cap = 1024
            msu_cell = np.empty(cap, np.int64)
            msu_mask = np.empty(cap, np.int64)
            msu_next = np.empty(cap, np.int64)
            n_msu = 0
            n_nodes = 0
            work = 0
            # 0: complete (no set larger than max_size can be an MSU), 1: a group was left
            # at max_size that a larger set could split (MSUs may be missing), 2: stopped
            # when the work passed max_work (> 0)
            status = 0
            token = 0

            has_unique = False
            for k in range(n_cells):
                idx[0, k] = k
                if counts[k] == 1:
                    has_unique = True
            if not has_unique or max_size < 1:
                return msu_cell[:0].copy(), msu_mask[:0].copy(), n_nodes, work, status
            bounds[0, 0] = 0
            bounds[0, 1] = n_cells
            length[0] = n_cells
            n_groups[0] = 1
            last[0] = -1
            next_j[0] = n_vars - 1
            depth = 0
            while depth >= 0:
                d = depth
                j = next_j[d]
                if j <= last[d] or d >= max_size:
                    depth -= 1
                    continue
                if max_work > 0 and work > max_work:
                    status = 2
                    break
                next_j[d] = j - 1
                n_nodes += 1
                work += length[d]
                child = d + 1
                carry = child < max_size
                new_mask = mask[d] | (np.int64(1) << j)
                # the smallest variable of every set below: a cell can become unique there
                # only if it is unique on that variable and all larger ones (deepest)
                root = j
                if d > 0:
                    root = 0
                    while not (mask[d] >> root) & 1:
                        root += 1
                miss = missing[j]
                col = codes_t[j]
                out = 0
                out_groups = 0
                for g in range(n_groups[d]):
                    lo = bounds[d, g]
                    hi = bounds[d, g + 1]
                    token += 1
                    n_touched = 0
                    for p in range(lo, hi):
                        k = idx[d, p]
                        c = col[k]
                        if stamp[c] != token:
                            stamp[c] = token
                            c_total[c] = 0
                            c_unique[c] = False
                            c_cell[c] = k
                            touched[n_touched] = c
                            n_touched += 1
                        c_total[c] += counts[k]
                        if deepest[k] >= root:
                            c_unique[c] = True
                    kept = 0
                    if n_touched == 1:
                        # every cell of the group shares its code of j: j adds nothing to
                        # the group, so no superset through it can be minimal for its cells
                        continue
                    for t in range(n_touched):
                        c = touched[t]
                        if c == miss:
                            c_pos[c] = -1
                        elif c_total[c] == 1:
                            c_pos[c] = -1
                            k = c_cell[c]
                            minimal = True
                            if use_bits and n_list[k] > (1 << child):
                                # any proper subset of new_mask recorded as an MSU of k?
                                row = slot[k]
                                sub = (new_mask - 1) & new_mask
                                while sub > 0:
                                    work += 1
                                    if (bits[row, sub >> 6] >> np.uint64(sub & 63)) & one:
                                        minimal = False
                                        break
                                    sub = (sub - 1) & new_mask
                            else:
                                e = head[k]
                                while e >= 0:
                                    work += 1
                                    if (msu_mask[e] & ~new_mask) == 0:
                                        minimal = False
                                        break
                                    e = msu_next[e]
                            if minimal:
                                if use_bits:
                                    row = slot[k]
                                    bits[row, new_mask >> 6] |= one << np.uint64(new_mask & 63)
                                if n_msu == cap:
                                    cap *= 2
                                    a1 = np.empty(cap, np.int64)
                                    a2 = np.empty(cap, np.int64)
                                    a3 = np.empty(cap, np.int64)
                                    a1[:n_msu] = msu_cell[:n_msu]
                                    a2[:n_msu] = msu_mask[:n_msu]
                                    a3[:n_msu] = msu_next[:n_msu]
                                    msu_cell = a1
                                    msu_mask = a2
                                    msu_next = a3
                                msu_cell[n_msu] = k
                                msu_mask[n_msu] = new_mask
                                msu_next[n_msu] = head[k]
                                head[k] = n_msu
                                n_list[k] += 1
                                n_msu += 1
                        elif carry and c_unique[c]:
                            # a group of the child node; its cells are counted below
                            c_pos[c] = 0
                            out_groups += 1
                            kept += 1
                            c_cell[c] = 0
                        else:
                            if c_unique[c] and status == 0:
                                status = 1  # a larger set could single its uniques out
                            c_pos[c] = -1
                    if kept == 0:
                        continue
                    # sizes (in cells) of the kept groups, then place the cells
                    for p in range(lo, hi):
                        c = col[idx[d, p]]
                        if c_pos[c] >= 0:
                            c_cell[c] += 1
                    base = out
                    first = out_groups - kept
                    for t in range(n_touched):
                        c = touched[t]
                        if c_pos[c] >= 0:
                            c_pos[c] = base
                            bounds[child, first] = base
                            first += 1
                            base += c_cell[c]
                    for p in range(lo, hi):
                        k = idx[d, p]
                        c = col[k]
                        if c_pos[c] >= 0:
                            idx[child, c_pos[c]] = k
                            c_pos[c] += 1
                    out = base
                if out > 0:
                    bounds[child, out_groups] = out
                    length[child] = out
                    n_groups[child] = out_groups
                    mask[child] = new_mask
                    last[child] = j
                    next_j[child] = n_vars - 1
                    depth = child
            return msu_cell[:n_msu].copy(), msu_mask[:n_msu].copy(), n_nodes, work, status

        _KERNEL = search
    return _KERNEL


def _deepest_unique(codes_t: np.ndarray, counts: np.ndarray, n_levels: np.ndarray
                    ) -> np.ndarray:
    """For each cell, the largest j for which it is unique on variables j, j+1, ..., M-1
    (rows of ``codes_t``, in search order); -1 for a cell in no such set (f >= 2).

    Every set of the walk below the root's child {j} lies inside {j, ..., M-1}, and a cell
    unique on a set is unique on every larger one: so a cell can become unique in that
    subtree only if ``deepest >= j``, and a group without such a cell can be dropped there
    (its other cells still count towards their groups until then). On the 3x10^7-record
    file of ``bench_scale.py`` no cell is unique without age, and half of the search's work
    went to the subtrees without it. A value too large only prunes less: the cells with
    f = 1 left at j = 0 get 0 without a count (they are unique on every variable)."""
    n_vars, n_cells = codes_t.shape
    single = np.asarray(counts) == 1
    deepest = np.where(single, 0, -1).astype(np.int8)
    left = int(np.count_nonzero(single))
    weights = np.asarray(counts, float)
    group = np.zeros(n_cells, np.int32)  # the cell's group on variables j+1, ..., M-1
    n_groups = 1
    for j in range(n_vars - 1, 0, -1):
        if not left:
            break
        ids = group.astype(np.int64)
        ids *= int(n_levels[j])
        ids += codes_t[j]
        bound = n_groups * int(n_levels[j])
        if bound <= max(2 * n_cells, 1 << 20):  # a dense count (8 bytes a slot)
            total = np.bincount(ids, weights=weights, minlength=bound)
            rank = np.cumsum(total > 0, dtype=np.int32)
            n_groups = int(rank[-1])
            rank -= 1
            group, total = rank[ids], total[ids]
            del rank
        else:
            _, group = np.unique(ids, return_inverse=True)
            group = group.ravel().astype(np.int32)
            n_groups = int(group.max()) + 1
            total = np.bincount(group, weights=weights, minlength=n_groups)[group]
        del ids
        new = (total == 1) & (deepest == 0)
        deepest[new] = j
        left -= int(np.count_nonzero(new))
    return deepest


def variable_order(n_levels: np.ndarray) -> np.ndarray:
    """Search order of the variables: most levels first (stable).

    Variables early in the order head the largest subtrees of the walk; putting the most
    discriminating ones there makes groups shrink, and candidates die, soonest.
    """
    return np.argsort(-np.asarray(n_levels), kind="stable")


def find_msus(cell_codes: np.ndarray, counts: np.ndarray, n_levels, missing,
              max_size: int, *, bitset_bytes: float = BITSET_BYTES,
              ) -> tuple[np.ndarray, np.ndarray, int]:
    """All MSUs of the sample-unique cells.

    Parameters
    ----------
    cell_codes : ndarray (n_cells, M)
        Level codes of the observed cells.
    counts : ndarray (n_cells,)
        f_k of each cell.
    n_levels : sequence of int
        Levels per variable.
    missing : sequence of int
        Code of the level that never forms part of an MSU, per variable (-1: none).
    max_size : int
        Largest MSU size searched.
    bitset_bytes : float
        Memory allowed for the minimality test's bitsets (one bit per subset of the
        variables for each sample-unique cell); beyond it each cell's MSUs are kept in a
        list and scanned (slower when cells have many MSUs).

    Returns
    -------
    cells : ndarray of int64
        Cell index of each MSU.
    masks : ndarray of int64
        Bit j set when variable j (original order) belongs to the MSU.
    nodes : int
        Number of subsets visited (work measure).
    """
    found = _search(cell_codes, counts, n_levels, missing, max_size, bitset_bytes, 0)
    return found.cells, found.masks, found.nodes


@dataclass(frozen=True)
class MsuSearch:
    """What one MSU search found and how far it went (see :func:`bounded_msus`)."""

    cells: np.ndarray
    masks: np.ndarray
    nodes: int
    #: cells scanned plus minimality probes, summed over every search run
    work: int
    #: the largest MSU size searched
    max_size: int
    #: True when no set larger than ``max_size`` can be an MSU: the MSUs are those of the
    #: search over every size
    complete: bool


def bounded_msus(cell_codes: np.ndarray, counts: np.ndarray, n_levels, missing, *,
                 work_budget: int | None = None, full_keys: int = FULL_SEARCH_KEYS,
                 full_work: int | None = None,
                 bitset_bytes: float = BITSET_BYTES) -> MsuSearch:
    """The MSUs of every size when that search fits in ``work_budget``, else those of the
    largest size bound whose search does.

    With at most ``full_keys`` variables the search covers every size, whatever it costs, when its
    worst case ((2^M - 1) subsets x cells) is at most ``full_work`` (linear in the cells, but 2^M
    passes: at census scale that is hours; default FULL_SEARCH_WORK). Otherwise the search over
    every size runs first and is abandoned once its work (cells scanned plus minimality probes)
    passes ``work_budget``; then the sizes are searched in turn (1, 2, ...) until a run proves that
    no larger set can be an MSU (complete after all) or the work of these runs together passes
    ``work_budget`` (that run is dropped and the previous size kept). Size 1 is always searched (M
    passes over the cells). So the search does at most about twice the budget, and the bound depends
    on the data and the budget only, never on the clock: the same file always gets the same bound.
    """
    work_budget = WORK_BUDGET if work_budget is None else int(work_budget)
    full_work = FULL_SEARCH_WORK if full_work is None else int(full_work)
    n_vars = np.asarray(cell_codes).shape[1]
    if n_vars <= full_keys and ((1 << n_vars) - 1) * len(counts) <= full_work:
        found = _search(cell_codes, counts, n_levels, missing, n_vars, bitset_bytes, 0)
        return MsuSearch(found.cells, found.masks, found.nodes, found.work, n_vars, True)
    prepared = _prepare(cell_codes, counts, n_levels, missing)
    found = _search(cell_codes, counts, n_levels, missing, n_vars, bitset_bytes,
                    max(1, work_budget), prepared)
    spent = found.work
    if found.status != _STOPPED:
        return MsuSearch(found.cells, found.masks, found.nodes, spent, n_vars, True)
    deepening = 0
    best: _Found | None = None
    for size in range(1, max(2, n_vars)):  # size 1 at least (one key: the whole search)
        left = 0 if best is None else max(1, work_budget - deepening)
        found = _search(cell_codes, counts, n_levels, missing, size, bitset_bytes, left,
                        prepared)
        deepening += found.work
        spent += found.work
        if found.status == _STOPPED and best is not None:
            return MsuSearch(best.cells, best.masks, best.nodes, spent, size - 1, False)
        if found.status == _COMPLETE:
            return MsuSearch(found.cells, found.masks, found.nodes, spent, n_vars, True)
        best = found
    assert best is not None  # the size-1 search ran without a budget
    return MsuSearch(best.cells, best.masks, best.nodes, spent, n_vars - 1, False)


def msus_up_to(cell_codes: np.ndarray, counts: np.ndarray, n_levels, missing,
               max_size: int, *, bitset_bytes: float = BITSET_BYTES) -> MsuSearch:
    """The MSUs of sizes up to ``max_size``, whatever the work, and whether they are all."""
    found = _search(cell_codes, counts, n_levels, missing, max_size, bitset_bytes, 0)
    return MsuSearch(found.cells, found.masks, found.nodes, found.work,
                     int(min(max_size, np.asarray(cell_codes).shape[1])),
                     found.status == _COMPLETE)


_COMPLETE, _TRUNCATED, _STOPPED = 0, 1, 2


@dataclass(frozen=True)
class _Found:
    cells: np.ndarray
    masks: np.ndarray
    nodes: int
    work: int
    status: int


@dataclass(frozen=True)
class _Prepared:
    """What every run of the kernel over one table shares, whatever its size bound: the
    variables' search order, the cells' codes in that order (transposed), the counts and
    each cell's deepest unique start (at 2.5x10^7 cells the codes alone are 1 GB and the
    pruning pass sorts the cells; :func:`bounded_msus` runs the kernel up to M times)."""

    perm: np.ndarray
    codes_t: np.ndarray
    n_levels: np.ndarray
    missing: np.ndarray
    counts: np.ndarray
    deepest: np.ndarray


def _prepare(cell_codes, counts, n_levels, missing) -> _Prepared:
    perm = variable_order(n_levels)
    codes_t = np.ascontiguousarray(np.asarray(cell_codes)[:, perm].T, dtype=np.int32)
    lv = np.asarray(n_levels, dtype=np.int64)[perm]
    counts = np.asarray(counts, np.int64)
    return _Prepared(perm, codes_t, lv, np.asarray(missing, dtype=np.int64)[perm], counts,
                     _deepest_unique(codes_t, counts, lv))


def _search(cell_codes, counts, n_levels, missing, max_size: int, bitset_bytes: float,
            max_work: int, prepared: _Prepared | None = None) -> _Found:
    """One run of the kernel up to ``max_size`` (``max_work`` > 0: stop past that work);
    ``prepared``: :func:`_prepare` of the same table, shared by several runs."""
    cell_codes = np.asarray(cell_codes)
    n_vars = cell_codes.shape[1]
    pre = _prepare(cell_codes, counts, n_levels, missing) if prepared is None else prepared
    counts = pre.counts
    n_unique = int(np.count_nonzero(counts == 1))
    use_bits = n_vars <= 30 and n_unique * (1 << n_vars) / 8 <= bitset_bytes
    depth = int(min(max_size, n_vars)) + 1
    check_memory(depth * (cell_codes.shape[0] + 1) * 8
                 + (n_unique * (1 << n_vars) / 8 if use_bits else 0),
                 what=f"the MSU search over {cell_codes.shape[0]:,} cells and {n_vars} keys",
                 remedies="lower max_size or use fewer keys")
    cells, masks_p, nodes, work, status = _kernel()(
        pre.codes_t, counts, pre.n_levels, pre.missing, int(min(max_size, n_vars)),
        bool(use_bits), int(max_work), pre.deepest)
    perm = pre.perm
    # map bits of the permuted order back to the original variable order
    masks = np.zeros_like(masks_p)
    for new, old in enumerate(perm.tolist()):
        masks |= ((masks_p >> new) & 1) << old
    return _Found(cells, masks, int(nodes), int(work), int(status))
