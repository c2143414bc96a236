"""``sdcrisk report``: the page's verdict and the exit code make one check.

The page used to check the method's default max global risk (0.01) while the exit code
followed only ``--fail-above``: a file could read "Fails" on the page while the pipeline exited
0, or pass a ``--fail-above`` limit and still read "Fails". The rule now
(:func:`sdcrisk.report.verdict.checked_limits`): the limits given when there are any (they set
the exit code, and the page says so), else the stated default (the page says that it does not
set the exit code). One test per combination, on the bundled ONS census extract (10,000
records) with N = 200,000: nb's global risk is 2.34% on the file and 1.18% on a protected
version with ethnic group and religion each cut to two categories.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from sdcrisk.cli import main
from sdcrisk.data.datasets import example_path

KEYS = "region,sex,age_band,marital_status,ethnic_group,religion"
COMMON = ["--keys", KEYS, "--population-size", "200000", "--no-suda", "--no-uniqueness",
          "--contributions", "none"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("verdict")
    frame = pd.read_csv(example_path("uk_census2011"))
    original, protected = d / "census.csv", d / "protected.csv"
    frame.to_csv(original, index=False)
    coarse = frame.copy()
    for key in ("ethnic_group", "religion"):
        coarse[key] = (coarse[key] > 1).astype(int)
    coarse.to_csv(protected, index=False)
    return original, protected


def report(capsys, tmp_path, data, *extra):
    out = tmp_path / "r.html"
    code = main(["report", str(data), *COMMON, *map(str, extra), "--out", str(out)])
    err = capsys.readouterr().err
    html = out.read_text(encoding="utf-8")
    banners = []
    for m in re.finditer(r'<div class="verdict (pass|fail)" data-verdict="(pass|fail)">\s*'
                         r'<div class="head">(.*?)</div>(.*?)</div>\s*(?=<div class="verdict|'
                         r'<div class="cards)', html, re.S):
        assert m.group(1) == m.group(2)
        body = re.sub(r"<[^>]+>", " ", m.group(4)).replace("&#39;", "'")
        banners.append((m.group(1), m.group(3), " ".join(body.split())))
    return code, err, banners


def test_no_limit_checks_the_stated_default_and_says_the_exit_code_is_not_gated(
        files, tmp_path, capsys):
    code, err, banners = report(capsys, tmp_path, files[0], "--methods", "nb")
    assert code == 0 and "fail-above" not in err
    [(state, head, body)] = banners
    assert state == "fail" and head == "Fails the default limit (method nb)"
    assert re.search(r"fails max global risk 0\.01: global risk 0\.0233\d", body)
    assert ("limit checked: the default, the method's max global risk 0.01 "
            "(--max-global-risk); no limit was given (--fail-above), so this verdict does not "
            "set the exit code (0)") in body
    # the stated default is the method's own: --max-global-risk moves it
    code, _, [(state, head, body)] = report(capsys, tmp_path, files[0], "--methods", "nb",
                                            "--max-global-risk", "0.05")
    assert code == 0 and state == "pass" and head == "Passes the default limit (method nb)"
    assert "passes max global risk 0.05" in body and "max global risk 0.05 (" in body


def test_limit_passed_passes_the_page_and_exits_0(files, tmp_path, capsys):
    # 2.34% fails the default 1% but passes the limit given: the page checks only the latter
    code, err, [(state, head, body)] = report(capsys, tmp_path, files[0], "--methods", "nb",
                                              "--fail-above", "global_risk=0.03")
    assert code == 0 and "fail-above" not in err
    assert state == "pass" and head == "Passes the limit given (method nb)"
    assert re.search(r"passes global risk ≤ 3%: 2\.34%", body)
    assert "max global risk 0.01:" not in body and "fails global" not in body
    assert "those given (--fail-above), which set the exit code (3 when this verdict fails)" \
        in body


def test_limit_breached_fails_the_page_and_exits_3(files, tmp_path, capsys):
    code, err, [(state, head, body)] = report(
        capsys, tmp_path, files[0], "--methods", "nb", "--fail-above", "global_risk=0.02",
        "--fail-above", "sample_uniques=5000")
    assert code == 3
    assert re.search(r"fail-above: global_risk = 0\.0233\d+ exceeds the limit 0\.02 \(method "
                     r"nb\)", err)
    assert "sample_uniques" not in err  # 1,001 sample uniques pass their limit
    assert state == "fail" and head == "Fails the limits given (method nb)"
    assert re.search(r"fails global risk ≤ 2%: 2\.34%", body)
    assert "passes sample uniques ≤ 5,000: 1,001" in body


def test_another_method_breaching_fails_the_page_as_it_fails_the_exit_code(
        files, tmp_path, capsys):
    # --fail-above checks every method of the report: auto's 3.56% breaches 3%, nb's 2.34%
    # does not; the headline (nb) passes, the page must still read "Fails"
    code, err, [(state, head, body)] = report(capsys, tmp_path, files[0], "--methods",
                                              "nb,auto", "--fail-above", "global_risk=0.03")
    assert code == 3 and "(method auto)" in err
    assert state == "fail"
    assert head == "Fails the limit given (method nb passes; other methods fail)"
    assert "Other methods in this report that fail: auto (the exit code checks every method)" \
        in body


def test_protected_file_is_the_one_gated(files, tmp_path, capsys):
    original, protected = files
    # protected 1.18% passes 1.5%, original 2.34% fails it: exit 0, and the page says that
    # the original's "fails" does not set the exit code
    code, err, banners = report(capsys, tmp_path, original, "--methods", "nb", "--protected",
                                protected, "--fail-above", "global_risk=0.015")
    assert code == 0 and "fail-above" not in err
    (ps, ph, pb), (os_, oh, ob) = banners
    assert ps == "pass" and ph == "Protected file protected.csv: passes the limit given " \
        "(method nb)"
    assert re.search(r"passes global risk ≤ 1\.5%: 1\.18%", pb)
    assert "which set the exit code" in pb
    assert os_ == "fail" and oh == "Original file census.csv: fails the limit given (method nb)"
    assert "the exit code follows the protected file's verdict above, not this one" in ob
    # a tighter limit: the protected file breaches it, page and exit code agree
    code, err, banners = report(capsys, tmp_path, original, "--methods", "nb", "--protected",
                                protected, "--fail-above", "global_risk=0.01")
    assert code == 3 and "protected file" in err
    assert banners[0][0] == "fail" and banners[0][1].startswith("Protected file protected.csv: "
                                                                "fails the limit given")


def test_protected_file_without_limit_is_not_gated(files, tmp_path, capsys):
    original, protected = files
    code, _, banners = report(capsys, tmp_path, original, "--methods", "nb", "--protected",
                              protected)
    assert code == 0
    assert [(s, h) for s, h, _ in banners] == [
        ("fail", "Protected file protected.csv: fails the default limit (method nb)"),
        ("fail", "Original file census.csv: fails the default limit (method nb)")]
    for _, _, body in banners:
        assert "so this verdict does not set the exit code (0)" in body


def test_assess_html_page_checks_the_fail_above_limits_too(files, tmp_path, capsys):
    # assess --format html wrote the page without the limits: it checked the default while
    # the exit code followed --fail-above
    out = tmp_path / "a.html"
    code = main(["assess", str(files[0]), "--keys", KEYS, "--population-size", "200000",
                 "--method", "nb", "--format", "html", "--fail-above", "global_risk=0.02",
                 "--out", str(out)])
    capsys.readouterr()
    html = out.read_text(encoding="utf-8")
    assert code == 3 and 'data-verdict="fail"' in html
    assert "Fails the limit given (method nb)" in html and "fails global risk ≤ 2%" in html


def test_limit_on_a_figure_the_headline_lacks_is_said_and_the_page_still_fails(
        files, tmp_path, capsys):
    # pitman-yor gives no p_pu estimate, nb's breaches the limit: the exit code is 3, and the
    # page had no verdict at all when the headline could not check the limit
    code, err, banners = report(capsys, tmp_path, files[0], "--methods", "pitman-yor,nb",
                                "--fail-above", "p_pu=1e-9")
    assert code == 3 and "p_pu" in err and "(method nb)" in err
    [(state, head, body)] = banners
    assert state == "fail"
    assert head == "Fails the limit given (method pitman-yor not checked; other methods fail)"
    assert "not checked: p pu ≤ 1.000e-09 (method pitman-yor gives no p_pu)" in body
    assert "Other methods in this report that fail: nb" in body
