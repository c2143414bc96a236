"""How big things may be: the population size N (given, from the sampling fraction or the
survey weights; checked against n and against any real population) and the memory a step
may take (``SDCRISK_MEMORY_LIMIT``, or the limit of the running ``Estimator.fit``)."""

from __future__ import annotations

import contextlib
import contextvars
import math
import os

import numpy as np

from ..exceptions import InputError, MemoryLimitError, ParameterError

__all__ = ["DEFAULT_MEMORY_LIMIT", "MAX_POPULATION_SIZE", "memory_limit_scope", "memory_limit",
           "check_memory", "check_memory_limit", "check_number", "resolve_population_size",
           "boolean_weights", "missing_weight", "check_population_size", "check_weight_values",
           "short_repr"]

DEFAULT_MEMORY_LIMIT = 8 * 1024**3


#: the limit given to the innermost running ``Estimator.fit(memory_limit=...)``; fits nested
#: inside it (auto's candidates and their validation fits) inherit it
_FIT_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "sdcrisk_memory_limit", default=None)


def check_memory_limit(memory_limit) -> None:
    """A memory limit is None or a positive integer number of bytes (ParameterError)."""
    if memory_limit is not None and (isinstance(memory_limit, bool) or not isinstance(
            memory_limit, int | np.integer) or memory_limit <= 0):
        raise ParameterError(f"memory_limit={memory_limit!r} must be a positive number of "
                             "bytes, e.g. 8 * 1024**3")


@contextlib.contextmanager
def memory_limit_scope(limit: int | None):
    """Make ``limit`` the default of :func:`check_memory` inside the block (None: unchanged)."""
    if limit is None:
        yield
        return
    token = _FIT_LIMIT.set(int(limit))
    try:
        yield
    finally:
        _FIT_LIMIT.reset(token)


def memory_limit() -> int:
    """The memory limit in bytes for a method's working arrays.

    Inside ``Estimator.fit(memory_limit=...)`` that limit (also for nested fits); otherwise
    ``SDCRISK_MEMORY_LIMIT`` (bytes, or with a ``K``/``M``/``G`` suffix), default 8 GiB.
    """
    inherited = _FIT_LIMIT.get()
    if inherited is not None:
        return inherited
    text = os.environ.get("SDCRISK_MEMORY_LIMIT", "").strip()
    if not text:
        return DEFAULT_MEMORY_LIMIT
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1].upper(), 1)
    number = text[:-1] if scale != 1 else text
    try:
        size = float(number) * scale
    except ValueError as exc:
        raise ParameterError(f"SDCRISK_MEMORY_LIMIT={text!r} is not a size: give bytes, "
                             "or a number with one letter K, M or G (powers of 1024), e.g. "
                             "8G or 1.5G; unset it for the default 8G") from exc
    if not (math.isfinite(size) and size >= 1):  # 1e400: OverflowError in int(); 0, -5
        raise ParameterError(f"SDCRISK_MEMORY_LIMIT={text!r} must be a positive, finite size "
                             "like 8G (bytes, or with a K, M or G suffix); unset it for the "
                             "default 8G")
    return int(size)


def check_memory(required_bytes: float, *, what: str, limit: int | None = None,
                 remedies: str = "") -> None:
    """Refuse, before allocating, work that would need more than ``limit`` bytes.

    Raises
    ------
    MemoryLimitError
        With the need, the limit and the remedies in the message.
    """
    check_number("required_bytes", required_bytes)
    limit = memory_limit() if limit is None else int(limit)
    if required_bytes > limit:
        extra = f"; {remedies}" if remedies else ""
        raise MemoryLimitError(
            f"{what} needs {format_bytes(required_bytes)} but the memory limit is "
            f"{format_bytes(limit)} (set SDCRISK_MEMORY_LIMIT to change it){extra}",
            required=float(required_bytes), limit=limit)


def format_bytes(nbytes: float) -> str:
    gib = nbytes / 1024**3
    if gib >= 1e6:  # a key space beyond any machine: 1.39e+27 GiB, not 28 digits
        return f"{gib:.3g} GiB"
    if nbytes < 1024:  # SDCRISK_MEMORY_LIMIT=1 read '0.0 KiB'
        return f"{nbytes:.0f} byte{'' if round(nbytes) == 1 else 's'}"
    if nbytes < 1024**2:  # a tiny limit (SDCRISK_MEMORY_LIMIT=1K) read '0.0 MiB'
        return f"{nbytes / 1024:.1f} KiB"
    return f"{gib:.2f} GiB" if nbytes >= 1024**3 else f"{nbytes / 1024**2:.1f} MiB"


def short_repr(value, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters (for messages)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def resolve_population_size(n, weights, population_size, sampling_fraction):
    if population_size is not None and sampling_fraction is not None:
        raise ParameterError("give population_size or sampling_fraction, not both")
    if sampling_fraction is not None:
        f = check_number("sampling_fraction", sampling_fraction)
        if not 0 < f <= 1:
            raise ParameterError(f"sampling_fraction={f:g} must lie in (0, 1]: "
                                 "it is n/N, a share (a 5% sample is 0.05)")
        _check_not_huge(n / f, f"sampling_fraction={sampling_fraction}")
        return n / f, "sampling_fraction"
    if population_size is not None:
        big_n = check_population_size(population_size, n)
        return big_n, "given"
    if weights is not None:
        total = float(weights.sum())
        if total < n * (1 - 1e-9):
            raise InputError(
                f"the weights sum to N={total:.6g}, fewer than the n={n} records: survey "
                "weights count the population members each record stands for (>= 1 on "
                "average); check the weights column, or give the population size instead")
        _check_not_huge(total, "the sum of the weights")
        return max(total, float(n)), "weights"
    return float(n), "assumed_population"


def check_number(name: str, value) -> float:
    """``value`` as a float; ParameterError naming ``name`` unless it is a real number (not
    a bool, a string or an array)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ParameterError(f"{name}={short_repr(value)} must be a number")
    try:
        return float(value)
    except OverflowError:  # an int beyond float (10**400): infinite, refused as such
        return math.inf if value > 0 else -math.inf


def check_range(name: str, value, low: float, high: float, *, low_open: bool = False,
                what: str = "") -> float:
    """``value`` as a float in [low, high] (``(low, high]`` with ``low_open``): a
    tolerance-like option, whose absurd values (``tol=1e6``) would let a fit stop at once or
    a convergence check pass on anything.

    Raises
    ------
    ParameterError
        Naming ``name``, the value and the accepted range, then ``what`` (the option's
        meaning and a typical value).
    """
    x = check_number(name, value)
    if not (math.isfinite(x) and (x > low if low_open else x >= low) and x <= high):
        bracket = "(" if low_open else "["
        raise ParameterError(f"{name}={short_repr(value)} must be a number in "
                             f"{bracket}{low:g}, {high:g}]" + (f" ({what})" if what else ""))
    return x


def check_population_size(population_size, n: int) -> float:
    """N as a float: a finite number >= n.

    Raises
    ------
    ParameterError
        Not a number (a string, a bool), NaN or infinite.
    InputError
        N < n.
    """
    big_n = check_number("population_size", population_size)
    if not math.isfinite(big_n):
        raise ParameterError(f"population_size={population_size} is not finite; give the "
                             "number of people in the population (N >= n)")
    if big_n < n:
        raise InputError(
            f"population_size={population_size:g} gives N={population_size:g}, smaller than "
            f"the sample size n={n}; N counts the people of the population the file was drawn "
            "from, so N >= n (the file itself, N = n, when it is the whole population: "
            "--whole-population on the command line)"
        )
    _check_not_huge(big_n, f"population_size={population_size:g}")
    return big_n


#: the largest population size accepted: about 125 times the world's population; a larger N is
#: a slip (a misplaced exponent, weights in the wrong unit) and overflows the risk formulas
MAX_POPULATION_SIZE = 1e12


def _check_not_huge(big_n: float, what: str) -> None:
    if big_n > MAX_POPULATION_SIZE:
        raise ParameterError(
            f"{what} makes N = {big_n:.3g}, more than any population "
            f"({MAX_POPULATION_SIZE:.0e} at most); check the value (a misplaced exponent, "
            "weights in the wrong unit?)")


def boolean_weights(name: str) -> InputError:
    """The refusal of a weights column of true/false values (a flag named by mistake), in
    the same words from every reader: in memory it read as 0 and 1 ("weight 0 at row 1"),
    streamed as "not numeric"."""
    return InputError(f"weights column {name!r} holds true/false values, not survey weights; "
                      "give the column of weights (numbers > 0: the people each record "
                      "stands for), or leave out --weights and give --population-size")


def missing_weight(name: str, row: int) -> InputError:
    """The refusal of a record without a survey weight (``row``: 1-based), in the same words
    from both readers."""
    return InputError(f"weights column {name!r} is missing at row {row}; every record needs "
                      "its survey weight (a number > 0): fill it in, or leave out --weights "
                      "and give --population-size")


def check_weight_values(name: str, w: np.ndarray, offset: int = 0) -> np.ndarray:
    """Survey weights ``w`` (floats) of the column ``name``, checked: positive, finite and
    with a finite reciprocal (the inclusion sums use 1/w). ``offset``: the row of ``w[0]``
    in the file (0-based), for the message. Both readers (in memory, streamed) call this.

    Raises
    ------
    InputError
        The first bad weight, its row and the remedy.
    """
    bad = ~np.isfinite(w) | (w <= 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"weights column {name!r} has a non-positive or non-finite weight "
                         f"{w[row]:g} at row {offset + row + 1}; survey weights must be > 0")
    tiny = w < np.finfo(float).tiny  # 1e-320: 1/w overflows to inf
    if tiny.any():
        row = int(np.flatnonzero(tiny)[0])
        raise InputError(f"weights column {name!r} has the weight {w[row]:g} at row "
                         f"{offset + row + 1}, too small to invert (1/w is infinite); a survey "
                         "weight counts the people a record stands for, usually 1 or more: "
                         "check the column (a misplaced exponent?)")
    return w
