"""MCMC convergence diagnostics: rank-normalised split R-hat, bulk and tail ESS, MCSE.

Every function takes draws of one scalar quantity as an array of shape ``(chains, draws)``
(a 1-d array is one chain). The definitions are those of Vehtari, Gelman, Simpson, Carpenter
& Buerkner (2021), as used by Stan and ArviZ:

* chains are split in half (the middle draw of an odd-length chain is dropped), so that
  a trend inside one chain shows up as disagreement between its halves;
* *rank normalisation*: draws are replaced by ``Phi^-1((r - 3/8) / (S + 1/4))`` with r the
  average rank among all S draws, which makes R-hat and ESS well defined for heavy tails;
* R-hat = max(bulk R-hat, tail R-hat), the latter computed on the folded draws
  ``|x - median(x)|``;
* ESS from the chain autocovariances (FFT), combined over chains as in Stan, truncated by
  Geyer's initial positive sequence and made monotone (initial monotone sequence).

Conventions for degenerate input: a quantity that is constant over all draws has R-hat 1 and
ESS equal to the number of draws; chains that are each constant but differ have R-hat inf.

References
----------
Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. & Buerkner, P.-C. (2021).
Rank-normalization, folding, and localization: an improved R-hat for assessing convergence
of MCMC. Bayesian Analysis 16, 667-718.
Geyer, C. J. (1992). Practical Markov chain Monte Carlo. Statistical Science 7, 473-483.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

__all__ = [
    "split_chains",
    "rank_normalize",
    "rhat",
    "rhat_basic",
    "ess_bulk",
    "ess_tail",
    "ess_basic",
    "mcse_mean",
    "autocovariance",
    "summarize",
]


def _as_chains(x) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"draws must have shape (chains, draws), got {a.shape}")
    return a


def split_chains(x) -> np.ndarray:
    """Each chain cut into its first and last halves: shape (2 * chains, draws // 2)."""
    a = _as_chains(x)
    half = a.shape[1] // 2
    return np.concatenate([a[:, :half], a[:, a.shape[1] - half:]], axis=0)


def rank_normalize(x) -> np.ndarray:
    """Normal scores of the pooled average ranks, same shape as ``x``.

    ``z = Phi^-1((r - 3/8) / (S - 3/4 + 1))`` (Blom's offset), r = average rank among all
    S draws.
    """
    a = _as_chains(x)
    r = stats.rankdata(a, method="average", axis=None).reshape(a.shape)
    return special.ndtri((r - 0.375) / (a.size + 0.25))


def _constant(a: np.ndarray) -> bool:
    return bool(np.ptp(a) < np.finfo(float).resolution * max(1.0, float(np.abs(a).max())))


def rhat_basic(x, *, split: bool = True) -> float:
    """Potential scale reduction sqrt(var_plus / W) without rank normalisation.

    ``W`` is the mean within-chain variance (ddof 1), ``B / n`` the variance of the chain
    means (ddof 1), ``var_plus = (n - 1)/n W + B/n``; with ``split`` (default) on split
    chains (Gelman et al., BDA3 section 11.4).
    """
    a = split_chains(x) if split else _as_chains(x)
    m, n = a.shape
    if m < 2 or n < 2:
        return float("nan")
    if not np.isfinite(a).all():
        return float("nan")
    w = float(np.mean(np.var(a, axis=1, ddof=1)))
    b_over_n = float(np.var(a.mean(axis=1), ddof=1))
    if w == 0.0:
        return 1.0 if b_over_n == 0.0 else float("inf")
    return float(np.sqrt(((n - 1) / n * w + b_over_n) / w))


def rhat(x) -> float:
    """Rank-normalised split R-hat: max of the bulk and tail (folded) versions.

    Values above 1.01 suggest that the chains have not mixed (Vehtari et al. 2021).
    """
    a = _as_chains(x)
    if a.shape[1] < 4 or not np.isfinite(a).all():
        return float("nan")
    if _constant(a):
        return 1.0
    bulk = rhat_basic(rank_normalize(split_chains(a)), split=False)
    folded = np.abs(a - np.median(a))
    tail = (1.0 if _constant(folded)
            else rhat_basic(rank_normalize(split_chains(folded)), split=False))
    return float(max(bulk, tail))


def autocovariance(x) -> np.ndarray:
    """Biased (divide by n) autocovariance of each chain at lags 0..n-1, via the FFT."""
    a = _as_chains(x)
    n = a.shape[1]
    centred = a - a.mean(axis=1, keepdims=True)
    size = 1 << int(np.ceil(np.log2(2 * n)))
    spec = np.fft.rfft(centred, n=size, axis=1)
    return np.fft.irfft(spec * np.conj(spec), n=size, axis=1)[:, :n] / n


def ess_basic(x, *, split: bool = True) -> float:
    """Effective sample size of the draws as they are (split chains by default).

    Autocorrelations ``rho_t = 1 - (W - mean_m acov_m(t)) / var_plus`` combine the chains
    (Stan's estimator); the sum is truncated where the sum of an even and the next odd lag
    first turns negative (Geyer's initial positive sequence), the pair sums are made
    non-increasing (initial monotone sequence), and ``ESS = M n / tau`` with
    ``tau = -1 + 2 sum rho_t`` (bounded below by 1 / log10(M n)).
    """
    a = split_chains(x) if split else _as_chains(x)
    m, n = a.shape
    if n < 4 or not np.isfinite(a).all():
        return float("nan")
    if _constant(a):
        return float(a.size)
    acov = autocovariance(a)
    mean_var = float(np.mean(acov[:, 0])) * n / (n - 1)
    var_plus = mean_var * (n - 1) / n
    if m > 1:
        var_plus += float(np.var(a.mean(axis=1), ddof=1))
    rho_bar = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus
    rho = np.zeros(n)
    rho[0] = 1.0
    rho[1] = rho_bar[1]
    even, odd = 1.0, rho_bar[1]
    t = 1
    while t < n - 3 and even + odd > 0.0:
        even, odd = rho_bar[t + 1], rho_bar[t + 2]
        if even + odd >= 0.0:
            rho[t + 1], rho[t + 2] = even, odd
        t += 2
    last = t - 2
    if even > 0.0:
        rho[last + 1] = even
    t = 1
    while t <= last - 2:
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = rho[t + 2] = (rho[t - 1] + rho[t]) / 2.0
        t += 2
    total = m * n
    tau = -1.0 + 2.0 * float(np.sum(rho[:last + 1])) + float(np.sum(rho[last + 1:last + 2]))
    tau = max(tau, 1.0 / np.log10(total))
    return float(total / tau)


def ess_bulk(x) -> float:
    """Bulk ESS: :func:`ess_basic` of the rank-normalised split chains."""
    a = _as_chains(x)
    if a.shape[1] < 4 or not np.isfinite(a).all():
        return float("nan")
    if _constant(a):
        return float(a.size)
    return ess_basic(rank_normalize(split_chains(a)), split=False)


def ess_tail(x, probs: tuple[float, float] = (0.05, 0.95)) -> float:
    """Tail ESS: the smaller ESS of the indicators ``x <= q_0.05`` and ``x <= q_0.95``."""
    a = _as_chains(x)
    if a.shape[1] < 4 or not np.isfinite(a).all():
        return float("nan")
    if _constant(a):
        return float(a.size)
    out = []
    for p in probs:
        ind = (a <= np.quantile(a, p)).astype(float)
        out.append(ess_basic(split_chains(ind), split=False))
    return float(min(out))


def mcse_mean(x) -> float:
    """Monte Carlo standard error of the posterior mean: sd / sqrt(ESS of the raw draws)."""
    a = _as_chains(x)
    ess = ess_basic(a)
    if not np.isfinite(ess) or ess <= 0:
        return float("nan")
    return float(np.std(a, ddof=1) / np.sqrt(ess)) if a.size > 1 else float("nan")


def summarize(draws, *, level: float = 0.95) -> dict[str, float]:
    """Mean, sd, median, equal-tailed interval, R-hat, bulk/tail ESS and MCSE of one quantity."""
    a = _as_chains(draws)
    lo, hi = (1 - level) / 2, 1 - (1 - level) / 2
    return {
        "mean": float(a.mean()),
        "sd": float(a.std(ddof=1)) if a.size > 1 else 0.0,
        "median": float(np.median(a)),
        "lower": float(np.quantile(a, lo)),
        "upper": float(np.quantile(a, hi)),
        "level": level,
        "rhat": rhat(a),
        "ess_bulk": ess_bulk(a),
        "ess_tail": ess_tail(a),
        "mcse_mean": mcse_mean(a),
    }
