"""Bundled example data.

``uk_census2011``: a 10,000-record random extract ("nanodata") of the ONS 2011 Census
Microdata Teaching File for England and Wales. Source: Office for National Statistics,
licensed under the Open Government Licence v3.0. Extract made by adacollege
(github.com/adacollege/challenge-data); integer-coded by the sdcrisk maintainers. See
``data/uk_census2011_nanodata.md`` in the package for the codebook. The teaching file is a
1% sample of England and Wales (56,075,912 usual residents in 2011); the extract is a random
sub-sample of it, so as a survey sample it has N = 56,075,912.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..exceptions import InputError

__all__ = ["EXAMPLES", "example_path"]

EXAMPLES = {
    "uk_census2011": {
        "file": "uk_census2011_nanodata.csv.gz",
        "population_size": 56_075_912,
        "keys": ["region", "sex", "age_band", "marital_status", "ethnic_group", "religion"],
        "licence": "Open Government Licence v3.0",
        "attribution": "Source: Office for National Statistics licensed under the Open "
        "Government Licence v3.0 (2011 Census Microdata Teaching File, 10,000-record extract)",
    },
}


def example_path(name: str) -> Path:
    """Path of a bundled dataset by name (see ``EXAMPLES``)."""
    if name not in EXAMPLES:
        raise InputError(f"unknown example dataset {name!r}; available: {sorted(EXAMPLES)}")
    return Path(str(resources.files("sdcrisk") / "data" / EXAMPLES[name]["file"]))
