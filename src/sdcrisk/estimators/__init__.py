"""Estimators: each is frozen configuration whose ``fit(table)`` returns a RiskResult."""

from __future__ import annotations

import dataclasses

from ..exceptions import ParameterError
from ._base import Estimator
from .auto import AutoRisk
from .exchangeable import NegativeBinomialRisk, PoissonGammaRisk, SkinnerElliotTheta, bf_risk
from .graphical import GraphicalRisk
from .loglinear import LogLinearRisk
from .mixed_membership import HdpRisk, MixedMembershipRisk

__all__ = [
    "Estimator",
    "NegativeBinomialRisk",
    "PoissonGammaRisk",
    "SkinnerElliotTheta",
    "LogLinearRisk",
    "HdpRisk",
    "MixedMembershipRisk",
    "GraphicalRisk",
    "AutoRisk",
    "bf_risk",
    "ESTIMATORS",
    "get_estimator",
]

#: estimator classes by the method name used in the CLI and in results
ESTIMATORS: dict[str, type[Estimator]] = {
    cls.name: cls
    for cls in (NegativeBinomialRisk, PoissonGammaRisk, SkinnerElliotTheta, LogLinearRisk,
                GraphicalRisk, AutoRisk) + (HdpRisk, MixedMembershipRisk)
}


def get_estimator(name: str, **options) -> Estimator:
    """An estimator by method name; ``options`` the class does not take are ignored.

    Raises
    ------
    ParameterError
        Unknown method name.
    """
    if name not in ESTIMATORS:
        raise ParameterError(f"unknown method {name!r}; available: {', '.join(ESTIMATORS)}")
    cls = ESTIMATORS[name]
    accepted = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in options.items() if k in accepted and v is not None})
