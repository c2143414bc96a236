"""Iterative proportional fitting of hierarchical log-linear models on dense tables (spec C.3).

The fitted table mu is the only dense array (float32 or float64, shape = numbers of levels);
sample targets are margins computed from the sparse cell table.

**Fused kernel.** A plain IPF step reads mu once to form the current margin of generator G and
once more (read + write) to multiply by the ratio. Here one pass over mu does both halves of
two steps: it multiplies every cell by the ratio of G *and* accumulates the margin of the next
generator G'. A cell's index in a margin is ``head_index[h] + tail_index[t]`` where the table
is viewed as (H head positions) x (T tail positions); both index arrays are small and
precomputed per generator, so the inner loop is two gathers, a multiply and a scatter-add from
cache. Blocks of head positions run in parallel (numba prange), each with its own margin
accumulator (float64).

Convergence: the largest absolute difference between a generator's current and target margin,
measured just before its update, over a whole sweep (spec C.3's criterion, in count units).
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..data.sizes import check_memory, short_repr
from ..data.table import CellTable
from ..exceptions import ParameterError

__all__ = ["parse_terms", "check_terms_syntax", "is_saturated",
           "IPFResult", "ipf", "ipf_numpy", "margin_of_cells", "margins_of_cells"]

Generator = tuple[int, ...]


def _reduce(terms: list[Generator]) -> tuple[Generator, ...]:
    """Drop terms contained in another term; sort variables; keep first-seen order."""
    uniq = list(dict.fromkeys(tuple(sorted(set(t))) for t in terms if len(t)))
    return tuple(t for t in uniq if not any(set(t) < set(u) for u in uniq))


_TERMS_HELP = ("use search (the default), or independence, all-2-way, all-3-way, saturated or "
               "var:var[:var] joined by +, e.g. 'all-2-way + age:sex:region'")


def _bad_term(terms, message: str) -> ParameterError:
    """An error about one term of ``terms`` that names the whole value as the option the
    user gave (``terms=...``; the CLI writes it as ``--terms ...``), then the term."""
    return ParameterError(f"terms={short_repr(terms, 80)}: {message}")


def _unreadable(terms, part: str, keys: Sequence[str]) -> ParameterError:
    """The error for a term that is neither a model name nor var:var[:var]."""
    names = [v.strip() for v in part.split("*")]
    if len(names) > 1 and all(re.fullmatch(r"[\w.\-]+", v) for v in names):
        # R/patsy's a*b: here an interaction is written a:b
        hint = f"write an interaction with ':' between key variables, e.g. {':'.join(names)!r}; "
    elif re.fullmatch(r"[\w.\-]+", part):
        hint = "it is neither a key variable nor a model name; "
    else:
        hint = ""
    return _bad_term(terms, f"cannot read model term {part!r}; {hint}{_TERMS_HELP} "
                            f"(keys: {', '.join(map(str, keys))})")


def check_terms_syntax(terms) -> None:
    """Refuse a model formula that cannot be read, before any data are seen.

    Raises
    ------
    ParameterError
        An empty formula or term (``'+++'``), an empty variable name (``'a::b'``), an
        ``all-K-way`` with K < 1, or a term that is not a name, a formula or a list.
    """
    if isinstance(terms, str):
        text = terms.strip()
        if not text:
            raise ParameterError(f"terms={terms!r} is empty; {_TERMS_HELP}")
        parts = [p.strip() for p in text.split("+")]
        if any(not p for p in parts):
            raise ParameterError(f"terms={terms!r} has an empty term (a '+' with nothing on "
                                 f"one side); {_TERMS_HELP}")
        for part in parts:
            m = re.fullmatch(r"all-(\d+)-way", part)
            if m and int(m.group(1)) < 1:
                raise _bad_term(terms, f"model term {part!r}: K in all-K-way must be >= 1, "
                                       "e.g. all-2-way")
            if ":" in part:
                names = [v.strip() for v in part.split(":")]
                if any(not v for v in names):
                    raise _bad_term(
                        terms, f"model term {part!r} has an empty variable name (write one "
                        f"':' between variables, e.g. {':'.join(v for v in names if v)!r})")
        return
    if not isinstance(terms, list | tuple):
        raise ParameterError(f"terms={terms!r} must be a formula string or a list of "
                             "variable tuples")
    if not terms:
        raise ParameterError("terms=[] is empty; give at least one term or 'independence'")
    for t in terms:
        if not isinstance(t, str | int | np.integer | list | tuple):
            raise _bad_term(terms, f"model term {t!r} is not a variable name, index or "
                                   "tuple of them")


def parse_terms(terms, keys: Sequence[str]) -> tuple[Generator, ...]:
    """A generating class from a name, a formula or a list of variable tuples.

    ``"independence"``, ``"all-2-way"``, ``"all-3-way"``, ``"saturated"``; sums such as
    ``"all-2-way + age:sex:marital"``; or a sequence of tuples of key names or indices.
    Every key appears at least as a main effect.

    Raises
    ------
    ParameterError
        A formula that cannot be read (see :func:`check_terms_syntax`), a variable that is
        not a key (naming the term), or ``all-K-way`` with K > 3 larger than the number of
        keys (that model is the saturated one: say ``saturated`` if it is meant).
    """
    check_terms_syntax(terms)
    keys = list(keys)
    j = len(keys)

    def resolve(name, term) -> int:
        if isinstance(name, int | np.integer):
            if not 0 <= int(name) < j:
                raise _bad_term(terms, f"model term {term!r}: index {name} out of range for "
                                       f"{j} keys (0 to {j - 1})")
            return int(name)
        name = str(name).strip()
        if name not in keys:
            raise _bad_term(terms, f"model term {term!r}: {name!r} is not a key variable; "
                                   f"use the keys {', '.join(map(str, keys))}")
        return keys.index(name)

    out: list[Generator] = [(i,) for i in range(j)]
    if isinstance(terms, str):
        for part in (p.strip() for p in terms.split("+")):
            m = re.fullmatch(r"all-(\d+)-way", part)
            if part in ("independence", "main"):
                continue
            if part == "saturated":
                out.append(tuple(range(j)))
            elif m:
                k = int(m.group(1))
                # all-2-way and all-3-way are the standard names (on fewer keys they are the
                # saturated model, which the result notes); a larger K beyond the keys is a
                # slip of the pen more often than a way of writing "saturated"
                if k > j and k > 3:
                    raise _bad_term(
                        terms, f"model term {part!r} asks for {k}-way terms but there are "
                        f"only {j} keys; all-{j}-way is the saturated model (it reproduces "
                        "the sample counts, so every sample unique is estimated population "
                        "unique): write 'saturated' if that is meant, or all-2-way/all-3-way")
                out.extend(itertools.combinations(range(j), min(k, j)))
            elif ":" in part or part in keys:
                out.append(tuple(resolve(v, part) for v in part.split(":")))
            else:
                raise _unreadable(terms, part, keys)
    else:
        for t in terms:
            t = (t,) if isinstance(t, str | int | np.integer) else tuple(t)
            out.append(tuple(resolve(v, t) for v in t))
    return _reduce(out)


def is_saturated(gens: Sequence[Generator], n_keys: int) -> bool:
    """Whether a generating class is the saturated model (one term with every key)."""
    return n_keys > 1 and any(len(g) == n_keys for g in gens)


def describe_terms(gens: Sequence[Generator], keys: Sequence[str]) -> str:
    """Readable generating class, e.g. 'age:sex + age:marital'."""
    return " + ".join(":".join(keys[i] for i in g) for g in gens)


def margin_of_cells(table: CellTable, gen: Generator, values: np.ndarray | None = None
                    ) -> np.ndarray:
    """Margin over ``gen`` of the sparse cell table (f by default), as a dense array."""
    return margins_of_cells(table, (gen,), values)[0]


def margins_of_cells(table: CellTable, gens: Sequence[Generator],
                     values: np.ndarray | None = None) -> list[np.ndarray]:
    """The margins over each of ``gens`` of the sparse cell table (f by default).

    The key columns are converted to contiguous index arrays once for all generators (the
    cell-code matrix is row-major and often int8: reading a column per margin cost more than
    the sums).
    """
    # each margin is a dense array over its keys' levels (plus its mask of positive cells):
    # a term over many wide keys (the saturated model of 12 keys of 1,000 levels) is refused
    # here by size, not by numpy's OverflowError or an allocation that never ends
    sizes = [math.prod(len(table.levels[i]) for i in gen) for gen in gens]
    if sizes:
        big = max(range(len(gens)), key=sizes.__getitem__)
        term = ":".join(table.keys[i] for i in gens[big])
        check_memory(float(sum(sizes)) * 9.0,
                     what=f"the margins of the log-linear terms (the largest, "
                          f"{short_repr(term, 80)}, over {float(sizes[big]):,.4g} cells)",
                     remedies="give --terms without that term (or the default search), "
                              "partition the table (--partition) or use fewer or coarser keys")
    used = sorted({i for g in gens for i in g})
    cols = {i: table.cell_codes[:, i].astype(np.intp) for i in used}
    vals = np.asarray(table.counts if values is None else values, dtype=float)
    out = []
    for gen in gens:
        shape = tuple(len(table.levels[i]) for i in gen)
        idx = np.zeros(table.n_cells, np.intp)
        for i in gen:
            idx *= len(table.levels[i])
            idx += cols[i]
        out.append(np.bincount(idx, weights=vals, minlength=math.prod(shape)).reshape(shape))
    return out


@dataclass(frozen=True)
class IPFResult:
    """Fitted table and diagnostics."""

    fitted: np.ndarray
    generators: tuple[Generator, ...]
    iterations: int
    converged: bool
    max_deviation: list[float] = field(default_factory=list)
    min_factor: float = float("nan")
    max_factor: float = float("nan")
    seconds: float = 0.0
    engine: str = "numba"


# --------------------------------------------------------------------------------------------
# numba kernels (compiled lazily, cached on disk)

_KERNELS = None


def warm_up(dtype=np.float32) -> None:
    """Load the fused kernel from numba's cache (and numba itself) with a 12-cell fit.

    The first call of any numba function in a process pays about 1 s for importing numba
    and setting up its compiler target; the CLI runs this in a background thread while it
    reads and tabulates the file, so that the real fit does not wait for it.
    """
    ipf((3, 4), ((0,), (1,)), [np.full(3, 4.0), np.full(4, 3.0)], max_iter=1, dtype=dtype)


def _kernels():
    global _KERNELS
    if _KERNELS is None:
        import numba
        from numba import njit, prange

        @njit(parallel=True, cache=True, fastmath=True)
        def fused_pass(mu, order, n_tail, head_u, tail_u, ratio, head_a, tail_a, acc,
                       do_update, tail_u_const, tail_a_const):
            # Rows of the (head x tail) view are visited in `order`, chosen so that the
            # generators' head indices stay the same over long runs of rows. While head[h]
            # is unchanged, the ratio vector along the row is reused and rows are summed into
            # a buffer that is scattered into the margin only when head[h] changes. A
            # generator without tail axes (tail_*_const) scales a row by one factor / sums
            # it into one slot. All inner loops run over whole contiguous rows.
            n_chunks = acc.shape[0]
            n_rows = order.shape[0]
            per = (n_rows + n_chunks - 1) // n_chunks
            for c in prange(n_chunks):
                a = acc[c]
                rvec = np.empty(n_tail, mu.dtype)
                buf = np.zeros(n_tail, np.float64)
                last_bu = -1
                last_ba = -1
                for k in range(c * per, min(n_rows, (c + 1) * per)):
                    h = order[k]
                    row = mu[h * n_tail:(h + 1) * n_tail]
                    if do_update:
                        bu = head_u[h]
                        if tail_u_const:
                            r = ratio[bu]
                            for t in range(n_tail):
                                row[t] *= r
                        else:
                            if bu != last_bu:
                                for t in range(n_tail):
                                    rvec[t] = ratio[bu + tail_u[t]]
                                last_bu = bu
                            for t in range(n_tail):
                                row[t] *= rvec[t]
                    ba = head_a[h]
                    if tail_a_const:
                        s = 0.0
                        for t in range(n_tail):
                            s += row[t]
                        a[ba] += s
                    else:
                        if ba != last_ba:
                            if last_ba >= 0:
                                for t in range(n_tail):
                                    a[last_ba + tail_a[t]] += buf[t]
                                    buf[t] = 0.0
                            last_ba = ba
                        for t in range(n_tail):
                            buf[t] += row[t]
                if not tail_a_const and last_ba >= 0:
                    for t in range(n_tail):
                        a[last_ba + tail_a[t]] += buf[t]

        _KERNELS = (fused_pass, numba.get_num_threads)
    return _KERNELS


def _split(shape: tuple[int, ...], target_tail: int = 1 << 14) -> int:
    """Number of leading axes in the head so that the tail block has about target cells."""
    tail = 1
    axis = len(shape)
    while axis > 0 and tail * shape[axis - 1] <= target_tail:
        axis -= 1
        tail *= shape[axis]
    if axis == len(shape):  # last axis alone is larger than the target: tail = last axis
        axis -= 1
    return axis


def _index_tables(shape, gen, head_axes):
    """head (H,) and tail (T,) margin-index contributions of a generator, and its size."""
    mstride = {}
    s = 1
    for i in reversed(gen):
        mstride[i] = s
        s *= shape[i]
    size = s
    itype = np.int32 if size < (1 << 31) else np.int64

    def contrib(sub_shape, offset):
        idx = np.zeros(math.prod(sub_shape), np.int64)
        if sub_shape:
            grids = np.indices(sub_shape).reshape(len(sub_shape), -1)
            for a in range(len(sub_shape)):
                if offset + a in mstride:
                    idx += grids[a] * mstride[offset + a]
        return idx.astype(itype)

    return contrib(shape[:head_axes], 0), contrib(shape[head_axes:], head_axes), size


def _row_order(head_shape, used_first, used_second):
    """Head rows in an order where axes of the generators vary slowest (long constant runs)."""
    axes = list(range(len(head_shape)))
    rank = sorted(axes, key=lambda a: (a not in used_first and a not in used_second,
                                       a not in used_first, a))
    idx = np.arange(math.prod(head_shape), dtype=np.int64).reshape(head_shape) if head_shape \
        else np.zeros(1, np.int64)
    return np.ascontiguousarray(np.transpose(idx, rank).ravel()) if head_shape else idx


def ipf(
    shape: tuple[int, ...],
    generators: Sequence[Generator],
    targets: Sequence[np.ndarray],
    *,
    max_iter: int = 40,
    tol: float = 1e-3,
    dtype=np.float64,
    structural_zeros: np.ndarray | None = None,
    memory_limit: int | None = None,
    initial: np.ndarray | None = None,
) -> IPFResult:
    """Fit a hierarchical log-linear model by IPF with the fused kernel.

    Parameters
    ----------
    shape : tuple of int
        Numbers of levels of the keys (the dense table's shape).
    generators : sequence of tuples
        Generating class (variable index tuples, sorted).
    targets : sequence of ndarray
        Observed margins, one per generator, with the generator's shape.
    max_iter, tol : int, float
        At most ``max_iter`` sweeps; stop when every margin is within ``tol`` (count units).
    dtype : float32 or float64
        Storage of the fitted table (margins are accumulated in float64).
    structural_zeros : bool ndarray of ``shape``, optional
        Cells fixed at 0.
    initial : ndarray of ``shape``, optional
        Starting table instead of all ones (copied): the fitted table of a sub-model, so that a
        model search refines the last fit instead of starting over. IPF converges to the same
        maximum-likelihood fit from any start in the model's family (Bishop, Fienberg & Holland
        1975, section 3.5), which a sub-model's fit is.
    """
    fused_pass, n_threads = _kernels()
    k = math.prod(shape)
    itemsize = np.dtype(dtype).itemsize
    check_memory(k * itemsize, what=f"the log-linear fitted table of K={k:,} cells "
                 f"({np.dtype(dtype).name})", limit=memory_limit,
                 remedies="partition the table (--partition VAR:BANDS), use float32, or use "
                 "fewer/coarser key variables")
    start = time.perf_counter()
    if initial is None:
        mu = np.ones(k, dtype=dtype)
    else:
        if tuple(np.shape(initial)) != tuple(shape) and np.size(initial) != k:
            raise ValueError(f"initial table has shape {np.shape(initial)}, expected {shape}")
        mu = np.array(initial, dtype=dtype, copy=True).reshape(-1)
    if structural_zeros is not None:
        mu[np.asarray(structural_zeros, bool).ravel()] = 0
    head_axes = _split(tuple(shape))
    n_head = math.prod(shape[:head_axes])
    n_tail = k // n_head
    tables = [_index_tables(tuple(shape), g, head_axes) for g in generators]
    flat_targets = [np.asarray(t, float).ravel() for t in targets]
    n_chunks = max(1, min(n_threads(), n_head))

    head_shape = tuple(shape[:head_axes])
    orders: dict = {}

    def order_for(gu, ga):
        key = (frozenset(a for a in gu if a < head_axes), frozenset(a for a in ga
                                                                   if a < head_axes))
        if key not in orders:
            orders[key] = _row_order(head_shape, key[1], key[0])
        return orders[key]

    def accumulate(gi, update_gi=None, ratio=None):
        head_a, tail_a, size = tables[gi]
        acc = np.zeros((n_chunks, size), np.float64)
        a_const = not tail_a.any()
        if update_gi is None:
            fused_pass(mu, order_for((), generators[gi]), n_tail, head_a, tail_a,
                       np.zeros(1, dtype), head_a, tail_a, acc, False, True, a_const)
        else:
            head_u, tail_u, _ = tables[update_gi]
            fused_pass(mu, order_for(generators[update_gi], generators[gi]), n_tail, head_u,
                       tail_u, ratio.astype(dtype), head_a, tail_a, acc, True,
                       not tail_u.any(), a_const)
        return acc.sum(axis=0)

    it, converged, deviations, fmin, fmax = sweep(accumulate, flat_targets, max_iter, tol)
    return IPFResult(
        fitted=mu.reshape(shape), generators=tuple(generators), iterations=it,
        converged=converged, max_deviation=deviations, min_factor=float(fmin),
        max_factor=float(fmax), seconds=time.perf_counter() - start, engine="numba-fused",
    )


def sweep(accumulate, flat_targets, max_iter: int, tol: float):
    """IPF sweeps over the generators' margins until every margin is within ``tol``.

    ``accumulate(gi)`` returns the fitted margin of generator ``gi``; ``accumulate(gi,
    update_gi, ratio)`` first scales the fit by ``ratio`` over the margin of ``update_gi``
    (the fused step of the dense and the factored engines). Returns (iterations, converged,
    max deviation per sweep, min and max adjustment factor of the last sweep).
    """
    n_gen = len(flat_targets)
    current = accumulate(0)
    deviations: list[float] = []
    converged = False
    it = 0
    fmin = fmax = float("nan")
    for it in range(1, max_iter + 1):  # noqa: B007 - it is reported after the loop
        dev = 0.0
        fmin, fmax = np.inf, -np.inf
        for gi in range(n_gen):
            target = flat_targets[gi]
            dev = max(dev, float(np.max(np.abs(current - target))))
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(current > 0, target / np.where(current > 0, current, 1), 0.0)
            pos = ratio[target > 0]
            if pos.size:
                fmin, fmax = min(fmin, float(pos.min())), max(fmax, float(pos.max()))
            current = accumulate((gi + 1) % n_gen, gi, ratio)
        deviations.append(dev)
        if dev < tol:
            converged = True
            break
    return it, converged, deviations, fmin, fmax


def ipf_numpy(shape, generators, targets, *, max_iter=40, tol=1e-3, dtype=np.float64,
              structural_zeros=None) -> IPFResult:
    """Plain NumPy IPF (sum over the other axes, multiply by the ratio): reference and baseline."""
    start = time.perf_counter()
    mu = np.ones(shape, dtype=dtype)
    if structural_zeros is not None:
        mu[np.asarray(structural_zeros, bool)] = 0
    j = len(shape)
    deviations = []
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - it is reported after the loop
        dev = 0.0
        for g, target in zip(generators, targets, strict=True):
            others = tuple(a for a in range(j) if a not in g)
            cur = mu.sum(axis=others, dtype=np.float64) if others else mu.astype(np.float64)
            dev = max(dev, float(np.max(np.abs(cur - target))))
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(cur > 0, target / np.where(cur > 0, cur, 1), 0.0)
            view = [1] * j
            for a, d in zip(g, np.shape(target), strict=True):
                view[a] = d
            mu *= ratio.reshape(view).astype(dtype)
        deviations.append(dev)
        if dev < tol:
            converged = True
            break
    return IPFResult(fitted=mu, generators=tuple(generators), iterations=it,
                     converged=converged, max_deviation=deviations,
                     seconds=time.perf_counter() - start, engine="numpy")
