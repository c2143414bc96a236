"""Evaluation against the truth: draw a sample from a population (designs in
:mod:`.sampling`), compute the true measures, run estimators and compare."""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..core.base import ResultBase
from ..core.measures import roc_auc
from ..core.result import RiskResult
from ..data.sizes import short_repr
from ..data.table import CellTable, Microdata, tabulate
from ..estimators import Estimator
from ..exceptions import ParameterError, SdcRiskError, SdcRiskWarning, user_stacklevel
from .methods import get_estimator
from .sampling import (
    Design,
    draw_sample,
    truth_of,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["evaluate", "Evaluation", "MethodEvaluation", "every_method_failed"]


@dataclass(frozen=True, eq=False, repr=False)
class MethodEvaluation(ResultBase):
    """One estimator's figures against the truth.

    A method whose fit raised one of the package's errors (:class:`~sdcrisk.SdcRiskError`,
    e.g. a sample too small for it or a :class:`~sdcrisk.MemoryLimitError`) has ``error`` set
    to the message, no ``result`` and every estimate None; :attr:`failed` tells it.
    """

    method: str
    estimates: Mapping[str, float | None]
    relative_errors: Mapping[str, float | None]
    seconds: float
    auc: float | None
    result: RiskResult | None = field(default=None, repr=False)
    error: str | None = None
    #: per measure (tau1, tau2): whether the method's interval holds the truth (None: no
    #: interval)
    covered: dict[str, bool | None] | None = None

    @property
    def failed(self) -> bool:
        """Whether the method's fit failed (``error`` holds why)."""
        return self.error is not None

    def _payload(self) -> dict[str, Any]:
        model = {}
        if self.result is not None:
            # what the method chose: the model (log-linear, graphical kept models)
            model = {k: self.result.fitted[k] for k in ("model", "models")
                     if k in self.result.fitted}
        return {
            **self.estimates,
            "seconds": self.seconds,
            "auc": self.auc,
            "relative_error": self.relative_errors,
            **model,
            **({"interval_covers_truth": self.covered} if self.covered is not None else {}),
            **({"error": self.error} if self.error else {}),
        }

    def summary(self) -> pd.DataFrame:
        """Estimate and relative error of each compared measure."""
        import pandas as pd

        return pd.DataFrame({"estimate": pd.Series(dict(self.estimates), dtype=float),
                             "relative_error": pd.Series(dict(self.relative_errors),
                                                         dtype=float)}).rename_axis("measure")

    def _repr_parts(self) -> list[str]:
        parts = [f"method={self.method!r}"]
        parts += [f"{k}={v:.4g}" for k, v in self.estimates.items()
                  if k in ("tau1", "tau2") and v is not None]
        parts += [f"auc={self.auc:.3f}"] if self.auc is not None else []
        parts += [f"seconds={self.seconds:.3g}"]
        return parts + ([f"error={self.error!r}"] if self.error else [])


@dataclass(frozen=True, eq=False, repr=False)
class Evaluation(ResultBase):
    """Truth, estimates and errors for one sample of a population.

    :meth:`to_frame` gives one row per method and measure; :meth:`summary` the truth and
    each method's tau1 and tau2 side by side; :meth:`grid_frame` the rows of
    :func:`sdcrisk.analyses.grid.evaluate_grid` (the accuracy scoreboard) in the same form.
    A method whose fit failed has no figures there (NaN); :attr:`failed` gives why.
    """

    truth: Mapping[str, float]
    methods: Mapping[str, MethodEvaluation]
    design: str
    seed: int | None
    keys: tuple[str, ...]
    cell_space: int

    @property
    def failed(self) -> dict[str, str]:
        """The methods whose fit failed, with the message of their error."""
        return {label: m.error for label, m in self.methods.items() if m.error is not None}

    def _payload(self) -> dict[str, Any]:
        truth = dict(self.truth)
        for k in ("n", "sample_uniques", "population_uniques", "tau1"):
            if k in truth:
                truth[k] = int(truth[k])
        return {
            "design": self.design,
            "seed": self.seed,
            "keys": list(self.keys),
            "cell_space": self.cell_space,
            "truth": truth,
            "estimates": {k: m.to_dict() for k, m in self.methods.items()},
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per (method, measure): estimate, truth, relative error, AUC, seconds."""
        import pandas as pd

        rows = [{"method": label, "measure": name, "estimate": value,
                 "truth": self.truth.get(name), "relative_error": m.relative_errors.get(name),
                 "auc": m.auc, "seconds": m.seconds}
                for label, m in self.methods.items() for name, value in m.estimates.items()]
        return pd.DataFrame(rows, columns=_FRAME_COLUMNS)

    def summary(self) -> pd.DataFrame:
        """The truth and each method: tau1, tau2, their relative errors, AUC, seconds."""
        import pandas as pd

        rows = [{"method": "truth", "tau1": self.truth.get("tau1"),
                 "tau2": self.truth.get("tau2")}]
        for label, m in self.methods.items():
            rows.append({"method": label, "tau1": m.estimates.get("tau1"),
                         "tau2": m.estimates.get("tau2"),
                         "rel_err_tau1": m.relative_errors.get("tau1"),
                         "rel_err_tau2": m.relative_errors.get("tau2"),
                         "auc": m.auc, "seconds": m.seconds})
        return pd.DataFrame(rows).set_index("method").astype(float)

    @staticmethod
    def grid_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
        """Rows of :func:`~sdcrisk.analyses.grid.evaluate_grid` (the accuracy scoreboard) as
        one DataFrame row per (population, fraction, seed, method, measure)."""
        import pandas as pd

        unit = ("population", "fraction", "seed")
        out = [{**{k: r.get(k) for k in unit}, "method": r["method"], "measure": name,
                "estimate": value, "truth": r["truth"].get(name),
                "relative_error": r["relative_errors"].get(name), "auc": r.get("auc"),
                "seconds": r.get("seconds")}
               for r in rows for name, value in r["estimates"].items()]
        return pd.DataFrame(out, columns=[*unit, *_FRAME_COLUMNS])

    def _repr_parts(self) -> list[str]:
        tau1 = self.truth.get("tau1")
        return [f"design={self.design!r}", f"seed={self.seed}", f"keys={len(self.keys)}",
                f"cell_space={self.cell_space}", f"methods={list(self.methods)}",
                *([f"true_tau1={tau1:.6g}"] if tau1 is not None else [])]


_FRAME_COLUMNS = ["method", "measure", "estimate", "truth", "relative_error", "auc", "seconds"]

_COMPARED = ("tau1", "tau2", "p_pu", "p_pu_given_su", "theta")


def evaluate(
    population: Microdata,
    estimators: Sequence[Estimator | str],
    *,
    design: Design | None = None,
    sample: Microdata | None = None,
    seed: int = 0,
    all_failed: Literal["raise", "return"] = "raise",
) -> Evaluation:
    """Draw (or take) a sample of ``population``, compute the truth and run ``estimators``.

    Parameters
    ----------
    population : Microdata
        The whole population (one row per person).
    estimators : sequence of Estimator or method names
        What to compare.
    design : Bernoulli, SimpleRandomSample or HouseholdBernoulli
        How to draw the sample. Exclusive with ``sample``.
    sample : Microdata
        A given sample whose records come from ``population`` (coded with
        ``levels=population.levels``).
    seed : int
        Seed of the sampling design.
    all_failed : {"raise", "return"}
        When every method fails: raise their error (default), or return the Evaluation with
        each method marked failed (what a grid of samples wants).

    Returns
    -------
    Evaluation
        ``to_dict()`` gives ``truth`` and ``estimates`` keyed by method, with seconds,
        relative errors and the ROC AUC of P(F=1|f) for detecting population uniques among
        the sample uniques (where the method gives record-level risk). A method whose fit
        raised a :class:`~sdcrisk.SdcRiskError` is kept as failed (its
        :attr:`MethodEvaluation.error` holds the message, ``"error"`` in ``to_dict()``) and
        the others go on; a warning names it.

    Raises
    ------
    SdcRiskError
        Bad arguments; or every method failed (``all_failed="raise"``): one method's own
        error, or, for several, an error of their common class listing each message.
        Errors that are not the package's own (bugs) propagate as they are.
    """
    if not isinstance(population, Microdata):
        raise ParameterError(f"evaluate() takes the population as a Microdata, not "
                             f"{type(population).__name__}; build it with "
                             "Microdata.from_source(data, keys=[...])")
    if sample is not None and not isinstance(sample, Microdata):
        raise ParameterError(f"evaluate(sample=...) takes a Microdata, not "
                             f"{type(sample).__name__}")
    if isinstance(estimators, str | Estimator):  # an empty list: the truth alone
        raise ParameterError(f"estimators={short_repr(estimators)}: give a list of "
                             "method names or estimators, e.g. ['nb', 'loglinear']")
    if (design is None) == (sample is None):
        raise ParameterError("give exactly one of design= or sample=")
    if all_failed not in ("raise", "return"):
        raise ParameterError(f"all_failed={all_failed!r}: give 'raise' or 'return'")
    if sample is None:
        rows = draw_sample(population, design, seed=seed)
        sample = population.subset(rows, population_size=population.n)
        what = design.describe()
    else:
        sample = sample.with_population_size(population.n)
        what = "given sample"
    table = tabulate(sample, population=population)
    truth = truth_of(table)
    su = table.counts == 1
    is_pu = table.population.counts[su] == 1
    methods: dict[str, MethodEvaluation] = {}
    failures: dict[str, SdcRiskError] = {}
    resolved = []
    for est in estimators:
        label = None
        if isinstance(est, tuple):  # (label, estimator): a labelled variant
            label, est = est
        est = get_estimator(est) if isinstance(est, str) else est
        if not isinstance(est, Estimator):
            raise ParameterError(f"evaluate(): {short_repr(est)} is not an estimator; give "
                                 "method names such as 'nb' or estimators such as "
                                 "NegativeBinomialRisk()")
        est.check_keys(table.keys)  # a misspelt key is the user's error: before any fit
        resolved.append((label, est))
    for label, est in resolved:
        label = label or est.name
        if label in methods:
            label = f"{est.name}[{len(methods)}]"
        start = time.perf_counter()
        try:
            methods[label] = _run_one(est, table, truth, su, is_pu)
        except SdcRiskError as exc:  # this method only: the others' comparison goes on
            failures[label] = exc
            methods[label] = MethodEvaluation(
                est.name, dict.fromkeys(_COMPARED), dict.fromkeys(_COMPARED),
                time.perf_counter() - start, None, error=str(exc))
    if failures and len(failures) == len(methods) and all_failed == "raise":
        raise every_method_failed(failures)
    for label, exc in failures.items():
        warnings.warn(f"evaluate(): method {label!r} failed and is shown as failed: {exc}",
                      SdcRiskWarning, stacklevel=user_stacklevel())
    return Evaluation(truth=truth, methods=methods, design=what,
                      seed=seed if design is not None else None, keys=table.keys,
                      cell_space=table.cell_space)


def every_method_failed(failures: Mapping[str, SdcRiskError]) -> SdcRiskError:
    """The error to raise when every method failed (``evaluate``, ``report --methods``): a
    single method's own error; for several, one of their common class (SdcRiskError when they
    differ) that lists each message."""
    errors = list(failures.values())
    if len(errors) == 1:
        return errors[0]
    kinds = {type(e) for e in errors}
    kind = kinds.pop() if len(kinds) == 1 else SdcRiskError
    return kind("every method failed: " + "; ".join(f"{label}: {e}"
                                                    for label, e in failures.items()))


def _run_one(est: Estimator, table: CellTable, truth: dict, su: np.ndarray,
             is_pu: np.ndarray) -> MethodEvaluation:
    start = time.perf_counter()
    result = est.fit(table)
    seconds = time.perf_counter() - start
    estimates: dict[str, Any] = {}
    errors: dict[str, Any] = {}
    for name in _COMPARED:
        m = result.measures.get(name)
        value = None if m is None else m.estimate
        estimates[name] = value
        t = truth.get(name)
        errors[name] = (None if value is None or t is None or t == 0
                        else (value - t) / t)
    auc = None
    if "population_unique" in result.cell_risk_values:
        auc = roc_auc(result.cell_risk("population_unique")[su], is_pu)
    covered: dict[str, bool | None] = {}
    for name in ("tau1", "tau2"):
        m, t = result.measures.get(name), truth.get(name)
        covered[name] = (None if m is None or m.lower is None or m.upper is None or t is None
                         else bool(m.lower <= t <= m.upper))
    return MethodEvaluation(est.name, estimates, errors, seconds, auc, result,
                            covered=covered)
