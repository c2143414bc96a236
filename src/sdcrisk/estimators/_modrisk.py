"""sdcMicro ``modRisk`` compatibility: its global measures gr1 and gr2 from a fitted model.

sdcMicro (R/modRisk.R, method "default"/"IPF") fits a Poisson log-linear model to the SAMPLE
counts of the full cross-classification and, with lambda the fitted sample-scale value and
p = inclProb = sum of 1/w over the cell's records, computes over the cells kept
(0 < f <= bound, fitted value not 0; K of them)

    r1 = exp(-(1 - p) lambda) / K,   r2 = (1 - exp(-(1 - p) lambda)) / ((1 - p) lambda) / K,

and gr1, gr2 as the sums of r1, r2 over the kept cells with f = 1. These are not the textbook
tau1/tau2 (which use lambda / pi, the population-scale rate, and are totals): see
``methods/sdcmicro-reference.md`` section 2c. sdcMicro multiplies r by the indicator f = 1
over all kept cells, so a kept cell whose r overflows (p > 1 and a large fitted value) turns
the result into NaN; this is reproduced, and a warning says why.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..core.measures import Measure
from ..exceptions import ApproximationWarning, ParameterError, user_stacklevel

__all__ = ["modrisk_measures"]

_DESCRIPTION = {
    "sdcmicro_gr1": "sdcMicro modRisk gr1: sum over sample uniques of exp(-(1-p) mu) divided by "
                    "the number of non-empty cells (mu = fitted sample count, p = sum of 1/w)",
    "sdcmicro_gr2": "sdcMicro modRisk gr2: sum over sample uniques of (1-exp(-(1-p) mu))/((1-p) "
                    "mu) divided by the number of non-empty cells",
}


def modrisk_measures(counts: np.ndarray, fitted_mu: np.ndarray, inclusion: np.ndarray | None,
                     *, bound: float = math.inf) -> tuple[dict[str, Measure], int]:
    """gr1 and gr2 exactly as sdcMicro's ``modRisk`` computes them.

    Parameters
    ----------
    counts : ndarray
        Sample counts f of the observed cells.
    fitted_mu : ndarray
        Fitted SAMPLE-scale values of the same cells (unweighted fit).
    inclusion : ndarray
        Sum of 1/w per cell (``CellTable.inclusion_sums``); sdcMicro needs weights.
    bound : float
        Only cells with f <= bound are kept (sdcMicro's ``bound``, default Inf).

    Returns
    -------
    measures : dict of Measure
        ``sdcmicro_gr1`` and ``sdcmicro_gr2`` (NaN where sdcMicro gives NA).
    kept : int
        The number of cells kept (sdcMicro's K).
    """
    if inclusion is None:
        raise ParameterError("mode='sdcmicro' reproduces modRisk, which needs survey weights "
                             "(its inclProb is the sum of 1/w per cell); give --weights")
    if not bound >= 1:
        raise ParameterError(f"sdcmicro_bound={bound} must be >= 1")
    keep = (counts > 0) & (counts <= bound) & (fitted_mu != 0)
    k = int(np.count_nonzero(keep))
    mu = np.asarray(fitted_mu, np.float64)[keep]
    p = np.asarray(inclusion, np.float64)[keep]
    su = (counts[keep] == 1).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        m = (1 - p) * mu
        e = np.exp(-m)
        r1 = e / k
        r2 = (1 - e) / m / k
        gr1 = float(np.sum(su * r1)) if k else math.nan
        gr2 = float(np.sum(su * r2)) if k else math.nan
    if math.isnan(gr1) or math.isnan(gr2):
        warnings.warn(
            "sdcMicro-compatible gr1/gr2 are NaN, as in sdcMicro: a kept cell has inclusion sum "
            "p >= 1 and a fitted value large enough that exp(-(1-p) mu) overflows (0 * Inf); "
            "use sdcmicro_bound=1 or the textbook tau1/tau2", ApproximationWarning,
            stacklevel=user_stacklevel())
    measures = {name: Measure(name, value, description=_DESCRIPTION[name])
                for name, value in (("sdcmicro_gr1", gr1), ("sdcmicro_gr2", gr2))}
    return measures, k
