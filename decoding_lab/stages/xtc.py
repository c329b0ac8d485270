"""XTC, "Exclude Top Choices" (p-e-w, text-generation-webui #6335; llama.cpp's ``xtc``).

Every other truncation stage cuts the *tail*. XTC cuts the *head*: when several tokens
are each likely enough to be a sensible continuation, it removes all of them but the
least likely one, steering the text away from the most predictable choice without
leaving the set of sensible ones. It only acts on a fraction ``probability`` of the
steps, so most of the text stays as the model would write it.

One step, as llama.cpp's ``llama_sample_xtc_apply`` does it:

1. fewer than two candidates (finite logits): nothing to do;
2. draw a coin u in [0, 1); if u > probability, stop;
3. p = softmax over the candidates, sorted from most to least likely;
4. if at least two tokens have p >= threshold, remove every one of them except the
   last (least likely) one. Tokens below the threshold are untouched.

``threshold > 0.5`` turns XTC off (two tokens cannot both be above one half), exactly as
in llama.cpp. With llama.cpp's ``min_keep`` = 1 the condition of step 4 is always met
once two tokens pass the threshold, because the kept one is still there.

    >>> z = torch.log(torch.tensor([[0.4, 0.3, 0.2, 0.1]]))
    >>> XTC(1.0, threshold=0.15).transform(z, History.empty()).isfinite().tolist()
    [[False, False, True, True]]

(0.4, 0.3 and 0.2 pass 0.15; the least likely of them, 0.2, stays, and so does 0.1.)
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import torch

from dataclasses import dataclass

from decoding_lab.params import PARAMS
from decoding_lab.stages.base import History, Stage


@dataclass(frozen=True)
class XTCExtra:
    """Whether XTC removed the top choices at this step."""

    fired: bool


class XTC(Stage):
    """Exclude Top Choices, with a deterministic coin per step.

    The coin is *not* llama.cpp's: llama.cpp draws it from a ``std::mt19937`` stream seeded
    once, so its value depends on how many steps came before (and on which process drew).
    Here it is a hash (blake2b) of the seed and the row's whole token history, mapped to a
    uniform in [0, 1): the same text gives the same coin whether the step runs in the
    stepper, in a batch of samples or in a beam, and a rewound step fires again the same
    way. So the two implementations agree step by step only when the outcome does not
    depend on the coin: ``probability`` 0 (never) or 1 (always, since u < 1).
    ``seed=None`` behaves like 0.

    Ties: among tokens with the same probability, sorting is stable (lower token id first),
    so if several tokens tie for "least likely above the threshold", the one with the
    highest id is the one kept.
    """

    name = "xtc"

    @classmethod
    def from_settings(cls, s: Any) -> "XTC":
        return cls(s.xtc_probability, s.xtc_threshold, s.seed)

    def __init__(self, probability: float, threshold: float = 0.1, seed: int | None = 0) -> None:
        self.probability = PARAMS["xtc_probability"].check(probability)
        self.threshold = PARAMS["xtc_threshold"].check(threshold)
        self.seed = PARAMS["seed"].check(seed)

    def params(self) -> dict:
        return {"probability": self.probability, "threshold": self.threshold, "seed": self.seed}

    def is_active(self) -> bool:
        return self.probability > 0.0 and self.threshold <= 0.5

    def coin(self, ids: torch.Tensor) -> float:
        """The uniform in [0, 1) for one row's token history (1-D ids, prompt + output)."""
        tokens = [int(t) for t in ids.tolist()]
        h = hashlib.blake2b(digest_size=8, person=b"decoding-lab-xtc")
        h.update(struct.pack("<Q", self.seed or 0))
        h.update(struct.pack(f"<{len(tokens)}q", *tokens))
        return (int.from_bytes(h.digest(), "little") >> 11) / float(1 << 53)   # 53 random bits, as a double

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        if not self.is_active():
            return logits.clone()
        alive = logits > float("-inf")
        rows = logits.shape[0]
        ids = history.ids
        # One coin per row; a single-row history serves every row (as the penalties broadcast it).
        fire = torch.tensor([self.coin(ids[r if ids.shape[0] > 1 else 0]) <= self.probability
                             for r in range(rows)], dtype=torch.bool, device=logits.device)
        p = torch.softmax(logits, dim=-1)
        top = alive & (p >= self.threshold)       # the "top choices"
        n_top = top.sum(dim=-1)
        # The least likely top choice survives: the smallest logit among them, and on a tie
        # the highest token id (the last one after a stable descending sort).
        lowest = torch.where(top, logits, float("inf")).amin(dim=-1, keepdim=True)
        idx = torch.arange(logits.shape[-1], device=logits.device).expand_as(logits)
        keep = torch.where(top & (logits == lowest), idx, -1).amax(dim=-1, keepdim=True)
        remove = top & (idx != keep) & (fire & (n_top >= 2) & (alive.sum(dim=-1) >= 2)).unsqueeze(-1)
        return logits.masked_fill(remove, float("-inf"))

    def record_extra(self, before: torch.Tensor, after: torch.Tensor) -> "XTCExtra":
        """``fired``: this step removed top choices (the coin came up and two or more passed the threshold)."""
        removed = (before > float("-inf")) & ~(after > float("-inf"))
        return XTCExtra(bool(removed.any()))
