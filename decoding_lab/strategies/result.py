"""What a complete decoding strategy returns: sequences, their scores, and (for beam
search) the whole search tree.

Every strategy returns a ``GenerationResult``: one or more ``GeneratedSequence`` (the
*new* tokens only, never the prompt), the settings that produced them, and timing. Beam
search also fills ``beam_tree``: every candidate it looked at, step by step, with what
happened to it (kept as a live beam, finished as a hypothesis, or pruned).

Worked example::

    >>> seq = GeneratedSequence(token_ids=[11, 12, 2], text="Hi!", score=-1.5,
    ...                         logprobs=[-0.5, -0.75, -0.25], finished=True, entropies=[1.0, 0.5, 0.2])
    >>> r = GenerationResult("greedy", [seq], prompt_len=5, settings={}, seconds=0.1)
    >>> r.to_json()["sequences"][0]["token_ids"], r.text
    ([11, 12, 2], 'Hi!')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class GeneratedSequence:
    """One output.

    ``logprobs[i]`` is the log-probability of token i under the *final* distribution the
    selector used (after every stage; for beam search: the processed log-softmax score
    that was added to the beam's running score, exactly as transformers adds it).
    ``entropies[i]`` is the entropy (nats) of the model's *raw* distribution at that step.
    ``finished`` is True when the sequence ended on an end-of-sequence token, which is
    then the last entry of ``token_ids``; ``text`` leaves that token out."""

    token_ids: list[int]
    text: str
    score: float
    logprobs: list[float]
    finished: bool
    entropies: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def mean_logprob(self) -> float | None:
        return sum(self.logprobs) / len(self.logprobs) if self.logprobs else None

    def to_json(self) -> dict[str, Any]:
        return {"token_ids": list(self.token_ids), "text": self.text, "score": self.score,
                "logprobs": list(self.logprobs), "finished": self.finished, "entropies": list(self.entropies)}


# ---------------------------------------------------------------------------- beam tree
@dataclass
class BeamCandidate:
    """One (beam, next token) pair among the ``max(2, 1 + n_eos) * num_beams`` best of a step.

    ``status`` is one of

    * ``"live"``: it became one of the ``num_beams`` beams that continue;
    * ``"finished"``: it ended (EOS or the length limit), was among the top ``num_beams``
      candidates and entered the list of finished hypotheses (a later, better hypothesis
      may still push it out: see ``BeamTree.hypotheses`` for the final ranking);
    * ``"rejected"``: it ended among the top ``num_beams`` but could not enter the list
      (worse than every hypothesis already there, or early stopping had closed it);
    * ``"pruned"``: it was not needed. That includes an EOS candidate ranked below the top
      ``num_beams``: transformers never finishes those."""

    parent: int                # index of the beam it extends (a beam of the previous step)
    token_id: int
    token: str
    logprob: float             # this step's processed log-prob
    score: float               # cumulative: parent's score + logprob
    status: str
    eos: bool
    normalized_score: float | None = None   # score / length ** alpha, for candidates that ended

    def to_json(self) -> dict[str, Any]:
        return {"parent": self.parent, "token_id": self.token_id, "token": self.token, "logprob": self.logprob,
                "score": self.score, "status": self.status, "eos": self.eos,
                "normalized_score": self.normalized_score}


@dataclass
class BeamStep:
    """One step of the search. ``live[j]`` is the index (into ``candidates``) of the
    candidate that became beam j; that candidate's ``parent`` is the back-pointer."""

    step: int
    candidates: list[BeamCandidate]
    live: list[int]

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "candidates": [c.to_json() for c in self.candidates], "live": list(self.live)}


@dataclass
class BeamHypothesis:
    """A finished sequence in the final ranking (best first)."""

    token_ids: list[int]
    text: str
    raw_score: float           # sum of the processed log-probs
    score: float               # raw_score / length ** alpha (what is ranked)
    length: int                # generated tokens, EOS included
    step: int                  # the step it ended at
    candidate: int             # its index in that step's candidates
    eos: bool                  # False: it was cut by max_new_tokens

    def to_json(self) -> dict[str, Any]:
        return {"token_ids": list(self.token_ids), "text": self.text, "raw_score": self.raw_score,
                "score": self.score, "length": self.length, "step": self.step, "candidate": self.candidate,
                "eos": self.eos}


@dataclass
class BeamTree:
    num_beams: int
    length_penalty: float
    early_stopping: bool | str
    steps: list[BeamStep] = field(default_factory=list)
    hypotheses: list[BeamHypothesis] = field(default_factory=list)
    stop_reason: str = ""

    def path(self, step: int, beam: int) -> list[int]:
        """Follow the back-pointers from live beam ``beam`` after ``step`` to the root:
        the token ids of that beam, oldest first."""
        tokens: list[int] = []
        for s in range(step, -1, -1):
            cand = self.steps[s].candidates[self.steps[s].live[beam]]
            tokens.append(cand.token_id)
            beam = cand.parent
        return tokens[::-1]

    def to_json(self) -> dict[str, Any]:
        return {"num_beams": self.num_beams, "length_penalty": self.length_penalty,
                "early_stopping": self.early_stopping, "steps": [s.to_json() for s in self.steps],
                "hypotheses": [h.to_json() for h in self.hypotheses], "stop_reason": self.stop_reason}


# ---------------------------------------------------------------------------- the result
@dataclass
class GenerationResult:
    """The output of a strategy, or (from the ``iter_*`` forms) a snapshot of it so far.

    ``done`` is False in intermediate snapshots; ``stopped`` is True when ``should_stop``
    ended the run early. Snapshots of one beam search share the growing ``beam_tree``."""

    strategy: str
    sequences: list[GeneratedSequence]
    prompt_len: int
    settings: dict[str, Any]
    seconds: float
    beam_tree: BeamTree | None = None
    steps: int = 0
    done: bool = True
    stopped: bool = False

    @property
    def best(self) -> GeneratedSequence:
        return self.sequences[0]

    @property
    def text(self) -> str:
        return self.sequences[0].text if self.sequences else ""

    def to_json(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "sequences": [s.to_json() for s in self.sequences],
                "prompt_len": self.prompt_len, "settings": self.settings, "seconds": self.seconds,
                "steps": self.steps, "done": self.done, "stopped": self.stopped,
                "beam_tree": self.beam_tree.to_json() if self.beam_tree is not None else None}
