"""CellPredictive: the per-cell law of the unseen count U_k = F_k - f_k.

Every estimator produces one of these for the observed sample cells (plus, where the model
says anything about them, the unobserved cells). All risk measures in
:mod:`sdcrisk.core.measures` are pure functions of it, so a new estimator only has to produce a
predictive.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from . import _nb, _poisson

__all__ = ["CellPredictive", "NegativeBinomialPredictive", "PoissonPredictive",
           "MixturePredictive"]


class CellPredictive(ABC):
    """Predictive law of U_k = F_k - f_k for the observed cells (f_k >= 1).

    Subclasses give the cell-wise expectations; ``cells`` selects a subset (an index array)
    so that expensive quantities are computed only where needed (e.g. sample uniques).
    """

    #: f_k of each observed cell
    f: np.ndarray
    #: sum over unobserved cells (f_k = 0) of P(F_k = 1 | f); 0 when the model puts F_k = 0
    #: there, ``None`` when the model says nothing about them
    unobserved_prob_one: float | None

    @property
    @abstractmethod
    def law(self) -> str:
        """Name of the law, e.g. 'NegBin(size=f, prob=f/F_hat)'."""

    @abstractmethod
    def prob_zero(self, cells: np.ndarray | None = None) -> np.ndarray:
        """P(U_k = 0 | f), i.e. P(F_k = f_k | f)."""

    @abstractmethod
    def expected_inverse(self, cells: np.ndarray | None = None) -> np.ndarray:
        """E[1 / F_k | f]."""

    @abstractmethod
    def expected_inverse_square(self, cells: np.ndarray | None = None) -> np.ndarray:
        """E[1 / F_k^2 | f] (for predictive variances of tau2)."""

    @abstractmethod
    def mean(self, cells: np.ndarray | None = None) -> np.ndarray:
        """E[U_k | f]."""

    @abstractmethod
    def variance(self, cells: np.ndarray | None = None) -> np.ndarray:
        """Var[U_k | f]."""

    @abstractmethod
    def sample(self, rng: np.random.Generator, size: int,
               cells: np.ndarray | None = None) -> np.ndarray:
        """Draws of U_k, shape (size, n_selected_cells)."""


def _sel(a: np.ndarray, cells: np.ndarray | None) -> np.ndarray:
    return a if cells is None else a[cells]


@dataclass(frozen=True, eq=False)
class NegativeBinomialPredictive(CellPredictive):
    """U_k ~ NegBin(size_k, prob_k) independently over cells.

    Parameters
    ----------
    f : ndarray
        Sample counts of the observed cells.
    size, prob : ndarray
        NB parameters per cell (broadcastable to ``f``).
    unobserved_prob_one : float or None
        Sum over f = 0 cells of P(F = 1).
    law_name : str
        Human-readable description for results.
    """

    f: np.ndarray
    size: np.ndarray
    prob: np.ndarray
    unobserved_prob_one: float | None = 0.0
    law_name: str = "NegBin"

    def __post_init__(self):
        f = np.asarray(self.f, float)
        object.__setattr__(self, "f", f)
        object.__setattr__(self, "size", np.broadcast_to(np.asarray(self.size, float), f.shape))
        object.__setattr__(self, "prob", np.broadcast_to(np.asarray(self.prob, float), f.shape))

    @property
    def law(self) -> str:
        return self.law_name

    def _args(self, cells):
        return _sel(self.f, cells), _sel(self.size, cells), _sel(self.prob, cells)

    def prob_zero(self, cells=None):
        _, r, p = self._args(cells)
        return _nb.prob_zero(r, p)

    def expected_inverse(self, cells=None):
        return _nb.expected_inverse(*self._args(cells))

    def expected_inverse_square(self, cells=None):
        return _nb.expected_inverse_square(*self._args(cells))

    def mean(self, cells=None):
        _, r, p = self._args(cells)
        return _nb.nb_mean(r, p)

    def variance(self, cells=None):
        _, r, p = self._args(cells)
        return _nb.nb_variance(r, p)

    def sample(self, rng, size, cells=None):
        _, r, p = self._args(cells)
        return rng.negative_binomial(r, p, size=(size, len(r)))


@dataclass(frozen=True, eq=False)
class PoissonPredictive(CellPredictive):
    """U_k ~ Poisson(mean_k) independently over cells (log-linear models, spec C.1).

    Parameters
    ----------
    f : ndarray
        Sample counts of the observed cells.
    mean_ : ndarray
        (1 - pi) lambda_hat_k for each observed cell.
    unobserved_prob_one : float or None
        Sum over f = 0 cells of P(F = 1) = m e^{-m}.
    law_name : str
        Human-readable description.
    """

    f: np.ndarray
    mean_: np.ndarray
    unobserved_prob_one: float | None = 0.0
    law_name: str = "Poisson"

    def __post_init__(self):
        f = np.asarray(self.f, float)
        object.__setattr__(self, "f", f)
        object.__setattr__(self, "mean_", np.broadcast_to(np.asarray(self.mean_, float),
                                                          f.shape))

    @property
    def law(self) -> str:
        return self.law_name

    def prob_zero(self, cells=None):
        return np.exp(-_sel(self.mean_, cells))

    def expected_inverse(self, cells=None):
        return _poisson.expected_inverse(_sel(self.f, cells), _sel(self.mean_, cells))

    def expected_inverse_square(self, cells=None):
        return _poisson.expected_inverse_square(_sel(self.f, cells), _sel(self.mean_, cells))

    def mean(self, cells=None):
        return np.array(_sel(self.mean_, cells), float)

    def variance(self, cells=None):
        return np.array(_sel(self.mean_, cells), float)

    def sample(self, rng, size, cells=None):
        m = _sel(self.mean_, cells)
        return rng.poisson(m, size=(size, len(m)))


@dataclass(frozen=True, eq=False)
class MixturePredictive(CellPredictive):
    """U_k ~ sum_m w_m P_m(U_k): a mixture of per-cell laws (Bayesian model averaging).

    The predictive of a model-averaged estimator (Forster & Webb 2007, eq 8): every
    expectation is the weighted average of the components' (eq 11); the variance adds the
    spread of the component means. ``sample`` draws one component per draw (row), so a draw
    of all cells comes from a single model.

    Parameters
    ----------
    components : sequence of CellPredictive
        Per-model laws over the same observed cells (equal ``f``).
    weights : array_like
        Posterior model probabilities: non-negative, summing to 1.
    law_name : str
        Human-readable description.
    """

    components: tuple
    weights: np.ndarray
    law_name: str = "mixture"

    def __post_init__(self):
        comps = tuple(self.components)
        w = np.asarray(self.weights, float)
        if not comps or w.shape != (len(comps),):
            raise ValueError("give one weight per component (at least one component)")
        if np.any(w < 0) or not np.isclose(w.sum(), 1.0, rtol=0, atol=1e-9):
            raise ValueError(f"mixture weights must be >= 0 and sum to 1, got sum {w.sum()}")
        f = comps[0].f
        for c in comps[1:]:
            if not np.array_equal(c.f, f):
                raise ValueError("mixture components must describe the same cells (equal f)")
        object.__setattr__(self, "components", comps)
        object.__setattr__(self, "weights", w)
        unobs = [c.unobserved_prob_one for c in comps]
        object.__setattr__(self, "unobserved_prob_one",
                           None if any(x is None for x in unobs)
                           else float(np.dot(w, np.asarray(unobs, float))))

    @property
    def f(self) -> np.ndarray:  # type: ignore[override]
        return self.components[0].f

    @property
    def law(self) -> str:
        return self.law_name

    def _average(self, name: str, cells) -> np.ndarray:
        out = 0.0
        for w, c in zip(self.weights, self.components, strict=True):
            if w > 0:
                out = out + w * getattr(c, name)(cells)
        return np.asarray(out, float)

    def prob_zero(self, cells=None):
        return self._average("prob_zero", cells)

    def expected_inverse(self, cells=None):
        return self._average("expected_inverse", cells)

    def expected_inverse_square(self, cells=None):
        return self._average("expected_inverse_square", cells)

    def mean(self, cells=None):
        return self._average("mean", cells)

    def variance(self, cells=None):
        total_mean = self.mean(cells)
        second = 0.0
        for w, c in zip(self.weights, self.components, strict=True):
            if w > 0:
                second = second + w * (c.variance(cells) + c.mean(cells) ** 2)
        return np.maximum(np.asarray(second, float) - total_mean**2, 0.0)

    def sample(self, rng, size, cells=None):
        which = rng.choice(len(self.components), size=size, p=self.weights)
        n_cells = len(self.f) if cells is None else len(np.asarray(cells).reshape(-1))
        out = np.zeros((size, n_cells), np.int64)
        for m, c in enumerate(self.components):
            rows = np.flatnonzero(which == m)
            if rows.size:
                out[rows] = c.sample(rng, rows.size, cells)
        return out
