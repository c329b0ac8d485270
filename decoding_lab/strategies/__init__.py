"""Complete decoding strategies: greedy, sampling (n samples in one batch), beam search.

Each comes in two forms: a generator ``iter_*`` that yields a ``GenerationResult``
snapshot after every step (for streaming into a UI), and a plain function that runs to
the end. All take ``lm, prompt_ids, settings, ..., max_new_tokens, extra_stages,
should_stop`` and return new tokens only (never the prompt).

    >>> from decoding_lab.strategies import greedy, sample, beam_search
    >>> greedy(lm, ids, max_new_tokens=20).text                       # doctest: +SKIP
    'The capital of France is Paris.'
"""

from decoding_lab.strategies.beam import beam_search, iter_beam
from decoding_lab.strategies.greedy import greedy, iter_greedy
from decoding_lab.strategies.result import (BeamCandidate, BeamHypothesis, BeamStep, BeamTree, GeneratedSequence,
                                            GenerationResult)
from decoding_lab.strategies.sampling import iter_sample, sample

STRATEGIES = {"greedy": greedy, "sample": sample, "beam": beam_search}
ITER_STRATEGIES = {"greedy": iter_greedy, "sample": iter_sample, "beam": iter_beam}

__all__ = ["greedy", "iter_greedy", "sample", "iter_sample", "beam_search", "iter_beam", "GeneratedSequence",
           "GenerationResult", "BeamTree", "BeamStep", "BeamCandidate", "BeamHypothesis", "STRATEGIES",
           "ITER_STRATEGIES"]
