"""Top-p and typical-p without sorting the whole vocabulary, when the kept set is small.

Both rules are written (in transformers and llama.cpp) as: sort every token, accumulate
probability along the sorted order, cut where the running sum crosses a threshold. On a
262,144-token vocabulary the sort is ~95% of the stage's time, yet a typical nucleus holds
a handful of tokens. So we look at only the best ``K`` tokens (``torch.topk``, a partial
sort), find the boundary there, and *prove* that the full-sort rule would cut at the same
place; a row we cannot settle is marked undecided and the caller sorts that row as before.

Why the answer is the same set, not merely a close one:

* Order. All tokens outside the head rank below every head token, so in the sorted order
  they sit on the far side of the boundary and are cut (or, for typical-p, never reached).
* Arithmetic. The reference takes a softmax over the *sorted* logits and a cumulative sum
  (PyTorch accumulates float32 cumsums in double on the CPU and rounds once). For top-p we
  take each head token's probability as exp(z - logsumexp(z)) in float64 (typical-p: a
  softmax in vocabulary order) and sum in float64. The two running sums differ by ~1e-6 of
  the total mass at most. We accept the boundary only when the running sum is farther than
  ``MARGIN`` (1e-5) from the threshold on *both* sides of it; otherwise the rounding could
  decide, and the row is sorted.
* Ties. Sorts do not promise an order among equal values, so a boundary that falls
  between two equal keys is left to the full sort too (it then does exactly what it did).

Worked example: p = 0.9 over probabilities (0.5, 0.3, 0.15, 0.05). From the top, the
running mass is 0.5, 0.8, 0.95: the third token is the first to reach 0.9, and 0.95 - 0.9
and 0.9 - 0.8 are both far above the margin, so the head decides: keep three.

>>> z = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
>>> remove, decided = top_p_remove(z, 0.9, head=4)   # the head must reach the first cut token
>>> remove.tolist(), decided.tolist()
([[False, False, False, True]], [True])

At p = 0.8 the running mass 0.8 sits *on* the threshold: rounding decides, so the row is
left undecided and the stage sorts it fully:

>>> top_p_remove(z, 0.8, head=4)[1].tolist()
[False]
"""

from __future__ import annotations

from typing import Callable

import torch

#: How far (in probability mass) a running sum must be from the threshold for the partial
#: sort to decide. The reference's own rounding is ~1e-7; see the module docstring.
MARGIN = 1e-5
#: Head sizes tried in turn before giving up (a nucleus larger than the last one sorts fully).
#: For top-p, a head holding less than half of p goes straight to the full sort: a flat
#: distribution's nucleus is thousands of tokens, and a second partial sort would only add
#: to the full one.
HEADS = (64, 1024)


def _heads(vocab: int, head: int | None) -> tuple[int, ...]:
    sizes = (head,) if head is not None else HEADS
    return tuple(sorted({min(int(k), vocab) for k in sizes}))


def top_p_remove(logits: torch.Tensor, p: float, head: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' top-p cut (``TopPLogitsWarper``) from a partial sort: ``(remove, decided)``,
    a bool mask over ``logits`` ``[batch, vocab]`` and a bool per row. A row is undecided (its
    mask means nothing) when its head cannot settle the boundary: a large nucleus, a tie, or a
    running sum within ``MARGIN`` of the threshold.

    The reference keeps token i when its ascending running sum, i.e. the mass of every token
    ranked at or below it, is above ``1 - p``. For the head, sorted best first, that mass is
    ``1 - (mass of the better head tokens)``."""
    threshold = float(torch.tensor(1.0 - p, dtype=torch.float32))   # the reference compares in float32
    # log of the softmax's denominator: a head token's probability is exp(z - lse), and the mass
    # of everything is 1 (the reference's float32 sum is 1 within ~1e-6, far inside MARGIN).
    lse = torch.logsumexp(logits, dim=-1)
    # the best token's probability bounds what any head can hold: a flat row goes straight to the sort
    p_max = torch.exp(logits.amax(dim=-1) - lse)
    remove = torch.ones_like(logits, dtype=torch.bool)
    decided = torch.zeros(logits.shape[0], dtype=torch.bool)
    for r in range(logits.shape[0]):
        if not bool(torch.isfinite(lse[r])) or float(p_max[r]) * min(_heads(logits.shape[-1], head)) < p / 2:
            continue
        for k in _heads(logits.shape[-1], head):
            vals, idx = torch.topk(logits[r], k)
            head_p = torch.exp(vals.double() - float(lse[r]))
            better = torch.cumsum(head_p, 0) - head_p           # mass of the head tokens above each one
            at_or_below = 1.0 - better
            n_keep = int((at_or_below > threshold).sum())       # decreasing along the head
            n_keep = max(n_keep, 1)                             # the best token is always kept
            if n_keep >= k:                                     # the nucleus may go past the head
                if k == logits.shape[-1] or float(head_p.sum()) < p / 2:
                    break                                       # far past it: sort the row whole
                continue
            first_cut = float(at_or_below[n_keep])
            last_kept = float(at_or_below[n_keep - 1])
            if (threshold - first_cut > MARGIN and (last_kept - threshold > MARGIN or n_keep == 1)
                    and bool(vals[n_keep - 1] > vals[n_keep])):  # else rounding or a tie would decide
                remove[r, idx[:n_keep]] = False
                decided[r] = True
            break
    return remove, decided


def typical_p_remove(logits: torch.Tensor, gap: torch.Tensor, p: float, strict: bool,
                     head: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Typical-p's cut from a partial sort of the surprise gap ``|-log p_i - H|`` (computed by
    the caller exactly as the full-sort path does): ``(remove, decided)`` as in ``top_p_remove``.

    Sorted by gap, smallest first, with running mass m_j (including token j):

    * transformers (``strict=False``): j* = the first position with m_j >= p; every token whose
      gap is <= gap[j*] is kept (ties with it included);
    * llama.cpp (``strict=True``): the first position with m_j > p is the last kept, and exactly
      that many tokens are kept."""
    probs = torch.softmax(logits, dim=-1)
    bound = float(torch.tensor(p, dtype=torch.float32))
    remove = torch.ones_like(logits, dtype=torch.bool)
    decided = torch.zeros(logits.shape[0], dtype=torch.bool)
    for r in range(logits.shape[0]):
        for k in _heads(logits.shape[-1], head):
            neg_gap, idx = torch.topk(-gap[r], k)
            g = -neg_gap
            mass = torch.cumsum(probs[r, idx].double(), 0)
            reached = (mass >= bound) if not strict else (mass > bound)
            if not bool(reached.any()):
                if k == logits.shape[-1]:
                    break
                continue
            last = int(reached.nonzero()[0])                    # the last kept position
            if last + 1 >= k:                                   # cannot see the next key to rule out a tie
                if k == logits.shape[-1]:
                    break
                continue
            after = float(mass[last]) - float(bound)
            before = float(bound) - float(mass[last - 1]) if last > 0 else 1.0
            if after > MARGIN and before > MARGIN and bool(g[last] < g[last + 1]) and bool(torch.isfinite(g[last])):
                remove[r, idx[: last + 1]] = False
                decided[r] = True
            break
    return remove, decided


def cut_with_fallback(logits: torch.Tensor, remove: torch.Tensor, decided: torch.Tensor,
                      full_sort: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """``logits`` with the decided rows' cuts applied and every undecided row handed to
    ``full_sort`` (the reference rule, row by row, so a row's answer never depends on the
    other rows of the batch)."""
    if not bool(decided.any()):          # nothing settled: the reference on the whole batch, as it was
        return full_sort(logits)
    out = logits.masked_fill(remove & decided[:, None], float("-inf"))
    if not bool(decided.all()):
        rows = (~decided).nonzero().flatten()
        out[rows] = full_sort(logits[rows])
    return out
