"""The choice rule of ``method="auto"``: pure functions of a validation table, no fitting.

Loss of a rule on replicate r: L_r = (|e1_r| + |e2_r|) / 2 with e1, e2 its relative errors of
tau1 and tau2; its score is the mean over tau1 and tau2 of the median over replicates of
|relative error|. Replicates whose true value is 0 have no relative error and are left out
(a file with no unique record at all is scored on tau2 alone).

1. **Single**: the candidate with the smallest score, b.
2. **Average** (validation cannot tell them apart): every candidate c whose losses are not
   significantly above b's - mean(L_c - L_b) <= max(tie_margin, 2 sd(L_c - L_b) / sqrt(R))
   over the R replicates - is averaged with b, with equal weights. When the data cannot rank
   the candidates, claiming one of them is best would be noise; the average is the
   model-averaging answer (each candidate equally supported).
3. **Pair** (``combine=True``): for two candidates a, b and a measure m with validated median
   signed errors e_a, e_b of opposite signs, the weights w_a = |e_b| / (|e_a| + |e_b|),
   w_b = 1 - w_a cancel the validated biases (w_a e_a + w_b e_b = 0); with errors of the same
   sign the less biased candidate takes weight 1. A pair's errors are measured by
   leave-one-replicate-out (weights from the other replicates, error on the held-out one);
   it is chosen only if its score beats rules 1-2 by more than ``tie_margin``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:  # validation imports the estimators package: no import cycle at run time
    from .validation import ValidationRow, ValidationTable

MEASURES = ("tau1", "tau2")
#: validated score differences below this (absolute, in relative-error units) do not count
TIE_MARGIN = 0.02


@dataclass(frozen=True)
class Choice:
    """What ``auto`` chose and the validated errors of that choice.

    Attributes
    ----------
    labels : tuple of str
        The candidate labels combined (one for a single choice).
    weights : dict
        Per measure ("tau1", "tau2"), the weight of each label (sums to 1).
    errors : dict
        Per measure, the validated relative error of the rule on each replicate
        (leave-one-out for a pair).
    score : float
        Mean over tau1, tau2 of the median |relative error|.
    rule : {"single", "average", "pair"}
        Which rule gave the choice.
    runner_up, runner_up_score
        The best single candidate when the rule is not "single", else the second best.
    """

    labels: tuple[str, ...]
    weights: dict[str, tuple[float, ...]]
    errors: dict[str, np.ndarray] = field(repr=False)
    score: float
    rule: Literal["single", "average", "pair"] = "single"
    runner_up: str | None = None
    runner_up_score: float | None = None

    @property
    def is_blend(self) -> bool:
        return len(self.labels) > 1

    def describe(self) -> str:
        """The choice in words, e.g. ``graphical`` or ``tau1: 0.62 x a + 0.38 x b; ...``."""
        if not self.is_blend:
            return self.labels[0]
        if self.rule == "average":
            return "equal-weight average of " + ", ".join(self.labels)
        parts = []
        for m in MEASURES:
            terms = " + ".join(f"{w:.2f} x {label}"
                               for w, label in zip(self.weights[m], self.labels, strict=True))
            parts.append(f"{m}: {terms}")
        return "; ".join(parts)


def score_of(errors: dict[str, np.ndarray]) -> float:
    """Mean over tau1, tau2 of the median |relative error| (NaN replicates ignored; a measure
    with no finite error - a true value of 0 on every replicate - is left out)."""
    meds = []
    for m in MEASURES:
        e = np.abs(np.asarray(errors[m], float))
        e = e[np.isfinite(e)]
        if e.size:
            meds.append(float(np.median(e)))
    return float(np.mean(meds)) if meds else math.inf


def losses(errors: dict[str, np.ndarray]) -> np.ndarray:
    """Per-replicate loss: mean of |e1| and |e2| over the finite ones (NaN if neither)."""
    e = np.abs(np.stack([np.asarray(errors[m], float) for m in MEASURES]))
    finite = np.isfinite(e)
    count = finite.sum(axis=0)
    total = np.where(finite, e, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _row_errors(vt: ValidationTable, row: ValidationRow) -> dict[str, np.ndarray]:
    return {m: vt.relative_errors(getattr(row, m), m) for m in MEASURES}


def not_worse(loss_c: np.ndarray, loss_b: np.ndarray, margin: float = TIE_MARGIN) -> bool:
    """Whether c's losses are not significantly above b's (paired over replicates)."""
    d = np.asarray(loss_c, float) - np.asarray(loss_b, float)
    d = d[np.isfinite(d)]
    if not d.size:
        return False
    noise = 2 * float(np.std(d, ddof=1)) / math.sqrt(d.size) if d.size > 1 else 0.0
    return float(np.mean(d)) <= max(margin, noise)


def pair_weights(err_a: np.ndarray, err_b: np.ndarray) -> tuple[float, float]:
    """Weights that cancel the median signed errors of a and b (see module notes)."""
    ea = _median(err_a)
    eb = _median(err_b)
    if not (math.isfinite(ea) and math.isfinite(eb)):
        return (1.0, 0.0) if math.isfinite(ea) else (0.0, 1.0)
    if ea * eb < 0:
        wa = abs(eb) / (abs(ea) + abs(eb))
        return wa, 1.0 - wa
    return (1.0, 0.0) if abs(ea) <= abs(eb) else (0.0, 1.0)


def _median(e: np.ndarray) -> float:
    e = np.asarray(e, float)
    e = e[np.isfinite(e)]
    return float(np.median(e)) if e.size else math.nan


def _combined_errors(vt: ValidationTable, rows, weights: dict[str, tuple[float, ...]]
                     ) -> dict[str, np.ndarray]:
    out = {}
    for m in MEASURES:
        est = sum(w * np.asarray(getattr(r, m), float)
                  for w, r in zip(weights[m], rows, strict=True))
        out[m] = vt.relative_errors(est, m)
    return out


def pair_loo_errors(vt: ValidationTable, a: ValidationRow, b: ValidationRow
                    ) -> tuple[dict[str, np.ndarray], dict[str, tuple[float, float]]]:
    """Leave-one-replicate-out errors of the weighted pair, and its weights on all replicates."""
    errors, weights = {}, {}
    for m in MEASURES:
        ea = vt.relative_errors(getattr(a, m), m)
        eb = vt.relative_errors(getattr(b, m), m)
        est_a = np.asarray(getattr(a, m), float)
        est_b = np.asarray(getattr(b, m), float)
        truth = vt.truth(m)
        r = len(truth)
        out = np.full(r, np.nan)
        for i in range(r):
            keep = np.arange(r) != i
            wa, wb = pair_weights(ea[keep], eb[keep])
            combined = wa * est_a[i] + wb * est_b[i]
            out[i] = combined / truth[i] - 1.0 if truth[i] > 0 else np.nan
        errors[m] = out
        weights[m] = pair_weights(ea, eb)
    return errors, weights


def choose(vt: ValidationTable, *, combine: bool = True, tie_margin: float = TIE_MARGIN
           ) -> Choice:
    """The rule (single, average of indistinguishable candidates, or pair) of smallest score.

    Raises
    ------
    ValueError
        When no candidate was validated on every replicate.
    """
    usable = [r for r in vt.rows if r.usable]
    scored = [(score_of(_row_errors(vt, r)), i, r) for i, r in enumerate(usable)]
    singles = sorted((s for s in scored if math.isfinite(s[0])), key=lambda t: (t[0], t[1]))
    if not singles:
        raise ValueError("no candidate has a validated error on the sub-samples")
    best_score, _, best = singles[0]
    best_err = _row_errors(vt, best)
    second = singles[1] if len(singles) > 1 else None
    choice = Choice(
        labels=(best.candidate.label,), weights={m: (1.0,) for m in MEASURES},
        errors=best_err, score=best_score, rule="single",
        runner_up=None if second is None else second[2].candidate.label,
        runner_up_score=None if second is None else second[0])
    ties = [r for _, _, r in singles[1:]
            if not_worse(losses(_row_errors(vt, r)), losses(best_err), tie_margin)]
    if ties:
        rows = [best, *ties]
        k = len(rows)
        weights = {m: tuple([1.0 / k] * k) for m in MEASURES}
        errors = _combined_errors(vt, rows, weights)
        choice = Choice(labels=tuple(r.candidate.label for r in rows), weights=weights,
                        errors=errors, score=score_of(errors), rule="average",
                        runner_up=best.candidate.label, runner_up_score=best_score)
    if not combine or len(vt.replicates) < 3:
        return choice
    best_pair = None
    for (_, _, a), (_, _, b) in itertools.combinations(singles, 2):
        errors, weights = pair_loo_errors(vt, a, b)
        if all(w[0] in (0.0, 1.0) and w == weights["tau1"] for w in weights.values()):
            continue  # not a blend: the same single candidate for both measures
        s = score_of(errors)
        if best_pair is None or s < best_pair[0]:
            best_pair = (s, a, b, errors, weights)
    if best_pair is not None and best_pair[0] < choice.score - tie_margin:
        s, a, b, errors, weights = best_pair
        choice = Choice(labels=(a.candidate.label, b.candidate.label), weights=weights,
                        errors=errors, score=s, rule="pair", runner_up=best.candidate.label,
                        runner_up_score=best_score)
    return choice
