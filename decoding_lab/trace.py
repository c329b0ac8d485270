"""``StepTrace``: the record of one decoding step, which every view consumes.

A trace holds the top of the raw distribution (with each token's raw and final
probability and the stage that cut it, if any), one ``StageRecord`` per stage, the
distribution's statistics, the chosen token and timings. ``to_json()`` gives the plain
dict that the CLI prints, the app exports and the tests compare; full-vocabulary
tensors never go into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from decoding_lab.stages import StageRecord


@dataclass
class TokenRow:
    """One candidate token as the views show it."""

    token_id: int
    token: str
    logit: float
    p_raw: float            # softmax of the model's logits (T = 1, nothing cut)
    p_final: float          # the distribution the selector drew from
    rank: int               # 1 = most likely under the raw distribution
    cut_by: str | None      # the first stage that removed this token, if any
    #: its probability in the distribution entering the stage that cut it (None when kept);
    #: not in ``to_json``, so the CLI's and the exports' rows keep their shape
    p_cut: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"token_id": self.token_id, "token": self.token, "logit": self.logit, "p_raw": self.p_raw,
                "p_final": self.p_final, "rank": self.rank, "cut_by": self.cut_by}


@dataclass
class StepTrace:
    step: int                       # 0 = the first generated token
    chosen_token_id: int
    chosen_token: str
    chosen_rank: int                # rank under the raw distribution
    chosen_p_raw: float
    chosen_p_final: float
    forced: bool                    # the user picked the token, the selector did not
    greedy: bool
    temperature: float
    entropy: float                  # H of the raw distribution (T = 1), nats
    entropy_T: float | None         # H at the current temperature of the logits entering it
    entropy_final: float            # H of the final distribution
    dH_dT: float | None             # Var_{p_T}(z) / T^3 at the current temperature
    margin: float                   # top-1 minus top-2 raw logit
    tail: dict[str, Any]            # tail mass of the raw distribution
    tail_final: dict[str, Any]
    kept_final: int                 # tokens the selector could choose from
    stages: list[StageRecord]
    top: list[TokenRow]
    finished: bool                  # chose an end-of-sequence token
    timings: dict[str, float] = field(default_factory=dict)
    entropy_curve: list[tuple[float, float]] = field(default_factory=list)
    # A model on a server reports only its top-N (``decoding_lab.remote``): what it said for this
    # step (the top-N, the unreported tail mass, the engine's own pick, what is exact). None for
    # a model run in this process, whose full distribution every figure above comes from.
    reported: dict[str, Any] | None = None

    def record(self, kind: type | str) -> StageRecord | None:
        """The record of the first stage of ``kind`` (a Stage class or its name), or None.

        >>> from decoding_lab.stages import TopK
        >>> trace = StepTrace.__new__(StepTrace); trace.stages = []
        >>> trace.record(TopK) is None
        True
        """
        name = kind if isinstance(kind, str) else getattr(kind, "name", "")
        return next((r for r in self.stages if r.name == name), None)

    def to_json(self, with_curve: bool = False) -> dict[str, Any]:
        d = {
            "step": self.step,
            "chosen_token_id": self.chosen_token_id,
            "chosen_token": self.chosen_token,
            "chosen_rank": self.chosen_rank,
            "chosen_p_raw": self.chosen_p_raw,
            "chosen_p_final": self.chosen_p_final,
            "forced": self.forced,
            "greedy": self.greedy,
            "temperature": self.temperature,
            "entropy": self.entropy,
            "entropy_T": self.entropy_T,
            "entropy_final": self.entropy_final,
            "dH_dT": self.dH_dT,
            "margin": self.margin,
            "tail": self.tail,
            "tail_final": self.tail_final,
            "kept_final": self.kept_final,
            "stages": [s.to_json() for s in self.stages],
            "top": [t.to_json() for t in self.top],
            "finished": self.finished,
            "timings": self.timings,
        }
        if with_curve:
            d["entropy_curve"] = [list(p) for p in self.entropy_curve]
        if self.reported is not None:
            d["reported"] = self.reported
        return d
