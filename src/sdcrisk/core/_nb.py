"""Numerics of the negative-binomial predictive law of the unseen count U = F - f.

``U ~ NB(size=r, prob=p)`` counts failures before the r-th success:
``P(U = j) = Gamma(r + j) / (Gamma(r) j!) p^r q^j`` with ``q = 1 - p``. Every exchangeable
baseline (Benedetti-Franconi: r = f; Poisson-gamma: r = alpha + f) and the Forster-Webb gamma
approximation are of this form, so the expectations the risk measures need are computed here,
once, for arrays of cells.

``E[1/(f + U)]`` (methods spec B.1, B.2, D.6) is evaluated by

* the closed forms for r = f in {1, 2} (spec B.2), used where q >= 1/2 (no cancellation);
* the Euler-transformed hypergeometric series ``(p/f) sum_m (f+1-r)_m / (f+1)_m q^m`` when
  r <= f + 1 (positive terms whose ratios stay below q, so the tail is bounded by
  ``t_M q / (1 - q)``);
* the direct series ``sum_j P(U=j) / (f+j)`` when r > f + 1 (positive terms, rescaled to avoid
  under/overflow);
* for r = f (Benedetti-Franconi) when p is so small that a series would need more than
  ``_MAX_TERMS`` terms: recurrences in f. The substitution u = p t / (1 - q t) in
  ``E[1/(f+U)] = int_0^1 t^(f-1) (p / (1 - q t))^f dt`` gives ``p I_(f-1)`` with
  ``I_k = int_0^1 u^k / (p + q u) du``, ``I_0 = -log(p) / q``, ``I_k = (1/k - p I_(k-1)) / q``;
  and ``E[1/(f+U)^2] = p D_(f-1)`` with ``D_0 = Li2(q) / q``,
  ``D_k = (p / q) (I_(k-1) / k - D_(k-1))``. Errors shrink by p / q <= 1/2 a step;
* otherwise adaptive quadrature of ``int_0^inf exp(-f s) (p / (1 - q e^{-s}))^r ds`` with
  breakpoints at the peak width ``1 / (f + r q / p)``.

``scipy.special.hyp2f1`` is not used: it returns inf/nan in corners that matter here
(large f, q close to 1). Tests compare every branch with ``mpmath.hyp2f1``. The dilogarithm
is :func:`dilog` (series), so the nb path imports neither ``scipy.special`` nor
``scipy.integrate`` (0.4 s of a whole command's start-up, issue 20 item 6).
Work is done once per distinct (f, r, p) triple, so equal-weight designs cost a handful of
evaluations whatever the number of cells.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..exceptions import ApproximationWarning, ParameterError, user_stacklevel

__all__ = [
    "expected_inverse",
    "expected_inverse_square",
    "prob_zero",
    "prob_one",
    "nb_mean",
    "nb_variance",
    "probe_distinct",
]

_RTOL = 1e-14
_MAX_TERMS = 20_000
_SHORT_TERMS = 2_000
_MAX_QUADRATURES = 64


def prob_zero(r: np.ndarray, p: np.ndarray) -> np.ndarray:
    """P(U = 0) = p^r."""
    with np.errstate(divide="ignore"):
        return np.exp(np.asarray(r, float) * np.log(np.asarray(p, float)))


def prob_one(r: np.ndarray, p: np.ndarray) -> np.ndarray:
    """P(U = 1) = r p^r q."""
    r = np.asarray(r, float)
    p = np.asarray(p, float)
    return r * prob_zero(r, p) * (1.0 - p)


def nb_mean(r: np.ndarray, p: np.ndarray) -> np.ndarray:
    """E[U] = r q / p."""
    p = np.asarray(p, float)
    return np.asarray(r, float) * (1.0 - p) / p


def nb_variance(r: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Var[U] = r q / p^2."""
    p = np.asarray(p, float)
    return np.asarray(r, float) * (1.0 - p) / (p * p)


def _factorize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of a 1-D float array and each entry's index among them.

    Constant arrays and small non-negative integer values (cell counts) skip the sort.
    """
    if x.size == 0 or (x == x[0]).all():
        return x[:1].copy(), np.zeros(x.size, np.intp)
    lo, hi = x.min(), x.max()
    if lo >= 0 and hi < (1 << 22) and (x == np.floor(x)).all():
        ints = x.astype(np.intp)
        seen = np.bincount(ints, minlength=int(hi) + 1) > 0
        values = np.flatnonzero(seen)
        rank = np.cumsum(seen) - 1
        return values.astype(float), rank[ints]
    values, inverse = np.unique(x, return_inverse=True)
    return values, inverse.ravel()


def _unique_triples(f, r, p):
    """Distinct (f, r, p) triples in lexicographic order and each entry's index among them.

    Each coordinate is factorised on its own (cheap for counts and constant probabilities),
    a coordinate equal to f (r = f, Benedetti-Franconi) or constant adds nothing, and the
    combined code is made unique in 1-D; ``np.unique(axis=0)`` on millions of cells took
    seconds per call and a dozen cell-long temporaries (issue 20).
    """
    same_r = r is f
    f, r, p = np.broadcast_arrays(
        np.asarray(f, float), np.asarray(r, float), np.asarray(p, float)
    )
    shape = f.shape
    f, r, p = f.ravel(), r.ravel(), p.ravel()
    if f.size == 0:
        return shape, f.copy(), r.copy(), p.copy(), np.zeros(0, np.intp)
    if f.size > _COMPILED_FROM and probe_distinct(p) > 2048:
        # per-cell probabilities (graphical models): the triples are the cells themselves,
        # and sorting millions of them to find the few repeats costs more than it saves
        return shape, f, r, p, None  # one triple per entry, read only below: no copies
    fv, fi = _factorize(f)
    rv, ri = (fv, None) if same_r or np.array_equal(r, f) else _factorize(r)
    pv, pi = _factorize(p)
    coords = [(fv, fi), (rv, ri), (pv, pi)]
    bound = 1
    for values, index in coords:
        if index is not None:
            bound *= len(values)
    if bound >= (1 << 62):
        stacked = np.stack([f, r, p], axis=1)
        uniq, inverse = np.unique(stacked, axis=0, return_inverse=True)
        return shape, uniq[:, 0], uniq[:, 1], uniq[:, 2], inverse.ravel()
    varying = [(v, i) for v, i in coords if i is not None and len(v) > 1]
    if len(varying) <= 1:  # the one varying coordinate's ranks are the triples' ranks
        inverse = varying[0][1] if varying else np.zeros(f.size, np.intp)
        uniq = np.arange(len(varying[0][0]) if varying else 1)
    else:
        code = None
        for values, index in varying:
            code = index.astype(np.int64) if code is None else code * len(values) + index
        uniq, inverse = _factorize_codes(code, bound)
        del code
    out, stride = [], 1
    digits = {}
    for values, _ in reversed(varying):
        digits[id(values)] = (uniq // stride) % len(values)
        stride *= len(values)
    for values, index in coords:
        if index is None and values is fv:  # r = f
            out.append(out[0])
        elif id(values) in digits and index is not None and len(values) > 1:
            out.append(values[digits[id(values)]])
        else:
            out.append(np.full(len(uniq), values[0]))
    return shape, out[0], out[1], out[2], inverse


def probe_distinct(x: np.ndarray, size: int = 4096) -> int:
    """Distinct values among ``size`` evenly spaced entries of ``x``: a cheap look at whether
    a cell-long array has one value per cell or a few shared ones."""
    if x.size <= size:
        return len(np.unique(x))
    return len(np.unique(x[np.linspace(0, x.size - 1, size).astype(np.int64)]))


def _factorize_codes(code: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    if bound <= max(4 * code.size, 1 << 20):
        seen = np.bincount(code, minlength=bound) > 0
        return np.flatnonzero(seen), (np.cumsum(seen) - 1)[code]
    uniq, inverse = np.unique(code, return_inverse=True)
    return uniq, inverse.ravel()


def _check(f, r, p):
    bad = (f < 1) | ~np.isfinite(f)
    if np.any(bad):
        raise ParameterError(f"f={_first(f, bad)}: sample counts f must be finite and >= 1")
    bad = (r <= 0) | ~np.isfinite(r)
    if np.any(bad):
        raise ParameterError(f"r={_first(r, bad)}: the size r must be finite and > 0")
    bad = (p <= 0) | (p > 1) | ~np.isfinite(p)
    if np.any(bad):
        raise ParameterError(f"p={_first(p, bad)}: the probability p must lie in (0, 1]")


def _first(values, bad) -> str:
    """The first offending value of ``values`` (where ``bad``), for a message."""
    return f"{np.broadcast_to(values, bad.shape)[bad].flat[0]:g}"


def _terms_needed(q: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(q > 0, 40.0 / -np.log(np.where(q > 0, q, 0.5)), 0.0)


def _use_series(rest: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """Which triples to sum as series; the others go to quadrature (about 1 ms each).

    A series step costs ~10 us of Python overhead whatever the number of triples, so short
    series always win, long ones win only when many triples share the loop.
    """
    short = rest & (terms <= _SHORT_TERMS)
    long = rest & ~short
    if np.count_nonzero(long) > _MAX_QUADRATURES:
        return short | (long & (terms <= _MAX_TERMS))
    return short


def _direct_terms_needed(r: np.ndarray, p: np.ndarray) -> np.ndarray:
    # the pmf series must run past the mode (about r q / p) and then decay geometrically
    q = 1.0 - p
    return r * q / p + 10 * np.sqrt(r * q) / p + _terms_needed(q)


def _euler_series(f, r, p):
    """(p/f) sum_m (f+1-r)_m/(f+1)_m q^m for r <= f+1 (all terms >= 0)."""
    q = 1.0 - p
    a = f + 1.0 - r
    c = f + 1.0
    total = np.ones_like(f)
    active = np.flatnonzero(q > 0)
    # in blocks of steps, as _direct_series (sequential accumulation: the same bits as one
    # step at a time); the terms are at most 1, so nothing is rescaled
    qa, aa, ca = q[active], a[active], c[active]
    term, sa = np.ones(active.size), total[active]
    cap = 50 * _MAX_TERMS
    m, b = 0, 4
    while active.size and m < cap:
        b = _block_size(b, cap - m, active.size)
        steps = m + np.arange(b)
        ratio = qa[:, None] * (aa[:, None] + steps) / (ca[:, None] + steps)
        ratio[:, 0] *= term
        terms = np.multiply.accumulate(ratio, axis=1)
        add = terms.copy()
        add[:, 0] += sa
        totals = np.add.accumulate(add, axis=1)
        bound = terms * qa[:, None] / (1.0 - qa[:, None])
        first, hit = _first_event(~(bound > _RTOL * totals))
        total[active[hit]] = totals[hit, first[hit]]
        keep = ~hit
        active = active[keep]
        qa, aa, ca = qa[keep], aa[keep], ca[keep]
        term, sa = terms[keep, -1], totals[keep, -1]
        m += b
    total[active] = sa  # entries stopped by the step cap
    return p / f * total


#: triples from which the direct series runs in a compiled loop (numba: about 1 s to import,
#: so small arrays, e.g. every exchangeable fit, stay on the NumPy loop)
_COMPILED_FROM = 100_000
_DIRECT_KERNEL = None


def _direct_kernel():
    """The direct series element by element, compiled (same steps and stopping rule as the
    NumPy loop below, which moves every active cell one term per pass: millions of distinct
    triples, as the graphical models give, cost seconds there; issue 20)."""
    global _DIRECT_KERNEL
    if _DIRECT_KERNEL is None:
        import math

        from numba import njit, prange

        max_steps = 50 * _MAX_TERMS
        rtol = _RTOL
        log_1e250 = 250.0 * math.log(10.0)

        @njit(parallel=True, cache=True)
        def series(f, r, p, power):
            # each step's ratio q (r + j) / (j + 1) is computed once (it is the next step's
            # factor and this step's bound), (f + j)^power by multiplication and the bound's
            # test without a division: the same terms and stops, 1.7x faster (issue 20)
            out = np.empty(f.shape[0])
            for i in prange(f.shape[0]):  # cells are independent
                fi, ri = f[i], r[i]
                q = 1.0 - p[i]
                log_scale = ri * math.log(p[i])
                term = 1.0
                total = 1.0 / (fi if power == 1 else fi * fi)
                if q > 0:
                    ratio = q * ri
                    j = 0
                    while j < max_steps:
                        term *= ratio
                        d = fi + j + 1.0
                        dp = d if power == 1 else d * d
                        total += term / dp
                        j += 1
                        if term > 1e250:
                            term *= 1e-250
                            total *= 1e-250
                            log_scale += log_1e250
                        ratio = q * (ri + j) / (j + 1.0)
                        # the tail after this term is at most term ratio / (1 - ratio) / dp
                        if ratio < 1 and not term * ratio > rtol * total * dp * (1.0 - ratio):
                            break
                out[i] = total * math.exp(log_scale)
            return out

        _DIRECT_KERNEL = series
    return _DIRECT_KERNEL


def _direct_series(f, r, p, power: int):
    """sum_j P(U=j) / (f+j)^power, rescaled so that P(U=0) may underflow."""
    if f.size >= _COMPILED_FROM:
        return _direct_kernel()(np.ascontiguousarray(f, float), np.ascontiguousarray(r, float),
                                np.ascontiguousarray(p, float), power)
    q = 1.0 - p
    log_scale = r * np.log(p)  # log P(U=0); the terms are carried relative to it
    total = 1.0 / f**power
    active = np.flatnonzero(q > 0)
    # Steps are taken in blocks: b steps of every entry still summing at once, the term's
    # running product and the sum's running total by sequential accumulation along the
    # block (np.multiply/add.accumulate: the same IEEE operations in the same order as one
    # step at a time, so the same bits); each entry stops at its first step whose bound is
    # met, as before. An entry whose terms pass 1e250 within a block (rescaled then) goes on
    # alone in Python floats from the block's start, as do the last few entries. A NumPy
    # step cost ~20 us whatever the number of entries, and slow cells (large r, q near 1)
    # need thousands of steps (issue: recommend re-fits auto ~150 times).
    qa, ra, fa = q[active], r[active], f[active]
    term, sa, la = np.ones(active.size), total[active], log_scale[active]
    rescale = float(250.0 * np.log(10.0))
    cap = 50 * _MAX_TERMS
    j, b = 0, 4
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        # (nxt = 1 gives an infinite bound: summing goes on; past a stop or a 1e250 term a
        # block's later steps may overflow, and are discarded)
        while active.size > _SCALAR_TAIL and j < cap:
            b = _block_size(b, cap - j, active.size)
            steps = j + np.arange(b)
            ratio = qa[:, None] * (ra[:, None] + steps) / (steps + 1.0)
            ratio[:, 0] *= term
            terms = np.multiply.accumulate(ratio, axis=1)
            d = fa[:, None] + steps + 1.0
            add = terms / (d if power == 1 else d * d)
            add[:, 0] += sa
            totals = np.add.accumulate(add, axis=1)
            after = steps + 1
            nxt = qa[:, None] * (ra[:, None] + after) / (after + 1.0)
            bound = np.where(nxt < 1, terms * nxt / (1.0 - nxt), np.inf)
            d = fa[:, None] + after
            big = terms > 1e250
            first, hit = _first_event(big | ~(bound / (d if power == 1 else d * d)
                                              > _RTOL * totals))
            big_first = big[np.arange(active.size), first]
            stop = hit & ~big_first
            over = hit & big_first
            done = active[stop]
            total[done] = totals[stop, first[stop]]
            log_scale[done] = la[stop]
            for i in np.flatnonzero(over).tolist():
                total[active[i]], log_scale[active[i]] = _direct_tail(
                    float(qa[i]), float(ra[i]), float(fa[i]), float(term[i]), float(sa[i]),
                    float(la[i]), j, power, rescale)
            keep = ~hit
            active = active[keep]
            qa, ra, fa, la = qa[keep], ra[keep], fa[keep], la[keep]
            term, sa = terms[keep, -1], totals[keep, -1]
            j += b
    for i in range(active.size):  # the last few entries, or those stopped by the step cap
        total[active[i]], log_scale[active[i]] = _direct_tail(
            float(qa[i]), float(ra[i]), float(fa[i]), float(term[i]), float(sa[i]),
            float(la[i]), j, power, rescale)
    return total * np.exp(log_scale)


#: the direct series' blocks: at most this many steps, and about this many (entry, step)
#: values per block array (a dozen such arrays: ~25 MB)
_MAX_BLOCK_STEPS = 1024
_BLOCK_ENTRIES = 1 << 18
#: the direct series sums its last entries (at most this many) one at a time in Python floats:
#: a NumPy step costs ~20 us whatever the number of entries, and a few slow cells (large r,
#: q near 1) need thousands of steps after the others have finished
_SCALAR_TAIL = 8


def _block_size(last: int, left: int, n_active: int) -> int:
    """Steps of a series' next block: twice the last, at most ``_MAX_BLOCK_STEPS`` and the
    ``left`` steps before the cap, and about ``_BLOCK_ENTRIES`` (entry, step) values."""
    return int(min(2 * last, _MAX_BLOCK_STEPS, left, max(1, _BLOCK_ENTRIES // n_active)))


def _first_event(event: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a block's ``event`` (entries x steps): the first step with an event, and
    whether there is one."""
    first = np.argmax(event, axis=1)
    return first, event[np.arange(event.shape[0]), first]


def _direct_tail(q: float, r: float, f: float, term: float, total: float, log_scale: float,
                 j: int, power: int, rescale: float) -> tuple[float, float]:
    """One entry of :func:`_direct_series` from step ``j`` on: the same IEEE operations in
    the same order as the array loop (``x ** 2`` is ``x * x`` in NumPy), so the same bits."""
    while j < 50 * _MAX_TERMS:
        term *= q * (r + j) / (j + 1.0)
        d = f + j + 1.0
        total += term / (d if power == 1 else d * d)
        j += 1
        if term > 1e250:
            term *= 1e-250
            total *= 1e-250
            log_scale += rescale
        nxt = q * (r + j) / (j + 1.0)
        bound = term * nxt / (1.0 - nxt) if nxt < 1 else math.inf
        d = f + j
        if not bound / (d if power == 1 else d * d) > _RTOL * total:
            break
    return total, log_scale


def dilog(x) -> np.ndarray:
    """Li2(x) = sum_k x^k / k^2 for 0 <= x <= 1, elementwise: the series where x <= 1/2, else
    Euler's reflection Li2(x) = pi^2/6 - log(x) log(1-x) - Li2(1-x) (50 terms of a ratio at
    most 1/2 reach double precision)."""
    x = np.asarray(x, float)
    flip = x > 0.5
    y = np.where(flip, 1.0 - x, x)
    total = np.zeros_like(y)
    power = np.ones_like(y)
    for k in range(1, 56):
        power = power * y
        total += power / (k * k)
    with np.errstate(divide="ignore", invalid="ignore"):
        reflected = math.pi ** 2 / 6 - np.log(x) * np.log1p(-x) - total
    return np.where(flip, np.where(x == 1.0, math.pi ** 2 / 6, reflected), total)


#: the recurrences in f serve p at most this (their errors shrink by p / q a step) ...
_RECURRENCE_P = 1.0 / 3.0
#: ... when their element-steps (the largest f of each (p, r - f) group, summed) stay below
#: this, and either the loop is short or cheaper than the quadratures it replaces (a loop
#: step costs about 2 us, an element-step about 5 ns, a quadrature about 3 ms)
_RECURRENCE_WORK = 50_000_000
_RECURRENCE_STEPS = 100_000
_STEPS_PER_QUADRATURE = 1_500


def _recurrence_cases(fu, ru, pu, todo, power: int = 1) -> np.ndarray:
    """Of ``todo``, the triples the recurrences in f take: a whole f, p <= 1/3, and r >= f
    (E[1/(f+U)]) or r = f (E[1/(f+U)^2], whose start needs the dilogarithm), when their
    work is bounded and below quadrature's."""
    take = (todo & (fu == np.floor(fu)) & (pu <= _RECURRENCE_P)
            & ((ru == fu) if power == 2 else (ru >= fu)))
    if not np.any(take):
        return take
    _, which = np.unique(np.stack([pu[take], ru[take] - fu[take]], axis=1), axis=0,
                         return_inverse=True)
    steps = np.zeros(int(which.max()) + 1)
    np.maximum.at(steps, which.ravel(), fu[take])
    longest, work = steps.max(), steps.sum()
    if work > _RECURRENCE_WORK or (longest > _RECURRENCE_STEPS and longest + work / 400
                                   > _STEPS_PER_QUADRATURE * np.count_nonzero(take)):
        return np.zeros_like(take)
    return take


def _expm1_over(x: np.ndarray) -> np.ndarray:
    """expm1(x) / x, 1 at x = 0."""
    safe = np.where(x == 0, 1.0, x)
    return np.where(x == 0, 1.0, np.expm1(x) / safe)


def _recurrence(f, r, p, power: int) -> np.ndarray:
    """E[1/(f+U)^power] for U ~ NB(r, p) by the recurrences in f of the module docstring:
    with a = r - f >= 0 and ``J_k = int_0^1 u^k (p + q u)^(a-1) du``, E[1/(f+U)] = p J_(f-1),
    ``J_0 = (1 - p^a) / (q a)`` (-log(p) / q at a = 0), ``J_k = (1 - k p J_(k-1)) / (q (a + k))``;
    for a = 0, E[1/(f+U)^2] = p D_(f-1), ``D_0 = Li2(q) / q``,
    ``D_k = p (J_(k-1) - k D_(k-1)) / (q (a + k))``. Triples sharing (p, a) share one run of
    the recurrence (one for nb's equal weights, one for Poisson-gamma's alpha); runs are
    ordered by their largest f, so that step k moves only those still running."""
    keys, which = np.unique(np.stack([p, r - f], axis=1), axis=0, return_inverse=True)
    which = which.ravel()
    longest = np.zeros(len(keys))
    np.maximum.at(longest, which, f)
    runs = np.argsort(-longest, kind="stable")
    position = np.empty(len(keys), np.intp)
    position[runs] = np.arange(len(keys))
    pv, av = keys[runs, 0], keys[runs, 1]
    running = np.searchsorted(-longest[runs], -np.arange(1, int(longest.max()) + 1), "right")
    which = position[which]
    q = 1.0 - pv
    log_p = np.log(pv)
    integral = -log_p * _expm1_over(av * log_p) / q  # J_0
    second = dilog(q) / q if power == 2 else None  # D_0 (a = 0)
    order = np.argsort(f, kind="stable")
    ends = np.searchsorted(f[order], np.arange(1, int(longest.max()) + 1), "right")
    out = np.empty(f.size)
    start = 0
    for k, end in enumerate(ends):  # step k: the triples with f = k + 1
        if k:
            m = running[k]  # the runs whose largest f is k + 1 or more
            pk, qk, ak = pv[:m], q[:m], av[:m]
            if second is not None:
                second[:m] = pk * (integral[:m] - k * second[:m]) / (qk * (ak + k))
            integral[:m] = (1.0 - k * pk * integral[:m]) / (qk * (ak + k))
        if end > start:
            at = order[start:end]
            out[at] = p[at] * (integral if second is None else second)[which[at]]
            start = end
    return out


def _log_pgf_at(s: float, r: float, p: float) -> float:
    # log (p / (1 - q e^{-s}))^r with 1 - q e^{-s} = -expm1(-s) + p e^{-s} (no cancellation)
    return r * (np.log(p) - np.log(-np.expm1(-s) + p * np.exp(-s)))


def _quadrature(f: float, r: float, p: float, power: int) -> float:
    """int_0^inf s^(power-1)/(power-1)! exp(-f s) G(e^{-s}) ds with breakpoints at the peak."""
    from scipy import integrate  # lazy: rarely needed, slow to import

    q = 1.0 - p
    width = 1.0 / (f + r * q / p)

    def integrand(s: float) -> float:
        weight = s if power == 2 else 1.0
        return weight * np.exp(-f * s + _log_pgf_at(s, r, p))

    edges = [0.0]
    edge = width
    # integrate until exp(-f s) is negligible (< 1e-18 of the value at the peak)
    s_max = max(45.0 / f, 50 * width)
    while edge < s_max:
        edges.append(edge)
        edge *= 4.0
    edges.append(s_max)
    total = 0.0
    worst = 0.0
    with warnings.catch_warnings():
        # segments far from the peak hold almost nothing: judge them against the running
        # total (epsabs) instead of their own tiny size, and check the error estimate below
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            val, err = integrate.quad(integrand, lo, hi, epsabs=1e-15 * total, epsrel=1e-12,
                                      limit=200)
            total += val
            worst = max(worst, err)
    # 1e-6 of the value: far below anything a risk figure shows; quad's own estimate on
    # near-Poisson laws (r ~ 1e10, p within 1e-6 of 1) is about 2e-7 of a value it gets right
    if worst > 1e-6 * total:
        warnings.warn(f"E[1/(f+U)^{power}] for NB(r={r:g}, p={p:g}), f={f:g}: quadrature error "
                      f"estimate {worst:.2g} of {total:.3g}", ApproximationWarning,
                      stacklevel=user_stacklevel())
    return total


#: entries per block when every entry is its own triple (the branches' masks and copies are
#: a dozen block-long temporaries: 0.7 GB at 5.9 M cells in one block, issue 20)
_BLOCK = 1 << 20


def _by_triples(kernel, fu, ru, pu, inv, shape) -> np.ndarray:
    """``kernel`` on the distinct triples, mapped back to the entries (``inv``), or block by
    block when every entry is its own triple (``inv`` None)."""
    if inv is not None:
        return kernel(fu, ru, pu)[inv].reshape(shape)
    out = np.empty(fu.size)
    for start in range(0, fu.size, _BLOCK):
        part = slice(start, start + _BLOCK)
        out[part] = kernel(fu[part], ru[part], pu[part])
    return out.reshape(shape)


def expected_inverse(f, r, p) -> np.ndarray:
    """E[1/(f + U)] for U ~ NB(r, p), elementwise; f >= 1, r > 0, 0 < p <= 1.

    Equals ``(p^r / f) 2F1(r, f; f+1; q)`` (Forster & Webb 2007, eq 24); for r = f it is the
    Benedetti-Franconi risk and for r = alpha + f the Poisson-gamma one.
    """
    shape, fu, ru, pu, inv = _unique_triples(f, r, p)
    _check(fu, ru, pu)
    return _by_triples(_expected_inverse_triples, fu, ru, pu, inv, shape)


def _expected_inverse_triples(fu, ru, pu):
    out = np.empty_like(fu)
    q = 1.0 - pu
    done = pu == 1.0
    out[done] = 1.0 / fu[done]
    closed1 = ~done & (ru == fu) & (fu == 1) & (q >= 0.5)
    closed2 = ~done & (ru == fu) & (fu == 2) & (q >= 0.5)
    pc, qc = pu[closed1], q[closed1]
    out[closed1] = pc / qc * -np.log(pc)
    pc, qc = pu[closed2], q[closed2]
    out[closed2] = pc / qc - (pc / qc) ** 2 * -np.log(pc)
    rest = ~(done | closed1 | closed2)
    terms = np.where(ru <= fu + 1, _terms_needed(q), _direct_terms_needed(ru, pu))
    series = _use_series(rest, terms)
    euler = series & (ru <= fu + 1)
    direct = series & (ru > fu + 1)
    if np.any(euler):
        out[euler] = _euler_series(fu[euler], ru[euler], pu[euler])
    if np.any(direct):
        out[direct] = _direct_series(fu[direct], ru[direct], pu[direct], 1)
    recur = _recurrence_cases(fu, ru, pu, rest & ~series)
    if np.any(recur):
        out[recur] = _recurrence(fu[recur], ru[recur], pu[recur], 1)
    for i in np.flatnonzero(rest & ~series & ~recur):
        out[i] = _quadrature(fu[i], ru[i], pu[i], 1)
    return out


def expected_inverse_square(f, r, p) -> np.ndarray:
    """E[1/(f + U)^2] for U ~ NB(r, p), elementwise (used for predictive variances).

    For r = f = 1 (a geometric U) it is ``(p/q) Li2(q)``, with ``Li2(q) = spence(p)``.
    """
    shape, fu, ru, pu, inv = _unique_triples(f, r, p)
    _check(fu, ru, pu)
    return _by_triples(_expected_inverse_square_triples, fu, ru, pu, inv, shape)


def _expected_inverse_square_triples(fu, ru, pu):
    out = np.empty_like(fu)
    q = 1.0 - pu
    done = pu == 1.0
    out[done] = 1.0 / fu[done] ** 2
    geo = ~done & (ru == 1) & (fu == 1)
    out[geo] = pu[geo] / q[geo] * dilog(q[geo])
    rest = ~(done | geo)
    series = _use_series(rest, _direct_terms_needed(ru, pu))
    if np.any(series):
        out[series] = _direct_series(fu[series], ru[series], pu[series], 2)
    recur = _recurrence_cases(fu, ru, pu, rest & ~series, power=2)
    if np.any(recur):
        out[recur] = _recurrence(fu[recur], ru[recur], pu[recur], 2)
    for i in np.flatnonzero(rest & ~series & ~recur):
        out[i] = _quadrature(fu[i], ru[i], pu[i], 2)
    return out
