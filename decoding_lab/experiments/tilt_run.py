"""One tilted generation, recorded step by step: what the Many-samples tab draws.

``run_tilted`` steps a model on one task problem with the ``VerifierTilt`` stage, its
potential V being ``RolloutPotential`` scored by the task's verifier. At every step it
records the top-m candidates (by raw logit z) with

* ``z``       the model's raw logit,
* ``V``       the potential: 1 if a short greedy rollout from (text so far + candidate)
              passes the verifier, else 0,
* ``tilted``  ``z + eta * V`` (the logit before temperature),
* ``logit``   ``(z + eta * V) / T``, the logit the selector draws from (None when T = 0:
              greedy takes the argmax of ``tilted``),
* ``p``       the probability the selector drew with (greedy: 1 for the pick, 0 for the rest),

plus the chosen token and the *verifier-greedy* pick (highest V, ties broken by z).

``eta = 0`` builds the plain chain: no tilt stage and no rollouts, so with the same seed
it picks exactly the tokens of plain temperature sampling. Small T with large eta gives
verifier-greedy: (z_a + eta) - z_b > 0 for any V_a = 1, V_b = 0 once eta exceeds the
logit gap, and T -> 0 turns the largest tilted logit into a certainty.

    >>> TiltConfig(eta=-1.0)
    Traceback (most recent call last):
    ...
    decoding_lab.errors.SettingsError: eta must be >= 0, got -1

Cost: every step runs one batched greedy rollout (``top_m`` rows, up to ``rollout_tokens``
forward passes), on top of the one forward a plain step needs. ``python -m decoding_lab
bench --only tilt`` measures it. The limits in ``TiltConfig`` keep one run bounded.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator

from decoding_lab.tasks.sets import Problem, Task
from decoding_lab.multisample.tilt import RolloutPotential, TiltExtra, VerifierTilt
from decoding_lab.settings import SamplingSettings
from decoding_lab.params import PARAMS
from decoding_lab.stages.base import check_number
from decoding_lab.backends.base import LanguageModel

MAX_TOP_M, MAX_ROLLOUT, MAX_NEW_TOKENS, MAX_ETA = 8, 32, 48, 100.0
MAX_T = float(PARAMS["temperature"].ui_hi)   # the app's one temperature range (the Explorer's slider)


@dataclass(frozen=True)
class TiltConfig:
    """Knobs of one run, validated (bounded so that one run stays within about a minute)."""

    eta: float = 10.0
    temperature: float = 0.0            # 0 = greedy on the tilted logits
    top_m: int = 4
    rollout_tokens: int = 16
    seed: int = 0
    max_new_tokens: int = 24
    time_limit: float = 180.0           # seconds; the run stops (and says so) after that

    def __post_init__(self) -> None:
        check_number("eta", self.eta, lo=0.0, hi=MAX_ETA)
        check_number("temperature", self.temperature, lo=0.0, hi=MAX_T)
        check_number("top-m", self.top_m, lo=1, hi=MAX_TOP_M, integer=True)
        check_number("rollout tokens", self.rollout_tokens, lo=1, hi=MAX_ROLLOUT, integer=True)
        check_number("seed", self.seed, lo=0, hi=2**31 - 1, integer=True)
        check_number("max new tokens", self.max_new_tokens, lo=1, hi=MAX_NEW_TOKENS, integer=True)
        check_number("time limit", self.time_limit, lo=0.0, lo_open=True)

    @property
    def plain(self) -> "TiltConfig":
        """The same run without the tilt (eta = 0)."""
        return TiltConfig(0.0, self.temperature, self.top_m, self.rollout_tokens, self.seed, self.max_new_tokens,
                          self.time_limit)


@dataclass
class Candidate:
    token_id: int
    token: str
    z: float
    V: float | None                     # None: not computed (eta = 0)
    tilted: float
    logit: float | None
    p: float
    rollout: str = ""                   # the text the verifier judged (generated so far + rollout)


@dataclass
class TiltStep:
    step: int
    candidates: list[Candidate]
    chosen_id: int
    chosen_token: str
    verifier_greedy_id: int | None      # None when V was not computed

    @property
    def verifier_greedy(self) -> bool | None:
        return None if self.verifier_greedy_id is None else self.chosen_id == self.verifier_greedy_id


@dataclass
class TiltRun:
    prompt: str
    reference: str
    config: TiltConfig
    steps: list[TiltStep] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    text: str = ""
    answer: str | None = None
    correct: bool = False
    done: bool = False
    stop_reason: str = ""               # "end of text" | "token limit" | "time limit" | "stopped"
    seconds: float = 0.0
    rollouts: int = 0                   # candidates scored by a rollout (cache hits excluded)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> "TiltRun":
        steps = [TiltStep(**{**s, "candidates": [Candidate(**c) for c in s["candidates"]]}) for s in d["steps"]]
        return TiltRun(**{**d, "config": TiltConfig(**d["config"]), "steps": steps})


def _verifier_greedy(cands: list[Candidate]) -> int | None:
    if not cands or any(c.V is None for c in cands):
        return None
    return max(cands, key=lambda c: (c.V, c.z)).token_id


def iter_tilted(lm: LanguageModel, task: Task, problem: Problem, config: TiltConfig, chat: bool = True,
                should_stop: Callable[[], bool] | None = None) -> Iterator[TiltRun]:
    """Yield the growing run after every step (the same object, updated), then once more when done."""
    from decoding_lab.stepper import Stepper
    t0 = time.perf_counter()
    settings = SamplingSettings(temperature=config.temperature, seed=config.seed)
    extra, potential = {}, None
    if config.eta > 0:
        potential = RolloutPotential.for_problem(lm, task, problem, rollout_tokens=config.rollout_tokens)
        # The chain puts an extra stage first, so the chain's own temperature divides (z + eta V) afterwards.
        extra = {"verifier-tilt": VerifierTilt(potential, eta=config.eta, top_m=config.top_m)}
    stepper = Stepper.from_prompt(lm, problem.prompt, chat, settings, top_n=max(config.top_m, 10),
                                  extra_stages=extra, max_new_tokens=config.max_new_tokens)
    run = TiltRun(problem.prompt, problem.answer, config)
    eos = set(getattr(lm, "eos_token_ids", ()) or ())
    T = config.temperature
    while True:
        if stepper.finished or len(stepper.tokens) >= config.max_new_tokens:
            run.stop_reason = "end of text" if stepper.finished else "token limit"
            break
        if should_stop is not None and should_stop():
            run.stop_reason = "stopped"
            break
        if time.perf_counter() - t0 > config.time_limit:
            run.stop_reason = "time limit"
            break
        prefix = tuple(stepper.prompt_ids + stepper.tokens)
        trace = stepper.step()
        rows = {r.token_id: r for r in trace.top}
        rec = trace.record(VerifierTilt)
        pot = rec.extra.potential if rec is not None and isinstance(rec.extra, TiltExtra) else None
        ids = list(pot.candidates) if pot is not None else [r.token_id for r in trace.top[:config.top_m]]
        values = list(pot.V) if pot is not None else [None] * len(ids)
        cands = []
        for tid, v in zip(ids, values):
            r = rows[tid]
            tilted = r.logit + config.eta * v if v is not None else r.logit
            p = r.p_final if T > 0 else float(tid == trace.chosen_token_id)     # greedy: the pick is certain
            cands.append(Candidate(tid, r.token, r.logit, v, tilted, None if T == 0 else tilted / T, p,
                                   potential.rollouts.get((prefix, tid), "") if potential else ""))
        run.steps.append(TiltStep(trace.step, cands, trace.chosen_token_id, trace.chosen_token,
                                  _verifier_greedy(cands)))
        run.tokens = list(stepper.tokens)
        run.text = lm.decode([t for t in run.tokens if t not in eos])
        run.rollouts = len(potential.cache) if potential else 0
        run.seconds = time.perf_counter() - t0
        yield run
    verdict = task.verify(problem, run.text)
    run.answer, run.correct, run.done = verdict.answer, verdict.correct, True
    run.seconds = time.perf_counter() - t0
    yield run


def run_tilted(lm: LanguageModel, task: Task, problem: Problem, config: TiltConfig, chat: bool = True,
               should_stop: Callable[[], bool] | None = None) -> TiltRun:
    """The finished run (see ``iter_tilted``)."""
    run = None
    for run in iter_tilted(lm, task, problem, config, chat, should_stop):
        pass
    assert run is not None
    return run


def first_difference(a: TiltRun, b: TiltRun) -> int | None:
    """The first step where two runs chose different tokens (None: the same tokens)."""
    for i, (x, y) in enumerate(zip(a.tokens, b.tokens)):
        if x != y:
            return i
    return None if len(a.tokens) == len(b.tokens) else min(len(a.tokens), len(b.tokens))
