"""A parked stepper (its KV cache dropped, its tensors on the CPU, as between two ZeroGPU calls)
goes on as one that kept its cache: the same tokens, and logits equal up to float rounding (a
rebuilt cache comes from one prefill, not from token-by-token forwards), through steps, undo and
branches. On the tiny random model, so the check is fast."""

from __future__ import annotations

import torch

from decoding_lab.settings import SamplingSettings
from decoding_lab.stepper import Stepper

SAMPLED = SamplingSettings(temperature=1.3, top_k=20, seed=7)


def test_parked_steps_give_the_same_tokens_and_logits(tiny_lm):
    prompt = list(range(3, 12))
    kept, parked = Stepper(tiny_lm, prompt, SAMPLED), Stepper(tiny_lm, prompt, SAMPLED)
    for _ in range(8):
        parked.park()
        assert parked.parked and parked._next_logits.device.type == "cpu"
        a, b = kept.step(), parked.step()
        # a rebuilt cache is one prefill, not token-by-token forwards: equal up to float rounding
        assert a.chosen_token_id == b.chosen_token_id and abs(a.chosen_p_final - b.chosen_p_final) < 1e-6
        assert torch.allclose(kept._next_logits, parked._next_logits, atol=1e-5)
    assert kept.tokens == parked.tokens and not parked.parked


def test_undo_and_branches_after_parking(tiny_lm):
    prompt = list(range(5, 14))
    kept, parked = Stepper(tiny_lm, prompt, SAMPLED), Stepper(tiny_lm, prompt, SAMPLED)
    for st in (kept, parked):
        st.steps(5)
    parked.park()
    for st in (kept, parked):
        st.rewind(2)            # the old continuation becomes branch 0
        st.steps(3)
    assert kept.tokens == parked.tokens
    parked.park()
    for st in (kept, parked):
        st.checkout(0)          # back to the first continuation
        st.undo()
        st.step()
    assert kept.tokens == parked.tokens
    assert torch.allclose(kept._next_logits, parked._next_logits, atol=1e-5)
