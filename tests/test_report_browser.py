"""The HTML report in a real headless browser (Debian's chromium; ``.ci/run`` installs it).

The page is loaded from a file:// URL with ``--dump-dom`` and chromium's console logging on
stderr (``--enable-logging=stderr --v=0``): every console message (script errors, CSP
violations for anything the page would load, ``console.error``) appears there as a
``CONSOLE`` line. The report has no scripts and loads nothing, so it must produce none, and
the rendered DOM must show the headline figures. Two control pages prove that the check
sees console errors and blocked external loads.

Skipped, with the reason, when no chromium is installed (set ``SDCRISK_CHROMIUM`` to a
browser binary to use another one).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings
from html import unescape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sdcrisk
from sdcrisk import ConvergenceWarning, Microdata, tabulate
from sdcrisk.report.collect import write_report
from sdcrisk.report.render import CSP

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def _browser() -> str:
    given = os.environ.get("SDCRISK_CHROMIUM")
    if given:
        return given
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium found (.ci/run installs Debian's chromium; or set "
                "SDCRISK_CHROMIUM): the headless-browser test of the report is skipped")


def load(path: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """(rendered DOM, console lines) of ``path`` opened in headless chromium."""
    browser = _browser()
    profile = tmp_path / "profile"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--disable-background-networking",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=5000", "--dump-dom", path.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert proc.returncode == 0, f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}"
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return proc.stdout, console


def _population() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 6000

    def skewed(k):
        return rng.choice(k, size=n, p=rng.dirichlet(np.full(k, 0.6)))

    return pd.DataFrame({"region": skewed(12), "age": skewed(9), "sex": rng.integers(1, 3, n),
                         "job": skewed(7)})


def test_console_check_sees_errors_and_blocked_loads(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head>'
                   '<body><p>x</p><script>console.error("boom"); notDefined();</script>'
                   "</body></html>", encoding="utf-8")
    _, console = load(bad, tmp_path)
    assert any('"boom"' in c for c in console)
    assert any("notDefined is not defined" in c for c in console)
    # the report's Content-Security-Policy turns any external load into a console message
    ext = tmp_path / "ext.html"
    ext.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv='
                   f'"Content-Security-Policy" content="{CSP}"><title>t</title></head><body>'
                   '<img src="https://example.com/x.png" alt=""></body></html>',
                   encoding="utf-8")
    _, console = load(ext, tmp_path)
    assert any("Content Security Policy" in c and "example.com" in c for c in console)


def _figure(dom: str, name: str) -> float:
    m = re.search(rf'data-figure="{name}"[^>]*>([^<]+)<', dom)
    assert m is not None, f"headline figure {name} missing from the rendered DOM"
    return float(unescape(m.group(1)).replace(",", ""))


def test_report_renders_without_console_errors(tmp_path):
    frame = _population()
    pop = Microdata.from_source(frame, ["region", "age", "sex", "job"])
    sample = pop.subset(np.flatnonzero(np.random.default_rng(1).random(pop.n) < 0.1),
                        population_size=pop.n)
    table = tabulate(sample, population=pop)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        results = [sdcrisk.PoissonGammaRisk().fit(table), sdcrisk.NegativeBinomialRisk().fit(
            table), sdcrisk.LogLinearRisk(terms="search").fit(table)]
    path = write_report(tmp_path / "report.html", results, title="Browser check")
    dom, console = load(path, tmp_path)
    assert console == [], "\n".join(console)
    assert "<title>Browser check</title>" in dom
    head = results[0]
    assert _figure(dom, "expected_reidentifications") == pytest.approx(
        head.estimate("expected_reidentifications"), rel=5e-4)
    assert _figure(dom, "tau2") == pytest.approx(head.estimate("tau2"), rel=5e-4)
    assert _figure(dom, "tau1") == pytest.approx(head.estimate("tau1"), rel=5e-4)
    assert _figure(dom, "sample_uniques") == table.sample_uniques
    assert _figure(dom, "k3_violations") == int(table.counts[table.counts < 3].sum())
    # the charts made it into the DOM: histogram, key and SUDA contributions, ROC and two
    # calibration plots
    assert dom.count("<svg") == 6
    for section in ("measures", "kanon", "distribution", "drivers", "cells", "uniqueness",
                    "comparison", "truth", "diagnostics", "notes"):
        assert f'id="{section}"' in dom
