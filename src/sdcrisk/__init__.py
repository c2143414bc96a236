"""sdcrisk: statistical disclosure risk for categorical microdata.

Data flow: file or frame -> :class:`Microdata` -> :func:`tabulate` -> :class:`CellTable`
-> ``estimator.fit`` -> :class:`RiskResult` (measures with intervals, record risk on demand,
diagnostics, provenance); :func:`evaluate` compares estimators with the truth;
:func:`decide` turns risk into publish/suppress decisions (Zaslavsky-Horton) and
:func:`recommend` finds suppressions or recodings that reach a risk target.
"""

from ._version import __version__
from .decision import (
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
    plot_tradeoff,
    posterior_table,
    sensitivity,
)
from .estimators import (
    ESTIMATORS,
    Estimator,
    LogLinearRisk,
    NegativeBinomialRisk,
    PoissonGammaRisk,
    SkinnerElliotTheta,
    bf_risk,
    get_estimator,
)
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
from .household import household_microdata, household_sizes
from .measures import Measure, global_risk_threshold, household_risk, roc_auc, truth_measures
from .predictive import CellPredictive, NegativeBinomialPredictive, PoissonPredictive
from .recommend import Plan, Recommendations, RiskTarget, recommend
from .result import RiskResult
from .table import CellTable, Microdata, PopulationCounts, check_memory, tabulate

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
    "Measure",
    "RiskResult",
    "Estimator",
    "NegativeBinomialRisk",
    "LogLinearRisk",
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
    "Evaluation",
    "Bernoulli",
    "SimpleRandomSample",
    "HouseholdBernoulli",
    "household_microdata",
    "household_sizes",
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
    "SdcRiskError",
    "InputError",
    "ParameterError",
    "ConvergenceError",
    "MemoryLimitError",
    "SdcRiskWarning",
    "ConvergenceWarning",
    "ApproximationWarning",
]
