"""Exchangeable baselines (methods spec section B).

* :class:`NegativeBinomialRisk` - Benedetti-Franconi individual risk (mu-Argus, sdcMicro
  ``measure_risk``/``indivRisk``), with survey weights;
* :class:`PoissonGammaRisk` - Bethlehem, Keller & Pannekoek (1990) superpopulation model,
  fitted by maximum likelihood;
* :class:`SkinnerElliotTheta` - Skinner & Elliot (2002) estimator of theta.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import ClassVar, Literal

import numpy as np

from ..core import _nb
from ..core.measures import DESCRIPTIONS, Measure
from ..core.predictive import NegativeBinomialPredictive
from ..core.result import RiskResult, provenance
from ..data.frequencies import FrequencyTable
from ..data.sizes import check_number, short_repr
from ..data.table import CellTable
from ..exceptions import ConvergenceWarning, ParameterError, user_stacklevel
from ._base import CountGroups, Estimator, check_int, count_groups, grouped_memory

__all__ = [
    "NegativeBinomialRisk",
    "PoissonGammaRisk",
    "SkinnerElliotTheta",
    "bf_risk",
]

BFMode = Literal["exact", "sdcmicro", "sdcmicro_legacy", "muargus"]
_BF_MODES = ("exact", "sdcmicro", "sdcmicro_legacy", "muargus")
#: the largest Poisson-gamma alpha, given or searched by maximum likelihood: the counts are
#: then Poisson for any practical purpose; beyond about 1e16 the NB's prob rounds to 1
MAX_ALPHA = 1e8


def _closed_f1(p, q):
    return p / q * -np.log(p)


def _closed_f2(p, q):
    return p / q - (p / q) ** 2 * -np.log(p)


def _closed_f3(p, q):
    return p / (2 * q**3) * (q * (1 - 3 * p) - 2 * p**2 * np.log(p))


def bf_risk(f: np.ndarray, p: np.ndarray, mode: BFMode = "exact") -> np.ndarray:
    """Benedetti-Franconi record risk E[1/F | f] for F - f ~ NegBin(f, p), per cell.

    Parameters
    ----------
    f : ndarray of int
        Sample cell counts (>= 1).
    p : ndarray
        p_k = f_k / F_hat_k. Cells with p >= 1 (F_hat <= f) get 1/f.
    mode : {"exact", "sdcmicro", "sdcmicro_legacy", "muargus"}
        ``exact``: the exact expectation (stable series, spec B.2). ``sdcmicro``: current
        sdcMicro ``indivRisk(method="approx")`` (exact for f <= 2, ``p/(f - (1-p))`` for
        f >= 3). ``sdcmicro_legacy``: the same with ``p - 1e-4`` (older C++ code).
        ``muargus``: closed forms for f <= 3 and the series truncated after m = 7 (mu-Argus 4.1
        manual, as implemented in SDCNway).
    """
    if mode not in _BF_MODES:
        raise ParameterError(f"mode={mode!r}; use one of {_BF_MODES}")
    try:
        f_in, p_in = f, p
        f = np.asarray(f, float)
        p = np.broadcast_to(np.asarray(p, float), f.shape).copy()
    except (TypeError, ValueError):
        raise ParameterError(f"bf_risk: f={short_repr(f_in)} and p={short_repr(p_in)} must "
                             "be numbers, p of f's shape or one value for every cell") from None
    bad = ~np.isfinite(f) | (f < 1)
    if bad.any():
        raise ParameterError(f"bf_risk: f={f[bad].flat[0]:g}: sample counts must be >= 1")
    bad = ~np.isfinite(p) | (p <= 0)
    if bad.any():
        raise ParameterError(f"bf_risk: p={p[bad].flat[0]:g}: p = f / F_hat must be > 0 "
                             "(p >= 1 gives 1/f)")
    full = p >= 1
    if mode == "sdcmicro_legacy":
        p = np.where(full, p, p - 1e-4)
    out = np.empty_like(f)
    out[full] = 1.0 / f[full]
    rest = ~full
    fr, pr = f[rest], p[rest]
    qr = 1.0 - pr
    if mode == "exact":
        out[rest] = _nb.expected_inverse(fr, fr, pr)
        return out
    val = np.empty_like(fr)
    m1, m2 = fr == 1, fr == 2
    val[m1] = _closed_f1(pr[m1], qr[m1])
    val[m2] = _closed_f2(pr[m2], qr[m2])
    if mode in ("sdcmicro", "sdcmicro_legacy"):
        m3 = ~(m1 | m2)  # f >= 3, and sdcMicro's branch for wildcard counts such as 1.5
        val[m3] = pr[m3] / (fr[m3] - qr[m3])
    else:
        m3 = fr == 3
        val[m3] = _closed_f3(pr[m3], qr[m3])
        m4 = fr >= 4
        fk, pk, qk = fr[m4], pr[m4], qr[m4]
        term = np.ones_like(fk)
        total = np.ones_like(fk)
        for m in range(1, 8):
            term = term * m * qk / (fk + m)
            total += term
        val[m4] = pk / fk * total
    out[rest] = val
    return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class NegativeBinomialRisk(Estimator):
    """Benedetti-Franconi negative-binomial individual risk (sdcMicro ``measure_risk``).

    Parameters
    ----------
    mode : {"exact", "sdcmicro", "sdcmicro_legacy", "muargus"}
        How E[1/F | f] is evaluated (see :func:`bf_risk`); ``sdcmicro`` reproduces sdcMicro
        5.8's numbers, ``exact`` is the exact model value (default).
    ci_level, max_global_risk : see :class:`~sdcrisk.estimators.Estimator`.

    Notes
    -----
    Model (spec B.2): F_k - f_k | f_k ~ NegBin(f_k, p_k) with p_k = f_k / F_hat_k and
    F_hat_k the sum of the survey weights in cell k (with no weights, F_hat_k = f_k N / n).
    Record risk r_k = E[1/F_k | f_k]; P(F_k = 1 | f_k = 1) = p_k. Unweighted data with no
    population size are taken to be the population (F_hat = f, r = 1/f), as sdcMicro does.
    Without weights every cell with the same f has the same law: the fit works per distinct
    f (so it also fits a :class:`~sdcrisk.data.frequencies.FrequencyTable`).
    sdcMicro/mu-Argus equivalent: ``measure_risk`` / ``indivRisk``; mu-Argus individual risk.

    References
    ----------
    Benedetti, R. & Franconi, L. (1998). Statistical and technological solutions for
    controlled data dissemination. Franconi, L. & Polettini, S. (2004). Individual risk
    estimation in mu-Argus: a review. PSD 2004.

    Examples
    --------
    >>> from sdcrisk import Microdata, tabulate, NegativeBinomialRisk
    >>> md = Microdata.from_source("example:uk_census2011", keys="region,sex,age_band",
    ...                            population_size=56_075_912)
    >>> res = NegativeBinomialRisk().fit(tabulate(md))
    >>> res.method
    'nb'
    """

    name: ClassVar[str] = "nb"
    census_by_model: ClassVar[bool] = True  # NegBin(f, p = 1): F = f, on wildcard counts too
    mode: BFMode = "exact"

    def _validate(self) -> None:
        if self.mode not in _BF_MODES:
            raise ParameterError(f"mode={self.mode!r}; use one of {list(_BF_MODES)}")

    def supports_wildcards(self) -> bool:
        return self.mode in ("sdcmicro", "sdcmicro_legacy")

    def supports_frequencies(self) -> bool:
        return True

    def _grouped(self, table) -> bool:
        """Whether every cell's law is a function of its count: no weights, and no missing
        value counted as a wildcard (without one the wildcard counts are the counts, and a
        file read with wildcards gets the same figures as read without, to the bit:
        protect's "before" differed from assess in the last bit of ER)."""
        wc = table.wildcard if self.supports_wildcards() else None
        plain = wc is None or (wc.n_missing_cells == 0 and wc.weight_sums is None)
        return plain and table.weight_sums is None

    def memory_estimate(self, table) -> int:
        return grouped_memory(table) if self._grouped(table) else super().memory_estimate(table)

    def _fit(self, table: CellTable | FrequencyTable) -> RiskResult:
        wc = table.wildcard if self.supports_wildcards() else None
        groups = count_groups(table) if self._grouped(table) else None
        if groups is not None:
            f = groups.sizes.astype(float)
        else:
            f = table.counts.astype(float) if wc is None else wc.counts
        if wc is not None and wc.weight_sums is not None:
            f_hat = wc.weight_sums
            how = ("p_k = fk / Fk with missing key values as wildcards (sdcMicro freqCalc, "
                   f"alpha = {wc.alpha:g})")
        elif table.weight_sums is not None:
            f_hat = table.weight_sums
            how = "p_k = f_k / (sum of survey weights in cell k)"
        else:
            f_hat = f * (table.population_size / table.n)
            how = f"p_k = n / N = {table.n / table.population_size:.6g} for every cell"
        p = f / f_hat
        risk = bf_risk(f, p, self.mode)
        census = table.population_size <= table.n
        if census and table.weight_sums is not None:
            # N = n: nothing is unseen, F_k = f_k, whatever weights (summing to n) say of
            # single cells (a unique of weight 1.5 made p = 2/3 and tau1 < n1)
            how += "; N = n: the population is the sample, so F_k = f_k (p_k = 1)"
        pred = NegativeBinomialPredictive(
            f, size=f, prob=np.ones_like(f) if census else np.minimum(p, 1.0),
            unobserved_prob_one=0.0,
            law_name="NegBin(size=f_k, prob=p_k) [Benedetti-Franconi]",
        )
        assumptions = (
            "F_k - f_k | f_k ~ NegBin(f_k, p_k) independently over cells (Benedetti-Franconi)",
            how,
            "cells unobserved in the sample are taken to be empty in the population, so P(PU) "
            "counts only sample uniques (a lower bound)",
        )
        if table.population_size_source == "assumed_population":
            assumptions += ("no weights or population size given: the file is taken to be the "
                            "whole population (N = n, risk = 1/f), as sdcMicro does",)
        if wc is not None:
            assumptions += (f"missing key values match every category (wildcards, sdcMicro "
                            f"freqCalc, alpha = {wc.alpha:g}); f_k is the wildcard count",)
        sample_unique = records = None
        if wc is not None and groups is None:
            sample_unique = wc.counts == 1
            if np.any(table.counts[sample_unique] != 1):  # a pattern's records, each unique
                records = table.counts.astype(float)
        return self._predictive_result(
            table, pred, reid_risk=None if self.mode == "exact" else risk,
            fitted={"p_min": float(p.min()), "p_max": float(p.max())},
            assumptions=assumptions, sample_unique=sample_unique, groups=groups,
            records=records,
        )


def _pg_loglik(alpha: float, groups: CountGroups, n: int, k: int) -> float:
    """Log-likelihood of the K cells (spec B.1), log f! dropped, beta = 1/(K alpha).

    Written so that it stays accurate as alpha grows (the Poisson limit): with x = n/(K alpha),
    sum_k [log Gamma(alpha + f_k) - log Gamma(alpha)] = n log(alpha) + sum_k sum_{i<f_k}
    log1p(i / alpha), and the n log(alpha) cancels against n log(x). The cells come grouped
    by count (:func:`~sdcrisk.estimators._base.count_groups`).
    """
    x = n / (k * alpha)
    f_values, multiplicity = groups.sizes, groups.cells
    rising = np.concatenate([[0.0], np.cumsum(np.log1p(np.arange(f_values[-1]) / alpha))])
    return float(np.dot(rising[f_values], multiplicity) + n * np.log(n / k)
                 - k * alpha * np.log1p(x) - n * np.log1p(x))


def _pg_score(alpha: float, groups: CountGroups, n: int, k: int) -> float:
    """d/d(log alpha) of :func:`_pg_loglik`, in closed form: alpha times
    -sum_k sum_{i<f_k} i / (alpha (alpha + i)) - K log1p(x) + K x / (1 + x)
    + n x / (alpha (1 + x)), with x = n / (K alpha). Its root is the ML estimate to the last
    digits (a bounded Brent search stops within sqrt(eps) |log alpha| of it, and where
    within that depends on the library versions' rounding)."""
    x = n / (k * alpha)
    f_values, multiplicity = groups.sizes, groups.cells
    i = np.arange(f_values[-1], dtype=float)
    inner = np.concatenate([[0.0], np.cumsum(i / (alpha + i))])  # alpha times the double sum
    return float(-np.dot(inner[f_values], multiplicity) - k * alpha * np.log1p(x)
                 + k * alpha * x / (1 + x) + n * x / (1 + x))


@dataclasses.dataclass(frozen=True, kw_only=True)
class PoissonGammaRisk(Estimator):
    """Poisson-gamma superpopulation model (Bethlehem, Keller & Pannekoek 1990).

    Parameters
    ----------
    fit_method : {"ml", "moments"}
        Estimate alpha by maximum likelihood over all K cells (default) or by moments.
    alpha : float, optional
        Fix alpha instead of estimating it: a positive number up to 1e8 (the Poisson limit).
    cell_space : int, optional
        Number of admissible cells K (default: the product of the numbers of levels). Give
        it to exclude structural zeros.

    Notes
    -----
    F_k | lambda_k ~ Poisson(N lambda_k), lambda_k ~ Gamma(alpha, scale beta), alpha beta = 1/K.
    Then F_k - f_k | f_k ~ NegBin(alpha + f_k, p) with p = (1 + n beta)/(1 + N beta), so
    P(F_k = 1 | f_k = 1) = p^(alpha+1) and E[1/F_k | f_k] follows from spec B.1. Every cell is
    exchangeable: all sample uniques get the same risk, and the fit works per distinct f (it
    also fits a :class:`~sdcrisk.data.frequencies.FrequencyTable`). No sdcMicro equivalent.

    References
    ----------
    Bethlehem, J., Keller, W. & Pannekoek, J. (1990). Disclosure control of microdata. JASA 85.
    """

    name: ClassVar[str] = "poisson-gamma"
    fit_method: Literal["ml", "moments"] = "ml"
    alpha: float | None = None
    cell_space: int | None = None

    def _validate(self) -> None:
        if self.fit_method not in ("ml", "moments"):
            raise ParameterError(f"fit_method={self.fit_method!r}; use 'ml' or 'moments'")
        # alpha=1e20 gave tau1 = every sample unique: 1 + n beta rounds to 1, so p = 1 and
        # F = f; the Poisson limit is already reached at the ML search's bound
        if self.alpha is not None and not 0 < check_number("alpha", self.alpha) <= MAX_ALPHA:
            raise ParameterError(f"alpha={self.alpha} must be a positive number up to "
                                 f"{MAX_ALPHA:g} (larger values are the Poisson limit, which "
                                 f"alpha={MAX_ALPHA:g} already gives)")
        if self.cell_space is not None:
            check_int("cell_space", self.cell_space, 1)

    def supports_frequencies(self) -> bool:
        return True

    def memory_estimate(self, table) -> int:
        return grouped_memory(table)

    def check_table(self, table: CellTable | FrequencyTable) -> None:
        k = int(self.cell_space or table.cell_space)
        if k < table.n_cells:
            raise ParameterError(f"cell_space={k} is smaller than the {table.n_cells} "
                                 "observed cells")

    def _fit(self, table: CellTable | FrequencyTable) -> RiskResult:
        k = int(self.cell_space or table.cell_space)
        n, big_n = table.n, table.population_size
        groups = count_groups(table)
        counts = groups.sizes.astype(float)
        diag: dict = {}
        if self.alpha is not None:
            alpha = float(self.alpha)
            diag["alpha_source"] = "given"
        elif self.fit_method == "moments":
            s2 = float(np.dot(groups.cells, counts**2)) / k - (n / k) ** 2
            beta = (k * s2 - n) / n**2
            if beta <= 0:
                raise ParameterError("the cell counts are not overdispersed (moment estimate of "
                                     "beta <= 0); use fit_method='ml'")
            alpha = min(1.0 / (k * beta), MAX_ALPHA)  # held to the Poisson limit
            diag["alpha_source"] = "moments"
        else:
            alpha, diag = self._ml_alpha(groups, n, k)
        beta = 1.0 / (k * alpha)
        p = (1 + n * beta) / (1 + big_n * beta)
        unobserved = (k - table.n_cells) * float(_nb.prob_one(alpha, p))
        pred = NegativeBinomialPredictive(
            counts, size=alpha + counts, prob=p, unobserved_prob_one=unobserved,
            law_name="NegBin(size=alpha+f_k, prob=(1+n beta)/(1+N beta)) [Poisson-gamma]",
        )
        fitted = {"alpha": alpha, "beta": beta, "p": p, "cell_space": k,
                  "log_likelihood": _pg_loglik(alpha, groups, n, k)}
        assumptions = (
            "F_k ~ Poisson(N lambda_k), lambda_k ~ Gamma(alpha, beta) iid over all K cells, "
            "alpha beta = 1/K (Bethlehem et al. 1990)",
            "Bernoulli (equal-probability) sampling at n/N; survey weights are not used",
            f"K = {k:,} admissible cells (sample zeros included)",
        )
        return self._predictive_result(table, pred, fitted=fitted, assumptions=assumptions,
                                       diagnostics=diag, groups=groups)

    @staticmethod
    def _ml_alpha(groups, n, k):
        from scipy import optimize  # lazy: slow to import, only needed here

        lo, hi = np.log(1e-10), np.log(MAX_ALPHA)
        grid = np.linspace(lo, hi, 91)
        vals = np.array([_pg_loglik(np.exp(g), groups, n, k) for g in grid])
        i = int(np.nanargmax(vals))
        a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
        res = optimize.minimize_scalar(lambda g: -_pg_loglik(np.exp(g), groups, n, k),
                                       bounds=(a, b), method="bounded",
                                       options={"xatol": 1e-10})
        at_bound = i in (0, len(grid) - 1)
        g = float(res.x)
        if not at_bound:
            # the score's root in the grid's bracket, to the last digits
            s_a, s_b = (_pg_score(np.exp(v), groups, n, k) for v in (a, b))
            if s_a > 0 > s_b:
                g = optimize.brentq(lambda v: _pg_score(np.exp(v), groups, n, k), a, b,
                                    xtol=1e-14, rtol=4 * np.finfo(float).eps)
        alpha = float(np.exp(g))
        diag = {"alpha_source": "maximum likelihood", "optimizer_converged": bool(res.success),
                "alpha_at_search_bound": at_bound}
        if at_bound:
            warnings.warn(
                f"Poisson-gamma ML estimate of alpha hit the search bound ({alpha:.3g}); the "
                "counts look " + ("Poisson (no overdispersion)" if i else "extremely dispersed"),
                ConvergenceWarning, stacklevel=user_stacklevel())
        return alpha, diag


@dataclasses.dataclass(frozen=True, kw_only=True)
class SkinnerElliotTheta(Estimator):
    """Skinner & Elliot (2002) estimator of theta = P(correct match | match to a sample unique).

    Notes
    -----
    theta_hat = pi n1 / (pi n1 + 2 (1 - pi) n2), with pi = n / N the Bernoulli sampling
    fraction, n1 and n2 the numbers of cells with f = 1 and f = 2 (spec B.4). Only theta is
    estimated; its variance estimator (SE02) was not recovered, so no interval is given.
    No sdcMicro equivalent (sdcMicro's ``suda2`` DIS score is a different quantity).

    References
    ----------
    Skinner, C. J. & Elliot, M. J. (2002). A measure of disclosure risk for microdata.
    JRSS B 64, 855-867.
    """

    name: ClassVar[str] = "skinner-elliot"
    census_by_model: ClassVar[bool] = True  # theta = 1 at pi = 1: its own measure, exactly

    def supports_frequencies(self) -> bool:
        return True

    def memory_estimate(self, table) -> int:
        return grouped_memory(table)

    def _fit(self, table: CellTable | FrequencyTable) -> RiskResult:
        pi = table.n / table.population_size
        groups = count_groups(table)
        n1 = int(groups.cells[groups.sizes == 1].sum())
        n2 = int(groups.cells[groups.sizes == 2].sum())
        denom = pi * n1 + 2 * (1 - pi) * n2
        theta = pi * n1 / denom if denom > 0 else None
        measures = {
            "theta": Measure("theta", theta, description=DESCRIPTIONS["theta"]
                             + " (Skinner-Elliot 2002 estimator)"),
        }
        return RiskResult(
            method=self.name,
            measures=measures,
            table=table,
            parameters=self.get_params(),
            fitted={"pi": pi, "n1": n1, "n2": n2},
            thresholds={"ci_level": self.ci_level},
            assumptions=("Bernoulli sampling with probability pi = n/N",
                         "no interval: the SE02 variance estimator is not implemented"),
            provenance=provenance(table),
        )
