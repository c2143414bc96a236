"""Command-line interface: a thin shell over the public API.

``sdcrisk assess DATA --keys a,b,c ...``  estimate the disclosure risk of a sample file
(:mod:`.assess`); ``sdcrisk evaluate POPULATION --keys ...``  draw samples, compare estimators
with the truth (:mod:`.evaluate`: one sample, or a grid of fractions x seeds);
``sdcrisk report DATA --keys ... --out report.html``  the HTML risk report (:mod:`.report`);
``sdcrisk decide`` and ``sdcrisk recommend`` (:mod:`.decide`); ``sdcrisk protect DATA --keys ...
--k-anonymity K --out FILE``  write the protected file (:mod:`.protect`).

Every command that estimates risk defaults to ``auto`` and needs the population size
(``--population-size``, ``--sampling-fraction``, ``--weights`` or ``--population``) or
``--whole-population``. While a command runs, warnings print as one line
(``sdcrisk: warning: ...``) and long steps show a progress bar on a terminal's stderr
(``--quiet``: none).

Errors of the input or options exit with code 2 and a one-line message (exit 1 for an
unexpected failure); ``--debug`` shows the traceback. ``--fail-above MEASURE=LIMIT`` (assess,
report) exits with code 3, after writing the output, when an estimate exceeds its limit.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Sequence

from .._version import __version__
from ..exceptions import SdcRiskError
from ..runtime.progress import progress_enabled
from . import assess, decide, evaluate, protect, report
from ._common import Outcome
from ._output import check_arguments, check_outputs, cli_message, write_text

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sdcrisk", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Disclosure risk for categorical microdata: how many records of a sample "
        "file an\nintruder could re-identify from its key variables, and how to protect it.",
        epilog="start with:\n"
        "  sdcrisk assess example:uk_census2011 --keys region,sex,age_band \\\n"
        "      --population-size 56075912\n"
        "  sdcrisk COMMAND --help      (each command's options and examples)\n\n"
        "exit codes: 0 done; 2 an error in the input or options (one line on stderr);\n"
        "3 a --fail-above limit exceeded (after the output is written); 1 an unexpected\n"
        "failure (--debug shows the traceback).")
    parser.add_argument("--version", action="version", version=f"sdcrisk {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    # each subcommand adds a parser with set_defaults(run=handler), handler(args) -> str or
    # Outcome (the text to print or write, and any --fail-above breaches)
    assess.register(sub)
    evaluate.register(sub)
    decide.register(sub)
    report.register(sub)
    protect.register(sub)
    return parser


class _OneLineWarnings:
    """``sdcrisk: warning: ...`` on one line, without the source path (installed by main);
    each distinct warning once per command. (Those of a plan search's changed files that
    differ only in figures are grouped by :func:`sdcrisk.analyses.recommend.recommend`.)"""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()

    def __call__(self, message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        if (category.__name__, text) in self.seen:
            return
        self.seen.add((category.__name__, text))
        name = category.__name__
        kind = "" if name in ("UserWarning", "SdcRiskWarning") else f" ({name})"
        _write(sys.stderr if file is None else file, f"sdcrisk: warning: {text}{kind}\n")


def _write(stream, text: str) -> None:
    try:
        stream.write(text)
    except OSError:
        pass


@contextlib.contextmanager
def _cli_messages(quiet: bool):
    """While a command runs: one-line warnings, each once, and progress bars unless --quiet."""
    saved = warnings.showwarning
    printer = _OneLineWarnings()
    warnings.showwarning = printer
    try:
        with progress_enabled(not quiet):
            yield
    finally:
        warnings.showwarning = saved


def _api_flags() -> dict[str, str]:
    """API option name -> the CLI flag that sets it (for error messages)."""
    from ._common import METHOD_FLAGS

    flags = {name: flag for flag, (_, names) in METHOD_FLAGS.items() for name in names}
    flags.update({"random_state": "--seed", "population_size": "--population-size",
                  "sampling_fraction": "--sampling-fraction", "max_levels": "--max-levels",
                  "keys": "--keys", "weights": "--weights", "household": "--household",
                  "levels": "--levels", "workers": "--workers"})
    return flags


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    try:
        check_arguments(args)
        check_outputs(args)  # before any work: a run is not lost to an unwritable --out
        with _cli_messages(getattr(args, "quiet", False)):
            outcome = args.run(args)
        if not isinstance(outcome, Outcome):
            outcome = Outcome(outcome)
        if args.out:
            write_text(args.out, outcome.text + "\n")
        else:
            sys.stdout.write(outcome.text + "\n")
        for line in outcome.breaches:
            print(f"sdcrisk: fail-above: {line}", file=sys.stderr)
        return 3 if outcome.breaches else 0
    except SdcRiskError as exc:
        if args.debug:
            raise
        print(f"sdcrisk: error: {cli_message(str(exc), argv, _api_flags())}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - one line unless --debug
        if args.debug:
            raise
        msg = str(exc).splitlines()[0] if str(exc) else ""
        print(f"sdcrisk: internal error: {type(exc).__name__}: {msg} (rerun with --debug)",
              file=sys.stderr)
        return 1
