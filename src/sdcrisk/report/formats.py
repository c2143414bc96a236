"""Number formats and labels of the report: the template filters and the words a panel reads.

:func:`fmt`, :func:`pct`, :func:`pct1` and :func:`ratio` are registered as Jinja filters by
:mod:`sdcrisk.report.render`; :func:`label` turns the internal names that estimators leave
in their diagnostics (``rel_err_tau1``) into words. :class:`Scrubber` withholds rare
category labels from free text of an external report.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ..analyses.methods import ESTIMATORS

__all__ = ["MEASURE_LABELS", "LABELS", "fmt", "pct", "pct1", "signed_pct", "ratio", "seconds",
           "label", "method_title", "method_line", "Scrubber", "FORMATS"]


MEASURE_LABELS = {
    "tau1": "tau1: sample uniques that are population unique",
    "tau2": "tau2: expected correct matches of sample uniques",
    "p_pu": "P(PU): share of the population that is unique",
    "p_pu_given_su": "P(PU|SU): share of sample uniques that are population unique",
    "theta": "theta: probability a match to a sample unique is correct",
    "expected_reidentifications": "Expected re-identifications (sdcMicro global_risk_ER)",
    "global_risk": "Global risk = ER / n (sdcMicro global_risk)",
    "household_expected_reidentifications": "Household expected re-identifications "
    "(sdcMicro hier_risk_ER)",
    "household_global_risk": "Household global risk (sdcMicro hier_risk)",
}

#: words for the names estimators and analyses use internally (diagnostics, thresholds)
LABELS = {
    "candidate": "candidate", "method": "method", "setting": "setting", "status": "status",
    "rel_err_tau1": "relative error of tau1, per sub-sample",
    "rel_err_tau2": "relative error of tau2, per sub-sample",
    "median_abs_rel_err_tau1": "median |error| of tau1",
    "median_abs_rel_err_tau2": "median |error| of tau2",
    "median_rel_err_tau1": "median signed error of tau1",
    "median_rel_err_tau2": "median signed error of tau2",
    "median_auc": "median AUC (population uniques among sample uniques)",
    "auc": "AUC per sub-sample", "warnings": "warnings", "seconds": "seconds",
    "max_global_risk": "max global risk (target)",
    "record_risk_threshold": "record-risk threshold (mu-Argus/sdcMicro)",
    "record_risk_threshold_rule": "rule for the record-risk threshold",
    "ci_level": "interval level", "k_anonymity": "k-anonymity levels checked",
    "design": "sub-sampling design", "fraction": "sub-sampling fraction",
    "fraction_rule": "how the fraction was chosen", "replicates": "sub-samples",
    "min_records": "records per sub-sample (target)", "max_fraction": "largest fraction",
    "time_budget": "time budget (s)", "n": "records", "cells": "key combinations",
    "sample_uniques": "sample uniques", "model": "model", "iterations": "iterations",
    "converged": "converged", "max_margin_deviation": "largest margin deviation",
    "Z_tau1": "Z of tau1", "Z_tau2": "Z of tau2", "Z": "Z (minimum-error statistic)",
    "partition": "partition", "chosen": "chosen", "step": "step",
    "log_marginal_likelihood": "log marginal likelihood",
    "posterior_probability": "posterior probability", "cliques": "cliques", "edges": "edges",
    "multimodal": "several modes", "rhat": "R-hat", "ess_bulk": "bulk ESS",
    "ess_tail": "tail ESS", "weighted_k_anonymity_violations":
    "records in cells with F_hat < k (weighted)",
}


def label(name: Any) -> str:
    """Words for an internal name: the table above, else underscores as spaces."""
    text = str(name)
    if text in LABELS:
        return LABELS[text]
    if text in MEASURE_LABELS:
        return MEASURE_LABELS[text]
    return text.replace("_", " ")


#: where N came from (``CellTable.population_size_source``), in words; other codes as they are
_N_SOURCES = {"sampling_fraction": "n / sampling fraction",
              "assumed_population": "the file is the whole population",
              "population": "population file"}


def population_source(code: str) -> str:
    """``CellTable.population_size_source`` in words (``sampling_fraction`` -> ``n / sampling
    fraction``; ``given`` and ``weights`` as they are)."""
    return _N_SOURCES.get(code, code)


def fmt(x: Any, digits: int = 4) -> str:
    """A number for the page: integers with separators, others to ``digits`` significant."""
    if x is None:
        return "–"
    if isinstance(x, bool | np.bool_):
        return "yes" if x else "no"
    if isinstance(x, int | np.integer):
        return f"{int(x):,}"
    if isinstance(x, float | np.floating):
        x = float(x)
        if not math.isfinite(x):
            return "–"
        if x == 0:
            return "0"
        a = abs(x)
        if a >= 10 ** (digits - 1):  # no decimals left: with separators, as integers
            return f"{x:,.0f}"
        if a >= 1e-3:
            text = f"{x:.{digits}g}"
            if "e" in text:
                return f"{x:,.0f}"
            return text
        return f"{x:.{digits - 1}e}"
    return str(x)


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float | np.floating) and not math.isfinite(x))


def pct(x: Any, digits: int = 3) -> str:
    """A share as a percentage to ``digits`` significant digits (0.0123 -> 1.23%)."""
    if _missing(x):
        return "–"
    return f"{100 * float(x):.{digits}g}%"


def pct1(x: Any) -> str:
    """A value that already is a percentage, to one decimal (12.34 -> 12.3%)."""
    return "–" if _missing(x) else f"{float(x):.1f}%"


def signed_pct(x: Any) -> str:
    """A relative error as a signed percentage (-0.52 -> -52%)."""
    return "–" if _missing(x) else f"{100 * float(x):+.3g}%"


def ratio(x: Any) -> str:
    return "–" if _missing(x) else f"{float(x):.2f}"


def seconds(x: Any) -> str:
    return "–" if _missing(x) else f"{float(x):.3g}"


def plain(x: Any) -> str:
    return "–" if x is None else str(x)


#: column formats by name (``{"fmt": "pct"}`` in a table column); registered as filters
FORMATS = {"fmt": fmt, "pct": pct, "pct1": pct1, "signed_pct": signed_pct, "ratio": ratio,
           "seconds": seconds, "str": plain}


def method_title(name: str) -> str:
    cls = ESTIMATORS.get(name)
    doc = (cls.__doc__ or "").strip().splitlines() if cls is not None else []
    return f"{name}: {doc[0].rstrip('.').replace('``', '')}" if doc else name


def method_line(res, extra: str = "") -> str:
    """"Method: nb: ... · intervals at 95%" (plain text; the template escapes it)."""
    thr = res.thresholds
    parts = [f"Method: {method_title(res.method)}"]
    if "ci_level" in thr:
        parts.append(f"intervals at {thr['ci_level']:.0%}")
    if extra:
        parts.append(extra)
    return " · ".join(parts)


class Scrubber:
    """Withholds rare category labels from free text of an external report."""

    def __init__(self, data: dict):
        self.active = data["kind"] == "external"
        self.words: list[str] = []
        if not self.active:
            return
        tables = [data["table"]]
        if data.get("protected") is not None:
            tables.append(data["protected"]["result"].table)
        for table in tables:
            f = table.counts
            for j, levels in enumerate(table.levels):
                counts = np.bincount(table.cell_codes[:, j], weights=f, minlength=len(levels))
                for c in np.flatnonzero((counts > 0) & (counts < data["min_count"])):
                    word = str(levels[c])
                    if len(word) >= 2 and not re.fullmatch(r"[-+0-9.eE ]+", word):
                        self.words.append(word)
        self.words.sort(key=len, reverse=True)

    def __call__(self, text: Any) -> str:
        text = str(text)
        for w in self.words:
            if w in text:
                text = text.replace(w, "[withheld]")
        return text
