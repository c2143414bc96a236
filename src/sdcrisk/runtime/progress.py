"""Progress bars for long steps: one switch, set by the command line.

The library is silent by default. ``sdcrisk`` commands turn bars on with
:func:`progress_enabled` unless ``--quiet`` is given; a bar is drawn only when stderr is a
terminal, and only for a step still running after :data:`DELAY` seconds (tqdm's ``delay``),
so short steps and redirected output stay clean.

Long steps wrap their loop in ``with progress(total=..., desc=...) as bar: ... bar.update()``.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Iterator

__all__ = ["progress", "progress_enabled", "progress_on", "DELAY"]

#: seconds a step must run before its bar appears
DELAY = 2.0

_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("sdcrisk_progress",
                                                                default=False)


def progress_on() -> bool:
    """Whether a bar would be drawn now: switched on and stderr is a terminal."""
    if not _ENABLED.get():
        return False
    stream = sys.stderr
    return bool(getattr(stream, "isatty", None) and stream.isatty())


@contextlib.contextmanager
def progress_enabled(on: bool = True) -> Iterator[None]:
    """Switch the bars on (or off) inside the block; the CLI wraps each command in it."""
    token = _ENABLED.set(bool(on))
    try:
        yield
    finally:
        _ENABLED.reset(token)


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass


@contextlib.contextmanager
def progress(total: int | None = None, desc: str = "", unit: str = "it"):
    """A tqdm bar on stderr when :func:`progress_on`, else an object whose methods do
    nothing. Yields something with ``update(n)`` and ``set_postfix_str(text)``."""
    if not progress_on():
        yield _Silent()
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=f"sdcrisk: {desc}" if desc else "sdcrisk", unit=unit,
               file=sys.stderr, delay=DELAY, leave=False, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()
