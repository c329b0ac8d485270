"""The stage protocol: one small, named transformation of the next-token logits.

A stage takes logits over the *full* vocabulary and returns new logits of the same
shape. Truncating stages cut tokens by setting them to ``-inf`` (we never shrink the
candidate list), so a record can say exactly which tokens a stage removed, and how
much probability they carried under the distribution that entered the stage.

Every stage is also a ``transformers.LogitsProcessor``: ``stage(input_ids, scores)``
works inside ``model.generate`` and can be compared with transformers' own processors.

Worked example::

    >>> from decoding_lab.stages import TopK
    >>> z = torch.tensor([3.0, 2.0, 1.0, 0.0])
    >>> out, rec = TopK(2).apply(z, History.empty())
    >>> out.tolist()
    [3.0, 2.0, -inf, -inf]
    >>> rec.kept, round(rec.removed_mass, 3)     # two tokens left; 0.119 of the mass was cut
    (2, 0.119)
"""

from __future__ import annotations

import dataclasses
import math
import time
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, TYPE_CHECKING

import torch
from transformers import LogitsProcessor

from decoding_lab.errors import SettingsError
from decoding_lab.params import check_number
from decoding_lab.stats import entropy_of_probs, probs

if TYPE_CHECKING:  # a type hint only: the backends sit above this layer
    from decoding_lab.backends.base import LanguageModel

__all__ = ["History", "StageRecord", "make_record", "Stage", "SettingsError", "check_number"]


@dataclass(frozen=True)
class History:
    """The tokens a stage may look at.

    ``ids`` is ``[batch, length]`` (prompt followed by the tokens generated so far) and
    ``prompt_len`` says where the prompt ends, so that penalties can follow the OpenAI
    definition (generated tokens only) or include the prompt."""

    ids: torch.Tensor
    prompt_len: int = 0

    @staticmethod
    def empty(batch: int = 1) -> "History":
        return History(torch.zeros((batch, 0), dtype=torch.long), 0)

    @staticmethod
    def from_lists(prompt: list[int], output: list[int]) -> "History":
        return History(torch.tensor([list(prompt) + list(output)], dtype=torch.long), len(prompt))

    def output(self) -> torch.Tensor:
        return self.ids[:, self.prompt_len :]


@dataclass
class StageRecord:
    """What one stage did at one step (for one row of the batch).

    ``removed`` is a bool mask over the whole vocabulary (tokens this stage turned to
    -inf). It is large (one byte per vocabulary entry), so traces drop it once the views
    that need it are built; it never goes into JSON.

    ``extra`` is what only this kind of stage knows, as a small frozen dataclass of its own
    (the grammar mask's ``GrammarExtra``: allowed count, forced flag, mask time …), or None.
    Read it with ``record.extra.allowed``, never by string key; ``to_json`` writes its fields."""

    name: str
    params: dict[str, Any]
    kept: int                 # tokens still possible after the stage
    removed_count: int        # tokens this stage cut
    removed_mass: float       # their probability under the distribution entering the stage
    entropy_after: float      # nats
    shift: float              # total-variation distance between the distributions before and after
    seconds: float
    removed: torch.Tensor | None = field(default=None, repr=False, compare=False)
    extra: Any = None
    #: softmax of the logits after the stage: the next stage's "before" (dropped with ``removed``)
    probs_after: torch.Tensor | None = field(default=None, repr=False, compare=False)

    def drop_tensors(self) -> None:
        """Forget the full-vocabulary tensors once the views that need them are built."""
        self.removed = None
        self.probs_after = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": self.params,
            "kept": self.kept,
            "removed": self.removed_count,
            "removed_mass": self.removed_mass,
            "entropy_after": self.entropy_after,
            "shift": self.shift,
            "seconds": self.seconds,
            **({"extra": extra_json(self.extra)} if self.extra is not None else {}),
        }


def extra_json(extra: Any) -> Any:
    """A record's typed extra as plain JSON (its dataclass fields, recursively)."""
    if dataclasses.is_dataclass(extra) and not isinstance(extra, type):
        return dataclasses.asdict(extra)
    return extra


def make_record(name: str, params: dict, before: torch.Tensor, after: torch.Tensor, seconds: float,
                extra: Any = None, p_before: torch.Tensor | None = None,
                p_after: torch.Tensor | None = None) -> StageRecord:
    """Compare 1-D logits before and after a stage and describe the difference.

    ``p_before`` / ``p_after`` (their softmaxes) may be passed in when the caller already
    has them: a chain computes each distribution once and hands it to both neighbours."""
    alive_before = before > -math.inf
    alive_after = after > -math.inf
    removed = alive_before & ~alive_after
    p_before = probs(before) if p_before is None else p_before
    p_after = probs(after) if p_after is None else p_after
    return StageRecord(
        name=name,
        params=params,
        kept=int(alive_after.sum()),
        removed_count=int(removed.sum()),
        removed_mass=float(torch.where(removed, p_before, 0.0).sum()),
        entropy_after=entropy_of_probs(p_after),
        shift=float(0.5 * (p_before - p_after).abs().sum()),
        seconds=seconds,
        removed=removed,
        extra=extra,
        probs_after=p_after,
    )


class Stage(LogitsProcessor):
    """Base class. Subclasses set ``name``, validate in ``__init__`` and implement ``transform``.

    A stage built from ``SamplingSettings`` also implements ``from_settings`` (and is listed
    in ``decoding_lab.stages.STAGE_CLASSES``); its knobs are rows of ``decoding_lab.params``."""

    name: ClassVar[str] = "stage"
    #: True for the stage whose input dH/dT and the H(T) curve are measured on (temperature).
    measures_temperature: ClassVar[bool] = False
    #: Stages that look at history (penalties, n-gram blocking, grammar) need the prompt length when
    #: they run inside ``model.generate``; set it with ``for_prompt(n)``.
    prompt_len: int = 0

    @abstractmethod
    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        """``[batch, vocab] -> [batch, vocab]``; never modifies ``logits`` in place."""

    def params(self) -> dict[str, Any]:
        return {}

    def is_active(self) -> bool:
        """False when the stage's setting leaves every distribution unchanged (e.g. top-k 0)."""
        return True

    def record_extra(self, before: torch.Tensor, after: torch.Tensor) -> Any:
        """Stage-specific additions to the record, as a small dataclass (e.g. the grammar's
        ``GrammarExtra``), or None (1-D logits before and after the stage)."""
        return None

    @classmethod
    def from_settings(cls, settings: Any) -> "Stage | None":
        """This stage as ``settings`` (a ``SamplingSettings``) asks for it; None when it has no place
        (temperature 0 is greedy: no temperature stage)."""
        raise NotImplementedError(f"{cls.__name__} is not built from settings")

    def bind_model(self, lm: LanguageModel) -> None:
        """Learn what the stage needs from the model it will run on (DRY: which tokens are
        sequence breakers). Most stages need nothing."""

    def transform_one(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        """1-D logits of the stepper's row. Stateful stages override this to use their own state."""
        return self.transform(logits.unsqueeze(0), history)[0]

    def apply(self, logits: torch.Tensor, history: History,
              p_before: torch.Tensor | None = None) -> tuple[torch.Tensor, StageRecord]:
        """Run on one row of 1-D logits and record what happened. ``p_before`` is the softmax of
        ``logits`` when the caller has it (a chain computes each distribution once)."""
        t0 = time.perf_counter()
        out = self.transform_one(logits, history)
        seconds = time.perf_counter() - t0
        return out, make_record(self.name, self.params(), logits, out, seconds, self.record_extra(logits, out),
                                p_before=p_before)

    # ---- stateful stages only (grammar) -------------------------------------------------
    # Stateless stages read everything they need from ``History``; a stateful stage keeps
    # one state per row of the batch it is working on. The stepper works on one row
    # (``accept`` / ``rollback``); complete strategies call ``start(n)`` before the first
    # step and ``advance(parents, tokens)`` after each one: new row i continues old row
    # ``parents[i]`` with ``tokens[i]`` (sampling: parents = 0..n-1; beam search: the
    # back-pointers of the surviving beams).
    stateful: ClassVar[bool] = False

    def accept(self, token_id: int) -> None:
        """Told which token was chosen (grammar matchers advance here)."""

    def rollback(self, n_tokens: int) -> None:
        """Undo the last ``n_tokens`` accepts (rewind in the stepper)."""

    def start(self, batch_size: int) -> None:
        """Begin a batched generation with ``batch_size`` rows, all at the current state."""

    def advance(self, parents: list[int], tokens: list[int]) -> None:
        """Batched generation: row i of the next step continues row ``parents[i]`` with ``tokens[i]``."""

    # ---- transformers LogitsProcessor --------------------------------------------------
    def for_prompt(self, prompt_len: int) -> "Stage":
        self.prompt_len = int(prompt_len)
        return self

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        return self.transform(scores, History(input_ids, self.prompt_len))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"
