"""The trade-off curve plot of :mod:`sdcrisk.analyses.decision` (Zaslavsky & Horton Fig. 1).

Kept apart from the decision model because it needs the optional matplotlib.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..analyses.decision import TradeoffCurve
from ..exceptions import ParameterError

__all__ = ["plot_tradeoff"]


def plot_tradeoff(curves: TradeoffCurve | Sequence[TradeoffCurve] | Mapping[str, TradeoffCurve],
                  path: str | Path, *, risk_fraction: float | None = None,
                  title: str | None = None) -> Path:
    """Draw trade-off curves (ZH Fig. 1) to a PNG or SVG file.

    Needs matplotlib (``pip install sdcrisk[plot]``). The dotted diagonal is random
    suppression. ``risk_fraction`` draws a horizontal guide (e.g. 0.2).

    Raises
    ------
    ParameterError
        matplotlib is missing, or the file suffix is not .png/.svg.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sdcrisk import BetaBinomialPrior, decision_table, plot_tradeoff
    >>> t = decision_table([(3, 8, 1), (5, 20, 3)], BetaBinomialPrior(1, 10), l1="exp:10")
    >>> with tempfile.TemporaryDirectory() as tmp:  # doctest: +SKIP
    ...     plot_tradeoff(t.curve, pathlib.Path(tmp) / "curve.svg").exists()
    True
    """
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise ParameterError(f"plot file {str(path)!r}: use a .png or .svg name")
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ParameterError("plotting needs matplotlib: pip install 'sdcrisk[plot]'") from exc
    if isinstance(curves, TradeoffCurve):
        items = [curves]
    elif isinstance(curves, Mapping):
        items = [dataclasses.replace(c, label=k) for k, c in curves.items()]
    else:
        items = list(curves)
    fig = Figure(figsize=(5.5, 5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot([0, 1], [1, 0], ":", color="grey", label="random suppression")
    for i, c in enumerate(items):
        ax.plot(c.loss_fraction, c.risk_fraction, "-" if i == 0 else "--", label=c.label)
    if risk_fraction is not None:
        ax.axhline(risk_fraction, color="grey", lw=0.5)
    ax.set_xlabel("nonpublication loss (fraction of full suppression)")
    ax.set_ylabel("disclosure risk (fraction of full publication)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(title or "Disclosure risk against nonpublication loss")
    ax.legend(loc="upper right", fontsize="small")
    fig.savefig(path)
    return path
