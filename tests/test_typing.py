"""The public API is visible to type checkers (issue 16 item 6).

Every public name resolves lazily through a module ``__getattr__``, which type checkers read
as ``Any``; the ``TYPE_CHECKING`` imports must therefore name every entry of ``__all__``.
mypy (``[tool.mypy]`` in pyproject.toml) then checks the public modules and
``tests/typing_check.py``, whose ``assert_type`` calls fail on any name seen as ``Any``.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import sdcrisk
import sdcrisk.estimators

ROOT = Path(__file__).resolve().parents[1]


def _names_for_type_checkers(module) -> set[str]:
    """Names a type checker sees bound in the module: its top-level definitions and imports,
    including those under ``if TYPE_CHECKING:``."""
    tree = ast.parse(Path(module.__file__).read_text())
    statements = []
    for node in tree.body:
        is_type_checking = isinstance(node, ast.If) and getattr(node.test, "id", None) == (
            "TYPE_CHECKING")
        statements += node.body if is_type_checking else [node]
    names: set[str] = set()
    for stmt in statements:
        if isinstance(stmt, ast.ImportFrom | ast.Import):
            names |= {a.asname or a.name for a in stmt.names}
        elif isinstance(stmt, ast.ClassDef | ast.FunctionDef):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
    return names


@pytest.mark.parametrize("module", [sdcrisk, sdcrisk.estimators], ids=lambda m: m.__name__)
def test_every_public_name_is_visible_to_type_checkers(module):
    missing = set(module.__all__) - _names_for_type_checkers(module)
    assert missing == set()
    # and each one really is where the TYPE_CHECKING block says
    for name in module.__all__:
        assert getattr(module, name) is not None


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (pip install -e '.[dev]')")
def test_mypy_is_clean_on_the_public_api():
    out = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-1000:]
    assert "Success" in out.stdout
