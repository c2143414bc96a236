"""The seventh bad-input sweep (stop 37): every option of every command given odd values
in turn (empty, negative, huge, not a number, text, unicode) on the bundled example. Each
test pins an input that ended in an internal error, or a message that read wrongly."""

from __future__ import annotations

import os

import pytest

from conftest import assert_refused_clearly as _clear
from conftest import run_cli as _run
from sdcrisk.cli._output import cli_message
from sdcrisk.exceptions import ParameterError
from sdcrisk.runtime.executors import LOCAL_WORKERS_PER_CPU, executor_scope, max_local_workers


def test_workers_beyond_the_machine_are_refused_before_any_process_starts(capsys):
    # --workers 99999999999999999999 reached the process pool and ended in
    # "internal error: OverflowError: Python int too large to convert to C int"
    most = LOCAL_WORKERS_PER_CPU * (os.cpu_count() or 1)
    assert max_local_workers() == most
    for value in ("99999999999999999999", str(most + 1)):
        code, _, err = _run(capsys, "assess", "example:uk_census2011", "--keys",
                            "region,sex", "--method", "nb", "--workers", value)
        _clear(code, err, 2, [f"--workers {value} local processes", f"at most {most:,}",
                              "--scheduler on the command line"])
    with pytest.raises(ParameterError, match=f"workers={most + 1} local processes"):
        with executor_scope(None, workers=most + 1):
            pass
    with executor_scope(None, workers=1):  # the bound leaves small counts alone
        pass


def test_a_bare_option_name_in_a_message_stays_the_python_name():
    # "executor= or scheduler= in Python" read "executor= or --scheduler  in Python" when
    # --scheduler was typed: only name=VALUE is the typed option
    msg = "unreachable (--scheduler on the command line, executor= or scheduler= in Python)"
    assert cli_message(msg, ["--scheduler", "x"], {}) == msg
    assert cli_message("workers=9 is too many", ["--workers", "9"], {}) == (
        "--workers 9 is too many")
    assert cli_message("max_iter=0 must be >= 1", ["--iterations", "0"],
                       {"max_iter": "--iterations"}) == "--iterations 0 must be >= 1"
