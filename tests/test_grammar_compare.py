"""Constrained vs free (``decoding_lab.experiments.constrained_vs_free``): constrained outputs always validate,
free ones are measured by the same checker; answer accuracy both ways.

Fast tests run on a tiny random model that carries a hand-made vocabulary; the ``real``
ones on the bundled SmolLM2 (~1 min on one busy core)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
import torch

from decoding_lab.grammar import GrammarTokenizer, build_constraint, choices, json_schema, preset, regex
from decoding_lab.experiments.constrained_vs_free import (AnswerAccuracy, AnswerTask, CheckedSample, ConstrainedVsFree, TaskOutcome,
                                          answer_accuracy, builtin_tasks, check_sample, constrained_vs_free, salvage,
                                          why_invalid)
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.strategies.result import GeneratedSequence
from tiny_model import TinyLM, make_tiny_lm


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ----------------------------------------------------------------------------- a tiny model with real text
_WORDS = ["<bos>", "<eos>", *"0123456789", "12", "345", " ", "yes", "no", "ye", "s", "n", "o", ".", "A", "B", "C",
          "D", "{", "}", '"', ":", "a", "b", "x"]
TOKENS = _WORDS + [f"~{i}" for i in range(96 - len(_WORDS))]


@dataclass
class TextTinyLM(TinyLM):
    """The tiny random Llama, with a vocabulary whose tokens are real text (for the validator)."""

    grammar_tokenizer: GrammarTokenizer | None = None
    name: str = "tiny-text"

    def encode_prompt(self, prompt: str, chat: bool = False) -> list[int]:
        return [2 + (ord(c) % 90) for c in prompt]

    def decode(self, ids: list[int]) -> str:
        return "".join(TOKENS[i] for i in ids if i > 1)

    def token_str(self, i: int) -> str:
        return TOKENS[i]


@pytest.fixture(scope="module")
def tiny():
    base = make_tiny_lm(96)
    return TextTinyLM(base.model, 96, grammar_tokenizer=GrammarTokenizer.from_tokens(TOKENS, eos_ids=(1,),
                                                                                  special_ids=(0,)))


@pytest.mark.parametrize("source,kind", [("[0-9]{1,3}", "regex"), ("yes\nno", "choices"),
                                         ('start: "A" | "B" | "C" | "D"', "lark")])
def test_constrained_always_valid_free_measured_tiny(tiny, source, kind):
    c = build_constraint(kind, source)
    for seed in range(3):
        r = constrained_vs_free(tiny, "go", c, n=4, settings=SamplingSettings(temperature=1.0, seed=seed),
                                max_new_tokens=12, chat=False)
        assert [s.valid for s in r.constrained] == [True] * 4, [s.text for s in r.constrained]
        assert all(s.finished for s in r.constrained) and r.unfinished == 0
        assert r.constrained_failure_rate == 0.0
        # free text from random weights: measured by the same validator, almost never valid
        assert r.free_failure_rate == sum(not s.valid for s in r.free) / 4
        assert r.free_failure_rate >= 0.5
        assert r.compile_seconds > 0 and r.grammar_seconds > 0 and r.grammar_ms_per_token > 0
        json.dumps(r.to_json())


def test_same_seed_same_samples(tiny):
    c = regex("[0-9]{1,3}")
    a, b = (constrained_vs_free(tiny, "go", c, n=3, settings=SamplingSettings(temperature=1.0, seed=5),
                                max_new_tokens=8, chat=False) for _ in range(2))
    assert [s.text for s in a.free] == [s.text for s in b.free]
    assert [s.text for s in a.constrained] == [s.text for s in b.constrained]


def test_budget_too_small_is_reported_as_unfinished(tiny):
    c = regex("[a-b]{6}")  # six tokens at least, then EOS
    r = constrained_vs_free(tiny, "go", c, n=2, settings=SamplingSettings(temperature=1.0, seed=0),
                            max_new_tokens=3, chat=False)
    assert r.unfinished == 2 and r.constrained_failure_rate == 1.0


@pytest.mark.parametrize("bad,match", [({"n": 0}, "samples"), ({"n": 99}, "samples"), ({"max_new_tokens": 0}, "tokens"),
                                       ({"prompt": "  "}, "empty")])
def test_bad_arguments(tiny, bad, match):
    kw = {"prompt": "go", "n": 2, "max_new_tokens": 4, **bad}
    with pytest.raises(SettingsError, match=match):
        constrained_vs_free(tiny, kw.pop("prompt"), regex("[0-9]"), chat=False, **kw)


# ----------------------------------------------------------------------------- checking and salvaging
SCHEMA = json_schema({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})


@pytest.mark.parametrize("text,constraint,found", [
    ('{"a": 1}', SCHEMA, '{"a": 1}'),
    ('Here you go:\n```json\n{"a": 2}\n```\nDone.', SCHEMA, '{"a": 2}'),
    ('Sure: {"a": 3} and {"b": 4}', SCHEMA, '{"a": 3}'),
    ('{"b": 4}', SCHEMA, None),                      # JSON, but not valid under the schema
    ("42.", regex("[0-9]+"), "42"),
    ("A) Mars", choices(["A", "B", "C", "D"]), "A"),
    ("The answer is 7.", regex("[0-9]+"), None),     # only the start of the first line is tried
])
def test_salvage(text, constraint, found):
    assert salvage(text, constraint) == found


def test_check_sample_strict_and_lenient():
    seq = GeneratedSequence([5, 6], "```json\n{\"a\": 1}\n```", 0.0, [], True)
    c = check_sample(seq, SCHEMA)
    assert (c.valid, c.salvaged, c.finished, c.tokens, c.reason) == (False, True, True, 2, "not_json")


@pytest.mark.parametrize("text,constraint,reason", [
    ('{"a": 1}', SCHEMA, ""), ('{"a": "x"}', SCHEMA, "schema"), ("{'a': 1}", SCHEMA, "not_json"),
    ("7", regex("[0-9]"), ""), ("seven", regex("[0-9]"), "no_match"),
])
def test_why_invalid(text, constraint, reason):
    assert why_invalid(text, constraint) == reason


def test_rates_from_records():
    ok, bad = CheckedSample("1", True, True, True, 2), CheckedSample("x", False, False, False, 9)
    r = ConstrainedVsFree("c", "regex", "p", "m", 2, 9, {}, [ok, bad], [ok, ok], 0.01, 1.0, 1.0, 0.004)
    assert (r.free_failure_rate, r.free_salvage_failure_rate, r.constrained_failure_rate) == (0.5, 0.5, 0.0)
    assert r.grammar_ms_per_token == pytest.approx(1.0)
    assert r.unfinished == 0


# ----------------------------------------------------------------------------- answer tasks
def test_builtin_tasks():
    tasks = builtin_tasks()
    assert len(tasks) == 16
    kinds = [t.kind for t in tasks]
    assert kinds.count("choice") == 8 and kinds.count("integer") == 8
    for t in tasks:
        if t.kind == "choice":
            assert t.answer in "ABCD" and len(t.options) == 4 and "letter only" in t.prompt
            assert preset(t.preset).options == ["A", "B", "C", "D"]
        else:
            a, b = [int(x) for x in t.prompt.split("What is ")[1].split("?")[0].split(" + ")]
            assert t.answer == str(a + b) and "number" in t.prompt
    assert builtin_tasks() == tasks  # deterministic


def test_answer_reading():
    mc = AnswerTask("q", "C", "choice", ("Lyon", "Nice", "Paris", "Lille"))
    assert mc.extract("The correct answer is C. Paris") == "C"
    assert mc.extract("Paris is the capital.") == "C"
    assert mc.read_constrained(" c ") == "C"
    add = AnswerTask("q", "7", "integer")
    assert add.extract("3 + 4 = 7. Then") == "7" and add.extract("no idea") is None
    assert add.read_constrained("07") == "7" and add.read_constrained("") is None


def test_accuracy_summary_counts():
    task = AnswerTask("q", "7", "integer")
    right = TaskOutcome(task, ["7"], ["7"], ["60"], ["60"], [True])      # hurt: format right, answer wrong
    helped = TaskOutcome(task, ["hm"], [None], ["7"], ["7"], [True])
    acc = AnswerAccuracy("m", {}, 1, [right, helped], 1.0)
    assert (acc.free_accuracy, acc.constrained_accuracy) == (0.5, 0.5)
    assert acc.free_format_failure_rate == 0.5 and acc.constrained_format_failure_rate == 0.0
    assert (acc.format_right_answer_wrong, acc.helped, acc.hurt) == (1, 1, 1)
    assert acc.by_kind()["integer"]["questions"] == 2
    json.dumps(acc.to_json())


# ----------------------------------------------------------------------------- the real model
@pytest.mark.real
@pytest.mark.parametrize("name", ["json-person", "integer", "answer-abcd"])
def test_smollm_constrained_always_valid(smollm, name):
    from decoding_lab.grammar import preset_prompt
    r = constrained_vs_free(smollm, preset_prompt(name), preset(name), n=2,
                            settings=SamplingSettings(temperature=1.0, seed=0), max_new_tokens=64)
    assert all(s.valid and s.finished for s in r.constrained), [s.text for s in r.constrained]
    assert r.constrained_failure_rate == 0.0
    # measured, not assumed: the same validator on the free texts
    assert r.free_failure_rate == sum(not s.valid for s in r.free) / 2
    print(f"{name}: free fails {r.free_failure_rate:.0%}, constrained {r.constrained_failure_rate:.0%}, "
          f"grammar {r.grammar_ms_per_token:.3f} ms/token")


@pytest.mark.real
def test_smollm_answer_accuracy_both_ways(smollm):
    tasks = builtin_tasks(3, 3)
    acc = answer_accuracy(smollm, tasks, max_new_tokens=32)
    assert acc.n == 1 and len(acc.outcomes) == 6
    assert acc.constrained_format_failure_rate == 0.0      # every forced answer is a letter or an integer
    for o in acc.outcomes:
        c = o.constrained_texts[0].strip()
        assert (c in "ABCD" and len(c) == 1) if o.task.kind == "choice" else c.lstrip("-").isdigit()
    assert 0.0 <= acc.free_accuracy <= 1.0 and 0.0 <= acc.constrained_accuracy <= 1.0
    assert acc.format_right_answer_wrong == sum(not c for o in acc.outcomes for c in o.constrained_correct)
    print(f"free {acc.free_accuracy:.0%} vs constrained {acc.constrained_accuracy:.0%}, {acc.seconds:.0f} s")
