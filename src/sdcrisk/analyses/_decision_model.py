"""The Zaslavsky-Horton model: beta-binomial posterior of the unseen count, losses, risks,
and the trade-off curve that orders cells by them.

Private: the public names are re-exported by :mod:`sdcrisk.analyses.decision` (and :mod:`sdcrisk`).
Methods spec F.1-F.3.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from scipy import special

from ..core.base import ResultBase
from ..data.sizes import check_memory, check_number, short_repr
from ..exceptions import ConvergenceWarning, InputError, ParameterError, user_stacklevel

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BetaBinomialPrior",
    "BetaBinomialFit",
    "fit_beta_binomial",
    "Loss",
    "SuppressionLoss",
    "ExponentialLoss",
    "GammaLoss",
    "MixtureLoss",
    "CallableLoss",
    "parse_loss",
    "DEFAULT_MAX_ENUMERATION",
    "DEFAULT_TAIL",
    "TradeoffCurve",
]

#: N - n above which the posterior of Y is enumerated only over its central range
DEFAULT_MAX_ENUMERATION = 1_000_000
#: probability mass the central range may leave out (stated with every result)
DEFAULT_TAIL = 1e-12


# --- the beta-binomial model (spec F.2) ----------------------------------------------------------
@dataclass(frozen=True)
class BetaBinomialPrior:
    """theta_i ~ Beta(alpha, beta) for the class prevalence of each domain.

    Parameters
    ----------
    alpha, beta : float
        Positive shape parameters.

    Notes
    -----
    y ~ Bin(n, theta) and Y - y ~ Bin(N - n, theta) independently, so t = Y - y given y is
    beta-binomial(N - n, alpha + y, beta + n - y) and y is marginally beta-binomial(n, alpha,
    beta): P(y | n, N), the fifth column of the paper's Table 2.

    References
    ----------
    Zaslavsky & Horton (1998), section 2.

    Examples
    --------
    >>> prior = BetaBinomialPrior(alpha=1, beta=10)
    >>> [round(float(p), 6) for p in prior.marginal(3)]
    [0.769231, 0.192308, 0.034965, 0.003497]
    >>> round(float(prior.posterior_mean(y=1, n=3, N=8)), 4)
    1.7143
    """

    alpha: float
    beta: float

    def __post_init__(self):
        for name in ("alpha", "beta"):
            v = getattr(self, name)  # True was read as 1, 10**400 an OverflowError
            if isinstance(v, bool) or not isinstance(v, int | float | np.number) or not (
                    0 < check_number(name, v) < math.inf):
                raise ParameterError(f"{name}={short_repr(v)} must be a positive number")

    def marginal(self, n: int) -> np.ndarray:
        """P(y | n) for y = 0..n (beta-binomial(n, alpha, beta))."""
        n = whole_count(n, "n")
        return np.exp(_log_betabinom(np.arange(n + 1), n, self.alpha, self.beta))

    def posterior(self, y: int, n: int, N: int) -> np.ndarray:
        """P(Y | y) for Y = 0..N (zero outside y..y + N - n), by exact enumeration."""
        y, n, N = _check_ynN(y, n, N)
        out = np.zeros(N + 1)
        t = np.arange(N - n + 1)
        out[y:y + N - n + 1] = np.exp(_log_betabinom(t, N - n, self.alpha + y,
                                                     self.beta + n - y))
        return out

    def posterior_mean(self, y: int, n: int, N: int) -> float:
        """E[Y | y] = y + (N - n)(alpha + y)/(alpha + beta + n)."""
        y, n, N = _check_ynN(y, n, N)
        return y + (N - n) * (self.alpha + y) / (self.alpha + self.beta + n)


def whole_count(v, name: str) -> int:
    if not (check_number(name, v).is_integer() and v >= 0):
        raise ParameterError(f"{name}={v!r} must be a non-negative integer")
    return int(v)


def _check_ynN(y, n, N):
    y, n, N = whole_count(y, "y"), whole_count(n, "n"), whole_count(N, "N")
    if n > N:
        raise ParameterError(f"sample size n={n} exceeds the population size N={N}")
    if y > n:
        raise ParameterError(f"class count y={y} exceeds the sample size n={n}")
    return y, n, N


def _log_betabinom(t, size, a, b):
    """log P(t) for the beta-binomial(size, a, b), accurate for large sizes."""
    t = np.asarray(t, float)
    log_choose = -np.log1p(size) - special.betaln(size - t + 1, t + 1)
    return log_choose + special.betaln(t + a, size - t + b) - special.betaln(a, b)


@dataclass(frozen=True, repr=False)
class BetaBinomialFit(ResultBase):
    """Maximum-likelihood (alpha, beta) of the beta-binomial from many domains."""

    alpha: float
    beta: float
    log_likelihood: float
    n_domains: int
    converged: bool
    at_boundary: bool

    @property
    def prior(self) -> BetaBinomialPrior:
        return BetaBinomialPrior(self.alpha, self.beta)

    def _payload(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def fit_beta_binomial(y: Sequence[int], n: Sequence[int]) -> BetaBinomialFit:
    """Estimate (alpha, beta) by beta-binomial maximum likelihood over domains.

    Parameters
    ----------
    y, n : sequences of int
        Class count and sample size of each domain (domains with n = 0 carry no information
        and are skipped).

    Returns
    -------
    BetaBinomialFit

    Raises
    ------
    InputError
        Fewer than two informative domains, or no (or only) class members at all.

    Notes
    -----
    Maximises sum_i [betaln(y_i + alpha, n_i - y_i + beta) - betaln(alpha, beta)] over
    (log alpha, log beta) with the analytic gradient (L-BFGS-B, bounds e^-12..e^16). When the
    counts show no over-dispersion the maximum lies at alpha + beta -> infinity; the fit then
    stops at the bound with ``at_boundary=True`` and a ConvergenceWarning. The paper treats
    (alpha, beta) as known; this is the estimation it suggests (spec F.2, [C]).

    References
    ----------
    Zaslavsky & Horton (1998), section 2.

    Examples
    --------
    >>> fit = fit_beta_binomial([0, 1, 3, 0, 2, 5, 0, 1], [10, 10, 12, 8, 10, 15, 9, 10])
    >>> fit.converged, fit.alpha < fit.beta
    (True, True)
    """
    from scipy import optimize

    try:
        y_arr = np.asarray(y, float)
        n_arr = np.asarray(n, float)
    except (TypeError, ValueError):
        raise InputError(f"y={short_repr(y)} and n={short_repr(n)} must be sequences of "
                         "counts (class count and sample size of each domain)") from None
    if y_arr.shape != n_arr.shape or y_arr.ndim != 1:
        raise InputError("y and n must be one-dimensional and of the same length")
    if np.any(y_arr < 0) or np.any(y_arr > n_arr) or np.any(y_arr != np.round(y_arr)) \
            or np.any(n_arr != np.round(n_arr)):
        raise InputError("domain counts must be integers with 0 <= y <= n")
    keep = n_arr > 0
    y_arr, n_arr = y_arr[keep], n_arr[keep]
    if len(y_arr) < 2:
        raise InputError(f"{len(y_arr)} domain(s) with a sample: at least 2 are needed to "
                         "estimate alpha and beta; give them instead (--alpha and --beta on the "
                         "command line)")
    if y_arr.sum() == 0 or y_arr.sum() == n_arr.sum():
        raise InputError("the class has no members (or every sampled person is in it) in all "
                         "domains: alpha and beta cannot be estimated; give them instead (--alpha "
                         "and --beta on the command line)")
    const = float(np.sum(special.gammaln(n_arr + 1) - special.gammaln(y_arr + 1)
                         - special.gammaln(n_arr - y_arr + 1)))

    def negll(x):
        a, b = np.exp(x)
        ll = np.sum(special.betaln(y_arr + a, n_arr - y_arr + b)) - len(y_arr) * special.betaln(
            a, b)
        common = special.digamma(a + b) - special.digamma(n_arr + a + b)
        ga = np.sum(special.digamma(y_arr + a) - special.digamma(a) + common)
        gb = np.sum(special.digamma(n_arr - y_arr + b) - special.digamma(b) + common)
        return -ll, -np.array([a * ga, b * gb])

    p = y_arr.sum() / n_arr.sum()
    lo, hi = -12.0, 16.0
    best = None
    for m in (2.0, 20.0, 200.0):  # a few starts along the prevalence ray
        res = optimize.minimize(negll, np.log([p * m, (1 - p) * m]), jac=True,
                                method="L-BFGS-B", bounds=[(lo, hi), (lo, hi)])
        if best is None or res.fun < best.fun:
            best = res
    a, b = (float(v) for v in np.exp(best.x))
    boundary = bool(np.any(np.abs(best.x - lo) < 1e-6) or np.any(np.abs(best.x - hi) < 1e-6))
    if boundary:
        warnings.warn(f"beta-binomial ML stopped at a bound (alpha={a:.4g}, beta={b:.4g}); the "
                      "domain counts show no over-dispersion: give alpha and beta instead",
                      ConvergenceWarning, stacklevel=user_stacklevel())
    return BetaBinomialFit(alpha=a, beta=b, log_likelihood=float(-best.fun + const),
                           n_domains=int(len(y_arr)), converged=bool(best.success),
                           at_boundary=boundary)


# --- losses (spec F.3) ---------------------------------------------------------------------------
class Loss:
    """A loss L(y, Y, n, N), vectorised over the population count Y.

    Subclasses are frozen dataclasses with a ``name`` (the CLI spelling) and ``__call__``.
    """

    #: whether the loss depends on the unknown Y (else R = L, no enumeration needed)
    depends_on_Y: bool = True

    @property
    def name(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def __call__(self, y, Y, n, N) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError


_L0_KINDS = {"y": "records concealed, y", "one": "one per cell", "Y": "population in the "
             "cell, Y", "n": "domain sample size, n", "N": "domain population, N"}


@dataclass(frozen=True)
class SuppressionLoss(Loss):
    """Loss of not publishing a cell: ``"y"`` (default in the paper), ``"one"``, ``"Y"``,
    ``"n"`` or ``"N"`` (spec F.3).

    Examples
    --------
    >>> SuppressionLoss("y")(2, np.arange(3), 5, 20).tolist()
    [2.0, 2.0, 2.0]
    """

    kind: Literal["y", "one", "Y", "n", "N"] = "y"

    def __post_init__(self):
        if self.kind == "1":
            object.__setattr__(self, "kind", "one")
        if self.kind not in _L0_KINDS:
            raise ParameterError(f"L0 kind {self.kind!r}; use one of {list(_L0_KINDS)}")

    @property
    def depends_on_Y(self) -> bool:  # type: ignore[override]
        return self.kind == "Y"

    @property
    def name(self) -> str:
        return self.kind

    def __call__(self, y, Y, n, N):
        Y = np.asarray(Y, float)
        value = {"y": y, "one": 1.0, "Y": Y, "n": n, "N": N}[self.kind]
        return np.broadcast_to(np.asarray(value, float), Y.shape).astype(float)


@dataclass(frozen=True)
class ExponentialLoss(Loss):
    """L1 = y exp(-Y / S): expected sample uniques that are population unique, S equal
    subclasses (ZH eq. 2).

    Examples
    --------
    >>> round(float(ExponentialLoss(10)(1, 8, 3, 8)), 3)
    0.449
    """

    S: float

    def __post_init__(self):
        _positive(self.S, "S")

    @property
    def name(self) -> str:
        return f"exp:{self.S:g}"

    def __call__(self, y, Y, n, N):
        return y * np.exp(-np.asarray(Y, float) / self.S)


@dataclass(frozen=True)
class GammaLoss(Loss):
    """L1 = y (1 + Y/(a S))^-(a+1): subclass prevalences ~ Gamma(a, rate a S) (ZH section 3).

    Tends to :class:`ExponentialLoss` as ``a`` -> infinity.

    Examples
    --------
    >>> round(float(GammaLoss(a=2, S=10)(1, 10, 3, 20)), 4)
    0.2963
    """

    a: float
    S: float

    def __post_init__(self):
        _positive(self.a, "a")
        _positive(self.S, "S")

    @property
    def name(self) -> str:
        return f"gamma:{self.a:g}:{self.S:g}"

    def __call__(self, y, Y, n, N):
        return y * np.power(1.0 + np.asarray(Y, float) / (self.a * self.S), -(self.a + 1.0))


@dataclass(frozen=True)
class MixtureLoss(Loss):
    """L1 = y sum_s pi_s exp(-Y pi_s) for subclass prevalences pi_s summing to 1 (ZH eq. 1).

    Examples
    --------
    >>> round(float(MixtureLoss((0.5, 0.5))(1, 4, 3, 8)), 4)
    0.1353
    """

    prevalences: tuple[float, ...]

    def __post_init__(self):
        pi = tuple(float(p) for p in self.prevalences)
        if not pi or any(not (p > 0 and math.isfinite(p)) for p in pi):
            raise ParameterError(f"prevalences={self.prevalences!r} must be positive numbers")
        if abs(sum(pi) - 1.0) > 1e-6:
            raise ParameterError(f"prevalences sum to {sum(pi):.6g}; they are the shares of "
                                 "the class in each subclass and must sum to 1")
        object.__setattr__(self, "prevalences", pi)

    @property
    def name(self) -> str:
        return "mixture:" + ",".join(f"{p:g}" for p in self.prevalences)

    def __call__(self, y, Y, n, N):
        Y = np.asarray(Y, float)
        pi = np.asarray(self.prevalences)
        return y * np.sum(pi * np.exp(-Y[..., None] * pi), axis=-1)


@dataclass(frozen=True)
class CallableLoss(Loss):
    """A user loss ``function(y, Y, n, N) -> array`` (Y an array, the others scalars)."""

    function: Callable[..., Any]
    label: str = "user"
    uses_Y: bool = True

    @property
    def depends_on_Y(self) -> bool:  # type: ignore[override]
        return self.uses_Y

    @property
    def name(self) -> str:
        return self.label

    def __call__(self, y, Y, n, N):
        Y = np.asarray(Y, float)
        out = np.asarray(self.function(y, Y, n, N), float)
        return np.broadcast_to(out, Y.shape)


def _positive(v, name):
    if not (isinstance(v, int | float | np.number) and math.isfinite(v) and v > 0):
        raise ParameterError(f"{name}={v!r} must be a positive number")


def parse_loss(spec: str | Loss | Callable, *, kind: Literal["l1", "l0"] = "l1") -> Loss:
    """A loss from its spelling (the CLI's ``--l1`` / ``--l0``), a Loss, or a callable.

    L1: ``exp:S`` (y e^(-Y/S)), ``gamma:A:S`` (y (1 + Y/(A S))^-(A+1)), ``mixture:p1,p2,...``
    (y sum pi_s e^(-Y pi_s)). L0: ``y``, ``one`` (or ``1``), ``Y``, ``n``, ``N``.

    Examples
    --------
    >>> parse_loss("gamma:2:10").name, parse_loss("one", kind="l0").name
    ('gamma:2:10', 'one')
    """
    if kind not in ("l1", "l0"):  # 'l2' was read as l1
        raise ParameterError(f"kind={kind!r}; use 'l1' (the disclosure loss) or 'l0' (the "
                             "suppression loss)")
    if isinstance(spec, Loss):
        return spec
    if callable(spec):
        import inspect

        try:
            inspect.signature(spec).bind(0, np.zeros(1), 1, 1)
        except TypeError:
            raise ParameterError(f"the {kind} loss {short_repr(spec)} must take four arguments "
                                 "(y, Y, n, N) and return the loss for each Y") from None
        except ValueError:  # a builtin without a signature: called as it is
            pass
        return CallableLoss(spec, getattr(spec, "__name__", "user"))
    if not isinstance(spec, str):
        raise ParameterError(f"loss {spec!r} is not a spelling, a Loss or a callable")
    text = spec.strip()
    if kind == "l0":
        return SuppressionLoss(text)  # type: ignore[arg-type]
    head, _, rest = text.partition(":")
    try:
        if head == "exp" and rest:
            return ExponentialLoss(float(rest))
        if head == "gamma" and rest.count(":") == 1:
            a, s = rest.split(":")
            return GammaLoss(float(a), float(s))
        if head == "mixture" and rest:
            return MixtureLoss(tuple(float(p) for p in rest.split(",")))
    except ParameterError as exc:
        raise ParameterError(f"loss {text!r}: {exc}") from exc
    except ValueError as exc:  # float() of a part that is not a number
        bad = next((part for part in rest.replace(":", ",").split(",")
                    if not _is_number(part)), rest)
        raise ParameterError(f"loss {text!r}: {bad!r} is not a number; use exp:S, gamma:A:S "
                             "or mixture:p1,p2,... with numbers, e.g. exp:10") from exc
    raise ParameterError(f"unknown disclosure loss {text!r}; use exp:S, gamma:A:S or "
                         "mixture:p1,p2,...")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# --- risks by enumeration ------------------------------------------------------------------------
def _expected_losses(y: int, n: int, N: int, prior: BetaBinomialPrior,
                     losses: Sequence[Loss], max_enumeration: int, tail: float):
    """E[L | y] for each loss, E[Y | y], and whether the support was cut to its central range.

    The probabilities are normalised over the enumerated support: this removes the rounding
    of the log normalising constant at large N - n (about 1e-9 relative at N - n = 5e6) and,
    for the central range, rescales by at most ``tail``.
    """
    big = N - n
    a, b = prior.alpha + y, prior.beta + n - y
    truncated = big + 1 > max_enumeration
    if not truncated:
        t = np.arange(big + 1, dtype=float)
    else:
        from scipy import stats

        th_lo, th_hi = stats.beta.ppf(tail / 4, a, b), stats.beta.isf(tail / 4, a, b)
        lo = max(0.0, math.floor(big * th_lo - 10 * math.sqrt(big * th_lo + 1) - 10))
        hi = min(float(big), math.ceil(big * th_hi + 10 * math.sqrt(big * th_hi + 1) + 10))
        # a broad prior over a huge domain: the central range alone was 4.8e10 values at
        # N = 1e12 (a MemoryError, exit 1); ~56 bytes a value measured
        check_memory((hi - lo + 1) * _BYTES_PER_VALUE,
                     what=f"enumerating the {hi - lo + 1:.3g} likely values of Y in a domain "
                          f"of N = {N:.3g} (n = {n})",
                     remedies="a prior with more weight (larger alpha and beta: --alpha, "
                              "--beta) narrows them, or split the domain")
        t = np.arange(lo, hi + 1, dtype=float)
    p = _posterior_pmf(t, big, a, b)
    Y = y + t
    out = [float(np.dot(p, L(y, Y, n, N))) if L.depends_on_Y
           else float(L(y, np.zeros(1), n, N)[0]) for L in losses]
    return out, prior.posterior_mean(y, n, N), truncated


#: working memory of one enumerated value of Y (support, pmf, losses; ~56 bytes measured)
_BYTES_PER_VALUE = 64

#: supports longer than this use the ratio recurrence instead of three log-beta calls a term
_RECURRENCE_FROM = 5_000


def _posterior_pmf(t: np.ndarray, big: int, a: float, b: float) -> np.ndarray:
    """Beta-binomial(big, a, b) probabilities at the consecutive points t, normalised.

    Long supports use P(t+1)/P(t) = (big - t)(t + a) / ((t + 1)(big - t - 1 + b)), summed in
    log space (relative rounding about len(t) * 1e-16).
    """
    if len(t) <= _RECURRENCE_FROM:
        logp = _log_betabinom(t, big, a, b)
    else:
        u = t[:-1]
        ratio = np.log((big - u) * (u + a)) - np.log((u + 1) * (big - u - 1 + b))
        logp = np.concatenate([[0.0], np.cumsum(ratio)])
    p = np.exp(logp - logp.max())
    return p / p.sum()


def risk_rows(y, n, N, prior, losses, max_enumeration, tail):
    r = np.empty((len(y), len(losses)))
    ey = np.empty(len(y))
    truncated = 0
    for i, (yi, ni, big_ni) in enumerate(zip(y, n, N, strict=True)):
        vals, ey[i], cut = _expected_losses(int(yi), int(ni), int(big_ni), prior, losses,
                                            max_enumeration, tail)
        r[i] = vals
        truncated += cut
    return r, ey, truncated


def cut_off_text(max_enumeration, tail, truncated):
    return {"max_enumeration": int(max_enumeration), "tail": tail,
            "rows_truncated": int(truncated),
            "rule": f"exact enumeration of Y = y..y+N-n when N - n < {max_enumeration:,}; "
                    "beyond, the central range of Y (beta quantiles of the prevalence at "
                    f"{tail:g}/4 each side, widened by 10 binomial standard deviations)"}


# --- shared by the decision table and its application to microdata --------------------------
REFERENCE = ("Zaslavsky, A. M. & Horton, N. J. (1998). Balancing disclosure risk against the "
              "loss of nonpublication. Journal of Official Statistics 14(4), 411-419.")


def publication_order(r1, r0):
    """Publication order: R1 = R0 = 0 first, then R1/R0 ascending (stable); R0 = 0 < R1 last."""
    r1, r0 = np.asarray(r1, float), np.asarray(r0, float)
    zero = (r1 == 0) & (r0 == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(r0 > 0, r1 / np.where(r0 > 0, r0, 1.0), np.inf)
    key = np.where(zero, -np.inf, ratio)
    return np.argsort(key, kind="stable"), np.where(zero, np.nan, ratio)


# --- the trade-off curve (spec F.4) -------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class TradeoffCurve(ResultBase):
    """Disclosure-risk fraction against suppression-loss fraction at each cut-off.

    Point 0 publishes nothing (loss fraction 1, risk fraction 0); point r publishes the first
    r rows of the order. Both fractions are relative to full suppression / full publication
    (ZH Fig. 1). Joining the points linearly corresponds to randomised rules (spec F.4, [C]).

    Examples
    --------
    >>> from sdcrisk.analyses.decision import decision_table
    >>> t = decision_table([(3, 8, 1), (5, 20, 3)], BetaBinomialPrior(1, 10), l1="exp:10")
    >>> round(t.curve.loss_fraction_at(0.2), 4), round(t.curve.loss_fraction_at(0.2, "cutoff"), 4)
    (0.7513, 0.8718)
    """

    loss_fraction: np.ndarray
    risk_fraction: np.ndarray
    label: str = "optimal"

    def __post_init__(self) -> None:
        for name in ("loss_fraction", "risk_fraction"):
            object.__setattr__(self, name, np.array(getattr(self, name), float))
        super().__post_init__()

    def loss_fraction_at(self, risk_fraction: float,
                         interpolation: Literal["linear", "cutoff"] = "linear") -> float:
        """Suppression-loss fraction needed to bring the risk down to ``risk_fraction``.

        ``linear``: between cut-offs (randomised rule); ``cutoff``: the last cut-off whose
        risk fraction is at most ``risk_fraction`` (a deterministic rule).
        """
        if not 0 <= risk_fraction <= 1:
            raise ParameterError(f"risk_fraction={risk_fraction} must lie in [0, 1]")
        if interpolation not in ("linear", "cutoff"):
            raise ParameterError(f"interpolation={interpolation!r}; use 'linear' or 'cutoff'")
        x, yv = self.loss_fraction, self.risk_fraction
        above = np.flatnonzero(yv > risk_fraction + 1e-15)
        if above.size == 0:
            return float(x[-1])
        i = int(above[0])
        if interpolation == "cutoff" or i == 0:
            return float(x[max(i - 1, 0)])
        share = (risk_fraction - yv[i - 1]) / (yv[i] - yv[i - 1])
        return float(x[i - 1] + share * (x[i] - x[i - 1]))

    def _payload(self) -> dict[str, Any]:
        return {"label": self.label, "loss_fraction": self.loss_fraction,
                "risk_fraction": self.risk_fraction}

    def summary(self) -> pd.DataFrame:
        """The points of the curve: loss and risk fraction at each cut-off."""
        import pandas as pd

        return pd.DataFrame({"loss_fraction": self.loss_fraction,
                             "risk_fraction": self.risk_fraction}).rename_axis("cut_off")

    def _repr_parts(self) -> list[str]:
        return [f"label={self.label!r}", f"points={len(self.loss_fraction)}",
                f"loss_fraction_at_0.2={self.loss_fraction_at(0.2):.4g}"]


def tradeoff_curve(w, r1, r0, order, label="optimal"):
    wr1, wr0 = (w * r1)[order], (w * r0)[order]
    cum = np.cumsum(wr1)
    total_loss = float(np.sum(w * r0))
    remaining = np.maximum(total_loss - np.cumsum(wr0), 0.0)
    remaining[-1] = 0.0
    total_risk = float(cum[-1]) if len(cum) else 0.0
    x = np.r_[1.0, remaining / total_loss] if total_loss > 0 else np.r_[1.0, np.zeros(len(cum))]
    y = np.r_[0.0, cum / total_risk] if total_risk > 0 else np.r_[0.0, np.ones(len(cum))]
    return cum, remaining, TradeoffCurve(x, y, label), total_risk, total_loss


def check_cut_off(max_enumeration, tail):
    if not (isinstance(max_enumeration, int | np.integer) and max_enumeration >= 1):
        raise ParameterError(f"max_enumeration={max_enumeration!r} must be a positive integer")
    if not 0 < tail < 1e-3:
        raise ParameterError(f"tail={tail!r} must lie in (0, 1e-3)")
