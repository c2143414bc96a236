"""Output targets: what a path sdcrisk is to write is, and whether a file can be created
beside it, for the checks of every output before any work (the CLI's ``--out``, ``--csv``,
``--plot``; protect's file) and for :func:`~sdcrisk.data.io.atomic_path`."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from ..exceptions import ParameterError

__all__ = ["cannot_create_in", "refuse_folder_name", "special_file"]


def special_file(path: Path) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a folder (a device
    such as /dev/null, a named pipe, a socket): the atomic write would replace it."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return "a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) \
        else "a device"


def cannot_create_in(folder: Path) -> str | None:
    """None when a file can be created in ``folder``, tried (``os.access`` says yes to root,
    and on a read-only file system or in /proc); else the system's reason. For the checks of
    output paths before any work."""
    probe = folder / f".sdcrisk-probe.{secrets.token_hex(4)}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def refuse_folder_name(value: str, flag: str) -> None:
    """Refuse an output name ending in a slash: it names a folder, and ``Path`` drops the
    slash, so ``x.csv/`` would write the file ``x.csv``.

    Raises
    ------
    ParameterError
        Naming ``flag``, the value and the file name without the slash.
    """
    if value.endswith(("/", os.sep)):
        raise ParameterError(f"{flag} {value!r} ends with a slash, naming a folder; give a "
                             f"file name, e.g. {value.rstrip('/' + os.sep)!r}")
