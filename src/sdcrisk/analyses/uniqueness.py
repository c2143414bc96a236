"""Population uniqueness from the sample's frequency of frequencies (ARX's models).

Three superpopulation estimators of the number of population uniques, S1 = #{cells with
F = 1}, and the decision rule of Dankar et al. (2012) that picks one of them by the
sampling fraction, as ARX implements them (``RiskModelPopulationUniqueness``):

* **Pitman** (Hoshino 2001): the cell partition follows the two-parameter Pitman sampling
  formula; (theta, alpha) by maximum likelihood from the sample, S1 = Gamma(theta + 1) /
  Gamma(theta + alpha) · N^alpha.
* **Zayatz** (1991): P(F = 1 | f = 1) by Bayes' rule with the population class-size
  distribution estimated by the sample's and hypergeometric sampling;
  S1 = s1 · P(F = 1 | f = 1) · N / n.
* **SNB** (Chen & Keller-McNulty 1998): population class sizes are 1 + NegBin(alpha, beta)
  and sampling thins them binomially; K (non-empty population classes) by Shlosser's
  estimator, (alpha, beta) from the expected numbers of sample classes of size 1 and 2,
  S1 = K beta^alpha.

These estimate file-level quantities (how many population uniques there are), not a
per-cell law of F_k - f_k, so they are not :class:`~sdcrisk.Estimator` subclasses; see
:func:`population_uniqueness`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from scipy import optimize, special

from ..core.base import ResultBase
from ..data.sizes import check_number, short_repr
from ..data.table import CellTable, Microdata, tabulate
from ..exceptions import InputError, ParameterError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FrequencyProfile",
    "UniquenessEstimate",
    "PopulationUniqueness",
    "population_uniqueness",
    "pitman_uniques",
    "zayatz_uniques",
    "snb_uniques",
]

UniquenessModel = Literal["pitman", "zayatz", "snb"]
SnbEquations = Literal["model", "arx"]

#: ARX's sampling-fraction threshold of the decision rule (Dankar et al. 2012)
DANKAR_THRESHOLD = 0.1


# --- the data the models use ---------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class FrequencyProfile:
    """Frequency of frequencies of a sample and the population size.

    Attributes
    ----------
    sizes : ndarray of int
        Distinct class (cell) sizes j >= 1 in the sample, ascending.
    classes : ndarray of int
        c_j, the number of sample classes of size j.
    population_size : float
        N.
    """

    sizes: np.ndarray
    classes: np.ndarray
    population_size: float

    def __post_init__(self):
        sizes = np.asarray(self.sizes, dtype=np.int64)
        classes = np.asarray(self.classes, dtype=np.int64)
        if sizes.ndim != 1 or sizes.shape != classes.shape or sizes.size == 0:
            raise InputError("a frequency profile needs equal, non-empty sizes and classes")
        if np.any(sizes < 1) or np.any(np.diff(sizes) <= 0) or np.any(classes < 1):
            raise InputError("class sizes must be distinct, ascending and >= 1, with counts >= 1")
        n = int(np.sum(sizes * classes))
        big_n = float(self.population_size)
        if not (math.isfinite(big_n) and big_n >= n):
            raise ParameterError(
                f"population size N={self.population_size} must be finite and at least the "
                f"sample size n={n}")
        sizes.setflags(write=False)
        classes.setflags(write=False)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "classes", classes)
        object.__setattr__(self, "population_size", big_n)

    @classmethod
    def from_counts(cls, counts, population_size: float) -> FrequencyProfile:
        """From the sample count f_k of every observed cell."""
        try:
            values = np.asarray(counts, dtype=float)
        except (TypeError, ValueError):
            values = np.array([np.nan])
        if values.ndim != 1 or values.size == 0 or not np.all(
                (values >= 1) & (values == np.round(values))):
            raise InputError(f"counts={short_repr(counts)}: cell counts must be whole numbers "
                             ">= 1 and at least one cell is needed")
        counts = values.astype(np.int64)
        sizes, classes = np.unique(counts, return_counts=True)
        return cls(sizes, classes, population_size)

    @property
    def n(self) -> int:
        """Sample size."""
        return int(np.sum(self.sizes * self.classes))

    @property
    def n_classes(self) -> int:
        """u, the number of non-empty sample classes."""
        return int(np.sum(self.classes))

    @property
    def sampling_fraction(self) -> float:
        """n / N."""
        return self.n / self.population_size

    def count(self, size: int) -> int:
        """c_size, the number of sample classes of that size."""
        hit = np.flatnonzero(self.sizes == size)
        return int(self.classes[hit[0]]) if hit.size else 0


@dataclass(frozen=True, eq=False, repr=False)
class UniquenessEstimate(ResultBase):
    """One model's estimate of the population uniques.

    Attributes
    ----------
    model : str
        ``"pitman"``, ``"zayatz"`` or ``"snb"``.
    uniques : float
        Estimated number of population uniques (NaN when unavailable).
    share : float
        uniques / N, the estimated share of the population that is unique.
    available : bool
        Whether the model gave a usable estimate (finite, > 0 and at most N; ARX's rule).
    parameters : mapping
        Fitted parameters (theta, alpha; alpha, beta, K; P(F=1|f=1)).
    note : str
        How it was obtained, or why it is unavailable.
    """

    model: str
    uniques: float
    share: float
    available: bool
    parameters: Mapping[str, float] = field(default_factory=dict)
    note: str = ""

    def _payload(self) -> dict[str, Any]:
        return {"model": self.model, "uniques": _num(self.uniques), "share": _num(self.share),
                "available": self.available,
                "parameters": {k: _num(v) for k, v in self.parameters.items()},
                "note": self.note}


def _estimate(model: str, uniques: float, big_n: float, parameters: dict,
              note: str) -> UniquenessEstimate:
    ok = bool(math.isfinite(uniques) and 0 < uniques <= big_n)
    if not ok and math.isfinite(uniques):
        why = f"the estimate {uniques:.6g} is not in (0, N = {big_n:.6g}]"
        note = f"{note}; {why}" if note else why
    value = uniques if ok else math.nan
    return UniquenessEstimate(model, value, value / big_n if ok else math.nan, ok,
                              parameters, note)


# --- Pitman ----------------------------------------------------------------------------------
def _check_profile(profile, function: str) -> None:
    if not isinstance(profile, FrequencyProfile):
        raise ParameterError(
            f"{function}() takes a FrequencyProfile, not {type(profile).__name__}; build one "
            "with FrequencyProfile.from_counts(table.counts, table.population_size), or give "
            "the table to population_uniqueness()")


def pitman_uniques(profile: FrequencyProfile, *, tol: float = 1e-13,
                   max_iter: int = 200) -> UniquenessEstimate:
    """Population uniques under the Pitman partition model (Hoshino 2001; ARX ModelPitman).

    Parameters
    ----------
    profile : FrequencyProfile
    tol : float
        Newton stops when a step changes theta and alpha by less than ``tol`` (relative).
    max_iter : int
        Newton iterations before falling back to a hybrid root finder.

    Returns
    -------
    UniquenessEstimate

    Notes
    -----
    With u sample classes of which c_j have size j, the log-likelihood of (theta, alpha) is
    sum_{i=1}^{u-1} log(theta + i alpha) - sum_{i=1}^{n-1} log(theta + i)
    + sum_j c_j sum_{k=1}^{j-1} log(k - alpha). The score equations are solved by Newton's
    method from ARX's moment start (c = c1(c1 - 1)/c2, theta0, alpha0 as in ARX) to full
    convergence (ARX stops at |score| <= 1e-6; the two agree to ~1e-11 relative on the
    Adult data). Then S1 = Gamma(theta + 1) / Gamma(theta + alpha) · N^alpha, the expected
    number of singletons of a Pitman partition of N items for large N.

    References
    ----------
    Hoshino, N. (2001). Applying Pitman's sampling formula to microdata disclosure risk
    assessment. *J. Official Statistics* 17(4), 499-520.
    """
    _check_profile(profile, "pitman_uniques")
    n, u = profile.n, profile.n_classes
    c1, c2 = profile.count(1), profile.count(2)
    big_n = profile.population_size
    if c1 == 0:
        return UniquenessEstimate("pitman", 0.0, 0.0, True, {}, "no sample uniques")
    if u < 2 or n < 2:
        return _estimate("pitman", math.nan, big_n, {}, "needs at least two classes")
    c2s = c2 if c2 else 1  # ARX: overestimate when there are no pairs
    c = c1 * (c1 - 1) / c2s
    den = 2 * c1 * u + c1 * c - n * c
    theta0 = (n * u * c - c1 * (n - 1) * (2 * u + c)) / den if den else math.nan
    alpha0 = (theta0 * (c1 - n) + (n - 1) * c1) / (n * u)
    score = _pitman_score(profile)
    x, how = _newton(score, np.array([theta0, alpha0]), tol, max_iter, _pitman_domain)
    if x is None:
        start = np.array([theta0, alpha0]) if np.all(np.isfinite([theta0, alpha0])) else \
            np.array([1.0, 0.5])
        with np.errstate(all="ignore"):
            sol = optimize.root(lambda v: score(v)[0], start, jac=lambda v: score(v)[1],
                                method="hybr", tol=1e-14, options={"maxfev": 400})
        if sol.success and _pitman_domain(sol.x) and np.all(np.abs(score(sol.x)[0]) < 1e-8):
            x, how = sol.x, "hybrid root finder (Newton failed)"
        else:
            return _estimate("pitman", math.nan, big_n, {},
                             "the likelihood equations have no solution with alpha < 1 and "
                             "theta > -alpha (e.g. all classes unique)")
    theta, alpha = float(x[0]), float(x[1])
    log_uniques = float(special.gammaln(theta + 1) - special.gammaln(theta + alpha)
                        + alpha * math.log(big_n))
    if not log_uniques < math.log(big_n) + 1e-9:
        return _estimate("pitman", math.nan, big_n, {"theta": theta, "alpha": alpha},
                         f"{how}; the fitted model implies more uniques than the population "
                         "size (no valid estimate)")
    return _estimate("pitman", math.exp(log_uniques), big_n, {"theta": theta, "alpha": alpha},
                     how)


def _pitman_domain(x) -> bool:
    theta, alpha = x
    return bool(np.isfinite(theta) and np.isfinite(alpha) and alpha < 1 and theta + alpha > 0
                and theta > -alpha)


def _pitman_score(profile: FrequencyProfile):
    n, u = profile.n, profile.n_classes
    i = np.arange(1, u, dtype=float)
    big = profile.sizes > 1
    sizes, classes = profile.sizes[big], profile.classes[big].astype(float)
    kmax = int(sizes.max()) if sizes.size else 1
    k = np.arange(1, kmax, dtype=float)

    def score(x):
        if not _pitman_domain(x):
            # outside the parameter space (a root finder wandering off): no value, so that
            # the solver stops instead of evaluating digamma far out on the negative axis
            nan = np.full(2, np.nan)
            return nan, np.full((2, 2), np.nan)
        with np.errstate(all="ignore"):
            return _eval(float(x[0]), float(x[1]))

    def _eval(theta, alpha):
        a = 1.0 / (theta + i * alpha)
        a2 = a * a
        g_theta = a.sum() - (special.digamma(theta + n) - special.digamma(theta + 1))
        h_tt = -a2.sum() + special.polygamma(1, theta + 1) - special.polygamma(1, theta + n)
        h_ta = -(i * a2).sum()
        b = 1.0 / (k - alpha)
        cb = np.concatenate(([0.0], np.cumsum(b)))[sizes - 1]
        cb2 = np.concatenate(([0.0], np.cumsum(b * b)))[sizes - 1]
        g_alpha = (i * a).sum() - float(classes @ cb)
        h_aa = -(i * i * a2).sum() - float(classes @ cb2)
        return np.array([g_theta, g_alpha]), np.array([[h_tt, h_ta], [h_ta, h_aa]])

    return score


def _newton(fun, x0, tol, max_iter, domain):
    """Newton's method with step halving to stay in ``domain``; None when it fails."""
    x = np.array(x0, dtype=float)
    if not domain(x):
        return None, ""
    for it in range(1, max_iter + 1):
        g, h = fun(x)
        if not np.all(np.isfinite(g)) or not np.all(np.isfinite(h)):
            return None, ""
        try:
            step = np.linalg.solve(h, g)
        except np.linalg.LinAlgError:
            return None, ""
        lam = 1.0
        while lam > 1e-8 and not domain(x - lam * step):
            lam /= 2
        if not domain(x - lam * step):
            return None, ""
        x_new = x - lam * step
        if np.all(np.abs(x_new - x) <= tol * (1 + np.abs(x))):
            return x_new, f"Newton, {it} iterations"
        x = x_new
    return None, ""


# --- Zayatz ----------------------------------------------------------------------------------
def zayatz_uniques(profile: FrequencyProfile) -> UniquenessEstimate:
    """Population uniques by Zayatz's equivalence-class model (ARX ModelZayatz).

    Returns
    -------
    UniquenessEstimate

    Notes
    -----
    With P_j = P(f = 1 | F = j), hypergeometric (N, j, n), and the population class-size
    distribution estimated by the sample's, c_j / u:

        P(F = 1 | f = 1) = c1 P_1 / sum_j c_j P_j,    S1 = c1 P(F = 1 | f = 1) · N / n.

    The ratios P_j / P_1 = j prod_{i=1}^{j-1} (1 - (n - 1)/(N - i)) are formed in log space,
    so no large binomial coefficient is evaluated. N need not be an integer (ARX truncates
    it to one for its hypergeometric distribution).

    References
    ----------
    Zayatz, L. (1991). Estimation of the percent of unique population elements on a
    microdata file using the sample. Statistical Research Division Report Census/SRD/RR-91/08,
    U.S. Bureau of the Census.
    """
    _check_profile(profile, "zayatz_uniques")
    n, big_n = profile.n, profile.population_size
    c1 = profile.count(1)
    if c1 == 0:
        return UniquenessEstimate("zayatz", 0.0, 0.0, True, {}, "no sample uniques")
    ratio = _hypergeometric_ratios(profile.sizes, n, big_n)
    cond = c1 / float(profile.classes @ ratio)
    uniques = c1 * cond * big_n / n
    return _estimate("zayatz", uniques, big_n, {"p_unique_given_sample_unique": cond},
                     "closed form")


def _hypergeometric_ratios(sizes: np.ndarray, n: int, big_n: float) -> np.ndarray:
    """P(f=1 | F=j) / P(f=1 | F=1) for each size j."""
    jmax = int(sizes.max())
    i = np.arange(1, jmax, dtype=float)
    factor = 1.0 - (n - 1) / (big_n - i)  # (N - n + 1 - i) / (N - i)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(factor > 0, np.log1p(-(n - 1) / (big_n - i)), -np.inf)
    cum = np.concatenate(([0.0], np.cumsum(logs)))
    return sizes * np.exp(cum[sizes - 1])


# --- SNB -------------------------------------------------------------------------------------
def snb_uniques(profile: FrequencyProfile, *,
                equations: SnbEquations = "model") -> UniquenessEstimate:
    """Population uniques under the slide (shifted) negative binomial model.

    Parameters
    ----------
    profile : FrequencyProfile
    equations : {"model", "arx"}
        ``"model"`` (default): the expected numbers of sample classes of size 1 and 2 under
        the model, and Shlosser's estimator of K as published. ``"arx"``: ARX's ModelSNB
        arithmetic, which differs in two places (see Notes); use it to reproduce ARX.

    Returns
    -------
    UniquenessEstimate

    Notes
    -----
    Population class sizes are F = 1 + X, X ~ NegBin(alpha, beta)
    (P(X = x) = Gamma(alpha + x) / (Gamma(alpha) x!) beta^alpha (1 - beta)^x), and each
    record is sampled with probability pi = n / N. With d = (1 - pi)(1 - beta) and
    s = 1 - d, the probability generating function of f gives

        E[c1] = K pi (beta / s)^alpha (1 + alpha d / s),
        E[c2] = K pi^2 alpha (1 - beta) beta^alpha s^-(alpha+2) (2 - (1 - alpha) d) / 2,

    and S1 = K P(F = 1) = K beta^alpha. K, the number of non-empty population classes, is
    Shlosser's estimator in the form of Haas et al. (1995), with q = pi:
    K = u + c1 (sum_j j q^2 (1 - q^2)^(j-1) c_j) (sum_j (1 - q)^j c_j)^2 /
    [(sum_j (1 - q)^j ((1 + q)^j - 1) c_j) (sum_j j q (1 - q)^(j-1) c_j)^2] (K = u when
    q = 1). The two equations E[c1] = c1, E[c2] = c2 are solved for alpha > 0,
    0 < beta < 1 from a fixed grid of starting points (deterministic); no root in that
    region makes the model unavailable.

    ARX's ModelSNB writes s^+(alpha+2) in E[c2] and sums (1 - q)^j (1 + q)^j c_j - 1 in
    the denominator of K (the "- 1" outside the product); with ``equations="arx"`` both are
    reproduced. ARX solves from (1, 1), where its Jacobian is singular, and then restarts
    from random points; on the Adult data its equations have no root at any f < 1, so its
    decision rule falls back to Zayatz.

    References
    ----------
    Chen, G. & Keller-McNulty, S. (1998). Estimation of identification disclosure risk in
    microdata. *J. Official Statistics* 14(1), 79-95.

    Haas, P. J., Naughton, J. F., Seshadri, S. & Stokes, L. (1995). Sampling-based
    estimation of the number of distinct values of an attribute. *VLDB '95*, 311-322.
    """
    _check_profile(profile, "snb_uniques")
    if equations not in ("model", "arx"):
        raise ParameterError(f"equations={equations!r}; use 'model' or 'arx'")
    big_n = profile.population_size
    c1, c2 = profile.count(1), profile.count(2)
    if c1 == 0:
        return UniquenessEstimate("snb", 0.0, 0.0, True, {}, "no sample uniques")
    pi = profile.sampling_fraction
    k = _shlosser(profile, pi, arx=equations == "arx")
    if not (math.isfinite(k) and k > 0):
        return _estimate("snb", math.nan, big_n, {"K": k},
                         f"Shlosser's estimate of K is {k!r}")
    sign = 1.0 if equations == "arx" else -1.0

    def resid(y):
        alpha, beta = math.exp(y[0]), 1.0 / (1.0 + math.exp(-y[1]))
        d = (1 - pi) * (1 - beta)
        s = 1 - d
        e1 = k * pi * (beta / s) ** alpha * (1 + alpha * d / s)
        e2 = (k * pi * pi * alpha * (1 - beta) * beta ** alpha * s ** (sign * (alpha + 2))
              * (2 - (1 - alpha) * d) / 2)
        return [e1 / c1 - 1.0, e2 / max(c2, 1) - (1.0 if c2 else 0.0)]

    roots = []
    for a0 in (0.05, 0.2, 0.5, 1.0, 2.0, 5.0):
        for b0 in (0.01, 0.1, 0.3, 0.5, 0.9):
            y0 = [math.log(a0), math.log(b0 / (1 - b0))]
            with np.errstate(all="ignore"):
                try:
                    sol = optimize.root(resid, y0, method="hybr", tol=1e-15)
                except (OverflowError, ValueError, ZeroDivisionError):
                    continue
            if sol.success and np.all(np.isfinite(sol.x)) and max(map(abs, resid(sol.x))) < 1e-10:
                roots.append((math.exp(sol.x[0]), 1.0 / (1.0 + math.exp(-sol.x[1]))))
    if not roots:
        return _estimate("snb", math.nan, big_n, {"K": k},
                         "the moment equations have no root with alpha > 0, 0 < beta < 1")
    alpha, beta = roots[0]
    distinct = {(round(a, 6), round(b, 6)) for a, b in roots}
    note = "root of the moment equations" + (
        f" (first of {len(distinct)} distinct roots)" if len(distinct) > 1 else "")
    uniques = k * beta ** alpha
    return _estimate("snb", uniques, big_n, {"alpha": alpha, "beta": beta, "K": k}, note)


def _shlosser(profile: FrequencyProfile, q: float, *, arx: bool) -> float:
    sizes = profile.sizes.astype(float)
    cls = profile.classes.astype(float)
    u, c1 = profile.n_classes, profile.count(1)
    if q >= 1 and not arx:
        return float(u)
    with np.errstate(all="ignore"):
        v1 = float(np.sum(sizes * q * q * (1 - q * q) ** (sizes - 1) * cls))
        base = (1 - q) ** sizes * cls
        if arx:
            v2 = float(np.sum(base * (1 + q) ** sizes - 1))
        else:
            v2 = float(np.sum(base * ((1 + q) ** sizes - 1)))
        v3 = float(np.sum(base))
        v4 = float(np.sum(sizes * q * (1 - q) ** (sizes - 1) * cls))
        return u + c1 * (v1 / v2) * (v3 / v4) * (v3 / v4)


# --- Dankar's rule and the result ------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class PopulationUniqueness(ResultBase):
    """Estimates of the number and share of population uniques, and the model chosen.

    Attributes
    ----------
    profile : FrequencyProfile
        The sample's frequency of frequencies and N.
    estimates : mapping of str to UniquenessEstimate
        Pitman, Zayatz and SNB.
    dankar : UniquenessEstimate
        The estimate Dankar's decision rule selects (model ``"none"`` when no model gave
        one; its uniques are then 0, as in ARX).
    dankar_model : str
        ``"pitman"``, ``"zayatz"``, ``"snb"`` or ``"none"``.
    dankar_reason : str
        Why that model was chosen.
    threshold : float
        The sampling-fraction threshold of the rule (0.1).
    snb_equations : str
        Which SNB equations were used.
    """

    profile: FrequencyProfile
    estimates: Mapping[str, UniquenessEstimate]
    dankar: UniquenessEstimate
    dankar_model: str
    dankar_reason: str
    threshold: float = DANKAR_THRESHOLD
    snb_equations: str = "model"

    @property
    def n(self) -> int:
        return self.profile.n

    @property
    def population_size(self) -> float:
        return self.profile.population_size

    @property
    def sampling_fraction(self) -> float:
        return self.profile.sampling_fraction

    @property
    def sample_uniques(self) -> int:
        """c1, sample classes of size 1 (= sample-unique records)."""
        return self.profile.count(1)

    @property
    def sample_uniqueness(self) -> float:
        """Share of records that are sample unique, c1 / n (ARX sample-based uniqueness)."""
        return self.sample_uniques / self.n

    @property
    def average_prosecutor_risk(self) -> float:
        """Mean over records of 1/f_k, = u / n (ARX's average prosecutor risk)."""
        return self.profile.n_classes / self.n

    @property
    def highest_prosecutor_risk(self) -> float:
        """1 / (smallest class size) (ARX's highest prosecutor risk)."""
        return 1.0 / float(self.profile.sizes[0])

    @property
    def uniques(self) -> float:
        """Number of population uniques by Dankar's rule."""
        return self.dankar.uniques

    @property
    def share(self) -> float:
        """Share of the population that is unique, by Dankar's rule."""
        return self.dankar.share

    def summary(self) -> pd.DataFrame:
        """One row per model (and Dankar's choice) as a DataFrame."""
        import pandas as pd

        rows = [{"model": k, "uniques": e.uniques, "share": e.share, "available": e.available,
                 "note": e.note} for k, e in self.estimates.items()]
        rows.append({"model": f"dankar ({self.dankar_model})", "uniques": self.dankar.uniques,
                     "share": self.dankar.share, "available": self.dankar.available,
                     "note": self.dankar_reason})
        return pd.DataFrame(rows).set_index("model")

    def _payload(self) -> dict[str, Any]:
        """Counts and estimates only."""
        return {
            "method": "population_uniqueness",
            "n": self.n,
            "population_size": self.population_size,
            "sampling_fraction": self.sampling_fraction,
            "sample_classes": self.profile.n_classes,
            "sample_uniques": self.sample_uniques,
            "sample_uniqueness": self.sample_uniqueness,
            "average_prosecutor_risk": self.average_prosecutor_risk,
            "highest_prosecutor_risk": self.highest_prosecutor_risk,
            "estimates": {k: e.to_dict() for k, e in self.estimates.items()},
            "dankar": {"model": self.dankar_model, "reason": self.dankar_reason,
                       "threshold": self.threshold, **self.dankar.to_dict()},
            "snb_equations": self.snb_equations,
        }

    def _repr_parts(self) -> list[str]:
        return [f"n={self.n}", f"N={self.population_size:g}",
                f"f={self.sampling_fraction:.4g}", f"sample_uniques={self.sample_uniques}",
                f"share={self.share:.6g} [{self.dankar_model}]"]


def population_uniqueness(
    data: CellTable | Microdata | FrequencyProfile,
    *,
    sampling_fraction: float | None = None,
    population_size: float | None = None,
    snb_equations: SnbEquations = "model",
    zayatz_fallback: bool = True,
) -> PopulationUniqueness:
    """Number and share of population uniques: Pitman, Zayatz, SNB and Dankar's rule.

    Parameters
    ----------
    data : CellTable, Microdata or FrequencyProfile
        The sample (only its frequency of frequencies is used).
    sampling_fraction : float, optional
        f in (0, 1]; then N = (1/f) · n, as ARX's population model. Exclusive with
        ``population_size``.
    population_size : float, optional
        N. Default: the table's N (given, from weights, or n when nothing says otherwise,
        which makes f = 1).
    snb_equations : {"model", "arx"}
        See :func:`snb_uniques`. ``"arx"`` reproduces ARX's numbers.
    zayatz_fallback : bool
        When f <= 0.1 and Pitman gives no estimate, use Zayatz (ARX's default).

    Returns
    -------
    PopulationUniqueness
        Every model's estimate, the one Dankar's rule picks and why.

    Raises
    ------
    ParameterError
        Both or invalid ``sampling_fraction``/``population_size``.

    Notes
    -----
    Dankar's decision rule as ARX implements it: with no sample uniques the answer is 0;
    when f <= 0.1 take Pitman (Zayatz if Pitman is unavailable); otherwise take the smaller
    of Zayatz and SNB, or Zayatz when SNB is unavailable. An estimate is unavailable when it
    is not finite, not positive, or (Pitman) larger than N.

    These are estimates of how many population uniques exist (S1), not of how many sample
    uniques are population unique (tau1); Zayatz's P(F = 1 | f = 1) is reported in its
    parameters. ARX equivalent: ``RiskModelPopulationUniqueness`` (getFractionOfUniqueTuples*);
    sdcMicro and mu-Argus have none.

    References
    ----------
    Dankar, F. K., El Emam, K., Neisa, A. & Roffey, T. (2012). Estimating the
    re-identification risk of clinical data sets. *BMC Med. Inform. Decis. Mak.* 12:66.

    Prasser, F., Kohlmayer, F. et al. ARX data anonymization tool,
    ``org.deidentifier.arx.risk``.

    Examples
    --------
    >>> import sdcrisk
    >>> md = sdcrisk.Microdata.from_source("example:uk_census2011", sampling_fraction=0.01,
    ...     keys=["region", "sex", "age_band", "ethnic_group", "religion", "health"])
    >>> res = sdcrisk.population_uniqueness(md)
    >>> res.dankar_model, res.sample_uniques
    ('pitman', 1183)
    """
    if sampling_fraction is not None and population_size is not None:
        raise ParameterError("give sampling_fraction or population_size, not both")
    if snb_equations not in ("model", "arx"):
        raise ParameterError(f"snb_equations={snb_equations!r}; use 'model' or 'arx'")
    if isinstance(data, FrequencyProfile):
        counts_n, base_n, base_big = None, data.n, data.population_size
        profile = data
    else:
        if isinstance(data, Microdata):
            data = tabulate(data)
        if not isinstance(data, CellTable):
            raise InputError(
                f"population_uniqueness needs a CellTable, Microdata or FrequencyProfile, not "
                f"{type(data).__name__}")
        counts_n, base_n, base_big = data.counts, data.n, data.population_size
        profile = None
    if sampling_fraction is not None:
        f = check_number("sampling_fraction", sampling_fraction)
        if not (math.isfinite(f) and 0 < f <= 1):
            raise ParameterError(f"sampling_fraction={sampling_fraction} must lie in (0, 1]")
        big_n = 1.0 / f * base_n
    elif population_size is not None:
        big_n = check_number("population_size", population_size)
    else:
        big_n = base_big
    if profile is None or big_n != profile.population_size:
        counts = counts_n if counts_n is not None else np.repeat(profile.sizes, profile.classes)
        profile = FrequencyProfile.from_counts(counts, big_n)

    estimates = {
        "pitman": pitman_uniques(profile),
        "zayatz": zayatz_uniques(profile),
        "snb": snb_uniques(profile, equations=snb_equations),
    }
    model, reason = _dankar(profile, estimates, zayatz_fallback)
    if model == "none":
        chosen = UniquenessEstimate("none", 0.0, 0.0, False, {}, reason)
    elif profile.count(1) == 0:
        chosen = UniquenessEstimate("none", 0.0, 0.0, True, {}, reason)
        model = "none"
    else:
        chosen = estimates[model]
    return PopulationUniqueness(profile=profile, estimates=estimates, dankar=chosen,
                                dankar_model=model, dankar_reason=reason,
                                snb_equations=snb_equations)


def _dankar(profile: FrequencyProfile, est: Mapping[str, UniquenessEstimate],
            zayatz_fallback: bool) -> tuple[str, str]:
    f = profile.sampling_fraction
    if profile.count(1) == 0:
        return "none", "no sample uniques: no population uniques are estimated"
    if f <= DANKAR_THRESHOLD:
        if est["pitman"].available:
            return "pitman", f"sampling fraction {f:.4g} <= {DANKAR_THRESHOLD}: Pitman"
        if zayatz_fallback and est["zayatz"].available:
            return "zayatz", (f"sampling fraction {f:.4g} <= {DANKAR_THRESHOLD}: Pitman "
                              f"unavailable ({est['pitman'].note}), Zayatz instead")
        return "none", "Pitman unavailable and no fallback"
    if est["snb"].available:
        if est["zayatz"].available and est["zayatz"].uniques < est["snb"].uniques:
            return "zayatz", (f"sampling fraction {f:.4g} > {DANKAR_THRESHOLD}: the smaller of "
                              "Zayatz and SNB (Zayatz)")
        return "snb", (f"sampling fraction {f:.4g} > {DANKAR_THRESHOLD}: the smaller of Zayatz "
                       "and SNB (SNB)")
    if est["zayatz"].available:
        return "zayatz", (f"sampling fraction {f:.4g} > {DANKAR_THRESHOLD}: SNB unavailable "
                          f"({est['snb'].note}), Zayatz")
    return "none", "neither SNB nor Zayatz gave an estimate"


def _num(x) -> Any:
    x = float(x)
    return x if math.isfinite(x) else None
