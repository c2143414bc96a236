"""Estimators: each is frozen configuration whose ``fit(table)`` returns a RiskResult.

This package holds the models (one module group per family); :data:`MODELS` maps their
method names to their classes. The meta-estimator ``auto``, which validates these models and
chooses among them, sits a layer above in :mod:`sdcrisk.analyses.auto`, and the registry of
every method the user can name (``sdcrisk.ESTIMATORS``, ``sdcrisk.get_estimator``) in
:mod:`sdcrisk.analyses.methods`.

The classes are imported on first use (``MODELS[name]`` or
``from sdcrisk.estimators import LogLinearRisk``), so a command that runs one method does not
pay for importing every model's dependencies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_getattr
from ._base import Estimator

if TYPE_CHECKING:  # what the lazy names below are, for type checkers
    from .copula import GaussianCopulaRisk
    from .exchangeable import NegativeBinomialRisk, PoissonGammaRisk, SkinnerElliotTheta, bf_risk
    from .graphical import GraphicalRisk
    from .latent_class import LatentClassRisk
    from .loglinear import LogLinearRisk
    from .mixed_membership import HdpRisk, MixedMembershipRisk
    from .pitman_yor import PitmanYorRisk

__all__ = [
    "Estimator",
    "NegativeBinomialRisk",
    "PoissonGammaRisk",
    "SkinnerElliotTheta",
    "LogLinearRisk",
    "HdpRisk",
    "MixedMembershipRisk",
    "GraphicalRisk",
    "PitmanYorRisk",
    "GaussianCopulaRisk",
    "LatentClassRisk",
    "bf_risk",
    "MODELS",
    "Registry",
    "options_of",
    "without_p_pu",
]

#: where each public name lives (module within this package)
_WHERE = {
    "NegativeBinomialRisk": "exchangeable", "PoissonGammaRisk": "exchangeable",
    "SkinnerElliotTheta": "exchangeable", "bf_risk": "exchangeable",
    "LogLinearRisk": "loglinear", "GraphicalRisk": "graphical",
    "HdpRisk": "mixed_membership", "MixedMembershipRisk": "mixed_membership",
    "PitmanYorRisk": "pitman_yor", "GaussianCopulaRisk": "copula",
    "LatentClassRisk": "latent_class",
}


__getattr__ = lazy_getattr(__name__, _WHERE)


class Registry(MutableMapping):
    """Method name -> estimator class, importing a class the first time it is looked up.

    ``entries`` maps a method name to a class, or to a callable ``loader(name)`` that imports
    and returns it (called once)."""

    def __init__(self, entries: dict[str, Any]):
        self._entries: dict[str, Any] = dict(entries)  # a class, or its loader

    def __getitem__(self, name: str) -> type[Estimator]:
        value = self._entries[name]
        if not isinstance(value, type):
            value = value(name)
            if value.name != name:  # pragma: no cover - a registry typo
                raise RuntimeError(f"registry entry {name!r} is {value.__name__} "
                                   f"(name {value.name!r})")
            self._entries[name] = value
        return value

    def extended(self, entries: dict[str, Any]) -> Registry:
        """A new registry with these entries and ``entries`` (loaders are not called)."""
        return Registry({**self._entries, **entries})

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


def _class(class_name: str):
    return lambda _name: __getattr__(class_name)


#: the model classes by the method name used in the CLI and in results (auto, which chooses
#: among them, is added by :data:`sdcrisk.analyses.methods.ESTIMATORS`)
MODELS: MutableMapping[str, type[Estimator]] = Registry({
    "nb": _class("NegativeBinomialRisk"), "poisson-gamma": _class("PoissonGammaRisk"),
    "skinner-elliot": _class("SkinnerElliotTheta"), "loglinear": _class("LogLinearRisk"),
    "graphical": _class("GraphicalRisk"), "hdp": _class("HdpRisk"),
    "mixed-membership": _class("MixedMembershipRisk"),
    "pitman-yor": _class("PitmanYorRisk"),
    "copula": _class("GaussianCopulaRisk"),
    "latent-class": _class("LatentClassRisk"),
})


def options_of(cls: type[Estimator]) -> frozenset[str]:
    """The options an estimator class takes: its dataclass fields."""
    return frozenset(f.name for f in dataclasses.fields(cls))


def without_p_pu(est: Estimator) -> Estimator:
    """``est`` computing every figure but P(PU), where it has a ``scope`` (graphical, auto):
    for re-fits whose use never reads P(PU) (``recommend``'s changed files, the report's
    leave-one-key-out tables). P(PU)'s sum over the cells the sample did not see was half
    of auto's time there (35 of 70 s in ``recommend`` on uci_adult 5% x 8 keys); every
    other figure is the same. Other estimators are returned as they are."""
    if "scope" in options_of(type(est)) and est.get_params()["scope"] == "all":
        return type(est)(**{**est.get_params(), "scope": "observed-cells"})
    return est
