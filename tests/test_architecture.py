"""The house's rules (issue 16): layers import only downward, no import cycles, no private
name imported across modules, and the CLI refuses options the chosen method does not take."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "sdcrisk"
LAYERS = ["data", "core", "runtime", "estimators", "analyses", "report", "cli"]


def _imports():
    """(module file, imported module, names, is function-local) for every sdcrisk import."""
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        package = parts[:-1]  # the package the module (or __init__) sits in
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                yield path, target, [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sdcrisk"):
                yield path, node.module, [a.name for a in node.names]


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_no_upward_import_even_inside_functions():
    upward = []
    for path, target, _names in _imports():
        here = _layer(".".join(path.relative_to(SRC.parent).with_suffix("").parts))
        there = _layer(target)
        if here is not None and there is not None and there > here:
            upward.append(f"{path.relative_to(SRC)} -> {target}")
    assert upward == []


def test_no_private_name_imported_across_modules():
    private = [f"{path.relative_to(SRC)}: {target}.{name}"
               for path, target, names in _imports() for name in names
               if name.startswith("_") and name != "__version__"
               and not (SRC.parent / (target + "." + name).replace(".", "/")).with_suffix(
                   ".py").exists()]
    assert private == []


@pytest.mark.skipif(shutil.which("lint-imports") is None,
                    reason="import-linter is not installed (pip install -e '.[dev]')")
def test_import_contracts_hold():
    out = subprocess.run(["lint-imports"], cwd=SRC.parents[1], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-2000:]
    assert "0 broken" in out.stdout


def test_cli_refuses_an_option_the_method_does_not_take(capsys):
    from sdcrisk.cli import main

    rc = main(["assess", "example:uk_census2011", "--keys", "region,sex,age_band",
               "--population-size", "56075912", "--method", "nb", "--chains", "3"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--chains" in err and "hdp" in err and "Traceback" not in err
