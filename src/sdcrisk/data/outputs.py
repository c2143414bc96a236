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

__all__ = ["cannot_create_in", "check_target", "refuse_folder_name", "special_file"]


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


def check_target(value: str | os.PathLike, flag: str, *, example: str = "result.json",
                 instead: str = "") -> Path:
    """Refuse, before any work, a file name that cannot be written: the one check of a
    target's own kind and folder, for every output (the CLI's ``--out``, ``--csv``,
    ``--plot`` and protect's file; what each refuses beyond this, such as an existing file
    or the input itself, stays with it).

    Parameters
    ----------
    value : str or path
        The name as the user gave it.
    flag : str
        The option that gave it (``--out``), named in every message.
    example : str
        A file name to suggest when ``value`` is a folder.
    instead : str
        What to do instead of writing a file, added to the refusal of a device or pipe
        (the CLI: ``" to print to the terminal"``).

    Raises
    ------
    ParameterError
        Empty; ends in a slash; a folder; a device, pipe or socket (the atomic write would
        put a regular file in its place); its folder missing, not a folder, not writable or
        one where no file can be created (/proc, a read-only file system, where
        ``os.access`` says yes to root); or the file exists read-only.
    """
    text = os.fspath(value)
    if not text.strip():  # Path("") is '.', which the checks below would take as a folder
        raise ParameterError(f"{flag} is empty; give a file name, e.g. {example}")
    refuse_folder_name(text, flag)
    path = Path(text)
    if path.is_dir():
        raise ParameterError(f"{flag} {text!r} is a directory; give a file name, e.g. "
                             f"{str(path / example)!r}")
    special = special_file(path)
    if special:
        raise ParameterError(f"{flag} {text!r} is {special}, not a regular file; give a file "
                             f"name{', or leave out ' + flag + instead if instead else ''}")
    folder = path.parent
    if not folder.exists():
        raise ParameterError(f"{flag} {text!r}: the folder {str(folder)!r} does not exist; "
                             "create it first or choose another path")
    if not folder.is_dir():
        raise ParameterError(f"{flag} {text!r}: {str(folder)!r} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ParameterError(f"{flag} {text!r}: the folder {str(folder)!r} is not writable; "
                             "choose another path")
    reason = cannot_create_in(folder)
    if reason:
        raise ParameterError(f"{flag} {text!r}: no file can be created in the folder "
                             f"{str(folder)!r} ({reason}); choose another path")
    if path.exists() and not os.access(path, os.W_OK):
        raise ParameterError(f"{flag} {text!r}: the file exists and is read-only")
    return path
