"""The one base of every result type: dictionary, JSON, summary table, repr, notebook view.

A result is a frozen dataclass that inherits :class:`ResultBase` and supplies

* ``_payload(**options)`` - its content as a dictionary (the base makes it JSON-ready);
* optionally ``_repr_parts()`` - the ``name=value`` pieces of its one-line ``repr``;
* optionally ``summary()`` - a narrow :class:`pandas.DataFrame` (default: the scalar entries
  of :meth:`~ResultBase.to_dict` as one ``value`` column).

The base gives ``to_dict``, ``to_json``, ``summary``, a one-line ``repr``, ``_repr_html_``
(escaped: labels in a result are data and may hold markup), pickling, and immutability: on
construction every mapping field becomes a read-only mapping, every list a tuple and every
array a read-only view.
"""

from __future__ import annotations

import dataclasses
import html
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ResultBase", "jsonable", "read_only"]

#: options of :meth:`ResultBase.to_dict` that :meth:`ResultBase.to_json` passes on to it
_VIEW_OPTIONS = ("internal",)
#: rows of a summary shown in a notebook before pandas elides the middle
_HTML_MAX_ROWS = 20


def jsonable(obj: Any) -> Any:
    """``obj`` with mappings as dicts, tuples and arrays as lists, numpy scalars as Python
    numbers and non-finite floats as ``None``, ready for :func:`json.dumps`."""
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    return obj


def read_only(value: Any) -> Any:
    """An immutable form of a field value: a read-only view of an array, a read-only mapping
    (its arrays read-only too), a tuple for a list; anything else as it is."""
    if isinstance(value, np.ndarray):
        if value.flags.writeable:
            value = value.view()
            value.setflags(write=False)
        return value
    if isinstance(value, MappingProxyType):
        return value
    if isinstance(value, Mapping):
        return MappingProxyType({k: read_only(v) if isinstance(v, np.ndarray) else v
                                 for k, v in value.items()})
    if isinstance(value, list):
        return tuple(value)
    return value


def _thaw(value: Any) -> Any:
    return dict(value) if isinstance(value, MappingProxyType) else value


def _rebuild(cls: type, state: dict[str, Any]) -> Any:
    return cls(**state)


def _short(value: Any) -> str:
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}"
    if isinstance(value, str) and len(value) > 40:
        value = value[:37] + "..."
    return repr(value)


class ResultBase:
    """Base class of sdcrisk's results (a mixin for frozen dataclasses).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True, eq=False, repr=False)
    ... class Count(ResultBase):
    ...     name: str
    ...     value: int
    ...     def _payload(self):
    ...         return {"name": self.name, "value": self.value}
    >>> c = Count("<b>x</b>", 3)
    >>> c, c.to_dict()
    (Count(name='<b>x</b>', value=3), {'name': '<b>x</b>', 'value': 3})
    >>> "<b>" in c._repr_html_()
    False
    """

    __slots__ = ()

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            frozen = read_only(value)
            if frozen is not value:
                object.__setattr__(self, f.name, frozen)

    # --- content -------------------------------------------------------------------------
    def _payload(self, *args: Any, **options: Any) -> dict[str, Any]:
        """The result's content as a dictionary (subclasses supply it)."""
        raise NotImplementedError

    def to_dict(self, **options: Any) -> dict[str, Any]:
        """JSON-ready dictionary of the result.

        Results that can show disclosive detail (small cells, single records) take
        ``internal=True`` to include it; by default they leave it out.
        """
        return jsonable(self._payload(**options))

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as JSON text (``indent=2`` unless given); ``internal`` goes to
        :meth:`to_dict`, every other keyword to :func:`json.dumps`."""
        options = {k: kwargs.pop(k) for k in _VIEW_OPTIONS if k in kwargs}
        return json.dumps(self.to_dict(**options), **{"indent": 2, **kwargs})

    def summary(self) -> pd.DataFrame:
        """The result at a glance as a DataFrame (default: its scalar entries)."""
        import pandas as pd

        items = {k: v for k, v in self.to_dict().items()
                 if v is None or isinstance(v, str | int | float | bool)}
        return pd.DataFrame({"value": pd.Series(items, dtype=object)}).rename_axis("item")

    # --- display -------------------------------------------------------------------------
    def _repr_parts(self) -> list[str]:
        """``name=value`` pieces of the one-line repr (default: the scalar fields)."""
        return [f"{f.name}={_short(getattr(self, f.name))}"
                for f in dataclasses.fields(self)  # type: ignore[arg-type]
                if f.repr and (getattr(self, f.name) is None
                               or isinstance(getattr(self, f.name), str | int | float | bool))]

    def __repr__(self) -> str:
        text = f"{type(self).__name__}({', '.join(self._repr_parts())})"
        return " ".join(text.split())

    def _repr_html_(self) -> str:
        """Notebook view: the repr over the summary table, every text escaped."""
        table = self.summary().to_html(max_rows=_HTML_MAX_ROWS, escape=True, border=0,
                                       na_rep="")
        return (f'<div class="sdcrisk-result"><p><code>{html.escape(repr(self))}</code></p>'
                f"{table}</div>")

    # --- pickling (read-only mappings do not pickle; the rebuilt result freezes again) ----
    def __reduce__(self) -> tuple[Any, ...]:
        state = {f.name: _thaw(getattr(self, f.name))
                 for f in dataclasses.fields(self) if f.init}  # type: ignore[arg-type]
        return (_rebuild, (type(self), state))
