"""Risk measures (methods spec section A), written once as pure functions.

* from the truth (f, F): :func:`truth_measures`;
* from any :class:`~sdcrisk.core.predictive.CellPredictive`: :func:`predictive_measures`
  (posterior/predictive expectations, FW eqs 13-16, with predictive intervals);
* sdcMicro/mu-Argus conventions: :func:`expected_reidentifications`,
  :func:`global_risk_threshold`, :func:`household_risk`;
* record-level scoring against the truth: :func:`roc_auc`.

Notation: n1 = number of sample-unique cells (f = 1), N = population size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ..data.sizes import check_number, short_repr
from ..exceptions import ParameterError
from . import _nb
from .predictive import CellPredictive

__all__ = [
    "Measure",
    "truth_measures",
    "predictive_measures",
    "expected_reidentifications",
    "global_risk_threshold",
    "household_risk",
    "k_anonymity_violations",
    "roc_auc",
    "theta_expectation",
    "cell_blocks",
    "block_slices",
]


@dataclass(frozen=True)
class Measure:
    """A named measure with an optional interval.

    ``lower``/``upper`` are the bounds of a ``level`` (e.g. 0.95) interval, or ``None``.
    ``interval`` says what kind of interval it is.
    """

    name: str
    estimate: float | None
    lower: float | None = None
    upper: float | None = None
    level: float | None = None
    interval: str | None = None
    description: str = ""

    def to_dict(self) -> dict:
        return {
            "estimate": _num(self.estimate),
            "lower": _num(self.lower),
            "upper": _num(self.upper),
            "level": self.level,
            "interval": self.interval,
            "description": self.description,
        }


def _num(x):
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None


DESCRIPTIONS = {
    "tau1": "expected number of sample uniques that are population unique",
    "tau2": "expected number of correct matches of sample uniques (sum over SU of E[1/F])",
    "p_pu": "proportion of the population that is population unique, P(PU)",
    "p_pu_given_su": "proportion of sample uniques that are population unique, P(PU|SU)",
    "theta": "probability that a match to a sample unique is correct (Skinner-Elliot theta)",
    "expected_reidentifications": "expected re-identifications over all records, "
    "sum of record risks (sdcMicro global_risk_ER)",
    "global_risk": "expected re-identifications / n (sdcMicro global_risk)",
    "household_expected_reidentifications": "sum over records of the household risk "
    "1 - prod(1 - r) (sdcMicro hier_risk_ER)",
    "household_global_risk": "household expected re-identifications / n (sdcMicro hier_risk)",
}


#: how far outside [0, 1] a risk may lie from rounding before it is refused
RISK_SLACK = 1e-9


def k_anonymity_violations(f: np.ndarray, ks=(2, 3, 5)) -> dict[int, int]:
    """Number of records in cells with count below k, for each k (A.4)."""
    f = np.asarray(f)
    return {int(k): int(f[f < k].sum()) for k in ks}


def truth_measures(f: np.ndarray, big_f: np.ndarray, *, population_size: float,
                   population_uniques: int) -> dict[str, float]:
    """The true measures of spec A.1 from sample counts f and population counts F.

    ``f`` and ``big_f`` are aligned over the sample's observed cells; ``population_uniques``
    is the number of population cells with F = 1 (all of them, observed in the sample or not).
    """
    f, big_f = _aligned_counts(f, big_f)
    # written so that NaN fails (population_size=nan gave p_pu = nan without a word)
    if not population_uniques >= 0:
        raise ParameterError(f"population_uniques={population_uniques!r} must be >= 0")
    if not f.sum() <= check_number("population_size", population_size) < math.inf:
        raise ParameterError(f"population_size={population_size!r} must be a finite number "
                             f"at least the sample's n={int(f.sum())}")
    su = f == 1
    n1 = int(su.sum())
    tau1 = int(np.count_nonzero(su & (big_f == 1)))
    tau2 = float(np.sum(1.0 / big_f[su]))
    sum_f_su = float(big_f[su].sum())
    return {
        "tau1": float(tau1),
        "tau2": tau2,
        "p_pu": population_uniques / population_size,
        "p_pu_given_su": tau1 / n1 if n1 else float("nan"),
        "theta": n1 / sum_f_su if n1 else float("nan"),
        "sample_uniques": float(n1),
    }


def _aligned_counts(f, big_f) -> tuple[np.ndarray, np.ndarray]:
    """Sample and population counts over the same cells: 1-d, equal lengths, whole numbers
    with f >= 0 and F >= f (a cell seen in the sample has F >= 1)."""
    try:
        f = np.asarray(f, float)
        big_f = np.asarray(big_f, float)
    except (TypeError, ValueError):
        raise ParameterError(f"f={short_repr(f)} and big_f={short_repr(big_f)} must be "
                             "counts") from None
    if f.ndim != 1 or f.shape != big_f.shape:
        raise ParameterError(f"f (shape {f.shape}) and big_f (shape {big_f.shape}) must be 1-d "
                             "and aligned over the same cells")
    for name, x in (("f", f), ("big_f", big_f)):
        bad = ~np.isfinite(x) | (x < 0) | (x != np.round(x))
        if bad.any():
            raise ParameterError(f"{name} holds {x[bad][0]:g}: counts are whole numbers >= 0")
    bad = big_f < np.maximum(f, 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ParameterError(f"cell {i}: big_f={big_f[i]:g} < f={f[i]:g}; a population count "
                             "is at least the sample count and at least 1 in a sample cell")
    return f, big_f


def theta_expectation(n1: int, mean_sum: float, var_sum: float) -> float:
    """E[n1 / (n1 + X)] with X = sum over SU of U_k, by a moment-matched negative binomial.

    X is matched to NB(size, prob) with the same mean and variance (as FW section 4 / spec
    D.7 does with a gamma law for the cell probabilities); this is exact when every SU cell
    has the same NB prob (e.g. BF with equal weights, Poisson-gamma). With no overdispersion
    the plug-in ``n1 / (n1 + E[X])`` is returned.
    """
    if n1 == 0:
        return float("nan")
    if mean_sum <= 0:
        return 1.0
    if var_sum <= mean_sum * (1 + 1e-12):
        return n1 / (n1 + mean_sum)
    prob = mean_sum / var_sum
    size = mean_sum * prob / (1 - prob)
    return float(n1 * _nb.expected_inverse(float(n1), size, prob))


def _normal_interval(mean: float, var: float, level: float, lo: float, hi: float):
    z = NormalDist().inv_cdf(0.5 + level / 2)
    sd = float(np.sqrt(max(var, 0.0)))
    return max(lo, mean - z * sd), min(hi, mean + z * sd)


def predictive_measures(pred: CellPredictive, *, population_size: float, level: float = 0.95,
                        multiplicity: np.ndarray | None = None) -> dict[str, Measure]:
    """Expected tau1, tau2, P(PU), P(PU|SU), theta under a predictive law (spec A.3).

    Intervals for tau1 and tau2 are predictive intervals of the realised measure given the
    fitted model (independent cells, normal approximation; parameter uncertainty is not
    included): tau1 is a sum of independent Bernoulli(P(U_k = 0)) and tau2 a sum of
    independent 1/F_k over the sample uniques.

    With ``multiplicity``, each entry of ``pred`` stands for that many cells with the same
    law (an exchangeable model's cells grouped by their count f: issue 20), and every sum
    over cells is a sum over the entries weighted by it.
    """
    f = pred.f
    uniques = np.flatnonzero(f == 1)
    mult = None if multiplicity is None else np.asarray(multiplicity, float)[uniques]
    n1 = len(uniques) if mult is None else int(round(float(mult.sum())))
    # every cell unique: the laws' own arrays, not cell-long gathered copies
    su = None if len(uniques) == len(f) else uniques
    tau1 = var1 = tau2 = var2 = mean = var = 0.0
    for cells, w in cell_blocks(su, len(f), mult):
        p0 = pred.prob_zero(cells)
        tau1 += _total(p0, w)
        var1 += _total(p0 * (1 - p0), w)
        e1 = pred.expected_inverse(cells)
        tau2 += _total(e1, w)
        if n1:
            var2 += _total(pred.expected_inverse_square(cells) - e1**2, w)
        del p0, e1
        mean += _total(pred.mean(cells), w)
        var += _total(pred.variance(cells), w)
    kind = "predictive (model parameters fixed, normal approximation)"
    l1, u1 = _normal_interval(tau1, var1, level, 0.0, float(n1))
    l2, u2 = _normal_interval(tau2, var2, level, 0.0, float(n1))
    out = {
        "tau1": Measure("tau1", tau1, l1, u1, level, kind, DESCRIPTIONS["tau1"]),
        "tau2": Measure("tau2", tau2, l2, u2, level, kind, DESCRIPTIONS["tau2"]),
    }
    unobs = pred.unobserved_prob_one
    p_pu = None if unobs is None else (tau1 + unobs) / population_size
    out["p_pu"] = Measure("p_pu", p_pu, description=DESCRIPTIONS["p_pu"])
    out["p_pu_given_su"] = Measure(
        "p_pu_given_su", tau1 / n1 if n1 else None,
        l1 / n1 if n1 else None, u1 / n1 if n1 else None, level if n1 else None,
        kind if n1 else None, DESCRIPTIONS["p_pu_given_su"],
    )
    theta = theta_expectation(n1, mean, var)
    out["theta"] = Measure("theta", theta if n1 else None, description=DESCRIPTIONS["theta"]
                           + " (moment-matched NB for the SU total)")
    return out


def _total(x: np.ndarray, weights: np.ndarray | None) -> float:
    """The sum of ``x``, each entry weighted by ``weights`` (its multiplicity) if given."""
    return float(np.sum(x)) if weights is None else float(np.dot(weights, x))


#: cells per block of :func:`cell_blocks`: sums over more cells are taken block by block
SUM_BLOCK = 1 << 20


def cell_blocks(cells: np.ndarray | None, n_cells: int, weights: np.ndarray | None = None):
    """``(cells, weights)`` blocks covering the index array ``cells`` (None: all ``n_cells``
    cells), at most :data:`SUM_BLOCK` cells each, for sums of per-cell expectations whose
    temporaries would otherwise be several cell-long arrays (1 GB at 2.5x10^7 cells, issue 20).

    Up to :data:`SUM_BLOCK` cells there is one block, ``cells`` itself, so such sums are the
    same bits as over the whole array; beyond, the sum of the block sums differs from the
    whole array's pairwise sum in the last bits.
    """
    total = n_cells if cells is None else len(cells)
    if total <= SUM_BLOCK:
        yield cells, weights
        return
    for block in block_slices(total):
        yield (np.arange(block.start, block.stop) if cells is None else cells[block],
               None if weights is None else weights[block])


def block_slices(n: int):
    """Slices of at most :data:`SUM_BLOCK` positions covering ``range(n)`` (one slice up to
    :data:`SUM_BLOCK`): the blocks of :func:`cell_blocks`, for arrays over every cell."""
    for start in range(0, max(n, 1), SUM_BLOCK):
        yield slice(start, min(start + SUM_BLOCK, n))


def expected_reidentifications(f: np.ndarray, cell_risk: np.ndarray, n: int
                               ) -> dict[str, Measure]:
    """sdcMicro's ER = sum over records of the record risk, and ER / n (spec A.4)."""
    f, cell_risk = np.asarray(f), np.asarray(cell_risk)
    if f.shape != cell_risk.shape or f.ndim != 1:
        er = float(np.sum(f * cell_risk))
    else:  # block by block: no cell-long product (0.2 GB at 2.5x10^7 cells, issue 20)
        er = 0.0
        for block in block_slices(f.size):
            er += float(np.sum(f[block] * cell_risk[block]))
    return {
        "expected_reidentifications": Measure(
            "expected_reidentifications", er, description=DESCRIPTIONS[
                "expected_reidentifications"]),
        "global_risk": Measure("global_risk", er / n, description=DESCRIPTIONS["global_risk"]),
    }


def global_risk_threshold(record_risk: np.ndarray, max_global_risk: float, *,
                          counts: np.ndarray | None = None) -> float | None:
    """mu-Argus / sdcMicro record-risk threshold for a target global risk.

    The largest threshold t (among the record risk values, scanned from the top) such that
    capping every risk above t at t brings the expected re-identifications below
    ``max_global_risk * n`` (mu-Argus 4.1 manual, sec. 2.3.4.1, eq. 17). ``None`` when the
    file already meets the target (sdcMicro prints NA), and 0 when no threshold does.

    With ``counts``, ``record_risk`` holds one risk per cell shared by ``counts`` records:
    the same threshold without an n-long array of record risks (issue 20).

    Capping at v gives C(v) = sum_i w_i min(r_i, v), which grows with v, so the threshold is
    the largest risk value with C(v) < target. Large inputs find it by bisecting on
    histograms of the values (a few passes in blocks, no sort of the whole array: at 5.9 M
    cells the sort and its cell-long copies were 0.3 GB, issue 20); small ones (and the last
    bin) by sorting.
    """
    if (isinstance(max_global_risk, bool)
            or not isinstance(max_global_risk, int | float | np.integer | np.floating)
            or not 0 < max_global_risk < 1):
        raise ParameterError(f"max_global_risk={max_global_risk!r} must be a number in (0, 1)")
    values = _risk_array(record_risk, "global_risk_threshold").ravel()
    w = None if counts is None else np.asarray(counts).ravel()  # converted block by block
    if values.size == 0:
        return None
    lo, hi = values.min(), values.max()  # NaN propagates: no n-long temporary
    if not (-RISK_SLACK <= lo and hi <= 1 + RISK_SLACK):  # slack: rounding of sums
        raise ParameterError(f"record risks must lie in [0, 1]; got values from {lo:g} to "
                             f"{hi:g}")
    if w is not None and (w.shape != values.shape or not w.min() >= 0):
        raise ParameterError(f"counts (shape {w.shape}) must be >= 0, one per risk value "
                             f"(shape {values.shape})")
    n = float(values.size) if w is None else float(w.sum())
    target = max_global_risk * n
    total = _block_sum(values, w)
    if total < target:
        return None
    top = float(values.max())
    if values.size <= _SORTED_THRESHOLD_MAX:
        found = _threshold_sorted(values, w, target, top)
        return 0.0 if found is None else found
    return _threshold_binned(values, w, target, top)


#: inputs (or bins) up to this size are solved by sorting them
_SORTED_THRESHOLD_MAX = 1 << 16
#: histogram bins per bisection pass, and entries per block of a pass
_THRESHOLD_BINS = 4096
_THRESHOLD_BLOCK = 1 << 20


def _block_sum(values: np.ndarray, w: np.ndarray | None) -> float:
    if w is None:
        return float(values.sum())
    return float(sum(np.dot(w[s:s + _THRESHOLD_BLOCK].astype(float),
                            values[s:s + _THRESHOLD_BLOCK])
                     for s in range(0, values.size, _THRESHOLD_BLOCK)))


def _threshold_sorted(values, w, target, top, below_wr=0.0, above_w=0.0) -> float | None:
    """The largest value v < ``top`` with C(v) < target (None if there is none), by sorting
    ``values`` (the values of a range; ``below_wr`` = sum w r under the range, ``above_w`` =
    sum w above it)."""
    order = np.argsort(values)
    r = values[order]
    wr = np.ones(r.size) if w is None else w[order].astype(float)
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
    under = np.concatenate([[0.0], np.cumsum(wr * r)])[starts]   # sum w r below each level
    at_or_above = wr.sum() - np.concatenate([[0.0], np.cumsum(wr)])[starts]
    levels = r[starts]
    capped = below_wr + under + levels * (at_or_above + above_w)
    ok = np.flatnonzero((capped < target) & (levels < top))
    return float(levels[ok[-1]]) if ok.size else None


def _threshold_binned(values, w, target, top) -> float:
    lo, hi = float(values.min()), top
    below_wr = above_w = 0.0
    bins = _THRESHOLD_BINS
    while True:
        if lo == hi:
            return lo if lo < top else 0.0
        sw = np.zeros(bins)
        swr = np.zeros(bins)
        cnt = np.zeros(bins, np.int64)
        mn = np.full(bins, np.inf)
        mx = np.full(bins, -np.inf)
        scale = bins / (hi - lo)
        for s in range(0, values.size, _THRESHOLD_BLOCK):
            v = values[s:s + _THRESHOLD_BLOCK]
            keep = (v >= lo) & (v <= hi)
            v = v[keep]
            wv = None if w is None else w[s:s + _THRESHOLD_BLOCK][keep]
            idx = np.minimum(((v - lo) * scale).astype(np.int64), bins - 1)
            c = np.bincount(idx, minlength=bins)
            cnt += c
            sw += c if wv is None else np.bincount(idx, weights=wv, minlength=bins)
            swr += np.bincount(idx, weights=v if wv is None else wv * v, minlength=bins)
            np.minimum.at(mn, idx, v)
            np.maximum.at(mx, idx, v)
        full = np.flatnonzero(cnt)
        prefix_wr = np.concatenate([[0.0], np.cumsum(swr[full])])[:-1]
        suffix_w = np.cumsum(sw[full][::-1])[::-1]
        capped = below_wr + prefix_wr + mn[full] * (suffix_w + above_w)
        ok = np.flatnonzero((capped < target) & (mn[full] < top))
        if ok.size == 0:  # only possible on the first pass: no level meets the target
            return 0.0
        k = ok[-1]
        b = full[k]
        below_wr += prefix_wr[k]
        above_w += suffix_w[k + 1] if k + 1 < len(full) else 0.0
        lo, hi = float(mn[b]), float(mx[b])
        if cnt[b] <= _SORTED_THRESHOLD_MAX:
            keep = (values >= lo) & (values <= hi)
            found = _threshold_sorted(values[keep], None if w is None else w[keep], target,
                                      top, below_wr, above_w)
            return lo if found is None else found  # lo met the target on this pass


def _risk_array(record_risk, func: str) -> np.ndarray:
    """``record_risk`` as a float array, or the project's error naming the argument (text or
    other non-numbers raised numpy's ValueError from inside)."""
    try:
        return np.asarray(record_risk, float)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{func}: record_risk={short_repr(record_risk)} is not an array "
                             "of numbers; pass the record risks (e.g. "
                             "result.record_risk('reidentification'))") from exc


def household_risk(record_risk: np.ndarray, household: np.ndarray) -> np.ndarray:
    """Household risk 1 - prod over members (1 - r_i), assigned to every member."""
    r = _risk_array(record_risk, "household_risk")
    hh = np.asarray(household)
    if r.ndim != 1 or hh.shape != r.shape:
        raise ParameterError(f"household_risk: record_risk (shape {r.shape}) and household "
                             f"(shape {hh.shape}) must be 1-d, one entry per record")
    if hh.size and (hh.dtype.kind not in "iu" or hh.min() < 0):
        got = f"{hh.min()}" if hh.dtype.kind in "iu" else f"{hh.dtype} values"
        raise ParameterError("household_risk: household must hold household codes, integers "
                             f">= 0 (as Microdata.household); got {got}")
    if r.size and not (-RISK_SLACK <= r.min() and r.max() <= 1 + RISK_SLACK):
        raise ParameterError(f"household_risk: record risks must lie in [0, 1]; got values "
                             f"from {r.min():g} to {r.max():g}")
    with np.errstate(divide="ignore"):
        log_safe = np.log1p(-np.minimum(r, 1.0))
    sums = np.bincount(hh, weights=log_safe, minlength=int(hh.max()) + 1 if hh.size else 0)
    return -np.expm1(sums[hh])


#: bits of the binary mantissa kept when roc_auc ranks scores (2^-32: 2.3e-10 relative)
TIE_BITS = 32


def rounded_for_ranking(x: np.ndarray) -> np.ndarray:
    """``x`` with each finite value's mantissa rounded to ``TIE_BITS`` bits (infinities and
    zeros unchanged): values within float noise of each other become equal."""
    finite = np.isfinite(x)
    mant, exp = np.frexp(np.where(finite, x, 0.0))
    return np.where(finite, np.ldexp(np.round(mant * 2.0 ** TIE_BITS) / 2.0 ** TIE_BITS, exp), x)


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """Area under the ROC curve (Mann-Whitney, ties count one half); None if one class.

    Parameters
    ----------
    scores : array of float
        One risk score per record (or cell); larger means more at risk. Infinite scores rank
        first or last.
    labels : array of 0/1 or bool
        Whether each record is a positive (e.g. population unique), one per score.

    Returns
    -------
    float or None
        P(score of a random positive > score of a random negative) + 1/2 P(tie); None when
        every label is the same (the AUC is then undefined).

    Raises
    ------
    ParameterError
        Scores and labels of different lengths or not 1-d; a score that is NaN or not a
        number (the message says how many and where the first is: a missing score is refused
        rather than dropped, because dropping records changes the AUC of the rest and hides
        an upstream fault); a label other than 0/1 or True/False.

    Notes
    -----
    AUC = (R_+ - n_+ (n_+ + 1) / 2) / (n_+ n_-), where R_+ is the sum over positives of the
    mid-ranks of their scores among all scores (Mann-Whitney U / (n_+ n_-)).

    Scores that agree to about 9.6 significant digits (their binary mantissas rounded to
    ``TIE_BITS`` bits) are ties: a model's risks that are equal in exact arithmetic come out
    of a fit (IPF, sums in another order) 1e-16 to 1e-15 apart, and their order, decided by
    rounding, moved a log-linear AUC by 1e-4 between numpy versions.

    Examples
    --------
    >>> roc_auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])  # 3 of the 4 pairs ordered
    0.75
    """
    try:
        scores = np.asarray(scores, float)
    except (TypeError, ValueError):
        raise ParameterError(f"roc_auc: scores={short_repr(scores)} must be numbers, one "
                             "per record") from None
    raw = np.asarray(labels)
    if scores.ndim != 1 or scores.shape != raw.shape:
        raise ParameterError(f"roc_auc: scores (shape {scores.shape}) and labels (shape "
                             f"{raw.shape}) must be 1-d and of the same length, one per "
                             "record")
    if raw.dtype != bool:
        try:
            is_binary = raw.dtype.kind in "iuf" and bool(np.all((raw == 0) | (raw == 1)))
        except TypeError:  # pragma: no cover - numpy comparison of odd objects
            is_binary = False
        if not is_binary:
            bad = next((v for v in raw.tolist() if v not in (0, 1)), raw.tolist()[:1])
            raise ParameterError(f"roc_auc: labels must be 0/1 or True/False (1 = positive), "
                                 f"one per record; got {short_repr(bad)}")
    labels = raw.astype(bool)
    missing = np.isnan(scores)
    if missing.any():
        raise ParameterError(
            f"roc_auc: {int(missing.sum())} of the {scores.size} scores are NaN (the first at "
            f"position {int(np.flatnonzero(missing)[0])}); the AUC ranks every score: drop "
            "those records from both scores and labels, or fix what produced the NaN")
    n_pos = int(labels.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    scores = rounded_for_ranking(scores)
    ordered = np.sort(scores)
    # average rank of tied scores: positions left+1 .. right (1-based)
    ranks = (np.searchsorted(ordered, scores, "left") + np.searchsorted(ordered, scores,
                                                                          "right") + 1) / 2
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
