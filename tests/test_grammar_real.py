"""Grammar constraints on the bundled SmolLM2: sampled outputs always validate, healing, timings.

Budget: ~1–2 min on 2 free cores (the samples run batched: one forward per step for all rows)."""

from __future__ import annotations

import json

import pytest

from decoding_lab.grammar import (GrammarMask, benchmark_mask, heal_prompt, healing_demo, json_schema, preset,
                                  preset_prompt, validate_output)
from decoding_lab.settings import SamplingSettings
from decoding_lab.stepper import Stepper
from decoding_lab.strategies.sampling import sample

pytestmark = pytest.mark.real


VERDICT = json_schema({
    "type": "object",
    "properties": {"answer": {"enum": ["yes", "no", "unsure"]},
                   "confidence": {"type": "integer", "minimum": 0, "maximum": 100}},
    "required": ["answer", "confidence"], "additionalProperties": False,
}, name="verdict")

CASES = {
    "json-person": (preset("json-person"), preset_prompt("json-person")),
    "tool-call": (preset("tool-call"), preset_prompt("tool-call")),
    "verdict": (VERDICT, "Is the Earth round? Reply as JSON with the fields answer and confidence."),
}


@pytest.mark.parametrize("name", list(CASES))
def test_constrained_samples_always_validate(smollm, name):
    constraint, prompt = CASES[name]
    ids = smollm.encode_prompt(prompt, chat=True)
    mask = GrammarMask(constraint, smollm)
    for seed in (0, 1, 2):  # 3 seeds x 2 samples, each pair batched (one forward per step)
        res = sample(smollm, ids, SamplingSettings(temperature=1.0, seed=seed), n=2, max_new_tokens=80,
                     extra_stages={"grammar": mask})
        for seq in res.sequences:
            assert seq.finished, f"{name} seed {seed}: not finished within 80 tokens: {seq.text!r}"
            assert validate_output(seq.text, constraint), seq.text
            json.loads(seq.text)


def test_stepper_on_real_model(smollm):
    constraint, prompt = CASES["verdict"]
    mask = GrammarMask(constraint, smollm)
    s = Stepper.from_prompt(smollm, prompt, chat=True, settings=SamplingSettings(temperature=1.0, seed=7),
                            extra_stages={"grammar": mask})
    while not s.finished and len(s.tokens) < 40:
        s.step()
    assert s.finished and validate_output(smollm.decode(s.tokens[:-1]), constraint)
    recs = [t.stages[0] for t in s.traces]
    assert all(r.name == "grammar" and r.extra.mask_seconds < 0.5 for r in recs)
    assert recs[0].extra.forced                        # '{"' is the only way to start {"answer": …
    assert any(r.extra.preferred_forbidden is not None for r in recs)  # the model wanted something else at least once
    allowed_at_3 = None
    for t in s.traces[3:4]:
        allowed_at_3 = t.stages[0].extra.allowed
    s.rewind(5)
    s.rewind(3)
    assert mask._main.tokens == s.tokens and len(mask.allowed_ids()) == allowed_at_3
    # free generation breaks the format; the check says so
    assert not validate_output("Sure! Here is the JSON: {\"name\": \"Ada\"}", constraint)


def test_healing_on_real_model(smollm):
    ids = smollm.encode_prompt('{"name": "', chat=False)
    h = heal_prompt(smollm, ids)
    assert h.healed and smollm.decode(h.prompt_ids) + h.removed_text == '{"name": "'
    demo = healing_demo(smollm, ids, top_n=8)
    assert demo.removed_text == h.removed_text and len(demo.without) == 8 and demo.with_healing
    assert all(smollm.token_str(r["id"]).startswith(h.removed_text) or h.removed_text.startswith(r["token"])
               for r in demo.with_healing)
    assert 0 < demo.consistent_mass <= 1 and abs(sum(r["p"] for r in demo.with_healing) - 1) < 0.5
    json.dumps(demo.to_json())


def test_benchmark_numbers(smollm):
    r = benchmark_mask(smollm, preset("json-person"), n_tokens=12, prompt=preset_prompt("json-person"))
    assert r["tokens"] >= 1 and r["compile_ms"] < 2000
    assert r["mask_cpu_ms"]["mean"] < r["forward_cpu_ms"]["mean"]  # the mask is cheap next to the model
