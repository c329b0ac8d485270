"""Does our chain keep what the engine's sampler kept? One step, side by side.

llama-server can report the top-N *after* its sampler chain (``post_sampling_probs``): the
tokens its penalties, top-k, typical-p, top-p, min-p … left, with their probabilities after its
temperature. Our ``llama.cpp`` preset runs the same chain on the same raw top-N. This module
sets the two side by side: which tokens each kept, and how far their probabilities differ.

What is exact. The engine lists at most N tokens. When it kept fewer than N, its list is its
whole kept set, and the comparison is complete. When the list is full, the engine kept at
least N (the ones past the N-th may carry almost no mass, so the sum of the listed
probabilities cannot tell): we compare the listed tokens with our N most likely ones.
At temperature 0 llama.cpp keeps only its top token, while our greedy selector takes the
argmax of whatever the stages kept: there, only the two picks are compared.

    >>> import torch
    >>> a = engine_agreement(torch.tensor([0.6, 0.4, 0.0, 0.0]), (0, 1), (0.6001, 0.3999), top_n=20, greedy=False)
    >>> a["same_set"], a["engine_kept"], a["ours_kept"], round(a["max_dp"], 4)
    (True, 2, 2, 0.0001)
    >>> engine_agreement(torch.tensor([0.5, 0.3, 0.2, 0.0]), (0, 1), (0.6, 0.4), top_n=20, greedy=False)["only_ours"]
    [2]
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

__all__ = ["engine_agreement"]

_LISTED = 5  # how many disagreeing ids a report names


def engine_agreement(p_final: torch.Tensor, post_ids: Sequence[int], post_probs: Sequence[float], top_n: int,
                     greedy: bool) -> dict[str, Any]:
    """Compare our final distribution ``p_final`` ([V]) with the engine's post-sampling report."""
    p = p_final.detach().double().cpu().flatten()
    ours = torch.nonzero(p > 0).flatten()
    ours_kept = int(ours.numel())
    engine = [int(i) for i in post_ids]
    partial = len(engine) >= top_n  # a full list: the engine kept at least N, maybe more
    out: dict[str, Any] = {"engine_kept": len(engine), "engine_lists_all": not partial, "ours_kept": ours_kept,
                           "greedy": greedy, "only_engine": [], "only_ours": [], "max_dp": None}
    if greedy:  # llama.cpp at T 0 keeps one token: compare the picks
        pick = int(torch.argmax(p)) if ours_kept else -1
        out["same_set"] = engine[:1] == [pick]
        return out
    kept = set(ours.tolist())
    out["only_engine"] = [i for i in engine if i not in kept][:_LISTED]
    if partial:  # the engine's list is its N most likely kept tokens: ours must rank the same N first
        ours_top = set(torch.topk(p, min(len(engine), ours_kept)).indices.tolist()) if ours_kept else set()
        out["same_set"] = ours_kept >= len(engine) and ours_top == set(engine)
    else:
        out["only_ours"] = sorted(kept - set(engine), key=lambda i: -float(p[i]))[:_LISTED]
        out["same_set"] = kept == set(engine)
    ids = engine if partial else sorted(kept | set(engine))
    given = dict(zip(engine, (float(x) for x in post_probs)))
    out["max_dp"] = max((abs(float(p[i]) - given.get(i, 0.0)) for i in ids), default=0.0)
    return out
