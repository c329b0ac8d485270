"""Several prompts sampled as one batch (``strategies.prompt_batch``) give the samples each prompt
gives alone: same seeds, same tokens, same scores; and a sweep cell is the same whatever its batch."""

from __future__ import annotations

import pytest

from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.strategies import sample
from decoding_lab.strategies.prompt_batch import sample_batch, sample_prompts

PROMPTS = [[5, 9, 12, 7], [3, 3, 8, 1], [40, 2, 6, 11], [17, 4, 9]]      # the last one is shorter


def _alone(lm, prompts, settings, n, length):
    return [sample(lm, p, s, length, n=n) for p, s in zip(prompts, settings)]


@pytest.mark.parametrize("cut", [{}, {"top_k": 5, "repetition_penalty": 1.3}, {"temperature": 0.0}])
def test_batched_prompts_sample_what_each_samples_alone(tiny_lm, cut):
    settings = [SamplingSettings(**{"temperature": 1.2, "seed": 10 + i, **cut}) for i in range(len(PROMPTS))]
    together = sample_prompts(tiny_lm, PROMPTS, settings, n=3, max_new_tokens=12, batch=3)
    alone = _alone(tiny_lm, PROMPTS, settings, 3, 12)
    for a, b in zip(alone, together):
        assert [s.token_ids for s in a.sequences] == [s.token_ids for s in b.sequences]
        assert [s.score for s in a.sequences] == pytest.approx([s.score for s in b.sequences], abs=1e-5)
        assert b.settings == a.settings                  # the seed used and every setting, as sample() reports them


def test_rows_that_end_leave_the_batch_and_get_no_token_after_their_end(tiny_lm):
    eos = sorted(tiny_lm.eos_token_ids)[0]
    settings = [SamplingSettings(temperature=3.0, seed=s) for s in range(3)]
    runs = sample_batch(tiny_lm, PROMPTS[:3], settings, n=4, max_new_tokens=30)
    seqs = [s for r in runs for s in r.sequences]
    for s in seqs:
        assert eos not in s.token_ids[:-1]
    assert any(s.finished for s in seqs) and any(len(s.token_ids) < 30 for s in seqs)


def test_only_the_seed_may_differ_and_a_stop_returns_none(tiny_lm):
    with pytest.raises(SettingsError, match="all but the seed"):
        sample_batch(tiny_lm, PROMPTS[:2], [SamplingSettings(temperature=1.0), SamplingSettings(temperature=0.5)], 2)
    with pytest.raises(SettingsError, match="one length"):
        sample_batch(tiny_lm, [PROMPTS[0], PROMPTS[3]], [SamplingSettings(seed=1)] * 2, 2)
    assert sample_prompts(tiny_lm, PROMPTS, [SamplingSettings(seed=1)] * 4, 2, 8, should_stop=lambda: True) is None


@pytest.mark.real
def test_a_sweep_cell_is_the_same_batched_and_one_problem_at_a_time(smollm):
    """Eight addition problems, 8 samples each at T = 0.7: batch 8 and batch 1 give the same
    answers, verdicts, lengths and log-probabilities."""
    from decoding_lab.experiments.grid import Cell, SweepConfig
    from decoding_lab.experiments.sweep import run_cell
    from decoding_lab.tasks.sets import get_task
    task = get_task("addition")
    config = SweepConfig(model="smollm2-135m-instruct", task="addition", problems=8, n=8, max_new_tokens=24,
                         temperatures=(0.7,), truncations=("none",))
    problems = task.problems(8, seed=0)
    a = run_cell(smollm, task, problems, Cell(0.7, "none", "none"), config, batch=8)
    b = run_cell(smollm, task, problems, Cell(0.7, "none", "none"), config, batch=1)
    assert [o.answers for o in a.outcomes] == [o.answers for o in b.outcomes]
    assert [o.lengths for o in a.outcomes] == [o.lengths for o in b.outcomes]
    assert [o.correct for o in a.outcomes] == [o.correct for o in b.outcomes]
    for x, y in zip(a.outcomes, b.outcomes):
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-3)
