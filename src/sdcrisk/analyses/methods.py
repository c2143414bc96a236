"""Every method the user can name: the models of :mod:`sdcrisk.estimators` and ``auto``.

:data:`ESTIMATORS` maps a method name (as typed after ``--method``) to its estimator class;
:func:`get_estimator` builds one from keyword options, which must be fields of that class.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from ..estimators import MODELS, Estimator, options_of
from ..exceptions import ParameterError

__all__ = ["ESTIMATORS", "get_estimator", "methods_taking"]


def _auto(_name: str) -> type[Estimator]:
    from .auto import AutoRisk

    return AutoRisk


#: estimator classes by the method name used in the CLI and in results
ESTIMATORS: MutableMapping[str, type[Estimator]] = MODELS.extended({"auto": _auto})


def methods_taking(option: str) -> list[str]:
    """The method names whose estimator takes ``option``."""
    return [m for m in ESTIMATORS if option in options_of(ESTIMATORS[m])]


def get_estimator(name: str, **options: Any) -> Estimator:
    """An estimator by method name, configured by ``options`` (its dataclass fields).

    An option left at ``None`` keeps the class's default.

    Raises
    ------
    ParameterError
        Unknown method name, or an option the method does not take (the message names the
        methods that do).

    Examples
    --------
    >>> get_estimator("nb", mode="sdcmicro").mode
    'sdcmicro'
    """
    if not isinstance(name, str) or name not in ESTIMATORS:  # a list: unhashable (TypeError)
        raise ParameterError(f"unknown method {name!r}; available: {', '.join(ESTIMATORS)}")
    cls = ESTIMATORS[name]
    accepted = options_of(cls)
    for key in options:
        if key not in accepted:
            takers = methods_taking(key)
            where = (f"it is an option of {', '.join(takers)}" if takers
                     else "no method takes it")
            raise ParameterError(f"method {name!r} does not take the option {key!r} ({where}); "
                                 f"{name!r} takes: {', '.join(sorted(accepted))}")
    return cls(**{k: v for k, v in options.items() if v is not None})
