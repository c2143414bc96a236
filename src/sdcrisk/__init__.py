"""sdcrisk: statistical disclosure risk for categorical microdata.

Data flow: file or frame -> :class:`Microdata` -> :func:`tabulate` -> :class:`CellTable`
-> ``estimator.fit`` -> :class:`RiskResult` (measures with intervals, record risk on demand,
diagnostics, provenance); :func:`evaluate` compares estimators with the truth;
:func:`decide` turns risk into publish/suppress decisions (Zaslavsky-Horton) and
:func:`recommend` finds suppressions or recodings that reach a risk target.
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_getattr
from ._version import __version__
from .exceptions import (
    ApproximationWarning,
    ConvergenceError,
    ConvergenceWarning,
    InputError,
    MemoryLimitError,
    ParameterError,
    SdcRiskError,
    SdcRiskWarning,
)

# Every other public name is imported on first use (PEP 562), so that
# ``sdcrisk assess --method nb`` does not import the decision, report and MCMC modules and
# their dependencies; the block below shows type checkers where each name lives.
if TYPE_CHECKING:
    from .analyses.auto import AutoRisk
    from .analyses.decision import (
        BetaBinomialFit,
        BetaBinomialPrior,
        CallableLoss,
        DecisionTable,
        DomainDecision,
        DomainTable,
        ExponentialLoss,
        GammaLoss,
        Loss,
        LossSensitivity,
        MixtureLoss,
        SuppressionLoss,
        TradeoffCurve,
        decide,
        decision_table,
        fit_beta_binomial,
        parse_loss,
        posterior_table,
        sensitivity,
    )
    from .analyses.evaluate import Evaluation, evaluate
    from .analyses.methods import ESTIMATORS, get_estimator
    from .analyses.protect import Protection, protect
    from .analyses.recommend import Plan, Recommendations, RiskTarget, recommend
    from .analyses.sampling import Bernoulli, HouseholdBernoulli, SimpleRandomSample, draw_sample
    from .analyses.scenarios import KeySet, assess_scenarios
    from .analyses.suda import SudaResult, suda2, suda_weights
    from .analyses.uniqueness import (
        FrequencyProfile,
        PopulationUniqueness,
        UniquenessEstimate,
        pitman_uniques,
        population_uniqueness,
        snb_uniques,
        zayatz_uniques,
    )
    from .analyses.validation import ValidationTable, validate
    from .core.measures import (
        Measure,
        global_risk_threshold,
        household_risk,
        roc_auc,
        truth_measures,
    )
    from .core.predictive import (
        CellPredictive,
        MixturePredictive,
        NegativeBinomialPredictive,
        PoissonPredictive,
    )
    from .core.result import RiskResult
    from .data.frequencies import FrequencyTable, tabulate_frequencies
    from .data.household import household_microdata, household_sizes
    from .data.outofcore import tabulate_file
    from .data.population import PopulationCounts
    from .data.route import tabulate_path
    from .data.sizes import check_memory
    from .data.table import (
        CellTable,
        Microdata,
        tabulate,
        tabulate_source,
    )
    from .estimators import (
        Estimator,
        GaussianCopulaRisk,
        GraphicalRisk,
        HdpRisk,
        LatentClassRisk,
        LogLinearRisk,
        MixedMembershipRisk,
        NegativeBinomialRisk,
        PitmanYorRisk,
        PoissonGammaRisk,
        SkinnerElliotTheta,
        bf_risk,
    )
    from .report.charts import plot_tradeoff
    from .runtime.tabulate_parts import tabulate_parts

_MODULES = {
    "data.table": "CellTable Microdata tabulate tabulate_source",
    "data.population": "PopulationCounts",
    "data.sizes": "check_memory",
    "data.outofcore": "tabulate_file",
    "data.frequencies": "FrequencyTable tabulate_frequencies",
    "data.route": "tabulate_path",
    "runtime.tabulate_parts": "tabulate_parts",
    "data.household": "household_microdata household_sizes",
    "core.measures": "Measure global_risk_threshold household_risk roc_auc truth_measures",
    "core.predictive": (
        "CellPredictive MixturePredictive NegativeBinomialPredictive PoissonPredictive"
    ),
    "core.result": "RiskResult",
    "estimators": (
        "Estimator GaussianCopulaRisk GraphicalRisk HdpRisk LatentClassRisk LogLinearRisk "
        "MixedMembershipRisk "
        "NegativeBinomialRisk PitmanYorRisk PoissonGammaRisk SkinnerElliotTheta bf_risk"
    ),
    "analyses.auto": "AutoRisk",
    "analyses.methods": "ESTIMATORS get_estimator",
    "analyses.sampling": "Bernoulli HouseholdBernoulli SimpleRandomSample draw_sample",
    "analyses.evaluate": "Evaluation evaluate",
    "analyses.validation": "ValidationTable validate",
    "analyses.scenarios": "KeySet assess_scenarios",
    "analyses.recommend": "Plan Recommendations RiskTarget recommend",
    "analyses.protect": "Protection protect",
    "analyses.decision": (
        "BetaBinomialFit BetaBinomialPrior CallableLoss DecisionTable DomainDecision "
        "DomainTable ExponentialLoss GammaLoss Loss LossSensitivity MixtureLoss "
        "SuppressionLoss TradeoffCurve decide decision_table fit_beta_binomial parse_loss "
        "posterior_table sensitivity"
    ),
    "report.charts": "plot_tradeoff",
    "analyses.suda": "SudaResult suda2 suda_weights",
    "analyses.uniqueness": (
        "FrequencyProfile PopulationUniqueness UniquenessEstimate pitman_uniques "
        "population_uniqueness snb_uniques zayatz_uniques"
    ),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names.split()}


__getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "__version__",
    "Microdata",
    "CellTable",
    "FrequencyTable",
    "PopulationCounts",
    "tabulate",
    "check_memory",
    "CellPredictive",
    "NegativeBinomialPredictive",
    "PoissonPredictive",
    "MixturePredictive",
    "Measure",
    "RiskResult",
    "Estimator",
    "NegativeBinomialRisk",
    "LogLinearRisk",
    "GraphicalRisk",
    "HdpRisk",
    "MixedMembershipRisk",
    "AutoRisk",
    "PoissonGammaRisk",
    "PitmanYorRisk",
    "GaussianCopulaRisk",
    "LatentClassRisk",
    "SkinnerElliotTheta",
    "ESTIMATORS",
    "get_estimator",
    "bf_risk",
    "truth_measures",
    "global_risk_threshold",
    "household_risk",
    "roc_auc",
    "evaluate",
    "validate",
    "ValidationTable",
    "Evaluation",
    "Bernoulli",
    "SimpleRandomSample",
    "HouseholdBernoulli",
    "household_microdata",
    "household_sizes",
    "tabulate_file",
    "tabulate_frequencies",
    "tabulate_path",
    "tabulate_source",
    "tabulate_parts",
    "assess_scenarios",
    "KeySet",
    "draw_sample",
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
    "plot_tradeoff",
    "RiskTarget",
    "Plan",
    "Recommendations",
    "recommend",
    "protect",
    "Protection",
    "suda2",
    "SudaResult",
    "suda_weights",
    "population_uniqueness",
    "PopulationUniqueness",
    "UniquenessEstimate",
    "FrequencyProfile",
    "pitman_uniques",
    "zayatz_uniques",
    "snb_uniques",
    "SdcRiskError",
    "InputError",
    "ParameterError",
    "ConvergenceError",
    "MemoryLimitError",
    "SdcRiskWarning",
    "ConvergenceWarning",
    "ApproximationWarning",
]
