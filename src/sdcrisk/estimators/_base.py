"""Estimator base class: frozen configuration; ``fit(table)`` returns a RiskResult."""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..core.measures import (
    DESCRIPTIONS,
    Measure,
    block_slices,
    expected_reidentifications,
    global_risk_threshold,
    household_risk,
    predictive_measures,
)
from ..core.predictive import CellPredictive, NegativeBinomialPredictive
from ..core.result import RiskResult, handed_over, provenance
from ..data.frequencies import FrequencyTable, count_frequencies
from ..data.sizes import (
    check_memory,
    check_memory_limit,
    check_population_size,
    memory_limit_scope,
    short_repr,
)
from ..data.table import CellTable
from ..exceptions import InputError, ParameterError
from ..runtime.executors import use_executor

__all__ = ["Estimator", "CountGroups", "count_groups", "grouped_memory",
           "reidentification_measures", "MAX_BOOTSTRAP", "check_bootstrap", "check_bool",
           "check_int", "check_seed"]

#: float64 arrays of length n_cells a fit holds at its peak by default: f, the predictive
#: law's parameters, E[1/F], E[1/F^2], P(U=0), mean, variance, the measures' intermediates
#: and the result's cell risks (measured with tracemalloc in tests/test_scenarios.py)
CELL_ARRAYS = 24
#: float64 arrays of length n: the record risk and its threshold mask
RECORD_ARRAYS = 3
#: 8-byte arrays of length n_cells an exchangeable fit by count (:class:`CountGroups`) holds
#: on a CellTable at its peak: the cell -> count index, the per-cell risks expanded from the
#: counts' (two, and the result's copies of them) and their temporaries (tracemalloc in
#: tests/test_frequencies.py)
GROUPED_CELL_ARRAYS = 8
#: most bootstrap replicates an estimator takes (``bootstrap=``, ``--bootstrap``): each one
#: refits the model, and the Monte Carlo error of a 95% percentile interval is already small
#: at 1,000-2,000 replicates; a larger number is a slip (an extra digit) that would run for days
MAX_BOOTSTRAP = 10_000


def check_bootstrap(value) -> None:
    """``bootstrap`` is an integer in [0, :data:`MAX_BOOTSTRAP`].

    Raises
    ------
    ParameterError
        Naming the value and the remedy.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ParameterError(f"bootstrap={value!r} must be an integer >= 0 (bootstrap "
                             "replicates for the interval, e.g. 200)")
    if value > MAX_BOOTSTRAP:
        raise ParameterError(f"bootstrap={value} replicates is too many: at most "
                             f"{MAX_BOOTSTRAP:,} (each refits the model; an interval's Monte "
                             "Carlo error is small at 1,000-2,000); give e.g. 1,000")


MEMORY_REMEDIES = (
    "remedies: partition the file by a key and assess each part, use fewer or coarser key "
    "variables, raise the limit (fit(memory_limit=...) or SDCRISK_MEMORY_LIMIT) if the "
    "machine has the memory, or choose a method whose memory grows with the observed cells "
    "only (nb, poisson-gamma)")


@dataclasses.dataclass(frozen=True, eq=False)
class CountGroups:
    """The observed cells grouped by their sample count f, for exchangeable models whose law
    depends on a cell only through f: the distinct counts ``sizes``, the number of cells
    ``cells`` with each, and (for a CellTable) each cell's index ``inverse`` among them."""

    sizes: np.ndarray
    cells: np.ndarray
    inverse: np.ndarray | None

    @property
    def records(self) -> np.ndarray:
        """Records in the cells of each count: f times the number of cells."""
        return self.sizes * self.cells


def count_groups(table: CellTable | FrequencyTable) -> CountGroups:
    """The cells of ``table`` grouped by count (a FrequencyTable is grouped already)."""
    if isinstance(table, FrequencyTable):
        return CountGroups(table.sizes, table.cells, None)
    return CountGroups(*count_frequencies(table.counts))


def grouped_memory(table: CellTable | FrequencyTable) -> int:
    """Bytes an exchangeable fit by count needs: a few arrays per distinct count on a
    FrequencyTable; on a CellTable the cell -> count index and the per-cell risks expanded
    from the counts' (plus record-level arrays only with households)."""
    if isinstance(table, FrequencyTable):
        return 8 * CELL_ARRAYS * len(table.sizes)
    records = RECORD_ARRAYS * int(table.n) if table.household is not None else 0
    return 8 * (GROUPED_CELL_ARRAYS * int(table.n_cells) + records)


def reidentification_measures(table: CellTable | FrequencyTable, risk: np.ndarray,
                              max_global_risk: float, groups: CountGroups | None = None
                              ) -> tuple[dict[str, Measure], float | None]:
    """sdcMicro's figures from per-cell re-identification risks: expected re-identifications
    and global risk, their household versions when the table has households, and the record
    risk threshold that meets ``max_global_risk``.

    With ``groups``, ``risk`` holds one risk per distinct count (``groups.sizes``)."""
    counts = table.counts if groups is None else groups.records
    measures = expected_reidentifications(counts, risk, table.n)
    if table.household is None:  # per cell, weighted by the counts: no n-long arrays
        return measures, global_risk_threshold(risk, max_global_risk, counts=counts)
    if groups is not None:
        risk = risk[groups.inverse]
    record = risk[table.record_map()]
    if table.household is not None:
        er_h = float(household_risk(record, table.household).sum())
        measures["household_expected_reidentifications"] = Measure(
            "household_expected_reidentifications", er_h,
            description=DESCRIPTIONS["household_expected_reidentifications"])
        measures["household_global_risk"] = Measure(
            "household_global_risk", er_h / table.n,
            description=DESCRIPTIONS["household_global_risk"])
    return measures, global_risk_threshold(record, max_global_risk)


def normal_intervals(result: RiskResult, pred: CellPredictive, su: np.ndarray,
                     extra_variance: dict[str, float], level: float, kind: str) -> RiskResult:
    """tau1 and tau2 with normal intervals estimate +- z sd, held within [0, n1], where the
    variance is the predictive one over the sample-unique cells ``su`` given the fitted law
    (independent cells) plus ``extra_variance`` (the fit's own uncertainty, by measure);
    P(PU | SU) gets tau1's interval over n1."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + level / 2)
    p0 = pred.prob_zero(su)
    e1 = pred.expected_inverse(su)
    var = {"tau1": float(np.sum(p0 * (1 - p0))),
           "tau2": float(np.sum(np.maximum(pred.expected_inverse_square(su) - e1**2, 0)))}
    n1 = float(su.size)
    measures = dict(result.measures)
    for name in ("tau1", "tau2"):
        m = measures[name]
        sd = float(np.sqrt(var[name] + extra_variance.get(name, 0.0)))
        measures[name] = dataclasses.replace(
            m, lower=max(0.0, m.estimate - z * sd), upper=min(n1, m.estimate + z * sd),
            level=level, interval=kind)
    t1 = measures["tau1"]
    measures["p_pu_given_su"] = dataclasses.replace(
        measures["p_pu_given_su"], lower=t1.lower / n1, upper=t1.upper / n1, interval=kind)
    return dataclasses.replace(result, measures=measures)


def check_int(name: str, value: Any, low: int) -> None:
    """An integer option (not a bool, a float or text) of at least ``low`` (ParameterError)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ParameterError(f"{name}={value!r} must be an integer >= {low}")


def check_bool(name: str, value: Any, *, optional: bool = False) -> None:
    """A yes/no option is True or False (None too when ``optional``), not 0, 1 or text that
    would be read by its truth value (ParameterError naming ``name``)."""
    if value is None and optional:
        return
    if not isinstance(value, bool | np.bool_):
        allowed = "True, False or None" if optional else "True or False"
        raise ParameterError(f"{name}={short_repr(value)} must be {allowed}")


def check_seed(seed: Any, name: str = "random_state") -> None:
    """A seed is None, an integer >= 0, a SeedSequence or a Generator.

    Raises
    ------
    ParameterError
        Anything else (a negative integer, a float, a string), naming ``name``.
    """
    if seed is None or isinstance(seed, np.random.SeedSequence | np.random.Generator):
        return
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ParameterError(f"{name}={seed!r} must be a non-negative integer (a seed such "
                             "as 0 or 12345) or None")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Estimator(ABC):
    """Base of all estimators: keyword-only settings, no data.

    Parameters
    ----------
    ci_level : float
        Level of the intervals reported with the measures (default 0.95).
    max_global_risk : float
        Target global risk (expected re-identifications / n) for the sdcMicro/mu-Argus record
        risk threshold reported with the result (default 0.01, as in sdcMicro).
    """

    name: ClassVar[str] = "estimator"
    #: whether ``fit`` on a census (N = n) runs the method's own fit, whose answer is already
    #: the exact one and says more (nb's wildcard counts, skinner-elliot's theta, auto's
    #: choice); otherwise ``fit`` gives the shared answer of :meth:`_census_result`
    census_by_model: ClassVar[bool] = False
    #: options the memory estimate grows with: a memory refusal names those set away from
    #: their defaults, with "lower ..." as the first remedy
    memory_options: ClassVar[tuple[str, ...]] = ()
    ci_level: float = 0.95
    max_global_risk: float = 0.01

    def __post_init__(self) -> None:
        for name in ("ci_level", "max_global_risk"):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, int | float | np.number)
                    or not 0 < value < 1):
                raise ParameterError(f"{name}={value!r} must be a number in (0, 1)")
        if (1 + self.ci_level) / 2 >= 1:  # 0.9999999999999999: the quantile of 1 (exit 1)
            raise ParameterError(f"ci_level={self.ci_level!r} is too close to 1 for an "
                                 "interval (its upper quantile (1 + level) / 2 rounds to 1); "
                                 "use at most 0.999999")
        if hasattr(self, "random_state"):
            check_seed(self.random_state)
        self._validate()

    def _validate(self) -> None:  # noqa: B027 - optional hook, subclasses extend
        """Check the settings; raise ParameterError."""

    def check_keys(self, keys: Sequence[str]) -> None:  # noqa: B027 - optional hook
        """Refuse options that name key variables ``keys`` lacks (a misspelt key in a model
        formula): a user error for every sample, so callers that fit several methods
        (``evaluate``, ``report --methods``) check every method before fitting any. ``fit``
        checks it too. Default: nothing to check.

        Raises
        ------
        ParameterError
            Naming the option, the value and the keys there are.
        """

    def check_table(self, table: CellTable | FrequencyTable) -> None:  # noqa: B027 - hook
        """Refuse options that contradict the table (a cell space smaller than the observed
        cells, structural zeros that sample records fall in, weighted=True without weights):
        user errors whatever N, so ``fit`` checks them before anything else, and on a census
        too, whose answer fits no model. Default: nothing to check.

        Raises
        ------
        ParameterError, InputError
            Naming the option, the value and what the table holds.
        """

    def supports_wildcards(self) -> bool:
        """Whether the method uses ``table.wildcard`` (missing = wildcard); default no."""
        return False

    def uses_record_map(self) -> bool:
        """Whether ``fit`` reads the record -> cell map beyond households (e.g. to re-sample
        records); a fit that does not can take a table built without it
        (:meth:`~sdcrisk.data.table.CellTable.without_record_map`). Default no."""
        return False

    def supports_frequencies(self) -> bool:
        """Whether the method fits a :class:`~sdcrisk.data.frequencies.FrequencyTable` (its
        law depends on a cell only through its count f); default no."""
        return False

    def get_params(self) -> dict[str, Any]:
        """The settings as a dict."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def memory_estimate(self, table: CellTable) -> int:
        """Bytes the method's working arrays need for ``table`` (checked before fitting).

        The default is for methods whose memory grows with the observed cells and the
        records: ``8 * (CELL_ARRAYS * n_cells + RECORD_ARRAYS * n)``. Methods that allocate
        over the key space K or over draws override it.
        """
        return 8 * (CELL_ARRAYS * int(table.n_cells) + RECORD_ARRAYS * int(table.n))

    def fit(self, table: CellTable, *, population_size: float | None = None,
            memory_limit: int | None = None, executor: Any = None,
            workers: int | None = None) -> RiskResult:
        """Estimate the disclosure risk of the sample tabulated in ``table``.

        Parameters
        ----------
        table : CellTable or FrequencyTable
            From :func:`sdcrisk.tabulate`; a FrequencyTable (the frequencies of the cell
            counts, :func:`sdcrisk.tabulate_frequencies`) for the methods whose
            :meth:`supports_frequencies` is true.
        population_size : float, optional
            Override N (default: the table's).
        memory_limit : int, optional
            Bytes the method may use (default: the limit of an enclosing fit, else
            ``SDCRISK_MEMORY_LIMIT`` or 8 GiB). Fits nested in this one (``auto``'s candidates
            and validation fits) inherit it.
        executor : optional
            Where the method's independent work units run (MCMC chains, log-linear
            partitions): ``"serial"``, a :class:`concurrent.futures.Executor`, a Dask
            ``Client`` or a scheduler address (see :mod:`sdcrisk.runtime.executors`). Default: the
            method's own choice. Results are the same for a seed wherever units run.
        workers : int, optional
            With ``executor=None``: run the units in this many local processes.

        Raises
        ------
        MemoryLimitError
            When :meth:`memory_estimate` exceeds the limit; raised before anything is
            allocated, with the need, the limit and the remedies.
        """
        if isinstance(table, FrequencyTable) and not self.supports_frequencies():
            raise ParameterError(
                f"method {self.name!r} needs the observed cells themselves, not only the "
                "frequencies of their counts (a FrequencyTable): tabulate with "
                "sdcrisk.tabulate or tabulate_file, or use an exchangeable method (nb "
                "without weights, poisson-gamma, pitman-yor, skinner-elliot)")
        if not isinstance(table, CellTable | FrequencyTable):
            raise ParameterError(f"fit() takes a CellTable (see sdcrisk.tabulate), "
                                 f"not {type(table).__name__}")
        self.check_keys(table.keys)
        if table.n == 0:
            raise InputError("the sample is empty")
        wc = table.wildcard
        # before check_table: the patterns with missing values are observed cells outside
        # the key space, so a table check (poisson-gamma's cell_space) would misreport them
        if wc is not None and wc.n_missing_cells and not self.supports_wildcards():
            raise ParameterError(
                f"method {self.name!r} cannot treat missing key values as wildcards "
                f"(missing='wildcard'; {wc.n_missing_cells} observed cell(s) have missing "
                "values): its model counts exact key combinations. Use method 'nb' with "
                "mode='sdcmicro' (sdcMicro's measure_risk on wildcard counts; --method nb "
                "--mode sdcmicro), or missing='category' to make missing its own category")
        self.check_table(table)
        if population_size is not None:
            big_n = check_population_size(population_size, table.n)
            table = dataclasses.replace(table, population_size=big_n,
                                        population_size_source="given")
        check_memory_limit(memory_limit)
        if workers is not None:
            check_int("workers", workers, 1)
        if table.population_size <= table.n and not self.census_by_model:
            start = time.perf_counter()
            result = self._census_result(table)
            return dataclasses.replace(result, diagnostics={
                **result.diagnostics, "seconds": time.perf_counter() - start})
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        settings = ", ".join(f"{o}={getattr(self, o)!r}" for o in self.memory_options
                             if getattr(self, o) not in (None, defaults[o]))
        check_memory(self.memory_estimate(table), limit=memory_limit,
                     what=f"method {self.name!r}" + (f" with {settings}" if settings else "")
                     + f" on n={table.n:,} records, {table.n_cells:,} observed cells, "
                     f"K={table.cell_space:,}",
                     remedies=(f"lower {settings}, or " + MEMORY_REMEDIES.removeprefix(
                         "remedies: ")) if settings else MEMORY_REMEDIES)
        start = time.perf_counter()
        with use_executor(executor, workers=workers), memory_limit_scope(memory_limit):
            result = self._fit(table)
        diagnostics = {**result.diagnostics, "seconds": time.perf_counter() - start}
        return dataclasses.replace(result, diagnostics=diagnostics)

    @abstractmethod
    def _fit(self, table: CellTable) -> RiskResult:
        """Fit on a validated table."""

    def _census_result(self, table: CellTable | FrequencyTable) -> RiskResult:
        """The exact answer on a census (the file is the whole population, N = n): nothing
        is unseen, F_k = f_k in every cell, so every sample unique is a population unique
        (tau1 = tau2 = the number of sample uniques, P(PU | SU) = 1), each record's risk is
        1/f and every interval is its point. No model is fitted: one with nothing unseen to
        predict has nothing to say (the Pitman-Yor EPPF refused a one-cell census, the MCMC
        models gave 0.9999999999999999 with a posterior interval)."""
        groups = count_groups(table) if isinstance(table, FrequencyTable) else None
        f = (groups.sizes if groups is not None else table.counts).astype(float)
        pred = NegativeBinomialPredictive(
            f, size=f, prob=np.ones_like(f), unobserved_prob_one=0.0,
            law_name="F_k = f_k (N = n: the file is the whole population)")
        why = (f"N = n: the file is the whole population and nothing is unseen, so F_k = f_k "
               f"in every cell and tau1 = tau2 = the number of sample uniques; the "
               f"{self.name!r} model is not fitted (it has nothing to predict)")
        result = self._predictive_result(
            table, pred, fitted={"reason": why}, assumptions=(why,),
            seed=getattr(self, "random_state", None), groups=groups)
        exact = "exact (N = n: nothing is unseen)"
        measures = {k: m if m.interval is None else dataclasses.replace(m, interval=exact)
                    for k, m in result.measures.items()}
        return dataclasses.replace(result, measures=measures)

    # helpers shared by estimators that produce a CellPredictive ------------------------------
    def _predictive_result(
        self,
        table: CellTable,
        pred: CellPredictive,
        *,
        reid_risk: np.ndarray | None = None,
        fitted: dict | None = None,
        assumptions: tuple[str, ...] = (),
        diagnostics: dict | None = None,
        seed: int | None = None,
        sample_unique: np.ndarray | None = None,
        groups: CountGroups | None = None,
        records: np.ndarray | None = None,
    ) -> RiskResult:
        """Measures, record risks and sdcMicro-style global figures from a predictive law.

        ``reid_risk`` replaces E[1/F|f] as the record re-identification risk where a method
        reproduces a package approximation; tau2 then sums it over the sample uniques.

        With ``groups`` (:func:`count_groups`), ``pred`` and ``reid_risk`` are laid out per
        distinct count f, each standing for ``groups.cells`` cells; the result's per-cell
        risks are expanded from them (none for a FrequencyTable).

        ``records`` gives how many records each cell of ``pred`` holds where that differs
        from one sample unique per unique cell: under missing values as wildcards with
        alpha < 1 the records of one pattern each have f = 1, and tau1, tau2 and P(PU | SU)
        count them all, as the sample-unique count does.
        """
        mult = groups.cells if groups is not None else records
        measures = predictive_measures(pred, population_size=table.population_size,
                                       level=self.ci_level, multiplicity=mult)
        exact = pred.expected_inverse()
        risk = exact if reid_risk is None else np.asarray(reid_risk, float)
        if sample_unique is not None:
            su = sample_unique
        else:
            su = (table.counts if groups is None else groups.sizes) == 1
        if reid_risk is not None:
            tau2 = float(risk[su].sum()) if mult is None else float(np.dot(risk[su], mult[su]))
            old = measures["tau2"]
            same = abs(tau2 - (old.estimate or 0.0)) <= 1e-12 * max(1.0, abs(tau2))
            measures["tau2"] = dataclasses.replace(
                old, estimate=tau2, **({} if same else
                                       {"lower": None, "upper": None, "level": None,
                                        "interval": None}))
        extra, threshold = reidentification_measures(table, risk, self.max_global_risk,
                                                     groups)
        measures.update(extra)
        # P(U = 0) on the sample uniques, 0 elsewhere, built block by block (no cell-long
        # P(U = 0) beside it at census scale; one block, the same call, up to 2^20 cells)
        p_unique = np.empty(len(su))
        blocks = list(block_slices(len(su)))
        for block in blocks:
            cells = None if len(blocks) == 1 else np.arange(block.start, block.stop)
            p_unique[block] = np.where(su[block], pred.prob_zero(cells), 0.0)
        if groups is None:  # a fresh array: the result's own, uncopied
            handed_over(p_unique)
        risks = {"reidentification": risk, "population_unique": p_unique,
                 **({} if reid_risk is None else {"expected_inverse": exact})}
        if groups is not None:  # fresh arrays, handed to the result uncopied
            risks = ({} if groups.inverse is None
                     else {k: handed_over(v[groups.inverse]) for k, v in risks.items()})
        thresholds = {
            "max_global_risk": self.max_global_risk,
            "record_risk_threshold": threshold,
            "record_risk_threshold_rule": "mu-Argus/sdcMicro: cap record risks at the threshold "
            "so that expected re-identifications <= max_global_risk * n; null = already met",
            "ci_level": self.ci_level,
            "k_anonymity": [2, 3, 5],
        }
        diag = dict(diagnostics or {})
        if table.weight_sums is not None:
            diag["weighted_k_anonymity_violations"] = {
                str(k): int(table.counts[table.weight_sums < k].sum()) for k in (2, 3, 5)}
        return RiskResult(
            method=self.name,
            measures=measures,
            table=table,
            parameters=self.get_params(),
            fitted={"predictive_law": pred.law, **(fitted or {})},
            thresholds=thresholds,
            assumptions=assumptions,
            diagnostics=diag,
            provenance=provenance(table, seed),
            cell_risk_values=risks,
        )
