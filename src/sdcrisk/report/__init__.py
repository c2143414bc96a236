"""The risk report a release panel reads and the charts.

:mod:`.collect` gathers the numbers (:mod:`.truth` those against a known population),
:mod:`.page` (with :mod:`.page_more` and :mod:`.verdict`) lays them out as sections of blocks
(:mod:`.blocks`), :mod:`.render` renders them with the
Jinja2 templates in ``templates/`` (autoescape on; number formats from :mod:`.formats`), and
:mod:`.charts` draws every chart as SVG -- the report's and those of ``decide`` and
``recommend`` (matplotlib only for PNG files). Names are imported on first use, so that
importing one piece does not load pandas or the decision model."""

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from .charts import plot_recommendations, plot_tradeoff
    from .collect import (
        FAST_METHODS,
        build_report,
        calibration_table,
        riskiest_cells,
        roc_curve,
        sdcmicro_high_risk,
        write_report,
    )
    from .contributions import category_contributions, variable_contributions

__all__ = ["build_report", "write_report", "variable_contributions", "category_contributions",
           "riskiest_cells", "roc_curve", "calibration_table", "sdcmicro_high_risk",
           "FAST_METHODS", "plot_tradeoff", "plot_recommendations"]

__getattr__ = lazy_getattr(__name__, {**{name: "collect" for name in __all__},
                                      "variable_contributions": "contributions",
                                      "category_contributions": "contributions",
                                      "plot_tradeoff": "charts",
                                      "plot_recommendations": "charts"})
