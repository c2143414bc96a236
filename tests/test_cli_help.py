"""The examples at the end of each command's ``--help`` are commands that work."""

from __future__ import annotations

import argparse
import shlex

import pytest

from sdcrisk.cli import build_parser, main


def _examples() -> list[list[str]]:
    """Every example command line of the top-level and the subcommands' help (backslash
    continuations joined), as argv lists without the leading ``sdcrisk``."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for p in [parser, *sub.choices.values()]:
        text = (p.epilog or "").replace("\\\n", " ")
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("sdcrisk ") and "COMMAND" not in line:
                out.append(shlex.split(line)[1:])
    return out


EXAMPLES = _examples()


def test_every_command_has_examples():
    commands = {argv[0] for argv in EXAMPLES}
    assert commands == {"assess", "evaluate", "decide", "recommend", "report", "protect"}


@pytest.mark.parametrize("argv", EXAMPLES, ids=[" ".join(a[:1] + a[-4:]) for a in EXAMPLES])
def test_help_example_parses(argv):
    args = build_parser().parse_args(argv)
    assert args.command == argv[0]


# the quick ones run as printed (outputs into a temporary folder)
QUICK = [a for a in EXAMPLES
         if a[0] in ("decide", "recommend", "protect")
         or (a[0] in ("assess", "evaluate") and "--seeds" not in a
             and any(x.startswith("nb") for x in a))]


@pytest.mark.parametrize("argv", QUICK, ids=[" ".join(a[:1] + a[-4:]) for a in QUICK])
def test_help_example_runs(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--quiet"] if argv[0] != "decide" else argv) == 0, \
        capsys.readouterr().err


def _option_help(command: str, option: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if option in a.option_strings)
    return " ".join(action.help.split())


@pytest.mark.parametrize(("command", "option", "words"), [
    # the page's title was 'page title', without what it is when not given
    ("report", "--title", "(default: 'Disclosure risk report: ' and the data file's name)"),
    ("report", "--contributions", "or none (default headline)"),
    # protect --target brings tau2 to VALUE *or below*, and takes tau2 only
    ("protect", "--target", "brings MEASURE to VALUE or below; MEASURE is tau2 (e.g. tau2=5)"),
    # recommend said 'MEASURE=VALUE as protect takes it (tau2=5, records-above=20)', and
    # protect refuses records-above=20
    ("recommend", "--target", "records-above=20, which protect does not take"),
])
def test_option_help_says_what_the_value_means(command, option, words):
    assert words in _option_help(command, option)
