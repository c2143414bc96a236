"""CellPredictive: the per-cell law of the unseen count U_k = F_k - f_k.

Every estimator produces one of these for the observed sample cells (plus, where the model
says anything about them, the unobserved cells). All risk measures in
:mod:`sdcrisk.measures` are pure functions of it, so a new estimator only has to produce a
predictive.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from . import _nb, _poisson

__all__ = ["CellPredictive", "NegativeBinomialPredictive", "PoissonPredictive"]


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
    mean : ndarray
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
