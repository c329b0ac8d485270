"""Getting the final answer by *constraint*: a second, short, grammar-constrained generation.

Pattern extraction (``extract.py``) reads the text; this asks the model. After its free
completion we append a cue (``"\\nSo the final answer is"``) and let it write a few more
tokens greedily under a grammar that only allows an answer: one of the options
(`` A``/`` B``/...), one of the known names, or an integer (regex `` ?-?[0-9]{1,6}``
followed by a terminator such as ``.``: without one, a model that wants to write "7."
can only go on with digits, and "7" becomes "71111").
The grammar engine is ``decoding_lab.grammar`` (llguidance); the mask only removes
tokens, so the model still ranks the allowed answers itself.

Two protocols are worth telling apart (evaluation reports rarely say which they used):

* ``after``  — the model first writes freely, then answers under the constraint
  (the constraint only *reads off* what it concluded);
* ``direct`` — the model must answer at once under the constraint, with no room to
  work things out first (what forcing "A/B/C/D" as the very first token does).

    >>> ans = constrained_answer(lm, ids + completion_ids, {"regex": r" ?-?[0-9]{1,6}"})   # doctest: +SKIP
    >>> ans                                                                           # doctest: +SKIP
    '7'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from decoding_lab.errors import SettingsError
from decoding_lab.grammar import GrammarMask, choices, regex
from decoding_lab.settings import SamplingSettings
from decoding_lab.strategies import greedy
from decoding_lab.tasks.sets import Problem, Task
from decoding_lab.backends.base import LanguageModel

ANSWER_CUE = "\nSo the final answer is"
NUMBER_END = r"[.,;!\n ]"
DIRECT_CUE = "The answer is"


def _encode(lm: LanguageModel, text: str) -> list[int]:
    tok = getattr(lm, "tokenizer", None)
    if tok is not None:
        return list(tok(text, add_special_tokens=False)["input_ids"])
    return lm.encode_prompt(text, chat=False)


def _constraint(space: dict[str, Any]) -> Any:
    if "choices" in space:
        return choices([" " + c for c in space["choices"]])
    if "regex" in space:
        # A number has no natural end inside the grammar: forbid "." or "\n" and a model that
        # wants to write "7." keeps adding digits ("7" -> "71111"). So the answer must end in
        # a terminator, which we strip again.
        pattern = space["regex"]
        pattern = pattern if pattern.startswith(" ?") else " ?" + pattern
        return regex(f"{pattern}{NUMBER_END}")
    raise SettingsError("this task has no constrained answer form (e.g. code): use pattern extraction")


def constrained_answer(lm: LanguageModel, ids: Sequence[int], space: dict[str, Any], max_tokens: int = 8) -> str | None:
    """Greedy constrained continuation of ``ids``; the answer text, stripped (None if empty)."""
    stage = GrammarMask(_constraint(space), lm)
    out = greedy(lm, list(ids), SamplingSettings(temperature=0.0), max_new_tokens=max_tokens,
                 extra_stages={"grammar": stage})
    text = out.text.strip()
    return text or None


def answer_after(lm: LanguageModel, task: Task, problem: Problem, prompt_ids: Sequence[int], completion_ids: Sequence[int],
                 cue: str = ANSWER_CUE) -> str | None:
    """Protocol ``after``: free completion, then the cue, then the constrained answer (normalised
    like a pattern-extracted one so the two can be compared)."""
    eos = set(getattr(lm, "eos_token_ids", ()) or ())
    body = [t for t in completion_ids if t not in eos]
    raw = constrained_answer(lm, list(prompt_ids) + body + _encode(lm, cue), task.answer_space(problem))
    return _normalise(task, problem, raw)


def answer_direct(lm: LanguageModel, task: Task, problem: Problem, prompt_ids: Sequence[int],
                  cue: str = DIRECT_CUE) -> str | None:
    """Protocol ``direct``: the constrained answer right after the prompt (and a short cue)."""
    raw = constrained_answer(lm, list(prompt_ids) + _encode(lm, cue), task.answer_space(problem))
    return _normalise(task, problem, raw)


def _normalise(task: Task, problem: Problem, raw: str | None) -> str | None:
    if raw is None:
        return None
    if task.kind == "choice":
        return raw.strip().upper()[:1] or None
    if task.kind == "name":
        return raw.strip()
    return task.extract(problem, raw) if re.search(r"\d", raw) else None


@dataclass
class ExtractorComparison:
    """Pattern versus constraint on the same completions."""

    samples: int
    pattern_accuracy: float
    constraint_accuracy: float
    agreement: float             # both extracted the same answer (None == None counts as agreeing)
    pattern_missing: float       # the pattern found nothing
    direct_accuracy: float | None = None   # protocol "direct" per problem (one greedy answer each)
    details: list[dict[str, Any]] = field(default_factory=list)   # per completion: text, both answers

    @property
    def disagreements(self) -> list[dict[str, Any]]:
        return [d for d in self.details if "text" in d and d["pattern"] != d["constraint"]]

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def compare_extractors(lm: LanguageModel, task: Task, problems: list[Problem], completions: list[list[Any]],
                       chat: bool | None = None, direct: bool = True) -> ExtractorComparison:
    """``completions[i]`` are ``GeneratedSequence``s for ``problems[i]``. Runs one constrained
    generation per completion (slow: a prefill of prompt + completion each)."""
    chat = task.chat if chat is None else chat
    n = pat_ok = con_ok = agree = missing = 0
    direct_ok = 0
    details: list[dict[str, Any]] = []
    for prob, seqs in zip(problems, completions):
        ids = lm.encode_prompt(prob.prompt, chat)
        for seq in seqs:
            p = task.extract(prob, seq.text)
            c = answer_after(lm, task, prob, ids, seq.token_ids)
            n += 1
            pat_ok += task.check(prob, p)
            con_ok += task.check(prob, c)
            agree += p == c
            missing += p is None
            details.append({"problem": prob.index, "reference": prob.answer, "text": seq.text, "pattern": p,
                            "constraint": c})
        if direct:
            d = answer_direct(lm, task, prob, ids)
            direct_ok += task.check(prob, d)
            details.append({"problem": prob.index, "reference": prob.answer, "direct": d})
    if n == 0:
        raise SettingsError("no completions to compare")
    return ExtractorComparison(n, pat_ok / n, con_ok / n, agree / n, missing / n,
                               direct_ok / len(problems) if direct and problems else None, details)
