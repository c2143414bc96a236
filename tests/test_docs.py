"""The documentation site: it builds with ``mkdocs build --strict``, every ``sdcrisk ...``
command quoted in the guide pages parses with the CLI's own argparse, and the API reference
lists every public name."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import sdcrisk
from sdcrisk.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# the pages whose commands a reader copies; each must quote at least this many commands
GUIDE_PAGES = {"primer.md": 4, "sdcmicro.md": 4, "keys.md": 2, "protect.md": 4, "index.md": 1,
               "inputs.md": 5, "scale.md": 3, "copula.md": 1, "latent_class.md": 1,
               "README.md": 9}
# pages whose --flags are all sdcrisk's (the others also name benchmark scripts' flags)
OPTION_PAGES = sorted(set(GUIDE_PAGES) - {"latent_class.md", "README.md"})
# a command with any of these is a pattern, not a command line (skipped)
PLACEHOLDERS = ("...", "…", "<", "[", "|")
SHELL_ENDS = {">", ">>", "2>", "2>&1", "&&", ";", "|", "||"}


def _commands(text: str) -> list[str]:
    """``sdcrisk ...`` command lines of a Markdown page: lines of fenced bash/sh/console
    blocks (with backslash continuations joined) and inline code spans."""
    found = []
    fenced = shell = False
    pending = ""
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            # command lines are in bash/sh/console blocks; text blocks hold outputs
            shell = fenced and line.strip()[3:].strip() in ("bash", "sh", "shell", "console")
            pending = ""
            continue
        if fenced:
            if not shell:
                continue
            line = pending + line.strip()
            if line.endswith("\\"):
                pending = line[:-1].rstrip() + " "
                continue
            pending = ""
            line = line.lstrip("$ ").strip()
            if line.startswith("sdcrisk "):
                found.append(line)
        else:
            found.extend(m.group(1) for m in re.finditer(r"`(sdcrisk [^`]+)`", line))
    return found


def _argv(command: str) -> list[str] | None:
    """The arguments after ``sdcrisk``, up to the first shell operator; None for patterns,
    for a bare command name (``sdcrisk assess`` in a sentence) and for a command named with
    an option but no data (``sdcrisk assess --key-sets FILE`` in a sentence)."""
    if any(p in command for p in PLACEHOLDERS):
        return None
    words = shlex.split(command, comments=True)
    argv = []
    for w in words[1:]:
        if w in SHELL_ENDS or w.startswith((">", "2>")):
            break
        argv.append(w)
    return argv if len(argv) >= 2 and not argv[1].startswith("-") else None


def _page(page: str) -> str:
    return (ROOT / page if page == "README.md" else DOCS / page).read_text(encoding="utf-8")


@pytest.mark.parametrize("page", sorted(GUIDE_PAGES))
def test_quoted_commands_parse(page):
    text = _page(page)
    commands = [c for c in _commands(text) if _argv(c) is not None]
    assert len(commands) >= GUIDE_PAGES[page], (page, commands)
    parser = build_parser()
    for command in commands:
        argv = _argv(command)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse exits 2 on an unknown option or a bad value
            pytest.fail(f"{page}: `{command}` does not parse (exit {exc.code})")
        assert args.command == argv[0], command
        # a command that reads a sample must say how large the population is, or it exits 2
        if argv[0] in ("assess", "report", "recommend", "protect"):
            assert (set(argv) & N_SOURCES or args.data.startswith("example:")), (
                f"{page}: `{command}` gives no population size ({', '.join(sorted(N_SOURCES))})")


# the options that give N; without one, assess/report/recommend/protect refuse (exit 2)
N_SOURCES = {"--population-size", "--sampling-fraction", "--weights", "--population",
             "--whole-population"}


@pytest.mark.parametrize("page", sorted(set(GUIDE_PAGES) | {"auto.md", "errors.md", "api.md"}))
def test_command_blocks_are_labelled(page):
    """A fenced block without a language is not read by test_quoted_commands_parse: command
    lines belong in ```bash blocks (outputs in ```text)."""
    fenced = False
    for number, line in enumerate(_page(page).splitlines(), 1):
        if line.lstrip().startswith("```"):
            if not fenced and line.strip() == "```":
                unlabelled = True
            elif not fenced:
                unlabelled = False
            fenced = not fenced
        elif fenced and unlabelled:
            assert not line.strip().startswith("sdcrisk "), f"{page}:{number}: {line.strip()}"


def _cli_options() -> set[str]:
    options = set()
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                for a in sub._actions:
                    options.update(o for o in a.option_strings if o.startswith("--"))
    return options


# options of other tools named on the pages (mkdocs; dask worker)
OTHER_TOOLS = {"--strict", "--site-dir", "--nworkers", "--nthreads", "--memory-limit"}


@pytest.mark.parametrize("page", OPTION_PAGES)
def test_named_options_exist(page):
    """Every ``--option`` a page names, in a command or in prose, is one of the CLI's."""
    text = _page(page)
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))
    assert named - _cli_options() - OTHER_TOOLS == set()


def test_command_extraction():
    """The extraction itself: continuations joined, patterns skipped, shell tails cut."""
    text = "\n".join([
        "run `sdcrisk assess a.csv --keys x,y --whole-population` first",
        "```bash",
        "$ sdcrisk protect a.csv --keys x \\",
        "    --k-anonymity 3 --out b.csv > log.txt",
        "sdcrisk assess DATA --keys ... # a pattern",
        "```",
        "```text",
        "sdcrisk 0.1.0 - method: auto",
        "```",
    ])
    commands = _commands(text)
    assert commands == [
        "sdcrisk assess a.csv --keys x,y --whole-population",
        "sdcrisk protect a.csv --keys x --k-anonymity 3 --out b.csv > log.txt",
        "sdcrisk assess DATA --keys ... # a pattern",
    ]
    assert _argv(commands[1]) == ["protect", "a.csv", "--keys", "x", "--k-anonymity", "3",
                                  "--out", "b.csv"]
    assert _argv(commands[2]) is None
    assert _argv("sdcrisk report") is None  # a command named in a sentence
    assert _argv("sdcrisk assess --key-sets FILE") is None  # an option named in a sentence
    with pytest.raises(SystemExit):
        build_parser().parse_args(_argv("sdcrisk protect a.csv --k-anonimity 3"))


def test_api_reference_lists_every_public_name():
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^::: sdcrisk\.(\w+)$", text, flags=re.M))
    public = set(sdcrisk.__all__) - {"__version__"}
    assert public - listed == set()


def test_mkdocs_build_strict(tmp_path):
    missing = _missing_docs_tools()
    if missing:
        pytest.skip(f"mkdocs build needs {', '.join(missing)} (pip install -e '.[docs]')")
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for page in ("index.html", "primer/index.html", "sdcmicro/index.html", "keys/index.html",
                 "protect/index.html", "api/index.html", "architecture/index.html"):
        assert (site / page).is_file(), page
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    # the reference is rendered from the docstrings, not just headings
    assert 'id="sdcrisk.Microdata"' in api
    assert "Validated categorical microdata" in api


def _missing_docs_tools() -> list[str]:
    missing = [m for m in ("mkdocs", "mkdocstrings") if importlib.util.find_spec(m) is None]
    try:
        handler = importlib.util.find_spec("mkdocstrings_handlers.python")
    except ModuleNotFoundError:
        handler = None
    if handler is None:
        missing.append("mkdocstrings-python")
    return missing


def test_cli_reference_is_up_to_date():
    """docs/cli.md holds every command's --help as the CLI prints it now (regenerate with
    ``python tests/reference/make_cli_reference.py docs/cli.md``)."""
    spec = importlib.util.spec_from_file_location(
        "make_cli_reference", ROOT / "tests" / "reference" / "make_cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    python = f"Python {sys.version_info.major}.{sys.version_info.minor} by"
    if python not in page:  # argparse's layout of --help changes between Python versions
        pytest.skip(f"docs/cli.md was generated with another Python than {python[:-3]}")
    assert page == module.reference(), "docs/cli.md is stale: regenerate it"
    for command in ("assess", "evaluate", "decide", "recommend", "report", "protect"):
        assert f"## sdcrisk {command}\n" in page
    assert "--max-visited MODELS" in page


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _page_sections(page: str) -> dict[str, str]:
    """The ``## sdcrisk NAME`` sections of docs/cli.md, by command name."""
    parts = re.split(r"^## sdcrisk (\w+)\n", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


# default claims in a help text: "graphical: ... (default 1)", "(default 500,000; ...)",
# "(sdcMicro's alpha; default 1)", "loglinear: search (default), ..."
_DEFAULT = re.compile(r"(?:\(|; )default:? ([^;)]+)|([\w.-]+) \(default\)")
_PREFIX = re.compile(r"(?:^|; )([A-Za-z][\w/-]*): ")


def _claims(help_text: str) -> list[tuple[str | None, str]]:
    """(method prefix or None, claimed default) for each default claim of a help text; the
    prefix is the last "name: " that starts the help or follows a '; ' before the claim
    ("loglinear: ... (default 40); latent-class: ... (default 300)")."""
    out = []
    for m in _DEFAULT.finditer(help_text):
        prefixes = _PREFIX.findall(help_text[:m.start()])
        value = m.group(1) if m.group(1) is not None else m.group(2)
        value = value.split(": ")[0].split(", ")[0].strip()
        out.append((prefixes[-1] if prefixes else None, value))
    return out


def _same(claimed: str, value) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        try:
            return float(claimed.replace(",", "")) == float(value)
        except ValueError:
            return False
    return claimed == str(value).replace("_", "-") or claimed == str(value)


def test_cli_reference_documents_every_option():
    """Independent of the Python version that wrote docs/cli.md: every option of every
    command is in that command's section with a help text, and each "(default X)" a help
    text claims is the parser's default or, for a method option, the estimator's."""
    from sdcrisk.analyses.methods import ESTIMATORS
    from sdcrisk.cli._common import METHOD_FLAGS

    def options_of(cls) -> dict:
        return {f.name: f.default for f in dataclasses.fields(cls)}

    sections = _page_sections((DOCS / "cli.md").read_text(encoding="utf-8"))
    commands = _subcommands()
    assert set(sections) == set(commands)
    checked = 0
    for name, parser in commands.items():
        known = {o for a in parser._actions for o in a.option_strings}
        shown = set(re.findall(r"^  (--[a-z][a-z0-9-]*)", sections[name], flags=re.M))
        assert shown <= known, f"docs/cli.md: `sdcrisk {name}` shows {shown - known}"
        for action in parser._actions:
            if not action.option_strings or "-h" in action.option_strings:
                continue
            option = action.option_strings[-1]
            assert re.search(rf"^  {re.escape(option)}\b", sections[name], flags=re.M), (
                f"docs/cli.md: `sdcrisk {name}` lacks {option}: regenerate it")
            assert action.help and action.help.strip(), f"sdcrisk {name} {option} has no help"
            for prefix, claimed in _claims(action.help):
                methods = [m for m in (prefix or "").split("/") if m in ESTIMATORS]
                if action.default is not None and action.default is not False:
                    assert _same(claimed, action.default), (name, option, claimed,
                                                            action.default)
                elif option in METHOD_FLAGS and (methods or prefix is None):
                    # "graphical: ... (default 1)"; no prefix ("MCMC chains (default 4)"):
                    # every method that takes the option has that default
                    names = METHOD_FLAGS[option][1]
                    takers = [options_of(ESTIMATORS[m]) for m in (methods or ESTIMATORS)]
                    values = [f[n] for f in takers for n in names if n in f]
                    assert values and all(_same(claimed, v) for v in values), (
                        name, option, prefix, claimed, values)
                else:
                    continue
                checked += 1
    assert checked >= 40  # the check reached the defaults, not only the names


def test_quoted_benchmark_commands_exist():
    """Every ``python benchmarks/X.py ...`` line of the README and the docs names a script
    that exists, and each of its ``--flags`` and sub-commands is one the script defines."""
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    found = 0
    for page in pages:
        for m in re.finditer(r"python benchmarks/(\w+\.py)([^`#;)\n]*)",
                             page.read_text(encoding="utf-8")):
            script = ROOT / "benchmarks" / m.group(1)
            assert script.is_file(), f"{page.name}: {m.group(0)}"
            source = script.read_text(encoding="utf-8")
            words = m.group(2).split()
            for word in words:
                if word.startswith("--") and word != "--help":
                    assert f'"{word}"' in source, f"{page.name}: {m.group(0).strip()}: {word}"
            if words and not words[0].startswith("-"):  # a sub-command
                assert f'add_parser("{words[0]}"' in source, f"{page.name}: {m.group(0)}"
            found += 1
    assert found >= 30
