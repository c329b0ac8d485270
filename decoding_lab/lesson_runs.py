"""A lesson screen's live experiment: the learner predicts, the model runs, the guess sits beside
the result.

An experiment is data (``[[experiments]]`` in a lesson file). It runs one or more *variants*
(the same prompt with a setting changed) and measures one quantity on each:

* ``kind = "step"``: step a :class:`~decoding_lab.stepper.Stepper` ``steps`` times and read the
  last step's trace: ``kept`` (tokens the selector could pick), ``margin`` (top-1 − top-2 logit),
  ``tail`` (mass in tokens with p < 1e-4), ``entropy_T``, ``chosen`` (the token), ``p_raw:TOKEN``,
  ``p_final:TOKEN``, ``top2_ratio`` (final p of the two best), ``removed:STAGE`` (mass a stage cut);
  a variant may name its own ``model`` (the same GGUF on llama.cpp's kernels, say) and its own
  ``prompt`` and ``chat`` (one rule on distributions of different shapes);
* ``kind = "decode"``: run greedy, beam search or one seeded sample (``strategy = "sample"``) for
  ``steps`` tokens and read ``logprob`` (the sum of the chosen tokens' log-probabilities), ``text``
  or ``repetition`` (the share of the output's 4-grams already seen earlier in it); ``odds:KEY``
  reads how many times as probable each variant's whole text is as variant KEY's (:func:`odds`);
* ``kind = "sweep"``: read a shipped sweep file (no model): ``pass@K``, ``vote`` (majority of
  the samples), ``best_of:K:SCORE`` (best-of-K reranked by ``logprob``, ``logprob_per_token`` or
  ``short``, a proxy that prefers the shortest answer: ``selection.best_of_n_accuracy``) or
  ``mixed`` (the share of problems whose samples neither all pass nor all fail) for a cell given
  by ``temperature`` and ``truncation``; a variant may name its own ``measure`` (greedy's pass@1
  beside a vote, say);
* ``kind = "ctd"``: read the shipped calibrated-temperature file: ``pass@K`` on its held-out
  problems at a variant's ``temperature`` (the fitted one, or a grid one); a variant with
  ``whole_answers = true`` and a ``sweep`` file applies the fitted power to whole answers instead
  (``pass@1`` only: :func:`whole_answer_pass1`);
* ``kind = "extract"``: read the shipped extraction comparison (``extract-compare``): a variant's
  ``measure`` is one of its accuracies (``pattern_accuracy``, ``constraint_accuracy``,
  ``direct_accuracy``) or ``agreement``;
* ``kind = "bench"``: read a shipped bench run (``assets/bench/``, no model, no timing on the
  learner's machine): ``per_softmax``, a sampling operation's fastest time (``op``, ``vocab``)
  as a multiple of a plain softmax over the same vocabulary, so the figure is a ratio and not
  milliseconds of one machine.

``expect`` holds the values a test measured on this code (``tests/test_lessons_claims.py`` runs
every experiment and compares); they are the fallback when a run cannot be done.

A prediction is one of: ``min`` / ``max`` (which variant gives the smallest / largest value),
``number`` (a guess for the value of variant ``of``) or ``value`` (a choice among ``choices``,
each with the ``value`` it stands for).
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable
from decoding_lab.backends.base import LanguageModel

KINDS = ("step", "decode", "sweep", "bench", "ctd", "extract")
FILE_KINDS = ("sweep", "bench", "ctd", "extract")   # kinds that read a shipped file instead of running the model
PREDICT_KINDS = ("min", "max", "number", "value")
#: Pictures an experiment may ask for beside its result (the default is its values as bars, or
#: the top tokens of a one-variant step): ``ratio_lines`` draws log(p_T(i) / p_T(leader)) against
#: 1/T for a step run at several temperatures (straight lines through 0, by the ratio law);
#: ``passk_vs_T`` draws the shipped sweep's pass@k against T with standard errors;
#: ``sorted_curve`` draws each step variant's probabilities sorted from the largest down (log-log),
#: with where its own rule cut and where top-k 40 and min-p 0.1 would cut the same distribution.
FIGURES = ("", "ratio_lines", "passk_vs_T", "sorted_curve")
#: Live views an experiment may carry inside its lesson screen once it has run (``lab``; see
#: ``decoding_lab.lesson_labs``): a step experiment's lab re-runs the chain on the step its first
#: variant read, a sweep experiment's lab reads the same shipped file.
LABS = ("", "temperature", "tail", "cuts", "order", "passk")


@dataclass(frozen=True)
class Variant:
    key: str
    label: dict[str, str]
    settings: dict[str, Any] = field(default_factory=dict)   # overrides of the experiment's settings
    options: dict[str, Any] = field(default_factory=dict)    # strategy, num_beams, temperature, truncation …


@dataclass(frozen=True)
class Prediction:
    kind: str
    question: dict[str, str]
    of: str = ""                                              # the variant a number or value is about
    choices: list[dict[str, Any]] = field(default_factory=list)

    def verdict(self, guess: Any, values: dict[str, Any]) -> bool | None:
        """Whether ``guess`` was right (None for a number: that is read beside the result, not marked)."""
        if guess is None or guess == "":
            return None
        if self.kind in ("min", "max"):
            nums = {k: v for k, v in values.items() if isinstance(v, (int, float))}
            pick = min(nums, key=nums.get) if self.kind == "min" else max(nums, key=nums.get)
            return str(guess) == pick
        if self.kind == "value":
            return str(guess) == str(values.get(self.of))
        return None


@dataclass(frozen=True)
class Experiment:
    id: str
    screen: int                    # 1-based screen of the lesson it belongs to
    kind: str
    measure: str
    variants: list[Variant]
    predict: Prediction
    reveal: dict[str, str]         # shown after the run; {key} is the value of that variant
    expect: dict[str, Any]
    model: str = "smollm2-135m-instruct"
    prompt: str = ""
    chat: bool = True
    steps: int = 1
    settings: dict[str, Any] = field(default_factory=dict)
    constraint: str = ""           # a grammar preset's name, for a masked step
    file: str = ""                 # a shipped sweep file (kind "sweep") or bench run (kind "bench")
    tolerance: float = 0.0
    fmt: str = ".2f"
    figure: str = ""               # one of FIGURES
    lab: str = ""                  # one of LABS: the live view shown under the result

    @property
    def reads_file(self) -> bool:
        """True when the experiment reads a shipped file rather than running the model."""
        return self.kind in FILE_KINDS

    def formatted(self, values: dict[str, Any]) -> dict[str, str]:
        return {k: (format(v, self.fmt) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v))
                for k, v in values.items()}

    def fill(self, text: str, values: dict[str, Any]) -> str:
        """``text`` with each ``{key}`` replaced by that variant's formatted value (keys may hold dots).

        >>> e = Experiment("x", 1, "step", "kept", [], Prediction("min", {}), {}, {}, fmt="d")
        >>> e.fill("{llama.cpp} kept", {"llama.cpp": 3})
        '3 kept'
        """
        shown = self.formatted(values)
        return re.sub(r"\{([\w.\-]+)\}", lambda m: shown.get(m.group(1), m.group(0)), text)


def parse_experiment(d: dict[str, Any]) -> Experiment:
    """An experiment from its lesson-file table (raises KeyError / ValueError naming the problem)."""
    if d.get("kind", "step") not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    variants = [Variant(str(v["key"]), dict(v["label"]), dict(v.get("settings", {})),
                        {k: x for k, x in v.items() if k not in ("key", "label", "settings")})
                for v in d["variants"]]
    p = d["predict"]
    if p["kind"] not in PREDICT_KINDS:
        raise ValueError(f"predict.kind must be one of {', '.join(PREDICT_KINDS)}")
    pred = Prediction(p["kind"], dict(p["question"]), str(p.get("of", variants[0].key)), list(p.get("choices", [])))
    keys = {v.key for v in variants}
    if set(d["expect"]) != keys:
        raise ValueError(f"experiment {d['id']!r}: expect must give a value for each variant ({sorted(keys)})")
    fields = {k: d[k] for k in ("model", "prompt", "chat", "steps", "settings", "constraint", "file", "tolerance", "fmt",
                                "figure", "lab") if k in d}
    if fields.get("figure", "") not in FIGURES:
        raise ValueError(f"figure must be one of {', '.join(f for f in FIGURES if f)}")
    lab = fields.get("lab", "")
    if lab not in LABS:
        raise ValueError(f"lab must be one of {', '.join(x for x in LABS if x)}")
    if lab and (lab == "passk") != (d.get("kind", "step") == "sweep"):
        raise ValueError("a passk lab belongs to a sweep experiment, the other labs to a step experiment")
    return Experiment(id=str(d["id"]), screen=int(d["screen"]), kind=d.get("kind", "step"), measure=str(d["measure"]),
                      variants=variants, predict=pred, reveal=dict(d["reveal"]), expect=dict(d["expect"]), **fields)


@dataclass
class RunResult:
    values: dict[str, Any]
    top: list[tuple[str, float, float]] = field(default_factory=list)   # first variant: token, p raw, p final
    seconds: float = 0.0
    tops: dict[str, list[tuple[str, float, float]]] = field(default_factory=dict)   # every step variant's
    curves: dict[str, dict[str, Any]] = field(default_factory=dict)   # figure "sorted_curve": see sorted_curve()
    texts: dict[str, str] = field(default_factory=dict)   # a decode experiment's texts, shown under its result
    lab_step: Any = None     # a step experiment with a lab: the first variant's step (``lesson_labs.LabStep``)


def run(exp: Experiment, get_model: Callable[[str], Any] | None = None) -> RunResult:
    """Run every variant of ``exp`` and measure it (``get_model`` defaults to the shared model cache)."""
    start = time.perf_counter()
    if exp.kind == "sweep":
        return RunResult({v.key: _sweep_value(exp, v) for v in exp.variants}, [], time.perf_counter() - start)
    if exp.kind == "bench":
        return RunResult({v.key: _bench_value(exp, v) for v in exp.variants}, [], time.perf_counter() - start)
    if exp.kind == "ctd":
        return RunResult({v.key: _ctd_value(exp, v) for v in exp.variants}, [], time.perf_counter() - start)
    if exp.kind == "extract":
        return RunResult({v.key: _extract_value(exp, v) for v in exp.variants}, [], time.perf_counter() - start)
    if get_model is None:
        from decoding_lab.models import get_model
    values: dict[str, Any] = {}
    tops: dict[str, list[tuple[str, float, float]]] = {}
    curves: dict[str, dict[str, Any]] = {}
    texts: dict[str, str] = {}
    lab_step = None
    for v in exp.variants:
        lm = get_model(str(v.options.get("model", exp.model)))   # a variant may run another backend
        if exp.kind == "step":
            trace, z, step = _last_step(lm, exp, v)
            if exp.lab and lab_step is None:
                lab_step = step
            values[v.key] = step_measure(trace, exp.measure)
            tops[v.key] = [(r.token, r.p_raw, r.p_final) for r in trace.top[:10]]
            if exp.figure == "sorted_curve":
                curves[v.key] = sorted_curve(z, float(_settings(exp, v).temperature or 1.0), int(trace.kept_final))
        else:
            values[v.key], texts[v.key] = _decode(lm, exp, v)
    if exp.measure.startswith("odds:"):
        values = odds(values, exp.measure[5:])
    top = tops.get(exp.variants[0].key, []) if exp.variants else []
    return RunResult(values, top, time.perf_counter() - start, tops, curves, texts, lab_step)


def odds(logprobs: dict[str, float], ref: str) -> dict[str, float]:
    """How many times as probable each text is as the text of variant ``ref``, from the texts'
    log-probabilities: e^(log p − log p of ``ref``), so ``ref`` itself is 1.

    >>> {k: round(v, 3) for k, v in odds({"greedy": -20.9, "beam": -14.7}, "greedy").items()}
    {'greedy': 1.0, 'beam': 492.749}
    """
    if ref not in logprobs:
        raise ValueError(f"odds against {ref!r}: no such variant ({', '.join(logprobs)})")
    return {k: math.exp(lp - logprobs[ref]) for k, lp in logprobs.items()}


def sorted_curve(logits: Any, temperature: float, kept: int, points: int = 80) -> dict[str, Any]:
    """The picture of one step's shape: p_T sorted from the largest down, sampled at ranks spaced
    evenly on a log scale (every rank up to 20, then ``points`` more to the vocabulary's end), with
    the rank where the step's own rule cut (``kept``) and the ranks top-k 40 and min-p 0.1 would
    keep on the same distribution.

        >>> import torch
        >>> c = sorted_curve(torch.tensor([2.0, 1.0, 0.0, -5.0]), 1.0, kept=2)
        >>> c["rank"], c["kept"], c["min_p"], c["top_k"]     # e^0 is 0.14 of e^2: min-p 0.1 keeps three
        ([1, 2, 3, 4], 2, 3, 4)
    """
    import torch
    p = torch.softmax(logits.double() / temperature, dim=-1).sort(descending=True).values
    n = p.numel()
    ranks = sorted(set(range(1, min(n, 20) + 1)) | {max(1, min(n, round(n ** (i / points)))) for i in range(points + 1)})
    return {"rank": ranks, "p": [float(p[r - 1]) for r in ranks], "kept": kept,
            "min_p": int((p >= 0.1 * p[0]).sum()), "top_k": min(40, n)}


def _settings(exp: Experiment, v: Variant):
    from decoding_lab.settings import SamplingSettings
    return SamplingSettings.from_json({**exp.settings, **v.settings})


def _last_step(lm: LanguageModel, exp: Experiment, v: Variant) -> tuple[Any, Any, Any]:
    """The last step's trace, the raw logits that step read, and that step kept for a lab."""
    from decoding_lab.lesson_labs import LabStep
    from decoding_lab.stepper import Stepper
    extra = {}
    constraint = v.options.get("constraint", exp.constraint)
    if constraint:
        from decoding_lab.grammar import GrammarMask, preset
        extra = {"grammar": GrammarMask(preset(constraint), lm)}
    prompt, chat = str(v.options.get("prompt", exp.prompt)), bool(v.options.get("chat", exp.chat))
    s = Stepper.from_prompt(lm, prompt, chat, _settings(exp, v), top_n=20, extra_stages=extra)
    s.steps(exp.steps - 1)
    z = s._next_logits.detach().clone()       # what the last step reads, before any stage
    step = LabStep.of(s)
    return s.step(), z, step


def step_measure(trace: Any, measure: str) -> Any:
    """One number (or token) read from a step's trace; see the module docstring for the names."""
    name, _, arg = measure.partition(":")
    if name == "kept":
        return int(trace.kept_final)
    if name == "margin":
        return float(trace.margin)
    if name == "tail":
        return float(trace.tail["below"]["0.0001"])
    if name == "entropy_T":
        return float(trace.entropy_T)
    if name == "chosen":
        return trace.chosen_token
    if name in ("p_raw", "p_final"):
        return float(next((getattr(r, name) for r in trace.top if r.token == arg), 0.0))
    if name == "top2_ratio":
        a, b = sorted((r.p_final for r in trace.top), reverse=True)[:2]
        return float(a / b) if b > 0 else math.inf
    if name == "removed":
        rec = trace.record(arg)
        return float(rec.removed_mass) if rec is not None else 0.0
    raise ValueError(f"unknown measure {measure!r}")


def _decode(lm: LanguageModel, exp: Experiment, v: Variant) -> tuple[Any, str]:
    """The measured value of one decode variant, and the text it wrote."""
    from decoding_lab.strategies import beam_search, greedy, sample
    ids = lm.encode_prompt(exp.prompt, exp.chat)
    strategy = v.options.get("strategy", "greedy")
    if strategy == "beam":
        seq = beam_search(lm, ids, _settings(exp, v), exp.steps, num_beams=int(v.options.get("num_beams", 4)),
                          length_penalty=float(v.options.get("length_penalty", 0.0))).sequences[0]
    elif strategy == "sample":
        seq = sample(lm, ids, _settings(exp, v), exp.steps, n=1).sequences[0]
    else:
        seq = greedy(lm, ids, _settings(exp, v), exp.steps).sequences[0]
    if exp.measure == "logprob" or exp.measure.startswith("odds:"):   # odds: see odds(), once all have run
        return float(sum(seq.logprobs)), seq.text
    if exp.measure == "text":
        return seq.text, seq.text
    if exp.measure == "repetition":
        from decoding_lab.metrics import ngram_repetition_rate
        return float(ngram_repetition_rate(list(seq.token_ids), 4)), seq.text
    raise ValueError(f"unknown measure {exp.measure!r} for a decode experiment")


def _shipped(exp: Experiment) -> Any:
    """The shipped result file an experiment reads (``assets/sweeps/<file>``)."""
    return _shipped_file(exp.file)


def _shipped_file(name: str) -> Any:
    import json
    from decoding_lab.experiments.sweep import ASSET_DIR
    return json.loads((ASSET_DIR / name).read_text(encoding="utf-8"))


def whole_answer_pass1(ctd: dict[str, Any], sweep: dict[str, Any]) -> float:
    """Held-out pass@1 of sampling whole answers from p(y)^(1 + η·a), CTD's fitted power, rather
    than from a per-token temperature: each held-out problem's samples at T = 1 (drawn from p
    itself) re-weighted by p(y)^(η·a), a self-normalised importance estimate per problem, then
    averaged over the problems.

    >>> ctd = {"fit": {"slope": 1.0, "eta": 1.0}, "heldout_problems": [0]}
    >>> cell = {"temperature": 1.0, "truncation": "none",
    ...         "outcomes": [{"index": 0, "logprobs": [0.0, -math.log(3)], "correct": [True, False]}]}
    >>> round(whole_answer_pass1(ctd, {"cells": [cell]}), 6)      # weights 1 and 1/3
    0.75
    """
    power = float(ctd["fit"]["eta"]) * float(ctd["fit"]["slope"])
    cell = next(c for c in sweep["cells"] if c["temperature"] == 1.0 and c["truncation"] == "none"
                and c.get("penalty", "none") == "none")
    held = set(ctd["heldout_problems"])
    rates = []
    for o in cell["outcomes"]:
        if o["index"] in held:
            top = max(o["logprobs"])
            w = [math.exp(power * (lp - top)) for lp in o["logprobs"]]
            rates.append(sum(wi for wi, ok in zip(w, o["correct"]) if ok) / sum(w))
    if len(rates) != len(held):
        raise ValueError("the sweep lacks some of the CTD file's held-out problems at T = 1")
    return sum(rates) / len(rates)


def _sweep_value(exp: Experiment, v: Variant) -> float:
    from decoding_lab.multisample.passk import pass_at_k
    data = _shipped(exp)
    T, trunc = float(v.options["temperature"]), str(v.options.get("truncation", "none"))
    cell = next(c for c in data["cells"] if c["temperature"] == T and c["truncation"] == trunc)
    outcomes = cell["outcomes"]
    measure = str(v.options.get("measure", exp.measure))
    if measure == "vote":
        return sum(bool(o["vote_correct"]) for o in outcomes) / len(outcomes)
    if measure == "mixed":      # some samples pass and some fail: the problem still tells right from wrong
        return sum(0 < sum(o["correct"]) < len(o["correct"]) for o in outcomes) / len(outcomes)
    if measure.startswith("best_of:"):
        from decoding_lab.multisample.selection import best_of_n_accuracy
        _, k, score = measure.split(":")
        scores = {"logprob": lambda o: o["logprobs"], "short": lambda o: [-x for x in o["lengths"]],
                  "logprob_per_token": lambda o: [lp / max(n, 1) for lp, n in zip(o["logprobs"], o["lengths"])]}
        if score not in scores:
            raise ValueError(f"unknown best-of score {score!r}; known: {', '.join(scores)}")
        return sum(best_of_n_accuracy(scores[score](o), o["correct"], int(k)) for o in outcomes) / len(outcomes)
    if measure.startswith("pass@"):
        k = int(measure[5:])
        return sum(pass_at_k(len(o["correct"]), sum(o["correct"]), k) for o in outcomes) / len(outcomes)
    raise ValueError(f"unknown measure {measure!r} for a sweep experiment")


def _ctd_value(exp: Experiment, v: Variant) -> float:
    """Held-out pass@K of the shipped CTD file at one of its temperatures (fitted or grid), or the
    fitted power applied to whole answers (a variant with ``whole_answers``)."""
    if not exp.measure.startswith("pass@"):
        raise ValueError(f"unknown measure {exp.measure!r} for a ctd experiment")
    data = _shipped(exp)
    if v.options.get("whole_answers"):
        if exp.measure != "pass@1":
            raise ValueError("a whole-answer CTD variant measures pass@1 only")
        return whole_answer_pass1(data, _shipped_file(str(v.options["sweep"])))
    T = float(v.options["temperature"])
    curve = next(c for t, c in data["heldout_pass_at_k"].items() if float(t) == T)
    return float(curve[int(exp.measure[5:]) - 1])


EXTRACT_MEASURES = ("pattern_accuracy", "constraint_accuracy", "direct_accuracy", "agreement")


def _extract_value(exp: Experiment, v: Variant) -> float:
    """One accuracy of the shipped extraction comparison (pattern, constrained read-off, direct)."""
    measure = str(v.options.get("measure", exp.measure))
    if measure not in EXTRACT_MEASURES:
        raise ValueError(f"unknown measure {measure!r} for an extract experiment; known: {', '.join(EXTRACT_MEASURES)}")
    return float(_shipped(exp)[measure])


def _bench_value(exp: Experiment, v: Variant) -> float:
    import json
    from pathlib import Path
    if exp.measure != "per_softmax":
        raise ValueError(f"unknown measure {exp.measure!r} for a bench experiment")
    path = Path(__file__).resolve().parent.parent / "assets" / "bench" / exp.file
    rows = json.loads(path.read_text(encoding="utf-8"))["sampling_ops"]
    vocab = int(v.options["vocab"])
    us = {r["op"]: float(r["us_min"]) for r in rows if int(r["vocab"]) == vocab}
    return us[str(v.options["op"])] / us["softmax"]
