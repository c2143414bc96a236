"""sdcrisk: statistical disclosure risk for categorical microdata.

Data flow: file or frame -> :class:`Microdata` -> :func:`tabulate` -> :class:`CellTable`
-> ``estimator.fit`` -> :class:`RiskResult` (measures with intervals, record risk on demand,
diagnostics, provenance); :func:`evaluate` compares estimators with the truth;
:func:`decide` turns risk into publish/suppress decisions (Zaslavsky-Horton) and
:func:`recommend` finds suppressions or recodings that reach a risk target.
"""

from ._lazy import lazy_getattr
from ._version import __version__

# eager: these submodules share a name with a function they define (sdcrisk.evaluate is the
# function); both are light
from .evaluate import (
    Bernoulli,
    Evaluation,
    HouseholdBernoulli,
    SimpleRandomSample,
    draw_sample,
    evaluate,
)
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
from .recommend import Plan, Recommendations, RiskTarget, recommend

# Everything else is imported on first use (PEP 562), so that ``sdcrisk assess --method nb``
# does not import the decision, report and MCMC modules and their dependencies.
_MODULES = {
    "_outofcore": "tabulate_file",
    "decision": (
        "BetaBinomialFit BetaBinomialPrior CallableLoss DecisionTable DomainDecision "
        "DomainTable ExponentialLoss GammaLoss Loss LossSensitivity MixtureLoss "
        "SuppressionLoss TradeoffCurve decide decision_table fit_beta_binomial parse_loss "
        "plot_tradeoff posterior_table sensitivity"
    ),
    "estimators": (
        "ESTIMATORS AutoRisk Estimator GraphicalRisk HdpRisk LogLinearRisk "
        "MixedMembershipRisk NegativeBinomialRisk PoissonGammaRisk SkinnerElliotTheta bf_risk "
        "get_estimator"
    ),
    "household": "household_microdata household_sizes",
    "measures": "Measure global_risk_threshold household_risk roc_auc truth_measures",
    "predictive": "CellPredictive MixturePredictive NegativeBinomialPredictive PoissonPredictive",
    "result": "RiskResult",
    "scenarios": "KeySet assess_scenarios",
    "suda": "SudaResult suda2 suda_weights",
    "table": "CellTable Microdata PopulationCounts check_memory tabulate",
    "uniqueness": (
        "FrequencyProfile PopulationUniqueness UniquenessEstimate pitman_uniques "
        "population_uniqueness snb_uniques zayatz_uniques"
    ),
    "validation": "ValidationTable validate",
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names.split()}


__getattr__ = lazy_getattr(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "__version__",
    "Microdata",
    "CellTable",
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
