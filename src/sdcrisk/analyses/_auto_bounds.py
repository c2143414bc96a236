"""Bounds of auto's intervals: what any population allows, tau1 <= tau2, tau1's truth a
whole number, and the validated rule's widening by its sub-sample errors."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import stdtrit

from ..core.measures import Measure
from ..data.table import CellTable

Interval = tuple[float, float, float, float]


def within_bounds(calibrated: Interval, table: CellTable) -> Interval:
    """A calibrated (estimate, lower, upper, half-width) held within what any population
    allows: N - n unseen people can make at most ceil(N - n) sample uniques non-unique, so
    tau1 and tau2 (>= tau1) lie in [n1 - ceil(N - n), n1]. The regression extrapolates past
    its corpus (sampling fractions near 1: tau1 = 16.8 of n1 = 19 with one unseen person)."""
    su = float(table.sample_uniques)
    floor = max(0.0, su - math.ceil(table.population_size - table.n - 1e-9))
    est, lo, hi, half = calibrated
    return (min(max(est, floor), su), min(max(lo, floor), su), min(max(hi, floor), su), half)


def ordered(tau1: Interval, tau2: Interval) -> tuple[Interval, Interval]:
    """tau1 <= tau2 (P(F = 1) <= E[1/F] in every cell). The two regressions are separate, so
    their estimates can cross on a file far from the corpus (tau1 = 1.0 > tau2 = 0.98 on a
    12-record file); crossed estimates meet at their mean (the least-squares point with
    tau1 <= tau2), each interval widened to hold it."""
    if tau1[0] <= tau2[0]:
        return tau1, tau2
    mid = (tau1[0] + tau2[0]) / 2

    def at(c):
        return (mid, min(c[1], mid), max(c[2], mid), c[3])

    return at(tau1), at(tau2)


def whole_count_lower(tau1: Interval) -> Interval:
    """tau1's (estimate, lower, upper, half-width) with a lower bound below 1 set to 0.

    The truth, the number of sample uniques that are population unique, is a whole number, so
    a lower bound in (0, 1) excludes 0 and nothing else: it states that at least one sample
    unique is population unique. The conformal quantiles cannot back that: they were learned
    on log(estimate / truth), defined only for a true tau1 >= 1. On the ten outside files of
    benchmarks/RESULTS.md's third batch, 90 samples had sample uniques and a true tau1 of 0;
    auto's estimates there had a median of 0.05, and no interval contained 0.
    """
    est, lo, hi, half = tau1
    return (est, 0.0 if lo < 1.0 else lo, hi, half)


def widen_interval(m: Measure, errors: np.ndarray, *, cap: float, level: float) -> Measure:
    """The measure's interval widened by the validated relative errors (log scale).

    With d_r = log(1 + e_r) the validated log errors (R replicates), s = sqrt(mean d_r^2) and
    t = Student-t quantile (R degrees of freedom) at (1 + level) / 2, the half-widths of the
    model's own interval on the log scale, h_lo = log(est / lower) and h_hi = log(upper / est),
    become sqrt(h^2 + (t s)^2): lower = est * exp(-sqrt(h_lo^2 + (t s)^2)), upper likewise,
    capped at ``cap`` (the number of sample uniques, which bounds tau1 and tau2).
    """
    est = m.estimate
    e = np.asarray(errors, float)
    e = e[np.isfinite(e) & (e > -1)]
    if est is None or not est > 0 or e.size == 0:
        return m
    d = np.log1p(e)
    s = float(np.sqrt(np.mean(d**2)))
    t = float(stdtrit(e.size, 0.5 + level / 2))  # Student-t quantile (scipy.stats: 0.3 s)
    v = (t * s) ** 2
    # the model's half-widths on the log scale (no model interval: 0; a bound at 0: infinite)
    h_lo = 0.0 if m.lower is None else (math.inf if m.lower <= 0 else math.log(est / m.lower))
    h_hi = 0.0 if m.upper is None else math.log(max(m.upper, est) / est)
    lower = est * math.exp(-math.sqrt(h_lo**2 + v)) if math.isfinite(h_lo) else 0.0
    upper = min(cap, est * math.exp(math.sqrt(h_hi**2 + v)))
    return dataclasses.replace(
        m, lower=lower, upper=upper, level=level,
        interval=(f"{m.interval or 'no model interval'}, widened by the validated error "
                  f"(RMS log error {s:.3g} over {e.size} sub-samples, t quantile {t:.3g}; "
                  "log-scale half-widths added in quadrature)"))


