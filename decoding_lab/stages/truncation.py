"""Truncation stages: top-k, top-p (nucleus), min-p and typical-p.

Each one sets the tokens it cuts to -inf and leaves the rest untouched (the softmax
that follows renormalises). The arithmetic follows transformers' warpers exactly,
including how ties are broken, so that parity tests can demand identical kept sets:

* top-k keeps every token whose logit is >= the k-th largest (ties at the boundary
  are all kept, so a tie can leave more than k tokens);
* top-p sorts ascending, accumulates probability and cuts the tokens whose running
  sum stays <= 1 - p, i.e. it keeps the smallest head whose mass reaches p;
* min-p keeps tokens with p_i >= min_p * p_max, a threshold relative to the best token;
* typical-p keeps the tokens whose surprise -log p_i is closest to the entropy H,
  until their mass reaches p.

All of them keep at least one token.
"""

from __future__ import annotations

import torch

from decoding_lab.stages.base import History, Stage, check_number


class TopK(Stage):
    """Keep the k most likely tokens. ``k = 0`` means off (as in vLLM and llama.cpp).

    >>> TopK(2).transform(torch.tensor([[1.0, 3.0, 2.0, 3.0]]), History.empty()).tolist()
    [[-inf, 3.0, -inf, 3.0]]
    """

    name = "top-k"

    def __init__(self, k: int) -> None:
        self.k = int(check_number("top-k", k, lo=0, integer=True))

    def params(self) -> dict:
        return {"k": self.k}

    def is_active(self) -> bool:
        return self.k > 0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        if self.k <= 0:
            return logits.clone()
        k = min(self.k, logits.size(-1))
        kth = torch.topk(logits, k).values[..., -1, None]
        return logits.masked_fill(logits < kth, float("-inf"))


class TopP(Stage):
    """Nucleus sampling: keep the smallest set of most likely tokens whose mass reaches p.

    >>> z = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    >>> kept = TopP(0.8).transform(z, History.empty()).isfinite()
    >>> kept.tolist()      # 0.5 + 0.3 = 0.8 reaches p with two tokens
    [[True, True, False, False]]
    """

    name = "top-p"

    def __init__(self, p: float) -> None:
        self.p = check_number("top-p", p, lo=0.0, hi=1.0, lo_open=True)

    def params(self) -> dict:
        return {"p": self.p}

    def is_active(self) -> bool:
        return self.p < 1.0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        sorted_logits, sorted_idx = torch.sort(logits, descending=False)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove_sorted = cumulative <= (1 - self.p)
        remove_sorted[..., -1:] = False  # always keep the most likely token
        remove = remove_sorted.scatter(-1, sorted_idx, remove_sorted)
        return logits.masked_fill(remove, float("-inf"))


class MinP(Stage):
    """Keep tokens at least ``min_p`` times as likely as the most likely one.

    >>> z = torch.log(torch.tensor([[0.6, 0.3, 0.07, 0.03]]))
    >>> MinP(0.1).transform(z, History.empty()).isfinite().tolist()   # threshold 0.06
    [[True, True, True, False]]
    """

    name = "min-p"

    def __init__(self, min_p: float) -> None:
        self.min_p = check_number("min-p", min_p, lo=0.0, hi=1.0)

    def params(self) -> dict:
        return {"min_p": self.min_p}

    def is_active(self) -> bool:
        return self.min_p > 0.0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        p = torch.softmax(logits, dim=-1)
        threshold = self.min_p * p.amax(dim=-1, keepdim=True)
        remove = p < threshold
        best = torch.topk(p, 1, dim=-1).indices
        remove = remove.scatter(-1, best, False)
        return logits.masked_fill(remove, float("-inf"))


class TypicalP(Stage):
    """Locally typical sampling (Meister et al. 2023): prefer tokens whose surprise
    -log p is close to the entropy, then keep them until their mass reaches p.
    The most likely token can be cut when it is far *less* surprising than typical.

    >>> z = torch.log(torch.tensor([[0.4, 0.3, 0.2, 0.1]]))
    >>> TypicalP(0.5).transform(z, History.empty()).isfinite().tolist()
    [[False, True, True, False]]
    """

    name = "typical-p"

    def __init__(self, p: float) -> None:
        self.p = check_number("typical-p", p, lo=0.0, hi=1.0, lo_open=True)

    def params(self) -> dict:
        return {"p": self.p}

    def is_active(self) -> bool:
        return self.p < 1.0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        if self.p >= 1.0:
            return logits.clone()
        logp = torch.log_softmax(logits, dim=-1)
        p = logp.exp()
        ent = -(logp * p).nansum(-1, keepdim=True)
        surprise_gap = (-logp - ent).abs()
        sorted_gap, sorted_idx = torch.sort(surprise_gap, descending=False)
        sorted_logits = logits.gather(-1, sorted_idx)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        last = (cumulative < self.p).sum(dim=-1).clamp(max=sorted_gap.shape[-1] - 1)
        remove_sorted = sorted_gap > sorted_gap.gather(-1, last.view(-1, 1))
        remove_sorted[..., :1] = False
        remove = remove_sorted.scatter(-1, sorted_idx, remove_sorted)
        return logits.masked_fill(remove, float("-inf"))
