"""Write docs/cli.md: every sdcrisk command's --help, as the CLI prints it (80 columns).

``tests/test_docs.py::test_cli_reference_is_up_to_date`` fails when an option, a default or a
help text changes without this page being regenerated::

    python tests/reference/make_cli_reference.py docs/cli.md
"""

from __future__ import annotations

import argparse
import os
import sys

HEAD = """# Command-line reference

Every command's `--help`, as `sdcrisk` prints it (generated with Python {python} by
`python tests/reference/make_cli_reference.py docs/cli.md`; a test fails when an option changes
and this page is not regenerated). The guides explain when to use what:
[Primer](primer.md), [Choosing key variables](keys.md), [Protect workflow](protect.md),
[Errors and exit codes](errors.md).
"""


def reference() -> str:
    """The page's text."""
    from sdcrisk.cli import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"  # argparse wraps to the terminal width
    try:
        parser = build_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        parts = [HEAD.format(python=python), "## sdcrisk\n", "```text",
                 parser.format_help().rstrip(), "```\n"]
        for name, command in sub.choices.items():
            parts += [f"## sdcrisk {name}\n", "```text", command.format_help().rstrip(),
                      "```\n"]
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return "\n".join(parts)


if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="utf-8") as fh:
        fh.write(reference())
