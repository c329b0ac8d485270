"""The rollout potential's shortcuts (prefix cache kept between steps, rollouts read off an
earlier rollout's path) give the values the plain computation gives, and do skip work."""

from __future__ import annotations

import pytest

from decoding_lab.multisample.tilt import RolloutPotential, VerifierTilt
from decoding_lab.settings import SamplingSettings
from decoding_lab.stepper import Stepper
from tiny_model import make_tiny_lm

MANY_EOS = tuple(range(2, 96, 7))       # rollouts end early, so later steps find them on record
PROMPT = [5, 17, 42, 8, 9]


def verifier(text: str) -> float:
    return float("<3>" in text or "<4>" in text)


def tilted_run(lm, **kw):
    pot = RolloutPotential(lm, verifier, rollout_tokens=6, **kw)
    stepper = Stepper(lm, PROMPT, SamplingSettings(temperature=0.0, seed=0),
                      extra_stages={"verifier-tilt": VerifierTilt(pot, eta=4.0, top_m=4)}, max_new_tokens=12)
    traces = stepper.steps(12)
    scored = [(t.record(VerifierTilt).extra.potential.candidates, t.record(VerifierTilt).extra.potential.V)
              for t in traces]
    return stepper.tokens, scored, pot


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shortcuts_give_the_plain_values_and_skip_rollouts(seed):
    lm = make_tiny_lm(vocab_size=96, seed=seed, eos=MANY_EOS)
    plain_tokens, plain_scored, plain = tilted_run(lm, reuse=False, keep_prefix=False)
    tokens, scored, fast = tilted_run(lm)
    assert tokens == plain_tokens and scored == plain_scored
    assert fast.rollouts == plain.rollouts                    # the verifier judged the same texts
    assert plain.computed == len(plain.cache)                 # the plain potential runs every rollout
    assert fast.computed <= plain.computed


def test_some_rollouts_come_from_the_record():
    lm = make_tiny_lm(vocab_size=96, seed=0, eos=MANY_EOS)
    _, _, fast = tilted_run(lm)
    assert fast.computed < len(fast.cache), "a rollout that ended on the decoded path should be reused"


def test_rewind_starts_the_prefix_cache_over():
    lm = make_tiny_lm(vocab_size=96, seed=0, eos=MANY_EOS)
    pot = RolloutPotential(lm, verifier, rollout_tokens=4, reuse=False)
    ref = RolloutPotential(lm, verifier, rollout_tokens=4, reuse=False, keep_prefix=False)
    for ids in (PROMPT + [11, 12], PROMPT + [11], PROMPT + [13, 14, 15]):   # longer, shorter, another text
        assert pot(ids, len(PROMPT), [20, 30]) == ref(ids, len(PROMPT), [20, 30])
        assert pot.rollouts == ref.rollouts
