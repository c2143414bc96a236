"""The exceptions and warnings raised by sdcrisk.

Every error the package raises on purpose derives from :class:`SdcRiskError`; the CLI turns
it into a one-line message and a non-zero exit code. Messages say what is wrong, the
offending value, and what to do instead.
"""

from __future__ import annotations

import os
import sys
import types

__all__ = [
    "user_stacklevel",
    "SdcRiskError",
    "InputError",
    "ParameterError",
    "ConvergenceError",
    "MemoryLimitError",
    "SdcRiskWarning",
    "ConvergenceWarning",
    "ApproximationWarning",
]


class SdcRiskError(Exception):
    """Base class of every error raised by sdcrisk."""


class InputError(SdcRiskError, ValueError):
    """The data are unusable as given (missing column, empty file, non-categorical key...)."""


class ParameterError(SdcRiskError, ValueError):
    """An option or hyper-parameter is out of range or inconsistent with another."""


class ConvergenceError(SdcRiskError, RuntimeError):
    """A fitting procedure failed to converge and no usable result exists."""


class MemoryLimitError(SdcRiskError, MemoryError):
    """A method would need more memory than the configured limit allows: ``required`` and
    ``limit`` bytes (None when not given)."""

    def __init__(self, message: str = "", *, required: float | None = None,
                 limit: float | None = None):
        super().__init__(message)
        self.required = required
        self.limit = limit


class SdcRiskWarning(UserWarning):
    """Base class of every warning emitted by sdcrisk."""


class ConvergenceWarning(SdcRiskWarning):
    """A fit stopped at a boundary or iteration limit; the result is usable with care."""


class ApproximationWarning(SdcRiskWarning):
    """A numerical approximation was used where an exact value was not available."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def user_stacklevel() -> int:
    """The ``stacklevel`` for :func:`warnings.warn` that points at the first frame outside
    sdcrisk: the user's line that called the public API, however deep inside the package the
    warning is raised.

    Use as ``warnings.warn(message, Category, stacklevel=user_stacklevel())`` directly in the
    function that warns.
    """
    frame: types.FrameType | None = sys._getframe(1)  # the caller of warnings.warn: level 1
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            _PACKAGE_DIR + os.sep):
        frame = frame.f_back
        level += 1
    return level
