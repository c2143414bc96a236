"""Publish or suppress: the decision-theoretic rule of Zaslavsky & Horton (methods spec F).

A population is split into domains i (e.g. areas) of N_i people, sampled n_i; a class (e.g.
an occupation) cuts across them. The sample count y_i of the class in domain i is seen, the
population count Y_i is not. Publishing the cell (domain x class) risks a disclosure loss
L1(y, Y, n, N); suppressing it costs L0. With a beta-binomial model for Y_i given y_i, the
risks R_d = E[L_d | y] are exact finite sums, the optimal rule publishes iff R1 < c R0, and
ordering cells by R1/R0 traces the trade-off curve of disclosure risk against loss.

* :class:`BetaBinomialPrior`, :func:`fit_beta_binomial` - the model (spec F.2);
* losses (spec F.3): :class:`SuppressionLoss` (L0 in y, 1, Y, n, N), :class:`ExponentialLoss`,
  :class:`GammaLoss`, :class:`MixtureLoss`, :class:`CallableLoss`; :func:`parse_loss`;
* :func:`decision_table` - the ordered table of domain types (the paper's Table 2) and its
  :class:`TradeoffCurve`; :func:`posterior_table` (Table 1); :func:`sensitivity` (F.4 step 5);
* :class:`DomainTable` and :func:`decide` - the rule applied to microdata (one domain variable,
  one class), with :func:`sdcrisk.plot_tradeoff` (in :mod:`sdcrisk.report`) for the curve.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.base import ResultBase
from ..data.sizes import check_number, short_repr
from ..exceptions import InputError, ParameterError
from ._decision_model import (
    DEFAULT_MAX_ENUMERATION,
    DEFAULT_TAIL,
    REFERENCE,
    BetaBinomialFit,
    BetaBinomialPrior,
    CallableLoss,
    ExponentialLoss,
    GammaLoss,
    Loss,
    MixtureLoss,
    SuppressionLoss,
    TradeoffCurve,
    check_cut_off,
    cut_off_text,
    fit_beta_binomial,
    parse_loss,
    publication_order,
    risk_rows,
    tradeoff_curve,
    whole_count,
)

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
    "posterior_table",
    "TradeoffCurve",
    "DecisionTable",
    "decision_table",
    "LossSensitivity",
    "sensitivity",
    "DomainTable",
    "DomainDecision",
    "decide",
]

def _describe_losses(l1, l0, d1, d0):
    out = {"l1": l1.name, "l0": l0.name}
    if (d1, d0) != (l1, l0):
        out.update(decision_l1=d1.name, decision_l0=d0.name)
    return out


# --- domain types: the paper's Tables 1 and 2 ---------------------------------------------
#: most rows :func:`posterior_table` lists (a row per (y, Y), built in Python)
POSTERIOR_TABLE_ROWS = 1_000_000


def posterior_table(n: int, N: int, prior: BetaBinomialPrior, l1: Loss | str):
    """The paper's Table 1: P(Y | y), L1(y, Y) and their product for Y = 0..N, and R1(y).

    Returns a DataFrame with one row per (y, Y) and columns ``y, Y, p, L1, p_L1, R1``.

    Examples
    --------
    >>> t = posterior_table(3, 8, BetaBinomialPrior(1, 10), "exp:10")
    >>> round(float(t.groupby("y")["R1"].first().loc[1]), 6)
    0.845619
    """
    import pandas as pd

    check_prior(prior)
    loss = parse_loss(l1)
    n_rows = (whole_count(n, "n") + 1) * (whole_count(N, "N") + 1)
    if n_rows > POSTERIOR_TABLE_ROWS:
        raise ParameterError(f"posterior_table(n={n}, N={N}) would list every (y, Y): "
                             f"{n_rows:,} rows, more than {POSTERIOR_TABLE_ROWS:,}; it shows the "
                             "paper's Table 1 for small domains, use decision_table or decide "
                             "for large ones")
    rows = []
    for y in range(whole_count(n, "n") + 1):
        p = prior.posterior(y, n, N)
        big_y = np.arange(N + 1, dtype=float)
        val = loss(y, big_y, n, N)
        r1 = float(np.dot(p, val))
        rows += [{"y": y, "Y": int(k), "p": p[k], "L1": val[k], "p_L1": p[k] * val[k],
                  "R1": r1} for k in range(N + 1)]
    return pd.DataFrame(rows)


_TABLE_COLUMNS = ("n", "N", "y", "share", "p_y", "EY", "R1", "L0", "ratio", "w_R1", "w_L0",
                  "cum_risk", "remaining_loss")


@dataclass(frozen=True, eq=False, repr=False)
class DecisionTable(ResultBase):
    """The ordered table of domain configurations (n, N, y) and its trade-off curve.

    ``rows`` holds, in publication order, the paper's Table 2 columns: ``n, N, y``,
    ``share`` = P(n, N), ``p_y`` = P(y | n, N), ``EY`` = E[Y | y], ``R1``, ``L0`` (the
    expected suppression loss R0 = E[L0 | y], which is L0 itself when L0 does not depend on
    Y), ``ratio`` = R1/L0, ``w_R1`` = P R1 and ``w_L0`` = P L0 with P = share p_y,
    ``cum_risk`` = risk of publishing this row and all above it, ``remaining_loss`` = loss of
    suppressing all rows below it. With decision losses (sensitivity), the order follows
    ``decision_ratio`` while R1 and L0 are evaluated with the true losses.
    """

    rows: Mapping[str, np.ndarray]
    prior: BetaBinomialPrior
    losses: Mapping[str, str]
    total_risk: float
    total_loss: float
    curve: TradeoffCurve
    cut_off: Mapping[str, Any] = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        """The ordered table as a DataFrame."""
        import pandas as pd

        return pd.DataFrame({k: np.asarray(v) for k, v in self.rows.items()})

    def _payload(self) -> dict[str, Any]:
        return {
            "model": {"alpha": self.prior.alpha, "beta": self.prior.beta},
            "losses": self.losses,
            "rows": self.summary().to_dict(orient="records"),
            "total_risk": self.total_risk,
            "total_loss": self.total_loss,
            "curve": self.curve.to_dict(),
            "cut_off": self.cut_off,
            "reference": REFERENCE,
        }

    def _repr_parts(self) -> list[str]:
        return [f"rows={len(self.rows['y'])}", f"alpha={self.prior.alpha:g}",
                f"beta={self.prior.beta:g}", f"l1={self.losses['l1']}",
                f"l0={self.losses['l0']}", f"total_risk={self.total_risk:.6g}",
                f"total_loss={self.total_loss:.6g}"]


def check_prior(prior) -> None:
    """``prior`` is a BetaBinomialPrior (ParameterError otherwise)."""
    if not isinstance(prior, BetaBinomialPrior):
        raise ParameterError(f"prior={short_repr(prior)} must be a BetaBinomialPrior(alpha, "
                             "beta), e.g. fit_beta_binomial(y, n).prior")


def _types(domain_types) -> list[tuple[int, int, float]]:
    if hasattr(domain_types, "to_dict") and hasattr(domain_types, "columns"):
        missing = {"n", "N", "share"} - set(domain_types.columns)
        if missing:
            raise InputError(f"domain types need columns n, N, share; missing {sorted(missing)}")
        items = list(zip(domain_types["n"], domain_types["N"], domain_types["share"],
                         strict=True))
    else:
        try:
            items = [tuple(t) for t in domain_types]
        except TypeError:
            raise ParameterError(f"domain_types={short_repr(domain_types)}: give a table with "
                                 "columns n, N, share or a list of (n, N, share) triples"
                                 ) from None
    if not items:
        raise InputError("no domain types given")
    out = []
    for t in items:
        if len(t) != 3:
            raise InputError(f"domain type {t!r}: give (n, N, share)")
        try:
            n, big_n = whole_count(t[0], "n"), whole_count(t[1], "N")
            share = float(t[2])
        except (ParameterError, ValueError, TypeError) as exc:
            raise InputError(f"domain type {t!r}: {exc}") from None
        if n > big_n:
            raise InputError(f"domain type {t!r}: its sample size n={n} exceeds its population "
                             f"size N={big_n}; a domain's sample is drawn from its population "
                             "(check the n and N columns: swapped?)")
        if not (share >= 0 and math.isfinite(share)):
            raise InputError(f"domain type {t!r}: share must be a non-negative number")
        out.append((n, big_n, share))
    total = sum(s for *_, s in out)
    if total <= 0:
        raise InputError("the shares of the domain types sum to 0")
    return [(n, big_n, s / total) for n, big_n, s in out]


def decision_table(
    domain_types,
    prior: BetaBinomialPrior,
    *,
    l1: Loss | str | Callable,
    l0: Loss | str | Callable = "y",
    decision_l1: Loss | str | Callable | None = None,
    decision_l0: Loss | str | Callable | None = None,
    max_enumeration: int = DEFAULT_MAX_ENUMERATION,
    tail: float = DEFAULT_TAIL,
) -> DecisionTable:
    """Order every configuration (n, N, y) of some domain types by R1/R0 (the paper's Table 2).

    Parameters
    ----------
    domain_types : DataFrame with columns n, N, share, or sequence of (n, N, share)
        Domain sample and population sizes and how common each type is (shares are
        normalised to sum to 1).
    prior : BetaBinomialPrior
        (alpha, beta) of the class prevalence.
    l1, l0 : Loss, spelling or callable
        Disclosure loss and suppression loss (see :func:`parse_loss`).
    decision_l1, decision_l0 : optional
        Losses used only to *order* the rows (sensitivity analysis, spec F.4 step 5); the
        table and curve are evaluated with ``l1`` and ``l0``.
    max_enumeration : int
        Cut-off: N - n above which Y is enumerated only over its central range.
    tail : float
        Posterior mass the central range may leave out.

    Returns
    -------
    DecisionTable

    Notes
    -----
    Row weight w = P(n, N) P(y | n, N); rows with R1 = R0 = 0 (y = 0 for the paper's losses)
    come first, then R1/R0 ascending with ties in input order (type order, then y). After
    row r, the risk of publishing rows 1..r is sum w R1 and the loss of suppressing the rest
    is sum w R0 (spec F.4).

    References
    ----------
    Zaslavsky & Horton (1998), section 4 and Table 2.

    Examples
    --------
    >>> t = decision_table([(3, 8, 1), (5, 20, 3)], BetaBinomialPrior(1, 10), l1="exp:10",
    ...                    l0="y")
    >>> t.summary()[["n", "y", "R1", "cum_risk", "remaining_loss"]].round(3).iloc[4].tolist()
    [5.0, 3.0, 1.565, 0.026, 0.357]
    """
    check_prior(prior)
    types = _types(domain_types)
    l1_, l0_ = parse_loss(l1), parse_loss(l0, kind="l0")
    d1 = l1_ if decision_l1 is None else parse_loss(decision_l1)
    d0 = l0_ if decision_l0 is None else parse_loss(decision_l0, kind="l0")
    check_cut_off(max_enumeration, tail)
    cols: dict[str, list] = {"n": [], "N": [], "y": [], "share": [], "p_y": []}
    for n, big_n, share in types:
        py = prior.marginal(n)
        for y in range(n + 1):
            for k, v in zip(cols, (n, big_n, y, share, py[y]), strict=True):
                cols[k].append(v)
    arr = {k: np.asarray(v) for k, v in cols.items()}
    losses = [l1_, l0_] + ([d1, d0] if (d1, d0) != (l1_, l0_) else [])
    r, ey, omitted = risk_rows(arr["y"], arr["n"], arr["N"], prior, losses, max_enumeration,
                                tail)
    r1, r0 = r[:, 0], r[:, 1]
    dr1, dr0 = (r[:, 2], r[:, 3]) if len(losses) == 4 else (r1, r0)
    order, dratio = publication_order(dr1, dr0)
    w = arr["share"] * arr["p_y"]
    cum, remaining, curve, total_risk, total_loss = tradeoff_curve(w, r1, r0, order)
    _, ratio = publication_order(r1, r0)
    rows = {k: arr[k][order] for k in ("n", "N", "y", "share", "p_y")}
    rows.update(EY=ey[order], R1=r1[order], L0=r0[order], ratio=ratio[order],
                w_R1=(w * r1)[order], w_L0=(w * r0)[order], cum_risk=cum,
                remaining_loss=remaining)
    if len(losses) == 4:
        rows["decision_ratio"] = dratio[order]
    return DecisionTable(rows=rows, prior=prior, losses=_describe_losses(l1_, l0_, d1, d0),
                         total_risk=total_risk, total_loss=total_loss, curve=curve,
                         cut_off=cut_off_text(max_enumeration, tail, omitted))


@dataclass(frozen=True, eq=False, repr=False)
class LossSensitivity(ResultBase):
    """Loss fractions needed to reach a risk fraction, for the optimal and alternative rules."""

    curves: Mapping[str, TradeoffCurve]
    risk_fraction: float
    loss_fractions: Mapping[str, float]
    cutoff_loss_fractions: Mapping[str, float]
    losses: Mapping[str, Mapping[str, str]]

    def summary(self) -> pd.DataFrame:
        """One row per rule: its decision losses and the loss fractions it needs."""
        import pandas as pd

        return pd.DataFrame({"decision_l1": {k: v["decision_l1"] for k, v in self.losses.items()},
                             "decision_l0": {k: v["decision_l0"] for k, v in self.losses.items()},
                             "loss_fraction": dict(self.loss_fractions),
                             "loss_fraction_cutoff": dict(self.cutoff_loss_fractions)})

    def _payload(self) -> dict[str, Any]:
        return {"risk_fraction": self.risk_fraction,
                "evaluated_with": next(iter(self.losses.values()))["l1_l0"],
                "rules": self.summary().to_dict(orient="index"),
                "curves": {k: c.to_dict() for k, c in self.curves.items()}}

    def _repr_parts(self) -> list[str]:
        return [f"risk_fraction={self.risk_fraction:g}",
                *(f"{k}={v:.4g}" for k, v in self.loss_fractions.items())]


def sensitivity(
    domain_types,
    prior: BetaBinomialPrior,
    *,
    l1: Loss | str | Callable,
    l0: Loss | str | Callable = "y",
    alternatives: Mapping[str, tuple],
    risk_fraction: float = 0.2,
    max_enumeration: int = DEFAULT_MAX_ENUMERATION,
    tail: float = DEFAULT_TAIL,
) -> LossSensitivity:
    """Decide with other losses, evaluate with the true ones (spec F.4 step 5, ZH Fig. 1).

    Parameters
    ----------
    alternatives : mapping of name to (decision_l1, decision_l0)
        Each alternative orders the rows by its own R1/R0; every curve is evaluated with the
        true ``l1``, ``l0``. The optimal rule (ordering by the true losses) is added as
        ``"optimal"``.
    risk_fraction : float
        Where to read the curves: the suppression-loss fraction needed to cut the risk to
        this fraction of full publication (0.2 in the paper).

    Examples
    --------
    >>> s = sensitivity([(10, 50, 1), (10, 200, 1), (20, 30, 1)], BetaBinomialPrior(0.5, 1.5),
    ...                 l1="exp:10", l0="y", alternatives={"L0=1": ("exp:10", "one")})
    >>> {k: round(100 * v) for k, v in s.loss_fractions.items()}
    {'optimal': 38, 'L0=1': 53}
    """
    check_prior(prior)
    if not isinstance(alternatives, Mapping) or any(
            not isinstance(v, tuple | list) or len(v) != 2 for v in alternatives.values()):
        raise ParameterError(f"alternatives={short_repr(alternatives)} must map a name to an "
                             "(l1, l0) pair of losses, e.g. {'L0=1': ('exp:10', 'one')}")
    l1_, l0_ = parse_loss(l1), parse_loss(l0, kind="l0")
    rules = {"optimal": (l1_, l0_), **{k: (parse_loss(a), parse_loss(b, kind="l0"))
                                       for k, (a, b) in alternatives.items()}}
    curves, lin, cut, losses = {}, {}, {}, {}
    for name, (d1, d0) in rules.items():
        t = decision_table(domain_types, prior, l1=l1_, l0=l0_, decision_l1=d1,
                           decision_l0=d0, max_enumeration=max_enumeration, tail=tail)
        curves[name] = dataclasses.replace(t.curve, label=name)
        lin[name] = t.curve.loss_fraction_at(risk_fraction, "linear")
        cut[name] = t.curve.loss_fraction_at(risk_fraction, "cutoff")
        losses[name] = {"decision_l1": d1.name, "decision_l0": d0.name,
                        "l1_l0": f"{l1_.name} / {l0_.name}"}
    return LossSensitivity(curves=curves, risk_fraction=risk_fraction, loss_fractions=lin,
                       cutoff_loss_fractions=cut, losses=losses)


# --- application to microdata ------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class DomainTable(ResultBase):
    """Per-domain sample size n, population size N and class count y (and the true Y).

    Build it with :meth:`from_microdata`. ``true_Y`` is known only when a population was
    given (benchmarking).

    Examples
    --------
    >>> from sdcrisk import Microdata
    >>> md = Microdata.from_source({"area": ["a", "a", "b", "b", "b"], "job": [1, 2, 1, 1, 2]},
    ...                            keys=["area", "job"], population_size=50)
    >>> t = DomainTable.from_microdata(md, domain="area", class_definition="job=1")
    >>> t.n.tolist(), t.N.tolist(), t.y.tolist()
    ([2, 3], [20, 30], [1, 2])
    """

    domain: str
    class_definition: Mapping[str, str]
    labels: tuple
    n: np.ndarray
    N: np.ndarray
    y: np.ndarray
    sizes_source: str
    true_Y: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("n", "N", "y", "true_Y"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, np.array(v, dtype=np.int64))
        object.__setattr__(self, "labels", tuple(self.labels))
        super().__post_init__()
        if not len(self.labels) == len(self.n) == len(self.N) == len(self.y):
            raise InputError("labels, n, N and y must have one entry per domain")
        if np.any(self.y < 0) or np.any(self.y > self.n) or np.any(self.n > self.N):
            raise InputError("domain counts must satisfy 0 <= y <= n <= N")

    def summary(self, *, internal: bool = False) -> pd.DataFrame:
        """One row per domain: n and N; the class count y (and the true Y) only with
        ``internal=True`` (a small y can disclose)."""
        import pandas as pd

        data: dict[str, Any] = {self.domain: list(self.labels), "n": self.n, "N": self.N}
        if internal:
            data["y"] = self.y
            if self.true_Y is not None:
                data["true_Y"] = self.true_Y
        return pd.DataFrame(data)

    def _payload(self, *, internal: bool = False) -> dict[str, Any]:
        return {"domain": self.domain, "class": self.class_definition,
                "domain_sizes": self.sizes_source, "domains": len(self.n),
                "n": int(self.n.sum()), "N": int(self.N.sum()),
                "rows": self.summary(internal=internal).to_dict(orient="records")}

    def _repr_parts(self) -> list[str]:
        cls = ",".join(f"{k}={v}" for k, v in self.class_definition.items())
        return [f"domain={self.domain!r}", f"class={cls!r}", f"domains={len(self.n)}",
                f"n={int(self.n.sum())}", f"y={int(self.y.sum())}", f"N [{self.sizes_source}]"]

    @classmethod
    def from_microdata(
        cls,
        sample,
        *,
        domain: str,
        class_definition: Mapping[str, Any] | str,
        domain_sizes: Mapping[Any, int] | None = None,
        population=None,
    ) -> DomainTable:
        """Count n_i and y_i per domain in a sample; N_i from the population or the design.

        Parameters
        ----------
        sample : Microdata
            With ``domain`` and the class variables among its keys.
        domain : str
            The domain variable (e.g. geography).
        class_definition : mapping or ``"VAR=VALUE[,VAR=VALUE]"``
            The class: records whose variables equal all the values (compared as text).
        domain_sizes : mapping of domain label (or its text) to N_i, optional
            Known domain populations.
        population : Microdata, optional
            The population (same keys and levels): gives N_i and the true Y_i.

        Notes
        -----
        Without ``domain_sizes`` or ``population``, N_i is the sum of the survey weights in
        the domain (rounded) or, unweighted, n_i N / n rounded (equal-probability sampling).
        """
        from ..data.table import Microdata

        if not isinstance(sample, Microdata):
            raise ParameterError(f"sample must be a Microdata, not {type(sample).__name__}")
        definition = _class_definition(class_definition)
        j = _key_index(sample, domain)
        labels = sample.levels[j]
        n = np.bincount(sample.codes[j], minlength=len(labels))
        in_class = _class_mask(sample, definition)
        y = np.bincount(sample.codes[j][in_class], minlength=len(labels))
        true_y = None
        if population is not None:
            if not isinstance(population, Microdata):
                raise ParameterError(f"population={short_repr(population)} must be a "
                                     "Microdata with the sample's keys and levels")
            if population.keys != sample.keys or population.levels != sample.levels:
                raise InputError("population keys/levels differ from the sample's; build the "
                                 "sample with levels=population.levels")
            big_n = np.bincount(population.codes[j], minlength=len(labels))
            true_y = np.bincount(population.codes[j][_class_mask(population, definition)],
                                 minlength=len(labels))
            source = "population"
        elif domain_sizes is not None:
            if not isinstance(domain_sizes, Mapping):
                raise ParameterError(f"domain_sizes={short_repr(domain_sizes)} must map each "
                                     f"category of {domain!r} to its population size N_i")
            text = {str(k): v for k, v in domain_sizes.items()}
            missing = [lab for lab in labels if str(lab) not in text and lab not in domain_sizes]
            if missing:
                shown = ", ".join(str(lab) for lab in missing[:10])
                raise InputError(f"domain_sizes has no size for domain {missing[0]!r}; give the "
                                 f"population size of every domain in the sample (missing: "
                                 f"{shown}{' ...' if len(missing) > 10 else ''})")
            big_n = np.array([domain_sizes.get(lab, text.get(str(lab))) for lab in labels],
                             dtype=float)
            if np.any(big_n != np.round(big_n)):
                raise InputError("domain sizes must be integers")
            source = "given"
        elif sample.weights is not None:
            big_n = np.maximum(np.round(np.bincount(sample.codes[j], weights=sample.weights,
                                                    minlength=len(labels))), n)
            source = "sum of survey weights per domain"
        else:
            big_n = np.maximum(np.round(n * sample.population_size / sample.n), n)
            source = f"n_i N / n (N = {sample.population_size:g}, equal-probability sampling)"
        big_n = np.asarray(big_n, dtype=np.int64)
        bad = np.flatnonzero(big_n < n)
        if bad.size:
            raise InputError(f"domain {labels[bad[0]]!r}: population size {big_n[bad[0]]} is "
                             f"smaller than its sample size {n[bad[0]]}")
        return cls(domain=domain, class_definition=definition, labels=tuple(labels), n=n,
                   N=big_n, y=y, sizes_source=source, true_Y=true_y)


def _key_index(md, name: str) -> int:
    if name not in md.keys:
        raise InputError(f"variable {name!r} is not among the keys {list(md.keys)}")
    return md.keys.index(name)


def _class_definition(spec) -> dict[str, str]:
    if isinstance(spec, str):
        out: dict[str, str] = {}
        for part in (p.strip() for p in spec.split(",")):
            var, eq, value = part.partition("=")
            if not eq or not var.strip():
                raise ParameterError(f"class definition {spec!r}: write VAR=VALUE[,VAR=VALUE]")
            if var.strip() in out:  # sex=1,sex=2: the later value silently won
                raise ParameterError(
                    f"class definition {spec!r} names {var.strip()!r} twice (values "
                    f"{out[var.strip()]!r} and {value.strip()!r}); a record has one value of "
                    "each variable: give each variable once")
            out[var.strip()] = value.strip()
    elif isinstance(spec, Mapping):
        out = {str(k): str(v) for k, v in spec.items()}
    else:  # a number, a list: dict() raised TypeError
        raise ParameterError(f"class_definition={spec!r:.60}: give 'VAR=VALUE[,VAR=VALUE]' or a "
                             "mapping {VAR: VALUE}, e.g. 'sex=1'")
    if not out:
        raise ParameterError("the class definition is empty")
    return out


def _class_mask(md, definition: Mapping[str, str]) -> np.ndarray:
    mask = np.ones(md.n, bool)
    for var, value in definition.items():
        j = _key_index(md, var)
        text = ["NA" if lab is None else str(lab) for lab in md.levels[j]]
        if value not in text:
            raise InputError(f"class value {var}={value!r} is not a level of {var!r}; levels: "
                             f"{text[:20]}")
        mask &= md.codes[j] == text.index(value)
    return mask


@dataclass(frozen=True, eq=False, repr=False)
class DomainDecision(ResultBase):
    """Publish/suppress per domain, with risks, the rule used and the trade-off curve."""

    table: DomainTable
    prior: BetaBinomialPrior
    prior_source: str
    losses: Mapping[str, str]
    rule: Mapping[str, Any]
    columns: Mapping[str, np.ndarray]
    curve: TradeoffCurve
    totals: Mapping[str, float]
    fit: BetaBinomialFit | None = None
    cut_off: Mapping[str, Any] = field(default_factory=dict)

    @property
    def publish(self) -> np.ndarray:
        """Boolean per domain (in the domain table's order)."""
        return self.columns["publish"]

    def summary(self, *, internal: bool = False) -> pd.DataFrame:
        """One row per domain in publication order.

        Class counts y, E[Y|y] and the risks of single domains can disclose small cells;
        they are included only with ``internal=True``.
        """
        import pandas as pd

        order = np.argsort(self.columns["rank"], kind="stable")
        cols = ["rank", "n", "N", "publish"]
        if internal:
            cols = ["rank", "n", "N", "y", "EY", "R1", "R0", "ratio", "cum_risk",
                    "remaining_loss", "publish"]
            if self.table.true_Y is not None:
                cols.insert(4, "true_Y")
        data = {self.table.domain: [self.table.labels[i] for i in order]}
        data.update({c: np.asarray(self.columns[c])[order] for c in cols})
        return pd.DataFrame(data)

    def _payload(self, *, internal: bool = False) -> dict[str, Any]:
        return {
            "domain": self.table.domain,
            "class": self.table.class_definition,
            "domain_sizes": self.table.sizes_source,
            "model": {"alpha": self.prior.alpha, "beta": self.prior.beta,
                      "source": self.prior_source,
                      **({"fit": self.fit.to_dict()} if self.fit else {})},
            "losses": self.losses,
            "rule": self.rule,
            "totals": self.totals,
            "decisions": self.summary(internal=internal).to_dict(orient="records"),
            "curve": self.curve.to_dict(),
            "cut_off": self.cut_off,
            "reference": REFERENCE,
        }

    def to_csv(self, path, *, internal: bool = False) -> None:
        """Write the decisions (one row per domain) as CSV."""
        self.summary(internal=internal).to_csv(path, index=False)

    def _repr_parts(self) -> list[str]:
        return [f"domains={len(self.table.n)}", f"published={int(self.publish.sum())}",
                f"risk_fraction={self.totals['risk_fraction']:.4g}",
                f"loss_fraction={self.totals['loss_fraction']:.4g}"]


def decide(
    table: DomainTable,
    *,
    l1: Loss | str | Callable,
    l0: Loss | str | Callable = "y",
    prior: BetaBinomialPrior | None = None,
    ratio_threshold: float | None = None,
    target_risk_fraction: float | None = None,
    max_enumeration: int = DEFAULT_MAX_ENUMERATION,
    tail: float = DEFAULT_TAIL,
) -> DomainDecision:
    """Publish or suppress the class cell of every domain (spec F applied to microdata).

    Parameters
    ----------
    table : DomainTable
        From :meth:`DomainTable.from_microdata`.
    l1, l0 : Loss, spelling or callable
        Disclosure and suppression losses (:func:`parse_loss`); ``l1`` has no default because
        the number of subclasses S is a judgement about the data.
    prior : BetaBinomialPrior, optional
        (alpha, beta); by default estimated from the domains by beta-binomial ML.
    ratio_threshold : float, optional
        The exchange rate c: publish iff R1 < c R0 (c = 1, the default rule, when L1 and L0
        are on one scale: publish iff R1 < R0).
    target_risk_fraction : float, optional
        Instead: publish domains in R1/R0 order while the published risk stays at most this
        fraction of the risk of publishing everything.
    max_enumeration, tail : cut-off of the posterior enumeration (see :func:`decision_table`).

    Returns
    -------
    DomainDecision

    Notes
    -----
    Domains with R1 = R0 = 0 (y = 0 for the paper's losses) are published: either decision
    costs nothing. The risks of domain i are R_d = sum_Y L_d(y_i, Y, n_i, N_i) P(Y | y_i) with
    the beta-binomial posterior (spec F.1-F.2). Totals are sums over domains (weight 1 each).

    References
    ----------
    Zaslavsky & Horton (1998), sections 2 and 4.

    Examples
    --------
    >>> from sdcrisk import Microdata
    >>> md = Microdata.from_source("example:uk_census2011", keys="region,sex,age_band",
    ...                            population_size=56_075_912)
    >>> dt = DomainTable.from_microdata(md, domain="region", class_definition="age_band=8")
    >>> d = decide(dt, l1="exp:10", l0="y", target_risk_fraction=0.2)
    >>> d.totals["risk_fraction"] <= 0.2
    True
    """
    if not isinstance(table, DomainTable):
        raise ParameterError(f"decide() takes a DomainTable, not {type(table).__name__}")
    if ratio_threshold is not None and target_risk_fraction is not None:
        raise ParameterError("give ratio_threshold or target_risk_fraction, not both")
    if prior is not None:
        check_prior(prior)
    if target_risk_fraction is not None and not 0 <= check_number(
            "target_risk_fraction", target_risk_fraction) <= 1:
        raise ParameterError(f"target_risk_fraction={target_risk_fraction} must lie in [0, 1]")
    if ratio_threshold is None and target_risk_fraction is None:
        ratio_threshold = 1.0
    if ratio_threshold is not None and not (check_number("ratio_threshold",
                                                         ratio_threshold) >= 0 and math.isfinite(
            ratio_threshold)):
        raise ParameterError(f"ratio_threshold={ratio_threshold} must be a non-negative number")
    check_cut_off(max_enumeration, tail)
    l1_, l0_ = parse_loss(l1), parse_loss(l0, kind="l0")
    fit = None
    if prior is None:
        fit = fit_beta_binomial(table.y, table.n)
        prior, source = fit.prior, "beta-binomial maximum likelihood over the domains"
    else:
        source = "given"
    r, ey, omitted = risk_rows(table.y, table.n, table.N, prior, [l1_, l0_], max_enumeration,
                                tail)
    r1, r0 = r[:, 0], r[:, 1]
    order, ratio = publication_order(r1, r0)
    w = np.ones(len(r1))
    cum, remaining, curve, total_risk, total_loss = tradeoff_curve(w, r1, r0, order)
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(1, len(order) + 1)
    zero = (r1 == 0) & (r0 == 0)
    if target_risk_fraction is not None:
        frac = cum / total_risk if total_risk > 0 else np.zeros(len(cum))
        k = int(np.count_nonzero(frac <= target_risk_fraction + 1e-12))
        publish = np.zeros(len(r1), bool)
        publish[order[:k]] = True
        rule = {"target_risk_fraction": target_risk_fraction, "rule": "publish in R1/R0 order "
                "while the published risk is at most the target fraction of full publication"}
    else:
        publish = zero | (r1 < ratio_threshold * r0)
        rule = {"ratio_threshold": ratio_threshold,
                "rule": f"publish iff R1 < {ratio_threshold:g} R0 (R1 = R0 = 0: publish)"}
    pub_risk = float(np.sum(r1[publish]))
    sup_loss = float(np.sum(r0[~publish]))
    totals = {"domains": int(len(r1)), "published": int(publish.sum()),
              "published_risk": pub_risk, "suppressed_loss": sup_loss,
              "total_risk": total_risk, "total_loss": total_loss,
              "risk_fraction": pub_risk / total_risk if total_risk > 0 else 0.0,
              "loss_fraction": sup_loss / total_loss if total_loss > 0 else 0.0}
    cum_by_domain = np.empty(len(r1))
    rem_by_domain = np.empty(len(r1))
    cum_by_domain[order], rem_by_domain[order] = cum, remaining
    columns = {"rank": rank, "n": table.n, "N": table.N, "y": table.y, "EY": ey, "R1": r1,
               "R0": r0, "ratio": ratio, "cum_risk": cum_by_domain,
               "remaining_loss": rem_by_domain, "publish": publish}
    if table.true_Y is not None:
        columns["true_Y"] = table.true_Y
    return DomainDecision(table=table, prior=prior, prior_source=source,
                          losses={"l1": l1_.name, "l0": l0_.name}, rule=rule, columns=columns,
                          curve=curve, totals=totals, fit=fit,
                          cut_off=cut_off_text(max_enumeration, tail, omitted))

