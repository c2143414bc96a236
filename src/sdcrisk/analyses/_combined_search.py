"""Combined plans: recode one key a little, then suppress the records still at risk (sdcMicro's
usual ``globalRecode`` then ``localSuppression``).

How far to recode before suppressing
------------------------------------
The combined plan of a key follows that key's greedy recoding path (the recoding plan's
steps) to a depth ``s``, then runs the greedy local suppression from the recoded file to the
target. The depth is searched, not predicted: ``s`` = 1, 2, 4, 8, ... steps of the path (and
the whole path when the recoding plan does not reach the target alone), each combined plan
re-estimated like any plan, the best by the plans' ranking (reached first, then records,
then values changed, then the objective) kept. The doubling stops at the first depth whose
plan ranks worse than the best so far.

Why not a rule that predicts the depth, such as "recode while a merge lowers the objective
by more per newly changed record than suppression does on average": counted in records
changed, a merge seldom pays better than suppression. A merge changes every record of the
merged categories, and only those records can stop being unique, so its fall per changed
record is at most the risk a rescued record carries, which is what suppression pays for
exactly the risky records. Under nb with one sampling fraction every sample unique carries
the same tau2, so no merges pay better and such a rule never recodes (on uci_adult, 8 keys,
5%, tau2 250 -> 150: the first merge of each key fell by at most 0.15 times suppression's
rate per record, any depth of its path by at most 0.36 times). What a first
recoding buys is indirect: the suppression that follows finds partners for a suppressed
record among more records, and a record already recoded costs nothing more when it is also
suppressed (a changed record is counted once). Only re-estimating the combined plan sees
that; the doubling bounds how often (at most about log2 of the path's length suppression
searches per key, usually two with the early stop). No tuning constant is involved.

Only keys whose recoding plan lowered the objective at some step get a combined plan; a
depth whose merges alone reach the target is the recoding plan itself and is not tried.
"""

from __future__ import annotations

import numpy as np

from ..data.table import Microdata
from ._recoding_search import merges_after
from ._recommend_edits import merge_levels
from ._recommend_plan import Plan, SearchContext, path_step, plan_rank
from ._suppression_search import suppress_to_target


def recoding_depths(recoding: Plan) -> list[int]:
    """The recoding depths a combined plan tries: 1, 2, 4, ... steps of the recoding path,
    and all of it when the recoding alone does not reach the target; none when no step
    lowered the objective."""
    path = recoding.path
    steps = len(path) - 1
    if not any(s["objective"] < path[0]["objective"] for s in path[1:]):
        return []
    depths = [1 << i for i in range(steps.bit_length()) if (1 << i) < steps]
    if not recoding.reached:
        depths.append(steps)
    return depths


def _combined_at(sample: Microdata, ctx: SearchContext, j: int, recoding: Plan, steps: int,
                 allowed: list[int], max_pattern_size: int, max_steps: int) -> Plan:
    """The first ``steps`` merges of key ``j``'s recoding plan, then at most ``max_steps``
    rounds of greedy suppression of the keys ``allowed`` from the recoded file."""
    merges = merges_after(sample.levels[j], recoding.path, steps)
    recoded = merge_levels(sample, j, merges)
    position = {v: i for i, v in enumerate(sample.levels[j])}
    before = np.zeros((sample.n, len(sample.keys)), bool)
    before[:, j] = np.isin(sample.codes[j], [position[v] for g in merges for v in g])
    run = suppress_to_target(recoded, ctx, allowed, max_pattern_size, max_steps,
                              changed_before=before, action="suppression")
    changed = before | run.suppressed
    records, cells = ctx.loss(changed.any(axis=1))
    path = (path_step(0, 0, recoding.path[0]["objective"], "start"),
            *({**s, "action": "recoding"} for s in recoding.path[1:steps + 1]), *run.path)
    return Plan(kind="recoding+suppression", key=sample.keys[j],
                reached=run.objective <= ctx.target.value, objective_after=run.objective,
                records_changed=records, values_changed=int(changed.sum()),
                cells_changed=cells, merges=merges,
                suppressions=np.argwhere(run.suppressed).astype(np.int64),
                measures_after=ctx.measures(run.res), path=path, keys=sample.keys)


def combined_plan(sample: Microdata, ctx: SearchContext, j: int, recoding: Plan,
                   allowed: list[int], max_pattern_size: int, max_steps: int) -> Plan:
    """The best combined plan of key ``j`` over the depths of :func:`recoding_depths` (module
    notes; there must be one)."""
    best = None
    for steps in recoding_depths(recoding):
        plan = _combined_at(sample, ctx, j, recoding, steps, allowed, max_pattern_size,
                            max_steps)
        if best is not None and plan_rank(plan) >= plan_rank(best):
            break
        best = plan
    if best is None:
        raise ValueError(f"no recoding depth to try for key {sample.keys[j]!r}")
    return best
