"""Local suppression, searched greedily: key values of the records at risk set to the missing
category (a category of its own) until the re-estimated objective reaches the target. Used
by the suppression plan, and by the combined plan from its recoded file."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..core.result import RiskResult
from ..data.table import Microdata
from ._recommend_edits import group_ids, missing_code, suppress_values
from ._recommend_plan import Plan, SearchContext, path_step


@dataclass(frozen=True)
class _Suppressed:
    """Where a suppression search ended: the values set to missing, the file and its fit."""

    suppressed: np.ndarray  # (n, keys) bool
    md: Microdata
    res: RiskResult
    objective: float
    objective_start: float
    path: list[dict]  # the rounds (not the start), counting the values changed before too


def suppress_to_target(start: Microdata, ctx: SearchContext, allowed: list[int],
                        max_pattern_size: int, max_steps: int,
                        changed_before: np.ndarray | None = None,
                        action: str | None = None) -> _Suppressed:
    """Greedy rounds of suppression from ``start`` until the objective reaches the target,
    no useful group is left, or ``max_steps`` rounds.

    ``changed_before`` ((n, keys) bool) flags the values changed before the search (by a
    recoding): each round's records and values changed count them, a value or record
    changed both ways once. ``action`` labels the rounds in the path (combined plans).
    """
    n, n_keys = start.n, len(start.keys)
    before = np.zeros((n, n_keys), bool) if changed_before is None else changed_before
    md = start
    suppressed = np.zeros((n, n_keys), bool)
    # a value missing already is not suppressed again (nor counted as a changed value)
    open_values = np.column_stack([start.codes[j] != missing_code(start, j)
                                   for j in range(n_keys)]) if n_keys else suppressed
    res, obj = ctx.fit(md)
    obj_start, path = obj, []
    patterns = [p for s in range(1, min(max_pattern_size, len(allowed)) + 1)
                for p in itertools.combinations(allowed, s)]
    for _ in range(max_steps):
        if obj <= ctx.target.value:
            break
        mask, contrib = ctx.risky(res)
        f_cur = res.table.counts[res.table.record_map()]
        na = [missing_code(md, j) for j in range(n_keys)]
        chosen = _choose_groups(md, patterns, na, mask, contrib, f_cur,
                                gap=obj - ctx.target.value)
        if not chosen:
            break
        for pattern, members in chosen:
            for j in pattern:
                suppressed[members, j] = True
        suppressed &= open_values
        rows, cols = np.nonzero(suppressed)
        md = suppress_values(start, rows, cols)
        res, obj = ctx.fit(md)
        changed = before | suppressed
        path.append(path_step(changed.any(axis=1).sum(), changed.sum(), obj, action))
    return _Suppressed(suppressed, md, res, obj, obj_start, path)


def suppression_plan(sample: Microdata, ctx: SearchContext, allowed: list[int],
                      max_pattern_size: int, max_steps: int) -> Plan:
    """The local suppression plan from the file itself."""
    run = suppress_to_target(sample, ctx, allowed, max_pattern_size, max_steps)
    records, cells = ctx.loss(run.suppressed.any(axis=1))
    start = path_step(0, 0, run.objective_start)
    return Plan(kind="suppression", key=None, reached=run.objective <= ctx.target.value,
                objective_after=run.objective, records_changed=records,
                values_changed=int(run.suppressed.sum()), cells_changed=cells,
                suppressions=np.argwhere(run.suppressed).astype(np.int64),
                measures_after=ctx.measures(run.res), path=(start, *run.path),
                keys=sample.keys)


def _choose_groups(md, patterns, na, risky, contrib, f_cur, gap):
    """Groups (pattern, member records) to suppress this round, best value per cost first."""
    n = md.n
    codes, n_levels = md.codes, md.n_levels
    rows, sorted_movers, row_patterns = [], [], []
    for pattern in patterns:
        keep = [j for j in range(len(codes)) if j not in pattern]
        gid = group_ids(codes, n_levels, keep, n)
        all_na = np.ones(n, bool)
        for j in pattern:
            all_na &= codes[j] == na[j]
        movers = np.flatnonzero(risky & ~all_na)
        if movers.size == 0:
            continue
        existing = np.bincount(gid[all_na], minlength=gid.max() + 1)
        g_of = gid[movers]
        size = np.bincount(g_of, minlength=len(existing))
        merged = size + existing
        biggest = np.zeros(len(existing), np.int64)
        np.maximum.at(biggest, g_of, f_cur[movers])
        cost_each = np.zeros(len(movers))
        for j in pattern:
            cost_each += codes[j][movers] != na[j]
        cost = np.bincount(g_of, weights=cost_each, minlength=len(existing))
        gain = np.bincount(g_of, weights=contrib[movers], minlength=len(existing))
        useful = np.flatnonzero((size > 0) & (merged >= 2) & (merged > biggest))
        order = np.argsort(g_of, kind="stable")
        sorted_movers.append(movers[order])
        # one row per useful group: value per cost, gain, pattern, its slice of the movers
        rows.append(np.column_stack([gain[useful] / cost[useful], gain[useful],
                                     np.full(len(useful), len(sorted_movers) - 1),
                                     np.searchsorted(g_of[order], useful), size[useful]]))
        row_patterns.append(pattern)
    if not rows:
        return []
    table = np.concatenate(rows)
    taken = np.zeros(n, bool)
    chosen, covered = [], 0.0
    # best value per cost first, ties in pattern then group order (a stable sort); the
    # members of a group are sliced only when it is considered
    for _, gain, k, start, size in table[np.argsort(-table[:, 0], kind="stable")]:
        k, start = int(k), int(start)
        members = sorted_movers[k][start:start + int(size)]
        if taken[members].any():
            continue
        chosen.append((row_patterns[k], members))
        taken[members] = True
        covered += gain
        if covered >= gap:
            break
    return chosen
