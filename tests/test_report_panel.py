"""The report a panel acts on (issue 18 item 6) and the templated page (issue 16 item 5).

One method throughout (the headline's), auto's assumptions grouped per model, the verdict
line against the thresholds given, the histogram's threshold lines, human labels in the
diagnostics, guidance by the uniqueness table, the before/after section for a protected file,
the CLI defaults, autoescaping templates shipped as package data, and the SVG charts of
decide/recommend drawn without matplotlib.
"""

from __future__ import annotations

import html
import re
import sys
import warnings
import xml.etree.ElementTree as ET
from importlib import resources

import numpy as np
import pandas as pd
import pytest

import sdcrisk
from sdcrisk import Microdata, tabulate
from sdcrisk.cli import build_parser, main
from sdcrisk.report import charts
from sdcrisk.report.collect import build_report
from sdcrisk.report.contributions import variable_contributions
from sdcrisk.report.formats import LABELS

KEYS = ["region", "age", "sex", "job"]


def _frame(n: int = 600, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)

    def skewed(k):
        return rng.choice(k, size=n, p=rng.dirichlet(np.full(k, 0.7)))

    return pd.DataFrame({"region": skewed(8), "age": skewed(9), "sex": rng.integers(1, 3, n),
                         "job": skewed(6)})


@pytest.fixture(scope="module")
def table():
    return tabulate(Microdata.from_source(_frame(), KEYS, population_size=12_000))


@pytest.fixture(scope="module")
def blend_table():
    return tabulate(Microdata.from_source(_frame(), KEYS, population_size=3_000))


@pytest.fixture(scope="module")
def auto_blend(blend_table):
    """auto between poisson-gamma and graphical: on this file it averages the two."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sdcrisk.get_estimator("auto", candidates=("poisson-gamma", "graphical")).fit(
            blend_table)
    assert len(res.fitted["choice"]["candidates"]) == 2  # a blend
    return res


# --- one method throughout -------------------------------------------------------------------
def test_drivers_use_the_headline_method_not_nb(blend_table, auto_blend):
    table = blend_table
    page = build_report(auto_blend, suda=False, uniqueness=False)
    drivers = page[page.index('id="drivers"'):page.index("</section>",
                                                         page.index('id="drivers"'))]
    assert "Method: auto:" in drivers and "Method: nb:" not in drivers
    df = variable_contributions(auto_blend)
    assert (df["method"] == "auto").all()
    # the all-keys row is auto among the candidates it chose, fitted again: its ER is the
    # headline's when the choice is the same
    chosen = auto_blend.fitted["choice"]["candidates"]
    refit = sdcrisk.get_estimator("auto", candidates=tuple(chosen)).fit(table)
    assert df["expected_reidentifications"].iloc[0] == pytest.approx(
        refit.estimate("expected_reidentifications"), rel=1e-12)
    # the table shows the same figure
    assert f"{df['expected_reidentifications'].iloc[0]:.4g}" in drivers


def test_mcmc_headline_falls_back_to_nb_and_says_so(table):
    res = sdcrisk.NegativeBinomialRisk().fit(table)
    import dataclasses

    fake = dataclasses.replace(res, method="hdp")
    df = variable_contributions(fake)
    assert (df["method"] == "nb").all()
    page = build_report(fake, suda=False, uniqueness=False)
    assert "hdp is an MCMC method, too slow to fit once per key: nb is fitted instead" in page


def test_auto_assumptions_are_grouped_by_model(blend_table, auto_blend):
    table = blend_table
    page = build_report(auto_blend, contributions=False, suda=False, uniqueness=False)
    choice = auto_blend.fitted["choice"]
    assert "Assumptions, by model" in page
    own = {}
    for label, method in zip(choice["candidates"], choice["methods"], strict=True):
        fit = sdcrisk.get_estimator(method).fit(table)
        own[label] = fit.assumptions
        start = page.index(f"<h4>candidate {html.escape(label)}")
        block = page[start:page.index("</ul>", start)]
        for a in fit.assumptions:
            assert f"<li>{html.escape(a, quote=False)}</li>" in block.replace("&#39;", "'")
    start = page.index("<h4>auto: the method choice</h4>")
    block = page[start:page.index("</ul>", start)]
    assert "pseudo-population validation" in block
    # a blend: each group carries its weights, and no assumption is left out or repeated
    w = choice["weights"]["tau1"][0]
    assert f"weight {w:.0%} for tau1" in page
    listed = [a for group in own.values() for a in group]
    assert set(listed) | {auto_blend.assumptions[-1]} == set(auto_blend.assumptions)


# --- verdict ------------------------------------------------------------------------------------
def test_verdict_line_against_the_limits_checked(table):
    # no limit given: the stated default, the method's max global risk
    res = sdcrisk.NegativeBinomialRisk(max_global_risk=0.05).fit(table)
    gr = res.estimate("global_risk")
    tau2 = res.measures["tau2"]
    assert gr > 0.05  # this file fails its target
    page = build_report(res, contributions=False, suda=False, uniqueness=False)
    assert 'data-verdict="fail"' in page and "Fails the default limit (method nb)" in page
    assert f"fails max global risk 0.05: global risk {gr:.4g}" in page
    assert "so this verdict does not set the exit code (0)" in page
    # limits given: they alone are checked (the default is not), and they set the exit code
    page = build_report(res, contributions=False, suda=False, uniqueness=False,
                        limits={"tau2.upper": tau2.upper * 1.01, "sample_uniques": 1})
    assert 'data-verdict="fail"' in page and "Fails the limits given (method nb)" in page
    assert "max global risk 0.05:" not in page
    assert f"passes tau2 (upper bound) ≤ {tau2.upper * 1.01:.4g}: {tau2.upper:.4g}" in page
    assert (f"fails sample uniques ≤ 1: {table.sample_uniques:,}") in page
    assert "which set the exit code (3 when this verdict fails)" in page
    # a generous limit passes although the default target fails
    page = build_report(res, contributions=False, suda=False, uniqueness=False,
                        limits={"global_risk": 0.95})
    assert 'data-verdict="pass"' in page and "passes global risk ≤ 95%" in page
    easy = sdcrisk.NegativeBinomialRisk(max_global_risk=0.9).fit(table)
    page = build_report(easy, contributions=False, suda=False, uniqueness=False)
    assert 'data-verdict="pass"' in page and "passes max global risk 0.9" in page
    with pytest.raises(sdcrisk.ParameterError, match="'middle' is not a bound"):
        build_report(easy, limits={"tau2.middle": 1})


def test_limits_are_read_alike_from_python_and_the_command_line():
    """build_report(limits=...) and --fail-above read a limit's name by one function: the same
    (measure, bound, limit) from both, and the same refusal of a bound that is not one (the
    API split at the first dot and the CLI at the last, in two sets of words)."""
    from sdcrisk.cli._common import parse_limits
    from sdcrisk.report.verdict import normalise_limits

    assert (normalise_limits({"tau2.upper": 5, "global_risk": 0.01})
            == parse_limits(["tau2.upper=5", "global_risk=0.01"])
            == [("tau2", "upper", 5.0), ("global_risk", "estimate", 0.01)])
    for call in (lambda: normalise_limits({"tau2.middle": 1}),
                 lambda: parse_limits(["tau2.middle=1"])):
        with pytest.raises(sdcrisk.ParameterError,
                           match="'middle' is not a bound; use MEASURE, MEASURE.upper or "
                                 "MEASURE.lower"):
            call()


def test_cli_report_defaults_to_auto_and_prints_the_verdict(tmp_path, capsys):
    parser = build_parser()
    rep = next(a for a in parser._subparsers._group_actions[0].choices["report"]._actions
               if a.dest == "methods")
    assert rep.default == "auto" and "default auto" in rep.help
    path = tmp_path / "s.csv"
    _frame(300).to_csv(path, index=False)
    out = tmp_path / "r.html"
    code = main(["report", str(path), "--keys", ",".join(KEYS), "--population-size", "6000",
                 "--no-suda", "--no-uniqueness", "--contributions", "none",
                 "--fail-above", "global_risk=0.001", "--out", str(out)])
    capsys.readouterr()
    assert code == 3
    page = out.read_text(encoding="utf-8")
    assert "<h3>auto</h3>" in page and 'data-verdict="fail"' in page
    assert "Fails the limit given (method auto)" in page and "fails global risk ≤ 0.1%" in page
    assert "max global risk 0.01:" not in page  # the limit given replaces the default


# --- histogram threshold lines ------------------------------------------------------------------
def test_high_risk_cut_above_one_is_said_not_drawn(table, monkeypatch):
    """sdcMicro's cut max(median + 3 MAD, 0.1) can exceed 1 (1.655 on a ghanaS sample): no
    record risk can, so the line only stretched the log axis past 1. It is now told in the
    caption and not drawn; a cut below 1 is still drawn."""
    import sdcrisk.report.collect as collect

    res = sdcrisk.NegativeBinomialRisk().fit(table)
    kw = dict(contributions=False, suda=False, uniqueness=False)
    page = build_report(res, **kw)
    assert ">sdcMicro high-risk cut" in page  # drawn, with its label
    monkeypatch.setattr(collect, "sdcmicro_high_risk", lambda r, counts=None: (0, 1.655))
    page = build_report(res, **kw)
    assert ">sdcMicro high-risk cut" not in page
    assert ("sdcMicro's high-risk cut max(median + 3 MAD, 0.1) = 1.655 is above 1, the "
            "largest risk a record can have: no record is high-risk by it (not drawn)."
            ) in html.unescape(page)


def test_histogram_draws_its_threshold_lines():
    edges = np.linspace(-3, 0, 13)
    counts = np.arange(12)
    markers = [charts.Marker(0.01, "max global risk 0.01"),
               charts.Marker(0.0001, "far left")]  # outside the data: the axis widens
    svg = charts.histogram(edges, counts, title="t", xlabel="x", ylabel="y", log_x=True,
                           markers=markers)
    assert svg.count('stroke-dasharray="5 3"') == 2
    # x positions on the log axis: from 1e-4 to 1 over the plot width 64 .. 624
    x0, x1 = 64, 640 - 16
    for value, label in ((0.01, "max global risk 0.01"), (0.0001, "far left")):
        line = re.search(r'<line x1="([-0-9.]+)"[^>]*stroke-dasharray="5 3"', svg[
            svg.index(f">{label}") - 400:])
        expected = x0 + (x1 - x0) * (np.log10(value) + 4) / 4
        assert float(line.group(1)) == pytest.approx(expected, abs=0.1)
    assert ">1e-4<" in svg  # the widened axis has a tick at 10^-4


def test_histogram_bars_stay_below_the_marker_labels():
    """Four labelled markers over a histogram whose tallest bar is the last: every bar's top
    lies below the last label's baseline (before, the bars ran under the labels)."""
    edges = np.linspace(-3, 0, 13)
    counts = np.array([0, 30, 170, 240, 120, 140, 160, 125, 105, 115, 250, 90], float)
    markers = [charts.Marker(10 ** -1.98, "mu-Argus threshold"),
               charts.Marker(10 ** -0.5, "sdcMicro cut"),
               charts.Marker(0.01, "max global risk 0.01"), charts.Marker(0.2, "mean risk")]
    svg = charts.histogram(edges, counts, title="t", xlabel="x", ylabel="y", log_x=True,
                           markers=markers)
    label_y = [float(y) for y in re.findall(r'<text x="[-0-9.]+" y="([-0-9.]+)"[^>]*'
                                            r'class="marker"', svg)]
    assert len(label_y) == 4
    bar_tops = [float(y) for y in re.findall(r'<rect x="[-0-9.]+" y="([-0-9.]+)" width="[-0-9.]+" '
                                               r'height="[-0-9.]+" fill', svg)]
    assert len(bar_tops) == 11
    assert min(bar_tops) > max(label_y) + 2
    # without markers the tallest bar reaches the top tick's height (no headroom added)
    plain = charts.histogram(edges, counts, title="t", xlabel="x", ylabel="y", log_x=True)
    tops = [float(y) for y in re.findall(r'<rect x="[-0-9.]+" y="([-0-9.]+)" width="[-0-9.]+" '
                                         r'height="[-0-9.]+" fill', plain)]
    assert min(tops) == pytest.approx(16 + (280 - 46 - 16) * (1 - 250 / 250), abs=0.1)


def test_report_histogram_shows_target_and_mean(table):
    res = sdcrisk.NegativeBinomialRisk().fit(table)
    page = build_report(res, contributions=False, suda=False, uniqueness=False)
    dist = page[page.index('id="distribution"'):page.index("</section>",
                                                            page.index('id="distribution"'))]
    gr = res.estimate("global_risk")
    for label in ("max global risk 0.01", f"mean risk {gr:.4g}", "sdcMicro high-risk cut"):
        assert f">{label}" in dist, label
    thr = res.thresholds["record_risk_threshold"]
    if thr:
        assert f">mu-Argus threshold {thr:.4g}" in dist
    assert "Dashed lines:" in dist


# --- labels and guidance -------------------------------------------------------------------------
def test_diagnostics_use_human_labels(auto_blend):
    page = build_report(auto_blend, contributions=False, suda=False, uniqueness=False)
    for internal in ("rel_err_tau1", "rel_err_tau2", "median_abs_rel_err", "median_auc",
                     "validation_design", "record_risk_threshold_rule"):
        assert internal not in page, internal
    assert LABELS["median_abs_rel_err_tau1"] in page
    assert "Method-choice validation" in page
    # the errors are percentages of the validation rows
    row = auto_blend.diagnostics["validation"][0]
    assert f"{100 * row['median_abs_rel_err_tau1']:.3g}%" in page


def test_uniqueness_guidance_and_headline_highlight(blend_table, auto_blend):
    page = build_report({"auto": auto_blend,
                         "nb": sdcrisk.NegativeBinomialRisk().fit(blend_table)},
                        contributions=False, suda=False)
    sec = page[page.index('id="uniqueness"'):page.index("</section>",
                                                         page.index('id="uniqueness"'))]
    assert "Which estimate to trust" in sec and "auto chose it by its error" in sec
    assert '<tr class="base"><td>auto: P(PU) × N</td>' in sec
    assert sec.count('<tr class="base">') == 1


def test_uniqueness_guidance_says_what_the_default_auto_rests_on(blend_table):
    """The default (calibrated) auto does not sub-sample the file, so the guidance must not
    say that it chose its method by its error on sub-samples (it said so before)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sdcrisk.AutoRisk().fit(blend_table)
    assert res.fitted["choice"]["rule"] == "calibrated"
    page = build_report({"auto": res}, contributions=False, suda=False)
    sec = page[page.index('id="uniqueness"'):page.index("</section>",
                                                         page.index('id="uniqueness"'))]
    assert "sub-samples" not in sec
    assert "auto combined candidates fitted on this file by a rule learned on real" in sec


# --- before / after a protected file ------------------------------------------------------------
def test_protected_section_compares_the_same_method(tmp_path, table):
    frame = _frame()
    prot = frame.copy()
    prot["region"] = prot["region"].where(prot["region"] < 4, 99)  # top-code region
    f = prot.groupby(KEYS)["sex"].transform("size")
    prot.loc[f < 2, "job"] = None  # suppress job in the sample uniques
    before = sdcrisk.NegativeBinomialRisk().fit(table)
    pt = tabulate(Microdata.from_source(prot, KEYS, population_size=12_000))
    after = sdcrisk.NegativeBinomialRisk().fit(pt)
    page = build_report(before, protected=after, contributions=False, suda=False,
                        uniqueness=False)
    sec = page[page.index('id="protected"'):page.index("</section>",
                                                        page.index('id="protected"'))]

    def row(name):
        m = re.search(rf"<td>{re.escape(html.escape(name))}</td><td class=\"num\">([^<]+)</td>"
                      r'<td class="num">([^<]+)</td><td class="num">([^<]+)</td>', sec)
        assert m is not None, name
        return m.groups()

    assert row("sample uniques (f = 1)")[:2] == (f"{table.sample_uniques:,}",
                                                f"{pt.sample_uniques:,}")
    k3 = (int(table.counts[table.counts < 3].sum()), int(pt.counts[pt.counts < 3].sum()))
    assert row("records violating 3-anonymity (f < 3)") == (
        f"{k3[0]:,}", f"{k3[1]:,}", f"{k3[1] - k3[0]:,}")
    er = row("Expected re-identifications (sdcMicro global_risk_ER)")
    assert float(er[1]) == pytest.approx(after.estimate("expected_reidentifications"),
                                         rel=5e-4)
    n_missing = int(prot["job"].isna().sum())
    assert row("missing values of job (suppressed)") == ("0", f"{n_missing:,}",
                                                          f"+{n_missing:,}")
    assert 'href="#protected"' in page
    with pytest.raises(sdcrisk.ParameterError, match="fit the same method"):
        build_report(before, protected=sdcrisk.PoissonGammaRisk().fit(pt))


def test_cli_report_protected(tmp_path, capsys):
    frame = _frame(300)
    orig, prot = tmp_path / "o.csv", tmp_path / "p.csv"
    frame.to_csv(orig, index=False)
    p = frame.copy()
    p.loc[p.groupby(KEYS)["sex"].transform("size") < 2, "age"] = None
    p.to_csv(prot, index=False)
    out = tmp_path / "r.html"
    code = main(["report", str(orig), "--keys", ",".join(KEYS), "--population-size", "6000",
                 "--methods", "nb", "--protected", str(prot), "--no-suda", "--no-uniqueness",
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    page = out.read_text(encoding="utf-8")
    assert "Before and after protection" in page and "<dd>p.csv</dd>" in page
    su = tabulate(Microdata.from_source(p, KEYS, population_size=6000)).sample_uniques
    assert re.search(rf'<td>sample uniques \(f = 1\)</td><td class="num">[^<]+</td>'
                     rf'<td class="num">{su:,}</td>', page)


# --- templates ------------------------------------------------------------------------------------
def test_templates_are_package_data_and_autoescape(table):
    names = {p.name for p in resources.files("sdcrisk.report").joinpath("templates").iterdir()}
    assert {"report.html.j2", "blocks.html.j2", "report.css"} <= names
    page = build_report(sdcrisk.NegativeBinomialRisk().fit(table), contributions=False,
                        suda=False, uniqueness=False, title='<script>x("1")</script> & co')
    assert "<script" not in page
    assert "<title>&lt;script&gt;x(&#34;1&#34;)&lt;/script&gt; &amp; co</title>" in page


# --- decide / recommend charts -------------------------------------------------------------------
def test_tradeoff_svg_without_matplotlib(monkeypatch, tmp_path):
    # every import of matplotlib fails, even when an earlier test loaded it
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    t = sdcrisk.decision_table([(3, 8, 1), (5, 20, 3)], sdcrisk.BetaBinomialPrior(1, 10),
                               l1="exp:10")
    curve = t.curve
    path = charts.plot_tradeoff({"optimal <&>": curve}, tmp_path / "c.svg", risk_fraction=0.2)
    text = path.read_text(encoding="utf-8")
    root = ET.fromstring(text.split("?>", 1)[1])  # a well-formed standalone SVG
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg"
    assert "optimal &lt;&amp;&gt;" in text
    lines = root.findall(f".//{ns}polyline")
    # random suppression, the curve and the risk-fraction guide
    assert len(lines) == 3
    pts = [tuple(map(float, p.split(","))) for p in lines[1].get("points").split()]
    # the plot area of a 560 x (420 + legend) chart: x from 64 to 544, y from 16 down
    x0, x1 = 64, 560 - 16
    xs = np.asarray([p[0] for p in pts])
    np.testing.assert_allclose(xs, x0 + (x1 - x0) * np.asarray(curve.loss_fraction), atol=0.06)
    with pytest.raises(sdcrisk.ParameterError, match="matplotlib"):
        charts.plot_tradeoff(curve, tmp_path / "c.png")


def test_recommendation_paths_svg(tmp_path):
    md = Microdata.from_source(_frame(300), KEYS, population_size=6000)
    target = sdcrisk.RiskTarget(objective="tau2", value=20.0)
    rec = sdcrisk.recommend(md, target, actions=("suppression",), max_steps=5)
    path = charts.plot_recommendations(rec, tmp_path / "r.svg")
    text = path.read_text(encoding="utf-8")
    root = ET.fromstring(text.split("?>", 1)[1])
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f".//{ns}polyline")) == len(rec.plans) + 1  # plans + target
    assert "target 20" in text and rec.plans[0].label() in html.unescape(text)


def test_protected_section_of_the_external_report_leaks_nothing():
    from test_report import KEYS as SECRET_KEYS
    from test_report import _leaks, _secret_frame

    frame = _secret_frame()
    prot = frame.copy()
    prot.loc[[17, 99], "region"] = None  # one secret suppressed, the others left
    before = sdcrisk.NegativeBinomialRisk().fit(tabulate(Microdata.from_source(
        frame, SECRET_KEYS, population_size=40_000)))
    after = sdcrisk.NegativeBinomialRisk().fit(tabulate(Microdata.from_source(
        prot, SECRET_KEYS, population_size=40_000)))
    page = build_report(before, protected=after, top=1000)
    assert "Before and after protection" in page and _leaks(page) == []
    assert "<td>missing values of region (suppressed)</td>" in page


def test_wildcard_counts_in_kanonymity_and_before_after():
    # keys a, b: (1, 1) twice and (1, missing) once. With missing = wildcard the missing value
    # matches b = 1, so every record has f = 3 (sdcMicro's freqCalc); as its own category the
    # (1, missing) record is alone. Two other records (2, 2) and (2, 3) stay sample unique.
    original = pd.DataFrame({"a": [1, 1, 1, 2, 2], "b": [1, 1, 2, 2, 3]})
    protected = original.assign(b=[1, 1, None, 2, 3])
    opts = {"population_size": 50, "missing": "wildcard"}
    before = sdcrisk.NegativeBinomialRisk(mode="sdcmicro").fit(
        tabulate(Microdata.from_source(original, ["a", "b"], **opts)))
    after_table = tabulate(Microdata.from_source(protected, ["a", "b"], **opts))
    # the table counts with the wildcard fk too (exact cells would give 5: every f < 3)
    assert after_table.k_anonymity_violations((3,))[3] == 2
    after = sdcrisk.NegativeBinomialRisk(mode="sdcmicro").fit(after_table)
    page = build_report(before, protected=after, contributions=False, suda=False,
                        uniqueness=False)
    sec = page[page.index('id="protected"'):]
    assert re.search(r'<td>records violating 3-anonymity \(f &lt; 3\)</td><td class="num">5'
                     r'</td><td class="num">2</td><td class="num">-3</td>', sec)
    assert "missing = wildcard" in sec
    page = build_report(after, contributions=False, suda=False, uniqueness=False)
    kanon = page[page.index('id="kanon"'):]
    assert re.search(r'<td class="num">3</td><td class="num">2</td>', kanon)  # k=3: 2 records
    assert re.search(r'data-figure="sample_uniques">2<', page)


def test_before_after_counts_cells_of_the_key_space_and_patterns_apart(tmp_path, capsys):
    # original (a, b): (1,1) twice, (1,2), (2,2), (2,3): 4 cells of the key space. The
    # protected file suppresses b of the (1,2) record: (1,1), (2,2), (2,3) remain 3 cells, and
    # (1, missing) is a pattern that matches (1,1), (1,2) and (1,3), no cell of its own.
    original = pd.DataFrame({"a": [1, 1, 1, 2, 2], "b": [1, 1, 2, 2, 3]})
    protected = original.assign(b=[1, 1, None, 2, 3])
    opts = {"population_size": 50, "missing": "wildcard"}
    nb = sdcrisk.NegativeBinomialRisk(mode="sdcmicro")
    before = nb.fit(tabulate(Microdata.from_source(original, ["a", "b"], **opts)))
    after = nb.fit(tabulate(Microdata.from_source(protected, ["a", "b"], **opts)))
    page = build_report(before, protected=after, contributions=False, suda=False,
                        uniqueness=False)
    sec = page[page.index('id="protected"'):]
    cells = (r'<td>observed key combinations</td><td class="num">4</td><td class="num">3</td>'
             r'<td class="num">-1</td>')
    patterns = (r'<td>patterns with missing values \(each matches several combinations\)</td>'
                r'<td class="num">0</td><td class="num">1</td><td class="num">\+1</td>')
    assert re.search(cells, sec) and re.search(patterns, sec)
    # the same through the CLI
    orig, prot, out = tmp_path / "o.csv", tmp_path / "p.csv", tmp_path / "r.html"
    original.to_csv(orig, index=False)
    protected.to_csv(prot, index=False)
    code = main(["report", str(orig), "--keys", "a,b", "--population-size", "50",
                 "--methods", "nb", "--mode", "sdcmicro", "--missing", "wildcard",
                 "--protected", str(prot), "--no-suda", "--no-uniqueness",
                 "--contributions", "none", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    sec = out.read_text(encoding="utf-8")
    sec = sec[sec.index('id="protected"'):]
    assert re.search(cells, sec) and re.search(patterns, sec)
    # without missing values in either file the patterns row is left out
    page = build_report(before, protected=before, contributions=False, suda=False,
                        uniqueness=False)
    assert "patterns with missing values" not in page[page.index('id="protected"'):]


def test_before_after_with_missing_as_a_category_says_so():
    """The same files read with missing values as a category (assess's default): (1, missing)
    is a cell of its own, so the row counts 4 combinations after where protect printed 3
    (and 1 pattern with missing values); the row and the caption now say which convention
    counted them."""
    original = pd.DataFrame({"a": [1, 1, 1, 2, 2], "b": [1, 1, 2, 2, 3]})
    protected = original.assign(b=[1, 1, None, 2, 3])
    nb = sdcrisk.NegativeBinomialRisk()
    before, after = (nb.fit(tabulate(Microdata.from_source(f, ["a", "b"], population_size=50)))
                     for f in (original, protected))
    page = build_report(before, protected=after, contributions=False, suda=False,
                        uniqueness=False)
    sec = page[page.index('id="protected"'):]
    assert re.search(r'<td>observed key combinations \(a missing value as a category\)</td>'
                     r'<td class="num">4</td><td class="num">4</td><td class="num">0</td>', sec)
    assert "a missing (suppressed) key value is a category of its own" in sec
    # no missing value in either file: the plain row, no caption about them
    page = build_report(before, protected=before, contributions=False, suda=False,
                        uniqueness=False)
    sec = page[page.index('id="protected"'):]
    assert "<td>observed key combinations</td>" in sec and "category of its own" not in sec


def test_report_of_auto_fitted_unvalidated():
    # no sample uniques: auto fits its first candidate without validation and its choice
    # names no settings; the report still uses it throughout
    twice = pd.concat([_frame(30, seed=1)] * 2, ignore_index=True)
    tiny = tabulate(Microdata.from_source(twice, KEYS, population_size=600))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sdcrisk.get_estimator("auto").fit(tiny)
    assert res.fitted["choice"]["rule"] == "not validated"
    page = build_report(res, suda=False, uniqueness=False)
    assert "<h3>auto</h3>" in page and "fitted without validation" in page
    df = variable_contributions(res)
    assert (df["method"] == "auto").all()


@pytest.mark.parametrize("missing", ["category", "wildcard"])
def test_record_figures_from_the_cells_are_the_record_level_figures(missing):
    """The histogram, sdcMicro's high-risk count and the count above the threshold are taken
    over the cells, each counted as its records (no n-long array: 2.2 GB at 10^8 records):
    every figure equals the record-level one, to the bit."""
    from sdcrisk.report.collect import _median, _risk_histogram, sdcmicro_high_risk

    rng = np.random.default_rng(5)
    n = 3000

    def key(common, rare):  # most records on a few levels, a tail of rare ones
        return np.where(rng.random(n) < 0.93, rng.integers(0, common, n),
                        rng.integers(common, rare, n))

    data = pd.DataFrame({"a": key(3, 60), "b": key(3, 40),
                         "c": rng.integers(0, 4, n).astype(float)})
    data.loc[rng.random(n) < 0.03, "c"] = np.nan
    md = Microdata.from_source(data, ["a", "b", "c"], population_size=30_000,
                               missing=missing)
    res = sdcrisk.NegativeBinomialRisk(mode="sdcmicro").fit(tabulate(md))
    records, cells, w = res.record_risk(), res.cell_risk(), res.table.counts
    assert np.array_equal(np.bincount(res.table.record_map(), minlength=len(w)), w)
    high = sdcmicro_high_risk(records)
    assert high[0] > 200  # (311 and 295 records: a real count, not 0 == 0)
    assert sdcmicro_high_risk(cells, counts=w) == high
    a = _risk_histogram(records, np.ones(len(records), np.int64))  # each record itself
    b = _risk_histogram(cells, w)
    np.testing.assert_array_equal(a["edges"], b["edges"])
    np.testing.assert_array_equal(a["counts"], b["counts"])
    assert (a["zeros"], a["n"]) == (b["zeros"], b["n"]) == (a["zeros"], 3000)
    # the weighted median is np.median of the repeats, odd and even totals, with ties
    for n in (7, 8, 101, 1000):
        values = rng.integers(0, 9, n) / 8
        counts = rng.integers(1, 5, n)
        assert _median(values, counts) == float(np.median(np.repeat(values, counts)))
