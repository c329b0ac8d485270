"""Truncation stages: top-k, top-p (nucleus), min-p, typical-p and top-n-sigma.

Each one sets the tokens it cuts to -inf and leaves the rest untouched (the softmax
that follows renormalises). The arithmetic follows transformers' warpers exactly,
including how ties are broken, so that parity tests can demand identical kept sets:

* top-k keeps every token whose logit is >= the k-th largest (ties at the boundary
  are all kept, so a tie can leave more than k tokens); with ``exact=True`` (llama.cpp)
  it keeps exactly k, breaking ties by token id;
* top-p sorts ascending, accumulates probability and cuts the tokens whose running
  sum stays <= 1 - p, i.e. it keeps the smallest head whose mass reaches p;
* min-p keeps tokens with p_i >= min_p * p_max, a threshold relative to the best token;
* typical-p keeps the tokens whose surprise -log p_i is closest to the entropy H,
  until their mass reaches p (transformers: the mass reaches p, ties with the last token
  kept; ``strict=True``, llama.cpp: the mass goes strictly above p, exactly that many kept);
* top-n-sigma (llama.cpp) keeps the tokens whose *logit* is within n standard deviations
  of the best logit. It has no transformers counterpart; it follows llama.cpp's
  ``llama_sampler_top_n_sigma_apply`` instead.

All of them keep at least one token.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from decoding_lab.params import PARAMS
from decoding_lab.stages.base import History, Stage
from decoding_lab.stages.partial_sort import cut_with_fallback, top_p_remove, typical_p_remove


class TopK(Stage):
    """Keep the k most likely tokens. ``k = 0`` means off (as in vLLM and llama.cpp).

    >>> TopK(2).transform(torch.tensor([[1.0, 3.0, 2.0, 3.0]]), History.empty()).tolist()
    [[-inf, 3.0, -inf, 3.0]]

    With ties at the boundary, transformers and vLLM keep them all; llama.cpp keeps exactly k:

    >>> z = torch.tensor([[3.0, 2.0, 2.0, 1.0]])
    >>> TopK(2).transform(z, History.empty()).isfinite().sum().item()
    3
    >>> TopK(2, exact=True).transform(z, History.empty()).tolist()
    [[3.0, 2.0, -inf, -inf]]
    """

    name = "top-k"

    def __init__(self, k: int, exact: bool = False) -> None:
        self.k = PARAMS["top_k"].check(k)
        self.exact = bool(exact)

    @classmethod
    def from_settings(cls, s: Any) -> "TopK":
        return cls(s.top_k, exact=s.rules.top_k_exact)

    def params(self) -> dict:
        return {"k": self.k, "ties": "exactly k" if self.exact else "all kept"}

    def is_active(self) -> bool:
        return self.k > 0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        if self.k <= 0:
            return logits.clone()
        k = min(self.k, logits.size(-1))
        if self.exact:  # a stable sort: among equal logits the lower token id comes first
            order = torch.sort(logits, dim=-1, descending=True, stable=True).indices
            remove = torch.ones_like(logits, dtype=torch.bool).scatter(-1, order[..., :k], False)
            return logits.masked_fill(remove, float("-inf"))
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

    def __init__(self, p: float, float32_sums: bool = False) -> None:
        self.p = PARAMS["top_p"].check(p)
        self.float32_sums = bool(float32_sums)

    @classmethod
    def from_settings(cls, s: Any) -> "TopP":
        return cls(s.top_p, float32_sums=s.rules.float32_sums)

    def params(self) -> dict:
        return {"p": self.p, **({"sums": "float32, as llama.cpp"} if self.float32_sums else {})}

    def is_active(self) -> bool:
        return self.p < 1.0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        if self.float32_sums and self.p < 1.0:
            return self._llamacpp(logits)
        if self.p >= 1.0:
            return self._full_sort(logits)
        # A small nucleus is decided from a partial sort, the same set (``partial_sort``);
        # the rows it cannot settle are sorted whole.
        return cut_with_fallback(logits, *top_p_remove(logits, self.p), self._full_sort)

    def _full_sort(self, logits: torch.Tensor) -> torch.Tensor:
        """transformers' ``TopPLogitsWarper``: the whole vocabulary sorted."""
        sorted_logits, sorted_idx = torch.sort(logits, descending=False)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove_sorted = cumulative <= (1 - self.p)
        remove_sorted[..., -1:] = False  # always keep the most likely token
        remove = remove_sorted.scatter(-1, sorted_idx, remove_sorted)
        return logits.masked_fill(remove, float("-inf"))

    def _llamacpp(self, logits: torch.Tensor) -> torch.Tensor:
        """llama.cpp's arithmetic: p_i = expf(z_i - max) / (a float running sum of those, in
        token order); then, most likely first, a float running sum of p_i until it is >= p."""
        rows = logits.detach().to("cpu", torch.float32).numpy()
        remove = np.ones(rows.shape, dtype=bool)
        for i, z in enumerate(rows):
            e = np.exp(z - z.max())
            p = e / np.add.accumulate(e, dtype=np.float32)[-1]
            order = np.argsort(-p, kind="stable")
            mass = np.add.accumulate(p[order], dtype=np.float32)
            n_keep = min(int(np.count_nonzero(mass < np.float32(self.p))) + 1, len(order))
            remove[i, order[:n_keep]] = False
        return logits.masked_fill(torch.from_numpy(remove).to(logits.device), float("-inf"))


class MinP(Stage):
    """Keep tokens at least ``min_p`` times as likely as the most likely one.

    >>> z = torch.log(torch.tensor([[0.6, 0.3, 0.07, 0.03]]))
    >>> MinP(0.1).transform(z, History.empty()).isfinite().tolist()   # threshold 0.06
    [[True, True, True, False]]
    """

    name = "min-p"

    def __init__(self, min_p: float) -> None:
        self.min_p = PARAMS["min_p"].check(min_p)

    @classmethod
    def from_settings(cls, s: Any) -> "MinP":
        return cls(s.min_p)

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

    At an exact boundary the two rules differ: here 0.3 + 0.2 = 0.5 reaches p = 0.5, which is
    enough for transformers, while llama.cpp wants mass strictly above p and adds a third token:

    >>> TypicalP(0.5, strict=True).transform(z, History.empty()).isfinite().tolist()
    [[True, True, True, False]]
    """

    name = "typical-p"

    def __init__(self, p: float, strict: bool = False) -> None:
        self.p = PARAMS["typical_p"].check(p)
        self.strict = bool(strict)

    @classmethod
    def from_settings(cls, s: Any) -> "TypicalP":
        return cls(s.typical_p, strict=s.rules.typical_strict)

    def params(self) -> dict:
        return {"p": self.p, "rule": "mass > p, exactly that many" if self.strict else "mass >= p, ties kept"}

    def is_active(self) -> bool:
        return self.p < 1.0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        if self.p >= 1.0:
            return logits.clone()
        logp = torch.log_softmax(logits, dim=-1)
        p = logp.exp()
        ent = -(logp * p).nansum(-1, keepdim=True)
        surprise_gap = (-logp - ent).abs()
        # The kept set from a partial sort where it settles the boundary (``partial_sort``).
        remove, decided = typical_p_remove(logits, surprise_gap, self.p, self.strict)
        rows = (~decided).nonzero().flatten()
        return cut_with_fallback(logits, remove, decided, lambda z: self._full_sort(z, surprise_gap[rows]))

    def _full_sort(self, logits: torch.Tensor, surprise_gap: torch.Tensor) -> torch.Tensor:
        """The reference rule: every token sorted by its surprise gap."""
        sorted_gap, sorted_idx = torch.sort(surprise_gap, descending=False, stable=True)
        sorted_logits = logits.gather(-1, sorted_idx)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        if self.strict:  # llama.cpp: the first position where the running mass is > p, inclusive
            n_keep = ((cumulative <= self.p).sum(dim=-1, keepdim=True) + 1).clamp(max=sorted_gap.shape[-1])
            positions = torch.arange(sorted_gap.shape[-1], device=logits.device).expand_as(sorted_gap)
            remove_sorted = positions >= n_keep
            remove = remove_sorted.scatter(-1, sorted_idx, remove_sorted)
            return logits.masked_fill(remove, float("-inf"))
        last = (cumulative < self.p).sum(dim=-1).clamp(max=sorted_gap.shape[-1] - 1)
        remove_sorted = sorted_gap > sorted_gap.gather(-1, last.view(-1, 1))
        remove_sorted[..., :1] = False
        remove = remove_sorted.scatter(-1, sorted_idx, remove_sorted)
        return logits.masked_fill(remove, float("-inf"))


class TopNSigma(Stage):
    """Top-n-sigma (Tang et al. 2024, "Top-nσ: Not All Logits Are You Need"; llama.cpp's
    ``top_n_sigma``): keep the tokens whose logit is at least ``max - n * std``.

    It works on the *logits*, not the probabilities: a model's logits look like a bell of
    noise plus a few informative outliers at the top, and the std measures the width of the
    noise. Dividing every logit by a temperature divides max and std alike, so the kept set
    does not depend on temperature, which is the method's selling point.

    Arithmetic as in llama.cpp's ``llama_sampler_top_n_sigma_apply``: mean and standard
    deviation are taken over the current candidates only (finite logits; a token an earlier
    stage set to -inf does not count), and the std is the *population* one (divide by the
    count, not count - 1). ``n <= 0`` is off (llama.cpp's default is -1); with one candidate
    there is nothing to do. The best token always survives (its logit is the max).

    >>> z = torch.tensor([[3.0, 2.0, 1.0, 0.0]])    # mean 1.5, std sqrt(1.25) = 1.118
    >>> TopNSigma(1.0).transform(z, History.empty()).tolist()   # keep z >= 3 - 1.118 = 1.882
    [[3.0, 2.0, -inf, -inf]]
    >>> TopNSigma(2.0).transform(z, History.empty()).tolist()   # keep z >= 3 - 2.236 = 0.764
    [[3.0, 2.0, 1.0, -inf]]
    """

    name = "top-n-sigma"

    @classmethod
    def from_settings(cls, s: Any) -> "TopNSigma":
        return cls(s.top_n_sigma)

    def __init__(self, n: float) -> None:
        self.n = PARAMS["top_n_sigma"].check(n)

    def params(self) -> dict:
        return {"n": self.n}

    def is_active(self) -> bool:
        return self.n > 0.0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        if self.n <= 0.0:
            return logits.clone()
        # Statistics in float64 over the candidates (finite logits) only; the -inf entries are
        # replaced by 0 before summing and masked out of the count.
        alive = logits > float("-inf")
        z = torch.where(alive, logits.double(), 0.0)
        count = alive.sum(dim=-1, keepdim=True).clamp(min=1)
        mean = z.sum(dim=-1, keepdim=True) / count
        var = torch.where(alive, (z - mean) ** 2, 0.0).sum(dim=-1, keepdim=True) / count  # population variance
        best = torch.where(alive, z, float("-inf")).amax(dim=-1, keepdim=True)
        remove = alive & (z < best - self.n * var.sqrt())
        return logits.masked_fill(remove, float("-inf"))
