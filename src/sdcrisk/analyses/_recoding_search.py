"""Global recoding of one key, searched greedily: two categories merged per step, the
objective re-estimated after each, until it reaches the target. Each step's path entry
names the category it formed (``merged``), so a prefix of the path can be replayed
(:func:`merges_after`, used by the combined plan)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from ..core.result import RiskResult
from ..data.table import Microdata
from ._recommend_edits import group_ids, merge_levels
from ._recommend_plan import Plan, SearchContext, path_step


def recoding_plan(sample: Microdata, ctx: SearchContext, j: int, pairs: str,
                   refit_candidates: int, max_steps: int,
                   fits_at: dict[int, RiskResult] | None = None) -> Plan:
    """Key ``j``'s recoding plan. ``fits_at``, if given, receives the fit after steps 1, 2,
    4, 8, ... and after the last step (those a combined plan may start from:
    :func:`~._combined_search.recoding_depths`)."""
    original = sample.levels[j]
    groups: list[list] = [[v] for v in original]  # current categories as original labels
    md = sample
    res, obj = ctx.fit(md)
    path = [path_step(0, 0, obj)]
    numeric = all(isinstance(v, int | np.integer) for v in original if v is not None)
    mode = ("adjacent" if numeric else "all") if pairs == "auto" else pairs
    changed = np.zeros(sample.n, bool)
    # every record alone on the other keys: no merge of this key's categories changes a
    # cell count (each record stays alone), so no step can make a record less unique
    others = [k for k in range(len(sample.keys)) if k != j]
    alone = bool(others) and np.bincount(
        group_ids(sample.codes, sample.n_levels, others, sample.n)).max() == 1
    for _ in range(0 if alone else max_steps):
        if obj <= ctx.target.value:
            break
        cands = _merge_candidates(md, j, ctx, res, mode,
                                  merged=np.array([len(g) > 1 for g in groups]))
        if not cands:
            break
        best = None
        for a, b in cands[:refit_candidates]:
            trial_groups = groups[:a] + [groups[a] + groups[b]] + groups[a + 1:b] + groups[b + 1:]
            trial = merge_levels(sample, j, [g for g in trial_groups if len(g) > 1])
            trial_res, trial_obj = ctx.fit(trial)
            if best is None or trial_obj < best[0] - 1e-12:
                best = (trial_obj, trial_groups, trial, trial_res, groups[a] + groups[b])
        obj, groups, md, res, formed = best
        merged_codes = [original.index(v) for g in groups if len(g) > 1 for v in g]
        changed = np.isin(sample.codes[j], merged_codes)
        path.append({**path_step(changed.sum(), changed.sum(), obj), "merged": list(formed)})
        if fits_at is not None:  # steps 1, 2, 4, ... and the last
            step = len(path) - 1
            if step > 1 and (step - 1) & (step - 2):
                del fits_at[step - 1]
            fits_at[step] = res
    records, cells = ctx.loss(changed)
    merges = tuple(tuple(g) for g in groups if len(g) > 1)
    return Plan(kind="recoding", key=sample.keys[j], reached=obj <= ctx.target.value,
                objective_after=obj, records_changed=records, values_changed=records,
                cells_changed=cells, merges=merges, measures_after=ctx.measures(res),
                path=tuple(path), keys=sample.keys)


def _merge_candidates(md: Microdata, j: int, ctx: SearchContext, res: RiskResult, mode: str,
                      merged: np.ndarray) -> list[tuple[int, int]]:
    """Pairs (a, b), a < b, of current categories of key j, best quick score first.

    Score of merging a and b: the objective carried by risky records whose other key values
    also occur with the other category (those records stop being unique by the merge), per
    record newly changed (records of a category that is already a merger are changed
    already; ``merged`` flags those categories).
    """
    levels = md.levels[j]
    d = len(levels)
    real = [i for i, v in enumerate(levels) if v is not None]
    if len(real) < 2:
        return []
    keep = [k for k in range(len(md.keys)) if k != j]
    gid = group_ids(md.codes, md.n_levels, keep, md.n)
    code = md.codes[j].astype(np.int64)
    present = np.zeros((gid.max() + 1, d), bool)
    present[gid, code] = True
    mask, contrib = ctx.risky(res)
    r = np.flatnonzero(mask)
    score = np.zeros((d, d))
    if r.size:
        partner = present[gid[r]].astype(float) * contrib[r][:, None]
        np.add.at(score, code[r], partner)
    score = score + score.T
    new = np.where(merged, 0, np.bincount(code, minlength=d)).astype(float)
    if mode == "adjacent":
        cands = list(itertools.pairwise(real))
    else:
        cands = list(itertools.combinations(real, 2))

    def rank(p):
        cost = new[p[0]] + new[p[1]]
        value = score[p] / cost if cost > 0 else (np.inf if score[p] > 0 else 0.0)
        return (-value, -score[p], cost, p)

    cands.sort(key=rank)
    return cands


def merges_after(levels: Sequence, path: Sequence[dict], steps: int) -> tuple[tuple, ...]:
    """The merges of a recoding plan after its first ``steps`` steps: the categories formed
    (each step's ``merged``) that no later of these steps merged again, in level order, as
    the plan's own ``merges`` (each group led by its first level)."""
    formed = [tuple(s["merged"]) for s in path[1:steps + 1]]
    kept = [g for i, g in enumerate(formed) if not any(set(g) < set(h) for h in formed[i + 1:])]
    position = {v: i for i, v in enumerate(levels)}
    return tuple(sorted(kept, key=lambda g: position[g[0]]))
