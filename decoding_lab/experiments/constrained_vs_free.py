"""Constrained versus free: does the grammar fix the *format*, and what does it do to the *answer*?

Two measurements, both on a live model, both judged by the same checker:

* ``constrained_vs_free`` — one prompt, ``n`` samples without the constraint and ``n``
  with it (same seed, same settings, same token budget). Every text is checked with
  ``validate_output``; the free side's *format-failure rate* is what the grammar saves
  you from (the constrained side's is 0 whenever the budget lets it finish). A second,
  lenient check asks whether a valid piece can at least be dug out of a free text (a
  ```json fence, the first JSON object, the first line): the work a parser would have to do.
* ``answer_accuracy`` — a small set of questions the 135M model sometimes gets right
  (capitals as A/B/C/D, single-digit sums as an integer). Free generation plus pattern
  extraction versus an answer forced into the format (the ``answer-abcd`` / ``integer``
  presets). The format is then always right, the *content* need not be: a grammar that
  forbids the model's preferred token ("The", "7.") pushes it onto tokens it ranks lower.

Worked example (``lm`` from ``decoding_lab.models.get_model``)::

    >>> r = constrained_vs_free(lm, preset_prompt("json-person"), preset("json-person"), n=3)  # doctest: +SKIP
    >>> r.free_failure_rate, r.constrained_failure_rate                                        # doctest: +SKIP
    (1.0, 0.0)
    >>> a = answer_accuracy(lm)                                                                # doctest: +SKIP
    >>> a.free_accuracy, a.constrained_accuracy, a.format_right_answer_wrong                   # doctest: +SKIP

Run both from the shell::

    python -m decoding_lab.experiments.constrained_vs_free --n 4 --threads 1
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import torch

from decoding_lab.grammar.constraints import PRESETS, Constraint, preset, preset_prompt, validate_output
from decoding_lab.grammar.compile import bounded
from decoding_lab.grammar.stage import GrammarMask
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History, SettingsError
from decoding_lab.backends.base import LanguageModel

#: Upper bounds for interactive use (the UI passes user numbers straight in).
MAX_SAMPLES = 16
MAX_TOKENS = 256


# ----------------------------------------------------------------------------- records
@dataclass
class CheckedSample:
    """One output and what the checker said about it."""

    text: str
    valid: bool        # the whole text (surrounding whitespace aside) is in the language
    salvaged: bool     # valid, or a valid piece could be extracted from it (fence, first JSON value, first line)
    finished: bool     # ended with an end-of-sequence token within the budget
    tokens: int
    reason: str = ""   # why it is invalid: "not_json" | "schema" (JSON, but not valid under it) | "no_match"

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ConstrainedVsFree:
    """The result of ``constrained_vs_free``. Times are wall seconds on this machine."""

    constraint: str
    kind: str
    prompt: str
    model: str
    n: int
    max_new_tokens: int
    settings: dict[str, Any]
    free: list[CheckedSample]
    constrained: list[CheckedSample]
    compile_seconds: float       # GrammarMask: the engine's matcher for this vocabulary + the first mask
    free_seconds: float          # the whole free run (n samples, batched)
    constrained_seconds: float   # the whole constrained run
    grammar_seconds: float       # of which inside the grammar stage (masks + consuming tokens)
    stopped: bool = False        # Stop ended it early: a sample short of the budget was cut by Stop

    def cut_by_stop(self, s: "CheckedSample") -> bool:
        """Unfinished and short of the token budget: Stop cut it, not the budget."""
        return self.stopped and not s.finished and s.tokens < self.max_new_tokens

    @staticmethod
    def _rate(xs: Sequence[bool]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    @property
    def free_failure_rate(self) -> float:
        """Share of free outputs that are *not* in the language."""
        return self._rate([not s.valid for s in self.free])

    @property
    def free_salvage_failure_rate(self) -> float:
        """Share of free outputs from which not even a valid piece can be extracted."""
        return self._rate([not s.salvaged for s in self.free])

    @property
    def constrained_failure_rate(self) -> float:
        """Expected 0; only an output cut by the token budget can fail."""
        return self._rate([not s.valid for s in self.constrained])

    @property
    def unfinished(self) -> int:
        """Constrained outputs that ran out of tokens before the grammar was satisfied."""
        return sum(1 for s in self.constrained if not s.finished)

    @property
    def grammar_ms_per_token(self) -> float:
        tokens = sum(s.tokens for s in self.constrained)
        return 1e3 * self.grammar_seconds / tokens if tokens else 0.0

    def ms_per_token(self, side: str) -> float:
        seqs, secs = (self.free, self.free_seconds) if side == "free" else (self.constrained, self.constrained_seconds)
        tokens = max((s.tokens for s in seqs), default=0)  # batched: one forward per step for all rows
        return 1e3 * secs / tokens if tokens else 0.0

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("free", "constrained")}
        d.update(free=[s.to_json() for s in self.free], constrained=[s.to_json() for s in self.constrained],
                 free_failure_rate=self.free_failure_rate, free_salvage_failure_rate=self.free_salvage_failure_rate,
                 constrained_failure_rate=self.constrained_failure_rate, unfinished=self.unfinished,
                 grammar_ms_per_token=self.grammar_ms_per_token)
        return d


class _TimedGrammarMask(GrammarMask):
    """A GrammarMask that adds up the time a batched generation spends in it."""

    seconds: float = 0.0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        t0 = time.perf_counter()
        try:
            return super().transform(logits, history)
        finally:
            self.seconds += time.perf_counter() - t0

    def advance(self, parents: list[int], tokens: list[int]) -> None:
        t0 = time.perf_counter()
        try:
            super().advance(parents, tokens)
        finally:
            self.seconds += time.perf_counter() - t0


# ----------------------------------------------------------------------------- constrained vs free
def prompt_ids(lm: LanguageModel, prompt: str | Sequence[int], chat: bool = True) -> list[int]:
    """A text prompt through the model's chat template (``chat=True``) or as raw text; ids pass through."""
    if isinstance(prompt, str):
        if not prompt.strip():
            raise SettingsError("the prompt is empty: type something to continue from")
        return lm.encode_prompt(prompt, bool(chat))
    return [int(i) for i in prompt]


def compile_mask(constraint: Constraint, lm: LanguageModel) -> "_TimedGrammarMask":
    """The grammar for ``lm``'s vocabulary, compiled in the bounded pool: a grammar the
    vocabulary cannot write fails here, before any generation."""
    return bounded(_TimedGrammarMask, constraint, lm)


@dataclass(frozen=True)
class SideProgress:
    """Where a constrained-vs-free run is: ``side`` ("free" or "constrained"), the step it has
    reached and the token budget (a side can end sooner, when every sample has ended)."""

    side: str
    step: int
    max_new_tokens: int


def constrained_vs_free(lm: LanguageModel, prompt: str | Sequence[int], constraint: Constraint, n: int = 4,
                        settings: SamplingSettings | None = None, max_new_tokens: int = 64,
                        chat: bool = True, mask: "_TimedGrammarMask | None" = None) -> ConstrainedVsFree:
    """``n`` samples of ``prompt`` without and with ``constraint`` (same settings and seed),
    each checked with ``validate_output``. ``settings`` default to plain sampling at T = 1,
    seed 0: the model's own distribution, with nothing cut but the grammar. ``mask``: the
    grammar already compiled for ``lm`` by ``compile_mask`` (the app compiles it before it takes
    a model slot); by default it is compiled here."""
    *_, result = iter_constrained_vs_free(lm, prompt, constraint, n, settings, max_new_tokens, chat, mask)
    return result


def iter_constrained_vs_free(lm: LanguageModel, prompt: str | Sequence[int], constraint: Constraint, n: int = 4,
                             settings: SamplingSettings | None = None, max_new_tokens: int = 64,
                             chat: bool = True, mask: "_TimedGrammarMask | None" = None,
                             should_stop: Callable[[], bool] | None = None
                             ) -> Iterator["SideProgress | ConstrainedVsFree"]:
    """``constrained_vs_free`` step by step: a ``SideProgress`` after every step of each side,
    then the result (the same samples: each side is ``iter_sample``, the streaming form of
    ``sample``). Arguments are checked before the first sample; ``should_stop`` ends both sides
    early (the result then holds what was sampled so far)."""
    from decoding_lab.strategies import iter_sample

    if not isinstance(constraint, Constraint):
        raise SettingsError("constrained_vs_free needs a Constraint (see decoding_lab.grammar.build_constraint)")
    n = _count("number of samples n", n, MAX_SAMPLES)
    max_new_tokens = _count("max new tokens", max_new_tokens, MAX_TOKENS)
    settings = settings or SamplingSettings(temperature=1.0, seed=0)
    ids = prompt_ids(lm, prompt, chat)
    mask = mask if mask is not None else compile_mask(constraint, lm)
    sides: dict[str, Any] = {}
    for side, extra in (("free", None), ("constrained", {"grammar": mask})):
        for snap in iter_sample(lm, ids, settings, max_new_tokens, n=n, extra_stages=extra, should_stop=should_stop):
            sides[side] = snap
            yield SideProgress(side, snap.steps, max_new_tokens)
    free, con = sides["free"], sides["constrained"]
    yield ConstrainedVsFree(
        constraint=constraint.label(), kind=constraint.kind,
        prompt=prompt if isinstance(prompt, str) else lm.decode(ids), model=getattr(lm, "name", "?"), n=n,
        max_new_tokens=max_new_tokens, settings=settings.to_json(),
        free=[check_sample(s, constraint) for s in free.sequences],
        constrained=[check_sample(s, constraint) for s in con.sequences],
        compile_seconds=mask.compile_seconds, free_seconds=free.seconds, constrained_seconds=con.seconds,
        grammar_seconds=mask.seconds, stopped=bool(should_stop is not None and should_stop()))


def check_sample(seq: Any, constraint: Constraint) -> CheckedSample:
    """A ``GeneratedSequence`` -> ``CheckedSample`` (strict and lenient validity)."""
    valid = validate_output(seq.text, constraint)
    return CheckedSample(seq.text, valid, valid or salvage(seq.text, constraint) is not None, bool(seq.finished),
                         len(seq.token_ids), "" if valid else why_invalid(seq.text, constraint))


def why_invalid(text: str, constraint: Constraint) -> str:
    """A short code for an invalid text: ``not_json`` / ``schema`` (JSON Schema constraints)
    or ``no_match``. ('' when the text is valid.)"""
    if validate_output(text, constraint):
        return ""
    if constraint.kind != "json_schema":
        return "no_match"
    try:
        json.loads(text.strip())
    except (json.JSONDecodeError, RecursionError):
        return "not_json"
    return "schema"


_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)(?:```|$)", re.DOTALL)


def salvage(text: str, constraint: Constraint) -> str | None:
    """A valid piece of ``text``, or None: the lenient reading a post-hoc parser would try.

        >>> from decoding_lab.grammar import choices, json_schema, regex
        >>> salvage('Sure! ```json\\n{"a": 1}\\n``` Hope it helps.', json_schema({"type": "object"}))
        '{"a": 1}'
        >>> salvage("42.", regex("[0-9]+"))
        '42'
        >>> salvage("A) Venus", choices(["A", "B"]))
        'A'
    """
    candidates: list[str] = []
    stripped = text.strip()
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    if constraint.kind == "json_schema":
        dec = json.JSONDecoder()
        for m in re.finditer(r"[\[{]", text):
            try:
                _, end = dec.raw_decode(text, m.start())
            except json.JSONDecodeError:
                continue
            candidates.append(text[m.start():end])
    first = stripped.split("\n", 1)[0].strip()
    candidates += [first, first.rstrip(".!"), stripped.rstrip(".!"), first.strip("\"'`*")]
    if constraint.kind != "json_schema":  # the start of the first line, cut where a word ends: "A) Venus" -> "A"
        candidates += [first[:m.start()] for m in re.finditer(r"\b(?=\W)|$", first[:80])][:12]
    seen: set[str] = set()
    for c in candidates:
        if c and c not in seen:
            seen.add(c)
            if validate_output(c, constraint):
                return c
    return None


# ----------------------------------------------------------------------------- answer accuracy
@dataclass(frozen=True)
class AnswerTask:
    """A question with a known answer and the preset that forces its format."""

    prompt: str               # the full user message, format instruction included
    answer: str               # "C" or "7"
    kind: str                 # "choice" | "integer"
    options: tuple[str, ...] = ()

    @property
    def preset(self) -> str:
        return "answer-abcd" if self.kind == "choice" else "integer"

    def extract(self, text: str) -> str | None:
        """Pattern extraction of a free answer (the rules of ``multisample.extract``)."""
        from decoding_lab.tasks.extract import extract_choice, extract_number
        return extract_choice(text, self.options) if self.kind == "choice" else extract_number(text)

    def read_constrained(self, text: str) -> str | None:
        """A constrained output already *is* the answer; only normalise it."""
        from decoding_lab.tasks.extract import normalize_number
        t = text.strip()
        if not t:
            return None
        return t.upper() if self.kind == "choice" else normalize_number(t)


def builtin_tasks(n_choice: int = 8, n_integer: int = 8, seed: int = 0) -> list[AnswerTask]:
    """Capitals as A/B/C/D and single-digit sums (the ``mc-capitals`` and ``addition``
    generators of ``multisample.tasks``), phrased for a one-token answer."""
    from decoding_lab.tasks.sets import Addition, MultipleChoiceCapitals

    out: list[AnswerTask] = []
    if n_choice:
        for p in MultipleChoiceCapitals().problems(int(n_choice), seed=seed):
            out.append(AnswerTask(p.prompt.replace("Answer with the letter of the correct option.",
                                                   "Answer with the letter only."), p.answer, "choice", p.options))
    if n_integer:
        for p in Addition().problems(int(n_integer), seed=seed):
            out.append(AnswerTask(f"{p.prompt} Answer with a number.", p.answer, "integer"))
    return out


@dataclass
class TaskOutcome:
    task: AnswerTask
    free_texts: list[str]
    free_answers: list[str | None]          # None: the pattern found nothing (a format failure)
    constrained_texts: list[str]
    constrained_answers: list[str | None]
    constrained_valid: list[bool]

    @property
    def free_correct(self) -> list[bool]:
        return [a == self.task.answer for a in self.free_answers]

    @property
    def constrained_correct(self) -> list[bool]:
        return [a == self.task.answer for a in self.constrained_answers]

    def to_json(self) -> dict[str, Any]:
        return {"prompt": self.task.prompt, "answer": self.task.answer, "kind": self.task.kind,
                "free_texts": self.free_texts, "free_answers": self.free_answers,
                "free_correct": self.free_correct, "constrained_texts": self.constrained_texts,
                "constrained_answers": self.constrained_answers, "constrained_valid": self.constrained_valid,
                "constrained_correct": self.constrained_correct}


@dataclass
class AnswerAccuracy:
    model: str
    settings: dict[str, Any]
    n: int
    outcomes: list[TaskOutcome]
    seconds: float

    def _mean(self, key: str, kind: str | None = None) -> float:
        xs = [x for o in self.outcomes if kind in (None, o.task.kind) for x in getattr(o, key)]
        return sum(xs) / len(xs) if xs else 0.0

    @property
    def free_accuracy(self) -> float:
        return self._mean("free_correct")

    @property
    def constrained_accuracy(self) -> float:
        return self._mean("constrained_correct")

    @property
    def free_format_failure_rate(self) -> float:
        """The pattern found no answer at all in the free text."""
        xs = [a is None for o in self.outcomes for a in o.free_answers]
        return sum(xs) / len(xs) if xs else 0.0

    @property
    def constrained_format_failure_rate(self) -> float:
        xs = [not v for o in self.outcomes for v in o.constrained_valid]
        return sum(xs) / len(xs) if xs else 0.0

    @property
    def format_right_answer_wrong(self) -> int:
        """Constrained outputs in the right format with the wrong answer."""
        return sum(1 for o in self.outcomes for v, c in zip(o.constrained_valid, o.constrained_correct) if v and not c)

    @property
    def helped(self) -> int:
        """Questions the constraint got right more often than free generation did."""
        return sum(1 for o in self.outcomes if sum(o.constrained_correct) > sum(o.free_correct))

    @property
    def hurt(self) -> int:
        return sum(1 for o in self.outcomes if sum(o.constrained_correct) < sum(o.free_correct))

    def by_kind(self) -> dict[str, dict[str, float]]:
        kinds = sorted({o.task.kind for o in self.outcomes})
        return {k: {"free": self._mean("free_correct", k), "constrained": self._mean("constrained_correct", k),
                    "questions": sum(1 for o in self.outcomes if o.task.kind == k)} for k in kinds}

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "settings": self.settings, "n": self.n, "seconds": self.seconds,
                "free_accuracy": self.free_accuracy, "constrained_accuracy": self.constrained_accuracy,
                "free_format_failure_rate": self.free_format_failure_rate,
                "constrained_format_failure_rate": self.constrained_format_failure_rate,
                "format_right_answer_wrong": self.format_right_answer_wrong, "helped": self.helped,
                "hurt": self.hurt, "by_kind": self.by_kind(), "outcomes": [o.to_json() for o in self.outcomes]}


def answer_accuracy(lm: LanguageModel, tasks: Sequence[AnswerTask] | None = None, settings: SamplingSettings | None = None,
                    n: int = 1, chat: bool = True, max_new_tokens: int = 40,
                    constrained_tokens: int = 8) -> AnswerAccuracy:
    """Accuracy of free generation + pattern extraction versus the answer forced into its
    format, on ``tasks`` (default: ``builtin_tasks()``, 16 questions). Greedy by default
    (``n`` is then 1: every sample would be the same); pass sampling settings and ``n`` > 1
    to average over samples. ~30 s for the 16 built-in questions, greedy, one CPU thread."""
    from decoding_lab.strategies import sample

    tasks = list(tasks) if tasks is not None else builtin_tasks()
    if not tasks:
        raise SettingsError("answer_accuracy needs at least one task")
    settings = settings or SamplingSettings(temperature=0.0, seed=0)
    n = 1 if settings.greedy else _count("number of samples n", n, MAX_SAMPLES)
    max_new_tokens = _count("max new tokens", max_new_tokens, MAX_TOKENS)
    constraints = {name: preset(name) for name in {t.preset for t in tasks}}
    t0 = time.perf_counter()
    outcomes = []
    for task in tasks:
        ids = prompt_ids(lm, task.prompt, chat)
        free = sample(lm, ids, settings, max_new_tokens, n=n)
        mask = GrammarMask(constraints[task.preset], lm)
        con = sample(lm, ids, settings, constrained_tokens, n=n, extra_stages={"grammar": mask})
        c_texts = [s.text for s in con.sequences]
        outcomes.append(TaskOutcome(
            task, [s.text for s in free.sequences], [task.extract(s.text) for s in free.sequences], c_texts,
            [task.read_constrained(t) for t in c_texts],
            [s.finished and validate_output(s.text, constraints[task.preset]) for s in con.sequences]))
    return AnswerAccuracy(getattr(lm, "name", "?"), settings.to_json(), n, outcomes, time.perf_counter() - t0)


# ----------------------------------------------------------------------------- token healing input
def answer_prefix_ids(lm: LanguageModel, prompt: str, prefix: str, chat: bool = True) -> list[int]:
    """The prompt followed by the start of the answer (e.g. ``{"name": "``), as the model
    would see it when an application pre-fills the reply: with the chat template, the
    prefix is tokenized on its own after the assistant header; raw, prompt and prefix are
    one text."""
    if chat:
        head = prompt_ids(lm, prompt, True)
        tail = lm.tokenizer(prefix, add_special_tokens=False)["input_ids"] if prefix else []
        return head + list(tail)
    return prompt_ids(lm, prompt + prefix, False)


def _count(name: str, value: Any, hi: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
        raise SettingsError(f"{name} must be a whole number between 1 and {hi}, got {value!r}")
    return value


# ----------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Constrained vs free generation: format failures and answer accuracy.")
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--presets", default=",".join(PRESETS), help="presets for the format comparison ('' to skip)")
    ap.add_argument("--n", type=int, default=4, help="samples per side (format comparison)")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--accuracy", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--acc-temperature", type=float, default=0.0, help="0 = greedy (default)")
    ap.add_argument("--acc-n", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    from decoding_lab.models import get_model

    lm = get_model(args.model)
    settings = SamplingSettings(temperature=args.temperature, seed=args.seed)
    for name in [p.strip() for p in args.presets.split(",") if p.strip()]:
        r = constrained_vs_free(lm, preset_prompt(name), preset(name), args.n, settings, args.tokens)
        if args.json:
            print(json.dumps({"preset": name, **r.to_json()}))
            continue
        print(f"{name:12} free fails {r.free_failure_rate:4.0%} "
              f"(nothing salvageable {r.free_salvage_failure_rate:4.0%})"
              f" · constrained fails {r.constrained_failure_rate:4.0%} ({r.unfinished} unfinished)"
              f" · compile {1e3 * r.compile_seconds:.1f} ms · grammar {r.grammar_ms_per_token:.3f} ms/token"
              f" · {r.ms_per_token('free'):.0f} vs {r.ms_per_token('constrained'):.0f} ms/step")
        for f, c in zip(r.free, r.constrained):
            print(f"    free {'ok ' if f.valid else 'BAD'} {f.text[:70]!r}")
            print(f"    con  {'ok ' if c.valid else 'BAD'} {c.text[:70]!r}")
    if args.accuracy:
        acc = answer_accuracy(lm, settings=SamplingSettings(temperature=args.acc_temperature, seed=args.seed),
                              n=args.acc_n)
        if args.json:
            print(json.dumps({"accuracy": acc.to_json()}))
            return
        print(f"\naccuracy on {len(acc.outcomes)} questions (n={acc.n}, {acc.seconds:.0f} s): free+pattern "
              f"{acc.free_accuracy:.0%} (no answer found {acc.free_format_failure_rate:.0%}) · constrained "
              f"{acc.constrained_accuracy:.0%} (format failures {acc.constrained_format_failure_rate:.0%}, "
              f"format right but answer wrong {acc.format_right_answer_wrong}) · "
              f"helped {acc.helped}, hurt {acc.hurt}")
        for kind, v in acc.by_kind().items():
            print(f"    {kind:8} free {v['free']:.0%} · constrained {v['constrained']:.0%} "
                  f"({v['questions']} questions)")
        for o in acc.outcomes:
            print(f"    [{o.task.answer:>2}] free {o.free_answers[0]!s:>5} {o.free_texts[0][:50]!r:55} "
                  f"con {o.constrained_answers[0]!s:>5} {o.constrained_texts[0]!r}")


if __name__ == "__main__":
    main()
