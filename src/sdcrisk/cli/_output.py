"""Where the CLI writes, checked before any work starts, and how: atomically.

Every file a subcommand writes (``--out``, ``--csv``, ``--plot``) goes through this module:
:func:`check_outputs` refuses a path that cannot be written (a missing or read-only folder, a
directory, the input file itself) *before* the estimate is computed, so no work is lost;
:func:`write_text` and :func:`atomic_path` (:mod:`sdcrisk.data.io`'s, which protect's file goes
through too) write to a temporary file in the same folder and rename it over the target
(``os.replace``), so a reader never sees half a file and an interrupted run leaves the previous
file intact; the file gets the mode a plain write gives.

:func:`cli_message` rewrites the option names of the Python API in an error message into the
command-line flags the user typed (``max_iter=0`` -> ``--iterations 0``).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from ..data.io import atomic_path
from ..data.outputs import check_target
from ..exceptions import ParameterError

__all__ = ["OUTPUT_OPTIONS", "check_outputs", "check_arguments", "write_text", "atomic_path",
           "cli_message"]

#: argparse attribute -> flag, for every option that names a file the CLI writes
OUTPUT_OPTIONS = {"out": "--out", "csv": "--csv", "plot": "--plot"}
#: argparse attributes that name files the CLI reads (an output must not replace them)
_INPUT_OPTIONS = ("data", "population", "sample", "levels", "structural_zeros", "key_sets",
                  "domain_types", "domain_sizes")


def check_outputs(args) -> None:
    """Refuse, before any work, an output path that cannot be written.

    Raises
    ------
    ParameterError
        The folder does not exist or is not writable, the path is a directory, two outputs
        name the same file, or an output would overwrite an input file.
    """
    inputs = {}
    for attr in _INPUT_OPTIONS:
        value = getattr(args, attr, None)
        if isinstance(value, str) and value and ":" not in value[:8]:
            with contextlib.suppress(OSError):
                inputs[Path(value).resolve()] = "--" + attr.replace("_", "-") \
                    if attr != "data" else "the input file"
    seen: dict[Path, str] = {}
    for attr, flag in OUTPUT_OPTIONS.items():
        value = getattr(args, attr, None)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ParameterError(f"{flag} is empty; give a file name")
        if attr == "plot" and value.strip() and not value.endswith(("/", os.sep)) \
                and Path(value).suffix.lower() not in (".png", ".svg"):
            raise ParameterError(f"{flag} {value!r}: the file must end in .png or .svg (the "
                                 "suffix picks the format)")
        path = check_target(value, flag, example="result" + _suffix(attr),
                            instead=" to print to the terminal" if attr == "out" else "")
        resolved = path.resolve()
        if resolved in inputs:
            raise ParameterError(f"{flag} {value!r} is {inputs[resolved]}; writing there "
                                 "would destroy it: choose another output path")
        if resolved in seen:
            raise ParameterError(f"{flag} and {seen[resolved]} both name {value!r}; give "
                                 "each output its own file")
        seen[resolved] = flag


def _suffix(attr: str) -> str:
    return {"out": ".json", "csv": ".csv", "plot": ".png"}[attr]


def check_arguments(args) -> None:
    """Checks of options every subcommand shares, before any work (today: ``--seed`` and
    ``--wildcard-alpha``).

    Raises
    ------
    ParameterError
        ``--seed`` negative; ``--wildcard-alpha`` outside [0, 1], or other than its default 1
        without ``--missing wildcard`` (where it would be ignored).
    """
    seed = getattr(args, "seed", None)
    if seed is not None and seed < 0:
        raise ParameterError(f"--seed {seed} must be a non-negative integer (e.g. 0 or 12345)")
    alpha = getattr(args, "wildcard_alpha", None)
    if alpha is not None:
        if not 0 <= alpha <= 1:
            raise ParameterError(f"--wildcard-alpha {alpha:g} must lie in [0, 1] (sdcMicro's "
                                 "alpha: 1 counts a wildcard match fully, 0 ignores it)")
        if alpha != 1 and getattr(args, "missing", None) != "wildcard":
            raise ParameterError(f"--wildcard-alpha {alpha:g} applies only with --missing "
                                 "wildcard; add --missing wildcard or drop --wildcard-alpha")


def write_text(target: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``target`` atomically."""
    with atomic_path(target) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)


def cli_message(message: str, argv: Sequence[str], flags: dict[str, str]) -> str:
    """``message`` with the API option names of ``flags`` (name -> flag) that the user gave
    on the command line written as those flags: ``"max_iter=0 must be >= 1"`` ->
    ``"--iterations 0 must be >= 1"``."""
    typed = {a.split("=", 1)[0] for a in argv if a.startswith("--")}
    # every typed flag names its API option too: --risk-threshold <-> risk_threshold
    flags = {**{f[2:].replace("-", "_"): f for f in typed if len(f) > 3}, **flags}
    for name, flag in flags.items():
        if flag not in typed:
            continue
        # "name=VALUE" only: a bare "name=" names the Python option itself ("executor= or
        # scheduler= in Python")
        message = re.sub(rf"(?<![\w.\-(]){re.escape(name)}=(?![\s),;]|$)", f"{flag} ",
                         message)
    return message
