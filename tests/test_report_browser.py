"""The HTML report in a real headless browser (Debian's chromium; ``.ci/run`` installs it).

The page is loaded from a file:// URL with ``--dump-dom`` and chromium's console logging on
stderr (``--enable-logging=stderr --v=0``): every console message (script errors, CSP
violations for anything the page would load, ``console.error``) appears there as a
``CONSOLE`` line. The report has no scripts and loads nothing, so it must produce none, and
the rendered DOM must show the headline figures. Two control pages prove that the check
sees console errors and blocked external loads.

The layout is checked as a reader sees it (issue 18): a screenshot at 1280 px wide and the
page printed to PDF (A4), with no table wider than the space it has -- measured in the page
by a script added to a copy of the report (the report itself has none), once with the screen
styles at 1280 px and once with the print styles at the printable width of A4 -- and the
last column of the widest tables present in the PDF's text (with poppler's ``pdftotext``,
where installed).

Skipped, with the reason, when no chromium is installed (set ``SDCRISK_CHROMIUM`` to a
browser binary to use another one).
"""

from __future__ import annotations

import json
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


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    browser = _browser()
    profile = tmp_path / "profile"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", "--disable-background-networking",
           f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "HOME": str(tmp_path)})


def load(path: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """(rendered DOM, console lines) of ``path`` opened in headless chromium."""
    proc = _chromium(tmp_path, "--enable-logging=stderr", "--v=0",
                     "--virtual-time-budget=5000", "--dump-dom", path.resolve().as_uri())
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


# --- layout: screenshot at 1280 px, print to PDF, no table cut ----------------------------------
#: A4 (210 mm) less the report's print margins (12 mm each side), in CSS pixels (96 per inch)
A4_PRINTABLE_PX = round((210 - 2 * 12) / 25.4 * 96)

_MEASURE = """<script>
addEventListener("load", () => {
  const page = document.documentElement.clientWidth;
  const rows = [];
  for (const t of document.querySelectorAll("table")) {
    const r = t.getBoundingClientRect();
    if (r.width === 0) continue;  // inside a closed <details>
    const box = t.parentElement.getBoundingClientRect();
    const s = t.closest("section");
    rows.push({section: s ? s.id : "", table: Math.ceil(r.width), room: Math.floor(box.width),
               right: Math.ceil(r.right), page: page,
               last: t.querySelector("thead th:last-child").textContent});
  }
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify({page: page,
                                    scroll: document.documentElement.scrollWidth,
                                    tables: rows});
  document.body.appendChild(out);
});
</script>"""


def _measured(report: Path, tmp_path: Path, *, width: int, print_styles: bool) -> dict:
    """Table widths of ``report`` laid out at ``width`` px, optionally with its print styles.

    A copy gets a measuring script (its Content-Security-Policy removed so that the script
    runs); with ``print_styles`` the copy's ``@media print`` rules apply on screen.
    """
    page = report.read_text(encoding="utf-8")
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    if print_styles:
        page = page.replace("@media print{", "@media all{")
    page = page.replace("</body>", _MEASURE + "</body>")
    copy = tmp_path / f"measure-{width}-{int(print_styles)}.html"
    copy.write_text(page, encoding="utf-8")
    proc = _chromium(tmp_path, f"--window-size={width},2000", "--hide-scrollbars",
                     "--virtual-time-budget=5000", "--dump-dom", copy.resolve().as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = re.search(r'<pre id="measured">(.*?)</pre>', proc.stdout, re.S)
    assert m is not None, "the measuring script did not run"
    return json.loads(unescape(m.group(1)))


def _wide_report(tmp_path: Path) -> tuple[Path, object]:
    """A report with the widest tables: several methods, the truth, auto's validation."""
    frame = _population()
    pop = Microdata.from_source(frame, ["region", "age", "sex", "job"])
    sample = pop.subset(np.flatnonzero(np.random.default_rng(2).random(pop.n) < 0.1),
                        population_size=pop.n)
    table = tabulate(sample, population=pop)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = {"auto": sdcrisk.get_estimator(
            "auto", candidates=("nb", "poisson-gamma", "loglinear:terms=all-2-way")).fit(table),
            "nb": sdcrisk.NegativeBinomialRisk().fit(table),
            "loglinear": sdcrisk.LogLinearRisk(terms="search").fit(table)}
    path = write_report(tmp_path / "wide.html", results, title="Layout check",
                        limits={"global_risk": 0.01, "tau2.upper": 40})
    return path, results


def _png_width(path: Path) -> int:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return int.from_bytes(head[16:20], "big")


def test_screenshot_and_print_have_no_table_cut(tmp_path):
    _browser()
    report, _ = _wide_report(tmp_path)
    # screen at 1280 px: every table fits the box it sits in, the page has no sideways scroll
    screen = _measured(report, tmp_path, width=1280, print_styles=False)
    assert len(screen["tables"]) >= 10
    assert screen["scroll"] <= screen["page"]
    cut = [t for t in screen["tables"] if t["table"] > t["room"] + 1]
    assert cut == [], cut
    # print: the @media print rules at the printable width of A4
    printed = _measured(report, tmp_path, width=A4_PRINTABLE_PX, print_styles=True)
    assert printed["page"] == A4_PRINTABLE_PX
    assert printed["scroll"] <= printed["page"]
    cut = [t for t in printed["tables"] if t["right"] > printed["page"] + 1
           or t["table"] > t["room"] + 1]
    assert cut == [], cut
    # a control: without the print rules' smaller type, the comparison table would not fit
    # A4 -- so the check above can fail
    unstyled = _measured(report, tmp_path, width=A4_PRINTABLE_PX, print_styles=False)
    assert any(t["table"] > t["room"] + 1 for t in unstyled["tables"])
    # the screenshot at 1280 px and the PDF themselves
    shot = tmp_path / "report.png"
    proc = _chromium(tmp_path, "--window-size=1280,3000", "--hide-scrollbars",
                     f"--screenshot={shot}", report.resolve().as_uri())
    assert proc.returncode == 0 and _png_width(shot) == 1280, proc.stderr[-2000:]
    pdf = tmp_path / "report.pdf"
    proc = _chromium(tmp_path, "--no-pdf-header-footer", f"--print-to-pdf={pdf}",
                     report.resolve().as_uri())
    assert proc.returncode == 0 and pdf.read_bytes()[:5] == b"%PDF-", proc.stderr[-2000:]
    pdftotext = shutil.which("pdftotext")
    if pdftotext:
        text = subprocess.run([pdftotext, "-layout", str(pdf), "-"], capture_output=True,
                              text=True, check=True).stdout
        # the last column of the widest tables made it onto the paper
        for section in ("comparison", "diagnostics", "cells"):
            lasts = {t["last"] for t in printed["tables"] if t["section"] == section}
            assert lasts, section
            for last in lasts:
                assert last.split()[-1] in text, (section, last)
    keep = os.environ.get("SDCRISK_SHOTS")
    if keep:
        shutil.copy(shot, Path(keep) / "report-1280.png")
        shutil.copy(pdf, Path(keep) / "report.pdf")
