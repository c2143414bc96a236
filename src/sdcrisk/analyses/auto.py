"""``method="auto"``: choose the estimator by its validated error on the user's own file.

See :mod:`sdcrisk.analyses.validation` for the pseudo-population validation and
:mod:`._auto_choice` for the choice rule; ``docs/auto.md`` states the assumption and where it
breaks.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np

from ..core.measures import (
    Measure,
)
from ..core.result import RiskResult, handed_over
from ..data.sizes import format_bytes, short_repr
from ..data.table import CellTable
from ..estimators import options_of, without_p_pu
from ..estimators._base import RECORD_ARRAYS, Estimator, reidentification_measures
from ..exceptions import (
    ApproximationWarning,
    MemoryLimitError,
    ParameterError,
    SdcRiskError,
    user_stacklevel,
)
from ._auto_bounds import ordered, whole_count_lower, widen_interval, within_bounds
from ._auto_choice import MEASURES, TIE_MARGIN, Choice, choose

__all__ = ["AutoRisk", "default_candidates", "widen_interval", "CALIBRATED_CANDIDATES"]

#: where the calibrated rule takes its record-level risks from (first one fitted)
RECORD_RISK_FROM = ("graphical(prior_weight=50)", "graphical", "pitman-yor")
#: the candidates of the calibrated rule (fitted on the whole file; no sub-sampling), as
#: ``Candidate`` specs; their labels are the feature names in ``auto_params.json``
CALIBRATED_CANDIDATES = ("pitman-yor", "graphical", "graphical:prior_weight=50",
                         "poisson-gamma", "nb")
#: the order in which they are fitted: the two graphical fits (the memory peaks at census
#: scale) first, the one that is never a record-risk source with the shipped sets before
#: the preferred source, so that neither runs while another's per-cell arrays are kept;
#: pitman-yor, the source of the set without the graphical fits, last, so that its
#: per-cell arrays are dropped as soon as it is fitted when the graphical fits succeeded
#: (the other fits no longer run while they are kept: 0.4 GB at 2.5x10^7 cells)
FIT_ORDER = ("graphical", "graphical(prior_weight=50)", "poisson-gamma", "nb", "pitman-yor")

#: methods whose default candidates need the dense key space, and the largest key space (after
#: dropping levels no record has) on which they are validated by default
DENSE_DEFAULT_MAX_CELLS = 2_000_000
#: auto validates only when a sub-sample holds at least this many records on average; a
#: smaller file gets its first candidate (default nb) unvalidated, with a note
MIN_VALIDATION_RECORDS = 10
#: the log-linear forward search fits 10-100 models per fit: validated by default only up to
SEARCH_DEFAULT_MAX_CELLS = 600_000


def default_candidates(table: CellTable) -> tuple[str, ...]:
    """The candidates ``auto`` validates when none are given, for this table.

    Always the exchangeable baselines (``nb``, ``poisson-gamma``) and Forster-Webb model
    averaging with prior weights 1 and 50 (``graphical``: memory and time grow with the
    observed cells); the log-linear models (all two-way interactions; the ONS forward search)
    when the key space, after dropping levels no record has, is small enough for their dense
    tables to be fitted on every replicate quickly. MCMC methods (``hdp``,
    ``mixed-membership``) are never in the default list: add them by name.
    """
    from ..estimators.loglinear import compact_levels

    out = ["nb", "poisson-gamma", "graphical", "graphical:prior_weight=50"]
    k = compact_levels(table).cell_space
    if k <= DENSE_DEFAULT_MAX_CELLS:
        out.append("loglinear:terms=all-2-way")
    if k <= SEARCH_DEFAULT_MAX_CELLS:
        out.append("loglinear:terms=search")
    return tuple(out)


#: float64 arrays of length n_cells auto holds itself: the record-risk source's two cell
#: risks kept while the other candidates fit, the mapped sample-unique risks and the two
#: calibrated copies of the result (the validated rule's blend: the blended risks)
AUTO_CELL_ARRAYS = 6
#: most validation replicates of auto (``replicates=``): each refits every candidate
MAX_REPLICATES = 1_000


@dataclasses.dataclass(frozen=True, kw_only=True)
class AutoRisk(Estimator):
    """Calibrated combination of models (default), or self-validated choice among given ones.

    Default (``rule="calibrated"``): five cheap models are fitted on the whole file and their
    tau1/tau2 combined by a regression learned on a 504-case corpus of real populations
    (penalty and interval chosen leave-one-population-out), blended with the sum of
    graphical(prior_weight=50)'s sample-unique record risks after a map learned on the
    corpus's records, with a conformal 95% interval (``docs/auto.md``). The record risks
    reported are those mapped risks, held to the combined tau1/tau2.

    With ``candidates`` (``rule="validated"``): the sample is treated as a population
    (N = n) and sub-sampled at the file's sampling fraction by its design (several seeded
    replicates); every candidate estimator runs on
    each sub-sample and is scored by its error against the sub-sample's exactly known tau1
    and tau2 (:func:`sdcrisk.analyses.validation.validate`). What is fitted on the whole file is the
    candidate with the smallest validated error; or, when the validation cannot tell several
    candidates apart, their equal-weight average; or, when it does better out of sample, a
    pair weighted to cancel their validated biases. The tau1/tau2 intervals are widened by
    the validated error.

    Parameters
    ----------
    candidates : sequence, optional
        Estimator settings to compare: method names, ``"name:key=value,..."`` strings or
        ``(name, {options})`` pairs (e.g. ``("loglinear", {"terms": "search"})``, ``"hdp"``).
        Default :func:`default_candidates` of the table.
    replicates : int
        Sub-samples (default 5; at least 3 for a weighted pair to be considered).
    fraction : float, optional
        Sub-sampling fraction; default the file's n/N, raised where needed so that a
        sub-sample holds about ``min_records`` records, but not above ``max_fraction``.
    min_records : int
        See ``fraction`` (default 200).
    max_fraction : float
        See ``fraction`` (default 0.1). The file's own fraction is the point of the design
        (the sub-samples must face the same extrapolation from sample to population as the
        file); on sub-samples of 10% or more every method looks nearly right and the
        validation stops telling them apart.
    time_budget : float, optional
        Seconds for the validation (default 300). Candidates run in the order given and are
        skipped when their replicates would not fit; the final fit comes on top. None: no
        limit.
    combine : bool
        Consider weighted pairs (default True).
    random_state : int, optional
        Seed of the sub-samples and of every candidate's own randomness.
    rule : {"calibrated", "validated"}, optional
        ``calibrated`` (the default when no candidates are given): fit
        :data:`CALIBRATED_CANDIDATES` on the whole file and combine their tau1/tau2 with the
        regression learned on the calibration corpus (package data ``auto_params.json``,
        regenerated by ``benchmarks/calibrate_auto.py``), with its conformal 95% interval;
        no sub-sampling, so the figure does not depend on the seed through a choice.
        ``validated`` (the default when candidates are given): the pseudo-population
        validation and choice below. ``replicates``, ``fraction``, ``min_records``,
        ``max_fraction``, ``time_budget`` and ``combine`` apply to ``validated`` only.
    scope : {"all", "observed-cells"}
        ``"all"`` (default): every measure. ``"observed-cells"``: every measure but P(PU),
        whose sum over the cells the sample did not see costs half of a fit (the graphical
        candidates' ``scope``); the other figures are the same. ``recommend`` re-fits so.
    ci_level, max_global_risk : see :class:`~sdcrisk.estimators.Estimator`.

    Notes
    -----
    Calibrated rule: see :mod:`sdcrisk.analyses._auto_calibrated` and ``docs/auto.md`` (its
    leave-one-population-out accuracy and coverage on the corpus).

    Validated rule:
    Score of a rule = mean over tau1 and tau2 of the median over replicates of
    |tau_hat_r / tau_r - 1|. Candidates whose per-replicate losses are not significantly
    above the best one's (paired over replicates, or within 2 percentage points) are averaged
    with equal weights. A pair (a, b) uses, for each measure, weights
    w_a = |e_b| / (|e_a| + |e_b|) when the median signed errors e_a, e_b have opposite signs
    (so that w_a e_a + w_b e_b = 0), and is scored by leave-one-replicate-out; it must beat
    the other rules by 2 points. A blend's measures and cell risks are the weighted averages
    of the fits (tau1, P(PU), P(PU|SU) and the population-unique risk with the tau1 weights;
    tau2, theta and the re-identification risk with the tau2 weights); expected
    re-identifications, household risk and the record-risk threshold are recomputed from the
    blended record risk. Intervals: see :func:`widen_interval`. The assumption and where it
    breaks: ``docs/auto.md``. No sdcMicro or mu-Argus equivalent (they have one fixed method).

    References
    ----------
    Booth, J. G., Butler, R. W. & Hall, P. (1994). Bootstrap methods for finite populations.
    JASA 89, 1282-1289 (the sample as a pseudo-population). Skinner, C. & Shlomo, N. (2008).
    JASA 103, 989-1001 (choosing a risk model by its estimated error, there the
    minimum-error statistic).

    Examples
    --------
    >>> from sdcrisk import Microdata, tabulate, AutoRisk
    >>> md = Microdata.from_source("example:uk_census2011",
    ...                            keys="region,sex,age_band,marital_status",
    ...                            population_size=56_075_912)
    >>> res = AutoRisk().fit(tabulate(md))
    >>> res.fitted["choice"]["rule"], res.fitted["choice"]["candidates"][0]
    ('calibrated', 'pitman-yor')
    >>> res = AutoRisk(candidates=["nb", "poisson-gamma"], replicates=3).fit(tabulate(md))
    >>> res.fitted["choice"]["candidates"][0] in {r["candidate"] for r in
    ...     res.diagnostics["validation"]}
    True
    """

    name: ClassVar[str] = "auto"
    census_by_model: ClassVar[bool] = True  # _unvalidated: the census answer, with its choice
    candidates: Sequence[Any] | None = None
    replicates: int = 5
    fraction: float | None = None
    min_records: int = 200
    max_fraction: float = 0.1
    time_budget: float | None = 300.0
    combine: bool = True
    random_state: int | None = 0
    rule: str | None = None
    scope: Literal["all", "observed-cells"] = "all"

    def memory_estimate(self, table: CellTable) -> int:
        """Bytes auto holds besides its candidates' working arrays: AUTO_CELL_ARRAYS doubles
        per observed cell (record-level arrays only with households). Each candidate's fit
        checks its own need against the same limit and is reported as not fitted when
        refused, so a limit that leaves out the graphical fits still gets the answer of the
        candidates that fit (the generic 24 doubles a cell and 3 a record had refused the
        whole of auto at 10^8 records under a 2 GiB limit, issue 20)."""
        records = RECORD_ARRAYS * int(table.n) if table.household is not None else 0
        return 8 * (AUTO_CELL_ARRAYS * int(table.n_cells) + records)

    def uses_record_map(self) -> bool:
        """The validated rule re-samples the file's records; the calibrated one does not."""
        return self.effective_rule == "validated"

    @property
    def effective_rule(self) -> str:
        """``calibrated`` or ``validated`` (see ``rule``)."""
        if self.rule is not None:
            return self.rule
        return "calibrated" if self.candidates is None else "validated"

    def _validate(self) -> None:
        from .validation import Candidate, check_options

        if self.rule not in (None, "calibrated", "validated"):
            raise ParameterError(f"rule={self.rule!r}; use 'calibrated' (the corpus-learned "
                                 "combination) or 'validated' (choice on sub-samples)")
        if self.rule == "calibrated" and self.candidates is not None:
            raise ParameterError("rule='calibrated' uses its own fixed candidates "
                                 f"({', '.join(CALIBRATED_CANDIDATES)}); drop candidates or "
                                 "use rule='validated'")

        if self.scope not in ("all", "observed-cells"):
            raise ParameterError(f"scope={short_repr(self.scope)}; use 'all' (every measure) "
                                 "or 'observed-cells' (all but P(PU))")
        check_options(replicates=self.replicates, fraction=self.fraction,
                      min_records=self.min_records, max_fraction=self.max_fraction,
                      time_budget=self.time_budget)
        if self.replicates > MAX_REPLICATES:
            raise ParameterError(f"replicates={self.replicates} is too many: at most "
                                 f"{MAX_REPLICATES:,} (each refits every candidate); the "
                                 "default 5 is what auto was calibrated with")
        if not isinstance(self.combine, bool | np.bool_):
            raise ParameterError(f"combine={self.combine!r} must be True or False")
        if self.candidates is not None:
            if isinstance(self.candidates, str | Mapping) or not isinstance(
                    self.candidates, Sequence) or not len(self.candidates):
                raise ParameterError(f"candidates={short_repr(self.candidates)} must be a "
                                     "non-empty list of method names or (name, options) "
                                     "pairs, e.g. ['graphical', 'nb']")
            labels = [Candidate.parse(c).label for c in self.candidates]
            if len(set(labels)) != len(labels):
                raise ParameterError(f"candidates repeat: {labels}")

    def check_keys(self, keys) -> None:
        """The key variables named in the given candidates' options exist in ``keys``: a
        misspelt key is the user's error, not a candidate to set aside."""
        from .validation import Candidate

        for spec in self.candidates or ():
            Candidate.parse(spec).estimator().check_keys(keys)

    # -------------------------------------------------------------------------------------
    def _fit(self, table: CellTable) -> RiskResult:
        from .validation import Candidate, validate

        early = self._unvalidated(table)
        if early is not None:
            return early
        if self.effective_rule == "calibrated":
            return self._fit_calibrated(table)
        specs = self.candidates if self.candidates is not None else default_candidates(table)
        cands = {c.label: c for c in (Candidate.parse(s) for s in specs)}
        shared = {"ci_level": self.ci_level, "max_global_risk": self.max_global_risk}
        vt = validate(table, list(cands.values()), replicates=self.replicates,
                      fraction=self.fraction, min_records=self.min_records,
                      max_fraction=self.max_fraction,
                      time_budget=self.time_budget, random_state=self.random_state,
                      estimator_options=shared)
        failed: dict[str, str] = {}
        while True:
            rows = [r for r in vt.rows if r.candidate.label not in failed]
            try:
                choice = choose(dataclasses.replace(vt, rows=tuple(rows)), combine=self.combine)
            except ValueError:
                raise ParameterError(
                    "no candidate could be validated on the sub-samples of this file "
                    f"({_statuses(vt, failed)}); give candidates that run on it, a larger "
                    "time_budget, or a larger fraction") from None
            fits, caught = {}, []
            for label in choice.labels:
                est = self._scoped(cands[label].estimator(random_state=self.random_state,
                                                          **shared))
                try:
                    with warnings.catch_warnings(record=True) as got:
                        warnings.simplefilter("always")
                        fits[label] = est.fit(table)
                    caught += [(label, w) for w in got]
                except SdcRiskError as exc:
                    failed[label] = f"{type(exc).__name__}: {exc}"
                    break
            else:
                break
        for label, w in caught:  # the chosen fits' warnings, pointing at the caller's code
            warnings.warn(f"auto's choice {label}: {w.message}", w.category,
                          stacklevel=user_stacklevel())
        return self._result(table, vt, choice, fits, cands, failed)

    def _scoped(self, est: Estimator) -> Estimator:
        """A candidate narrowed to this fit's ``scope`` where it has the option and computes
        more (a candidate already limited to the sample uniques stays so)."""
        return est if self.scope == "all" else without_p_pu(est)

    def _unvalidated(self, table: CellTable) -> RiskResult | None:
        """The answer for a file auto need not or cannot validate on, else None.

        No sample uniques: tau1 = tau2 = 0 under every model, so there is no error to
        validate. Sub-samples of fewer than ``MIN_VALIDATION_RECORDS`` records (a file of a
        handful of records) cannot tell the candidates apart. Both fit the first candidate
        given, or nb (sdcMicro's default), on the whole file and say so in the assumptions.
        """
        from .validation import Candidate, subsample_fraction

        if table.sample_uniques == 0:
            why = ("the file has no sample uniques, so tau1 = tau2 = 0 under every model and "
                   "there is nothing to validate")
        elif table.population_size <= table.n:
            why = ("N = n: the file is the whole population and nothing is unseen, so tau1 = "
                   "tau2 = the number of sample uniques under every model and there is "
                   "nothing to combine or validate")
        elif self.effective_rule == "calibrated":  # no sub-samples: only a tiny file
            if table.n >= MIN_VALIDATION_RECORDS:
                return None
            why = (f"the file has n = {table.n} record(s), too few for auto's calibrated "
                   f"combination (it needs at least {MIN_VALIDATION_RECORDS})")
        else:
            frac, _ = subsample_fraction(table, self.fraction, self.min_records,
                                         self.max_fraction)
            if frac * table.n >= MIN_VALIDATION_RECORDS:
                return None
            why = (f"the file has n = {table.n} record(s): sub-samples of about "
                   f"{frac * table.n:.1f} records cannot validate the candidates (at least "
                   f"{MIN_VALIDATION_RECORDS} are needed)")
        spec = self.candidates[0] if self.candidates else "nb"
        cand = Candidate.parse(spec)
        why += f"; {cand.label} fitted without validation"
        est = cand.estimator(random_state=self.random_state, ci_level=self.ci_level,
                             max_global_risk=self.max_global_risk)
        res = est.fit(table)
        fitted = {**res.fitted, "reason": why,
                  "choice": {"candidates": [cand.label], "methods": [cand.method],
                             "settings": [cand.setting], "rule": "not validated",
                             "description": why}}
        return dataclasses.replace(
            res, method=self.name, parameters=self.get_params(), fitted=fitted,
            assumptions=res.assumptions + (f"note: {why}",),
            diagnostics={**res.diagnostics, "validation": []},
            provenance={**res.provenance, "seed": self.random_state})

    def _result(self, table: CellTable, vt, choice: Choice, fits: dict, cands: dict,
                failed: dict) -> RiskResult:
        first = fits[choice.labels[0]]
        if choice.is_blend:
            measures, risks, threshold = _blend(table, choice, fits, self.max_global_risk)
            thresholds = {**first.thresholds, "record_risk_threshold": threshold}
        else:
            measures, risks = dict(first.measures), dict(first.cell_risk_values)
            thresholds = dict(first.thresholds)
        n1 = float(table.sample_uniques)
        for m in MEASURES:
            if m in measures and measures[m].estimate is not None:
                measures[m] = widen_interval(measures[m], choice.errors[m], cap=n1,
                                             level=self.ci_level)
        if "p_pu_given_su" in measures and n1 and measures["tau1"].lower is not None:
            t1 = measures["tau1"]
            measures["p_pu_given_su"] = dataclasses.replace(
                measures["p_pu_given_su"], lower=t1.lower / n1, upper=t1.upper / n1,
                level=t1.level, interval=t1.interval)
        reason = _reason(vt, choice, failed)
        choice_info = {
            "candidates": list(choice.labels),
            "methods": [cands[label].method for label in choice.labels],
            "settings": [cands[label].setting for label in choice.labels],
            "weights": {m: list(choice.weights[m]) for m in MEASURES},
            "rule": choice.rule,
            "description": choice.describe(),
            "validated_score": choice.score,
            "validated_rel_err": {m: [None if not np.isfinite(e) else float(e)
                                      for e in choice.errors[m]] for m in MEASURES},
            "runner_up": choice.runner_up,
        }
        fitted: dict[str, Any] = {k: first.fitted[k] for k in ("model", "models")
                                  if k in first.fitted and not choice.is_blend}
        fitted.update(choice=choice_info, reason=reason,
                      chosen={label: dict(fits[label].fitted) for label in choice.labels})
        diagnostics = {
            "validation": vt.to_rows(),
            "validation_design": {k: v for k, v in vt.to_dict().items() if k != "candidates"},
            # the chosen fit's own diagnostics; for a blend, keyed by candidate
            "chosen_diagnostics": ({label: dict(fits[label].diagnostics)
                                    for label in choice.labels} if choice.is_blend
                                   else dict(first.diagnostics)),
            **({"failed_on_full_file": failed} if failed else {}),
        }
        assumptions = tuple(dict.fromkeys(
            a for label in choice.labels for a in fits[label].assumptions)) + (
            "the sample, sub-sampled at the same fraction, behaves like the population sampled "
            "at that fraction (pseudo-population validation; docs/auto.md)",)
        return RiskResult(
            method=self.name, measures=measures, table=table, parameters=self.get_params(),
            fitted=fitted, thresholds=thresholds, assumptions=assumptions,
            diagnostics=diagnostics,
            provenance={**first.provenance, "seed": self.random_state},
            cell_risk_values=risks)


    # calibrated rule ----------------------------------------------------------------------
    def _fit_calibrated(self, table: CellTable) -> RiskResult:
        from ._auto_calibrated import (
            RECORD_FEATURE,
            base_features,
            load_params,
            log_share,
            model_features,
            outside_range,
            predict,
        )
        from .validation import Candidate

        params = load_params()
        shared = {"ci_level": self.ci_level, "max_global_risk": self.max_global_risk,
                  "random_state": self.random_state}
        cands = {c.label: c for c in (Candidate.parse(s) for s in CALIBRATED_CANDIDATES)}
        fits, failed, briefs, caught = {}, {}, {}, []
        # only the result whose record-level risks are reported keeps its per-cell arrays
        # (hundreds of MB each at census scale, issue 20), the others keep their measures
        # only; the fit order (FIT_ORDER) runs the memory-heavy graphical fits before any
        # result with per-cell arrays is alive
        rank = {label: i for i, label in enumerate(FIT_ORDER)}
        sources = _possible_refs(params, {})
        for label in sorted(cands, key=lambda c: rank.get(c, len(rank))):
            est = cands[label].estimator(**shared)
            if label not in sources and "scope" in options_of(type(est)):
                # no candidate set takes its record risks: its tau1 and tau2 alone, from the
                # sample-unique cells (the same figures; 40% of graphical's fit at 3x10^7)
                est = dataclasses.replace(est, scope="sample-uniques")
            est = self._scoped(est)
            try:
                with warnings.catch_warnings(record=True) as got:
                    warnings.simplefilter("always")
                    fits[label] = est.fit(table)
                caught += [(label, w) for w in got]
            except SdcRiskError as exc:
                failed[label] = f"{type(exc).__name__}: {exc}"
                briefs[label] = _brief(exc)
            _keep_risks_of(fits, _possible_refs(params, failed))
        fits = {label: fits[label] for label in cands if label in fits}
        set_name = next((name for name, labels in params["candidate_sets"].items()
                         if all(label in fits for label in labels)), None)
        if set_name is None:
            raise ParameterError(
                "auto (calibrated): the candidates it needs could not be fitted on this file ("
                + "; ".join(f"{k}: {v}" for k, v in failed.items()) + "); choose a method "
                "explicitly or use rule='validated' with candidates that run")
        labels = params["candidate_sets"][set_name]
        _keep_risks_of(fits, {_record_risk_source(labels)})
        su = int(table.sample_uniques)
        py = fits.get("pitman-yor")
        base = base_features(
            n=table.n, population_size=table.population_size, sample_uniques=su,
            n_cells=table.n_cells, f2=int(np.count_nonzero(table.counts == 2)),
            f3=int(np.count_nonzero(table.counts == 3)),
            cell_space=_observed_space(table), n_keys=len(table.keys),
            py_alpha=None if py is None else py.fitted.get("alpha"))
        calibrated: dict[str, tuple[float, float, float, float]] = {}
        outside: list[str] = []
        named: dict[str, tuple[str, str]] = {}  # feature -> (words, value), each once
        mapped = _mapped_record_risks(table, fits, params, labels) if su else {}
        if su:
            for m in MEASURES:
                model = params["models"][set_name][m]
                est = {c: fits[c].measures[m].estimate for c in labels}
                feats = model_features(base, est, m, su, labels)
                if RECORD_FEATURE in model["features"]:
                    # the record-calibrated estimate; without per-cell risks to map, the
                    # source's own figure (as calibrate_auto.with_record does for such cases)
                    rec = (float(mapped[m].sum()) if m in mapped
                           else fits[params["record_map"]["source"]].measures[m].estimate)
                    feats[RECORD_FEATURE] = log_share(rec, su)
                calibrated[m] = within_bounds(predict(model, feats, su, self.ci_level),
                                               table)
                for name, (label, fact) in outside_range(model, feats).items():
                    outside.append(f"{m}: {label} = {fact}")
                    # the tau1 and tau2 models share features
                    named.setdefault(name, (label, fact))
            tau1, tau2 = ordered(calibrated["tau1"], calibrated["tau2"])
            calibrated["tau1"], calibrated["tau2"] = whole_count_lower(tau1), tau2
        summary = _outside_summary(named)
        if outside:
            warnings.warn("auto (calibrated): this file lies outside the calibration corpus ("
                          + summary + "): the combination extrapolates and "
                          "its interval's coverage is not measured there", ApproximationWarning,
                          stacklevel=user_stacklevel())
        for label, w in caught:
            if label in labels and not issubclass(w.category, DeprecationWarning):
                warnings.warn(f"auto's candidate {label}: {w.message}", w.category,
                              stacklevel=user_stacklevel())
        return self._calibrated_result(table, fits, labels, set_name, calibrated, base,
                                       failed, briefs, params, outside, summary, mapped)

    def _calibrated_result(self, table, fits, labels, set_name, calibrated, base, failed,
                           briefs, params, outside, outside_summary, mapped) -> RiskResult:
        su = float(table.sample_uniques)
        # the record-level risks come from a fixed candidate (the best single one on the
        # corpus, which also ranks records), mapped and held to the calibrated tau1/tau2; a
        # choice by nearness would flip between models with different record-level behaviour
        ref = _record_risk_source(labels)
        risks = dict(fits[ref].cell_risk_values)
        # the source's own per-cell arrays live on in ``risks`` only, so that each goes as
        # its calibrated copy replaces it (0.2 GB less at the peak at 2.5x10^7 cells)
        first = fits[ref] = dataclasses.replace(fits[ref], cell_risk_values={})
        measures = dict(first.measures)
        thresholds = dict(first.thresholds)
        where = "split-conformal on the calibration corpus (normalised |log error|)"
        if calibrated:
            su_cells = table.counts == 1
            for m, kind in (("tau1", "population_unique"), ("tau2", "reidentification")):
                est, lo, hi, half = calibrated[m]
                old = measures[m]
                measures[m] = Measure(
                    m, est, lo, hi, self.ci_level,
                    f"{where}; log half-width {half:.3g}", old.description)
                # fresh arrays, handed to the result uncopied
                total = float(mapped[m].sum()) if m in mapped else 0.0
                if kind in risks and m in mapped and total > 0:
                    # the record-calibrated risks (corpus-learned map), held to the estimate
                    r = np.array(risks[kind], float)
                    # mapped[m] * est / sum, clipped, in mapped[m]'s own array (its last use)
                    held = np.multiply(mapped[m], est, out=mapped[m])
                    held /= total
                    r[su_cells] = np.clip(held, 0.0, 1.0, out=held)
                    del held
                    risks[kind] = handed_over(r)
                elif kind in risks and old.estimate:
                    r = np.array(risks[kind], float)
                    r[su_cells] = np.clip(r[su_cells] * est / old.estimate, 0.0, 1.0)
                    risks[kind] = handed_over(r)
            t1 = measures["tau1"]
            if "p_pu_given_su" in measures:
                measures["p_pu_given_su"] = dataclasses.replace(
                    measures["p_pu_given_su"], estimate=t1.estimate / su, lower=t1.lower / su,
                    upper=t1.upper / su, level=t1.level, interval=t1.interval)
            p_pu = measures.get("p_pu")
            if p_pu is not None and p_pu.estimate is not None:
                measures["p_pu"] = dataclasses.replace(
                    p_pu, estimate=p_pu.estimate + (t1.estimate - first.measures["tau1"].estimate)
                    / table.population_size)
            if "reidentification" in risks:
                extra, threshold = reidentification_measures(table, risks["reidentification"],
                                                             self.max_global_risk)
                measures.update(extra)
                thresholds["record_risk_threshold"] = threshold
        rows = [{"candidate": c, "status": "ok" if c in fits else f"failed: {failed.get(c)}",
                 "tau1": None if c not in fits else fits[c].measures["tau1"].estimate,
                 "tau2": None if c not in fits else fits[c].measures["tau2"].estimate,
                 "seconds": None if c not in fits else fits[c].diagnostics.get("seconds")}
                for c in (*labels, *[c for c in fits if c not in labels])]
        desc = ("calibrated combination of " + ", ".join(labels)
                + f" (model '{set_name}', learned on {params['corpus_cases']} corpus cases "
                  f"from {len(params['populations'])} populations)")
        # the regression blended with one candidate's own figure (auto_params.json "shrink")
        shrinks = {m: sh for m in MEASURES if (sh := params["models"][set_name][m].get("shrink"))}
        blend = ""
        if shrinks:
            weights = {1 - sh["alpha"] for sh in shrinks.values()}
            on_it = (f"weight {weights.pop():g}" if len(weights) == 1 else ", ".join(
                f"{1 - sh['alpha']:g} for {m}" for m, sh in shrinks.items()))
            towards = next(iter(shrinks.values()))["towards"]
            blend = f", blended with {towards} ({on_it} on it)"
        how = ("after the corpus-learned map of record risks (docs/auto.md), held to"
               if mapped else "rescaled on the sample uniques to")
        reason = (f"auto combined the tau1/tau2 of {', '.join(labels)} fitted on the whole file "
                  f"with the regression learned on the calibration corpus{blend} "
                  "(docs/auto.md); "
                  f"record risks are {ref}'s, {how} the combined tau1/tau2.")
        if failed:
            reason += " Could not fit: " + ", ".join(
                f"{label} ({brief})" for label, brief in briefs.items()) + "."
        if outside:
            reason += (" Caution: the file lies outside the corpus the combination was learned "
                       f"on ({outside_summary}); it extrapolates.")
        choice_info = {"candidates": list(labels), "methods": [c.split("(")[0] for c in labels],
                       "rule": "calibrated", "model": set_name, "description": desc,
                       "record_risks_from": ref,
                       "record_risks_mapped": bool(mapped),
                       **({"blend": {m: {"towards": sh["towards"],
                                         "weight_on_regression": sh["alpha"]}
                                     for m, sh in shrinks.items()}}
                          if shrinks else {})}
        fitted = {"choice": choice_info, "reason": reason, "features": base,
                  "outside_corpus": outside,
                  "candidate_estimates": rows,
                  "chosen": {ref: dict(first.fitted)}}
        diagnostics = {"candidates": rows, "chosen_diagnostics": dict(first.diagnostics),
                       **({"failed": failed} if failed else {})}
        corpus = ("the calibration corpus (6 populations, 0.5-10% samples, 4-10 categorical "
                  "keys), where the combination and its interval were learned (docs/auto.md)")
        assumptions = tuple(dict.fromkeys(a for a in first.assumptions)) + (
            f"the file lies outside {corpus}: the combination extrapolates and the interval's "
            "coverage is not measured there" if outside
            else f"the file resembles {corpus}",)
        return RiskResult(
            method=self.name, measures=measures, table=table, parameters=self.get_params(),
            fitted=fitted, thresholds=thresholds, assumptions=assumptions,
            diagnostics=diagnostics,
            provenance={**first.provenance, "seed": self.random_state},
            cell_risk_values=risks)


def _mapped_record_risks(table: CellTable, fits: dict, params: dict, labels
                         ) -> dict[str, np.ndarray]:
    """The sample-unique cells' risks of the record-map source (``record_map`` of the
    parameters) after the corpus-learned map, per measure; empty when the map does not apply
    (no map, its source not among this set's candidates, or no per-cell risks)."""
    from ._auto_calibrated import RECORD_RISK_KIND, record_map

    record = params.get("record_map")
    if record is None or record["source"] not in labels:
        return {}
    src = fits[record["source"]]
    if not all(k in src.cell_risk_values for k in RECORD_RISK_KIND.values()):
        return {}
    su_cells = table.counts == 1
    fraction = table.n / table.population_size
    return {m: record_map(np.asarray(src.cell_risk_values[kind], float)[su_cells], fraction,
                          record, m)
            for m, kind in RECORD_RISK_KIND.items()}


def _brief(exc: SdcRiskError) -> str:
    """A candidate's failure in a few words: a refusal by the memory limit as its need and
    the limit, anything else as the kind of error."""
    if isinstance(exc, MemoryLimitError) and exc.required is not None \
            and exc.limit is not None:
        return (f"needs {format_bytes(exc.required)}, over the memory limit of "
                f"{format_bytes(exc.limit)}")
    return type(exc).__name__


def _record_risk_source(labels) -> str:
    """The candidate whose record-level risks the calibrated rule reports for this set."""
    return next(c for c in (*RECORD_RISK_FROM, *labels) if c in labels)


def _possible_refs(params: dict, failed: dict) -> set[str]:
    """Record-risk sources of the candidate sets that no failure has ruled out yet."""
    return {_record_risk_source(labels) for labels in params["candidate_sets"].values()
            if not any(label in failed for label in labels)}


def _keep_risks_of(fits: dict, keep: set[str]) -> None:
    """Drop the per-cell risks of every fitted result not in ``keep`` (in place)."""
    for label, res in fits.items():
        if label not in keep and res.cell_risk_values:
            fits[label] = dataclasses.replace(res, cell_risk_values={})


def _observed_space(table: CellTable) -> float:
    """Product over the keys of the number of levels seen in the sample (as in the corpus,
    whose samples were tabulated alone): a file tabulated with its population's levels
    (``evaluate``) gets the same features as the file alone (``assess``)."""
    codes = np.asarray(table.cell_codes)
    if codes.ndim != 2 or codes.shape[0] == 0:
        return float(table.cell_space)
    # codes are level indices: a count per level, not a sort (0.26 s at 5.9 million cells)
    return float(np.prod([np.count_nonzero(np.bincount(codes[:, j], minlength=len(levels)))
                          for j, levels in enumerate(table.levels)], dtype=float))


def _statuses(vt, failed: dict) -> str:
    parts = [f"{r.candidate.label}: {failed.get(r.candidate.label, r.status)}" for r in vt.rows]
    return "; ".join(parts)


def _blend(table: CellTable, choice: Choice, fits: dict, max_global_risk: float):
    """Weighted measures and cell risks of a blend (tau1-type with the tau1 weights, tau2-type
    with the tau2 weights); sdcMicro-style figures recomputed from the blended record risk."""
    res = [fits[label] for label in choice.labels]
    w1, w2 = choice.weights["tau1"], choice.weights["tau2"]
    kinds = {"tau1": w1, "p_pu": w1, "p_pu_given_su": w1, "tau2": w2, "theta": w2}
    measures = {}
    for name, w in kinds.items():
        ms = [r.measures.get(name) for r in res]
        if any(m is None for m in ms):
            continue
        est = _mix([m.estimate for m in ms], w)
        lower = _mix([m.lower for m in ms], w)
        upper = _mix([m.upper for m in ms], w)
        measures[name] = Measure(
            name, est, lower, upper, ms[0].level if lower is not None else None,
            "weighted average of the models' predictive bounds" if lower is not None
            else None, ms[0].description)
    risks = {}
    for kind, w in (("reidentification", w2), ("population_unique", w1)):
        rs = [r.cell_risk_values.get(kind) for r in res]
        if all(x is not None for x in rs):
            risks[kind] = sum(wi * x for wi, x in zip(w, rs, strict=True))
    threshold = None
    if "reidentification" in risks:
        risk = risks["reidentification"]
        extra, threshold = reidentification_measures(table, risk, max_global_risk)
        measures.update(extra)
    measures = {k: measures[k] for k in res[0].measures if k in measures} | measures
    return measures, risks, threshold


def _mix(values, w):
    if any(v is None for v in values):
        return None
    return float(sum(wi * float(v) for wi, v in zip(w, values, strict=True)))


def _pct(x) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{100 * x:.1f}%"


def _reason(vt, choice: Choice, failed: dict) -> str:
    """The choice in plain words."""
    how = (f"{len(vt.replicates)} sub-samples of this file drawn at fraction {vt.fraction:.3g} "
           f"({vt.fraction_rule}; {vt.design}), each treated with the file as its population")
    sizes = [r.n for r in vt.replicates]
    if choice.rule == "pair":
        a, b = choice.labels
        sa = vt.summary(vt.row(a))
        sb = vt.summary(vt.row(b))
        text = (f"On {how}, {a} erred by a median {_signed(sa['median_rel_err_tau2'])} and "
                f"{b} by {_signed(sb['median_rel_err_tau2'])} on tau2 "
                f"(tau1: {_signed(sa['median_rel_err_tau1'])} and "
                f"{_signed(sb['median_rel_err_tau1'])}); weighting them to cancel these errors "
                f"({choice.describe()}) gave a median |relative error| of "
                f"{_pct(choice.score)} when each sub-sample was left out of the weighting, "
                f"better than the best single method, {choice.runner_up} "
                f"({_pct(choice.runner_up_score)}).")
    elif choice.rule == "average":
        text = (f"On {how}, {', '.join(choice.labels)} could not be told apart (their errors "
                f"differ by less than the replicates' noise or {100 * TIE_MARGIN:.0f} "
                f"percentage points; best single: {choice.runner_up}, "
                f"{_pct(choice.runner_up_score)}), so their estimates are averaged with equal "
                f"weights (validated error of the average: {_pct(choice.score)}).")
    else:
        label = choice.labels[0]
        s = vt.summary(vt.row(label))
        text = (f"On {how}, {label} had the smallest error: median |relative error| "
                f"{_pct(s['median_abs_rel_err_tau1'])} for tau1 and "
                f"{_pct(s['median_abs_rel_err_tau2'])} for tau2 "
                f"(median signed {_signed(s['median_rel_err_tau1'])} / "
                f"{_signed(s['median_rel_err_tau2'])}).")
        if choice.runner_up is not None:
            text += (f" Next best: {choice.runner_up} (score {_pct(choice.runner_up_score)} "
                     f"against {_pct(choice.score)}).")
    if min(sizes) < 100:
        text += (f" Caution: the sub-samples hold only {min(sizes)}-{max(sizes)} records, "
                 "so these errors say little about the file (docs/auto.md).")
    skipped = [r.candidate.label for r in vt.rows if r.status != "ok"]
    if skipped:
        text += f" Not compared: {', '.join(skipped)} (see the validation table's status)."
    if failed:
        text += f" Failed on the whole file and set aside: {', '.join(failed)}."
    return text


def _signed(x) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{100 * x:+.1f}%"


def _outside_summary(named: dict[str, tuple[str, str]], most: int = 3) -> str:
    """The first ``most`` features out of the corpus's range (feature -> (plain words, value
    and range), each once), and how many more (all in fitted["outside_corpus"]). Features
    with the same value and range are one fact told under their joined words (with equal
    weights nb's estimate / sample uniques is the sampling fraction: "sampling fraction n/N
    and nb's estimate / sample uniques = 0.5 (corpus range ...)")."""
    facts: dict[str, list[str]] = {}  # "value (corpus range ...)" -> the features' words
    for label, fact in named.values():
        facts.setdefault(fact, []).append(label)
    told = [" and ".join(labels) + " = " + fact for fact, labels in facts.items()]
    shown = told[:most]
    more = len(told) - len(shown)
    return "; ".join(shown) + (f"; and {more} more feature{'s' * (more > 1)} (all in "
                               "fitted['outside_corpus'])" if more else "")
