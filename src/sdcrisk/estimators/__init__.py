"""Estimators: each is frozen configuration whose ``fit(table)`` returns a RiskResult.

The classes are imported on first use (``ESTIMATORS[name]``, ``get_estimator(name)`` or
``from sdcrisk.estimators import LogLinearRisk``), so a command that runs one method does not
pay for importing every model's dependencies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, MutableMapping
from typing import Any

from .._lazy import lazy_getattr
from ..exceptions import ParameterError
from ._base import Estimator

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

#: where each public name lives (module within this package)
_WHERE = {
    "NegativeBinomialRisk": "exchangeable", "PoissonGammaRisk": "exchangeable",
    "SkinnerElliotTheta": "exchangeable", "bf_risk": "exchangeable",
    "LogLinearRisk": "loglinear", "GraphicalRisk": "graphical", "AutoRisk": "auto",
    "HdpRisk": "mixed_membership", "MixedMembershipRisk": "mixed_membership",
}


__getattr__ = lazy_getattr(__name__, _WHERE)


class _Registry(MutableMapping):
    """Method name -> estimator class, importing a class the first time it is looked up."""

    def __init__(self, entries: dict[str, str]):
        self._entries: dict[str, Any] = dict(entries)  # a class, or the name of one

    def __getitem__(self, name: str) -> type[Estimator]:
        value = self._entries[name]
        if isinstance(value, str):
            value = __getattr__(value)
            if value.name != name:  # pragma: no cover - a registry typo
                raise RuntimeError(f"registry entry {name!r} is {value.__name__} "
                                   f"(name {value.name!r})")
            self._entries[name] = value
        return value

    def __setitem__(self, name: str, cls: type[Estimator]) -> None:
        self._entries[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"ESTIMATORS({', '.join(self._entries)})"


#: estimator classes by the method name used in the CLI and in results
ESTIMATORS: MutableMapping[str, type[Estimator]] = _Registry({
    "nb": "NegativeBinomialRisk", "poisson-gamma": "PoissonGammaRisk",
    "skinner-elliot": "SkinnerElliotTheta", "loglinear": "LogLinearRisk",
    "graphical": "GraphicalRisk", "auto": "AutoRisk", "hdp": "HdpRisk",
    "mixed-membership": "MixedMembershipRisk",
})


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
