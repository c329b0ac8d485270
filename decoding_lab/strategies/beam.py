"""Beam search, step for step the algorithm of transformers 5.x ``_beam_search``.

Keep ``num_beams`` partial sequences ("beams"). At each step:

1. Every beam's next-token log-probs: ``log_softmax(logits)``, then the stages (repetition
   penalty, n-gram blocking, ...) run on those *log-probs*, as transformers' processors do.
   Truncation stages in the settings (top-k, top-p, ...) cut candidates here too; note that
   ``generate(do_sample=False)`` would ignore them.
2. Add each beam's running score: a candidate's score is the sum of its log-probs.
3. Keep the best ``max(2, 1 + n_eos) * num_beams`` candidates over all beams. Enough that,
   even if every beam's best continuations are EOS, ``num_beams`` candidates go on.
4. Candidates that end (EOS, or the ``max_new_tokens`` limit) and rank in the top
   ``num_beams`` try to enter the list of finished hypotheses, ranked by the
   *length-normalised* score ``score / length ** alpha`` (length = generated tokens,
   EOS included; older transformers counted the prompt too). The list holds
   ``num_beams`` hypotheses; a better one pushes out the worst. Ending candidates below
   the top ``num_beams`` are dropped.
5. The best ``num_beams`` candidates that did not end become the new beams; the KV
   cache rows are reordered to follow their parents (the back-pointers).
6. Stop when (a) no running beam can beat the worst finished hypothesis (a heuristic,
   see ``_can_improve``), (b) ``early_stopping=True`` and the list is full, or (c) every
   candidate ended (the length limit).

``alpha`` (``length_penalty``) > 0 favours long hypotheses, < 0 short ones, 0 compares raw
sums. ``num_beams=1`` is a one-beam search here; ``generate`` switches to greedy instead
(they differ when a finished hypothesis may still be beaten, e.g. ``early_stopping="never"``). Scores are summed in float32 and topped with ``torch.topk`` on the same tensor
shapes as transformers, so ties break the same way and outputs match ``generate``.

Worked example (``lm`` is a loaded model, see ``decoding_lab.models``)::

    >>> ids = lm.encode_prompt("What is the capital of France?", chat=True)
    >>> r = beam_search(lm, ids, num_beams=4, num_return_sequences=2, max_new_tokens=20)
    >>> r.text
    'The capital of France is Paris.'
    >>> h = r.beam_tree.hypotheses[0]
    >>> abs(h.score - h.raw_score / h.length) < 1e-6      # alpha = 1: the mean log-prob
    True
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import torch

from decoding_lab import limits
from decoding_lab.chain import DeadEndError, apply_stages
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History, SettingsError, Stage
from decoding_lab.strategies.common import (StopFn, advance_stages, check_count, check_max_new_tokens,
                                            check_prompt, check_settings, eos_set, make_sequence, primed, settings_json,
                                            start_stages)
from decoding_lab.strategies.result import (BeamCandidate, BeamHypothesis, BeamStep, BeamTree, GeneratedSequence,
                                            GenerationResult)
from decoding_lab.backends.base import LanguageModel
from decoding_lab.decode import forward_next, prefill, row_entropies

#: Default upper bound on num_beams; the deployment sets it with ``DECODING_LAB_MAX_BEAMS``.
MAX_BEAMS = limits.Limits.max_beams
#: |alpha| beyond this only overflows (1024 ** 300 is inf); 10 already makes length decide everything.
MAX_ALPHA = 10.0
#: transformers marks "impossible" scores by adding -1e9 (not -inf, so sums stay finite).
NEG = -1.0e9


def iter_beam(lm: LanguageModel, prompt_ids: list[int], settings: SamplingSettings | None = None, max_new_tokens: int = 64,
              *, num_beams: int = 4, length_penalty: float = 1.0, early_stopping: bool | str = False,
              num_return_sequences: int = 1, extra_stages: dict[str, Stage] | None = None,
              should_stop: StopFn | None = None) -> Iterator[GenerationResult]:
    """Yield a snapshot after every step (``sequences`` = the live beams, best first, with
    their raw running scores); the last snapshot is the final result."""
    return primed(_run(lm, prompt_ids, settings, num_beams, length_penalty, early_stopping,
                       num_return_sequences, max_new_tokens, extra_stages, should_stop, every_step=True))


def beam_search(lm: LanguageModel, prompt_ids: list[int], settings: SamplingSettings | None = None, max_new_tokens: int = 64,
                *, num_beams: int = 4, length_penalty: float = 1.0, early_stopping: bool | str = False,
                num_return_sequences: int = 1, extra_stages: dict[str, Stage] | None = None,
                should_stop: StopFn | None = None) -> GenerationResult:
    """Run beam search to the end. ``sequences`` are the best ``num_return_sequences``
    hypotheses, best first; ``score`` is the length-normalised score (transformers'
    ``sequences_scores``)."""
    *_, result = primed(_run(lm, prompt_ids, settings, num_beams, length_penalty, early_stopping,
                             num_return_sequences, max_new_tokens, extra_stages, should_stop, every_step=False))
    return result


def check_beam_args(num_beams: Any, length_penalty: Any, early_stopping: Any,
                    num_return_sequences: Any) -> tuple[int, float, bool | str, int]:
    num_beams = limits.check_beams(num_beams)
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, (int, float)) \
            or not math.isfinite(length_penalty):
        raise SettingsError(f"length_penalty must be a finite number, got {length_penalty!r}")
    if abs(length_penalty) > MAX_ALPHA:  # length ** alpha must stay a normal float
        raise SettingsError(f"length_penalty must lie between -{MAX_ALPHA:g} and {MAX_ALPHA:g}, got {length_penalty:g}")
    if early_stopping not in (True, False, "never") or not isinstance(early_stopping, (bool, str)):
        raise SettingsError(f"early_stopping must be True, False or 'never', got {early_stopping!r}")
    num_return_sequences = check_count("num_return_sequences", num_return_sequences, 1, num_beams)
    return num_beams, float(length_penalty), early_stopping, num_return_sequences


def _can_improve(best_running: float, slot_scores: torch.Tensor, slot_done: torch.Tensor, generated: int,
                 max_new_tokens: int, length_penalty: float, early_stopping: bool | str) -> bool:
    """transformers' early-stop heuristic: could the best running beam still beat the worst
    finished hypothesis? Its future normalised score is guessed with the *current*
    length, except with ``early_stopping="never"`` and alpha > 0, where the most
    favourable length (the limit) is used. While the list has a free slot, always yes."""
    if early_stopping == "never" and length_penalty > 0.0:
        best_length = max_new_tokens
    else:
        best_length = generated
    best_possible = torch.tensor([best_running]) / (best_length ** length_penalty)
    worst_finished = torch.where(slot_done, torch.min(slot_scores), NEG)
    return bool(torch.any(best_possible > worst_finished))


def ended_hypotheses(tree: BeamTree) -> list[BeamHypothesis]:
    """Every candidate of ``tree`` that ended inside the top ``num_beams`` (``finished`` or
    ``rejected``), oldest step first: the hypotheses a length penalty chooses among. Their
    ``score`` is the one the search used (α = ``tree.length_penalty``); ``text`` is left empty
    (the tree holds token strings, not the tokenizer's decoding of a whole path)."""
    out = []
    for s, step in enumerate(tree.steps):
        for j, c in enumerate(step.candidates):
            if c.status in ("finished", "rejected"):
                tokens = (tree.path(s - 1, c.parent) if s > 0 else []) + [c.token_id]
                score = c.normalized_score                  # recorded for every candidate that ended
                if score is None:
                    score = c.score / len(tokens) ** tree.length_penalty
                out.append(BeamHypothesis(tokens, "", c.score, score, len(tokens), s, j, c.eos))
    return out


@dataclass(frozen=True)
class HypothesisRanking:
    """Hypotheses re-ranked under several length penalties (``rank_hypotheses``).

    ``hypotheses`` keep the order they were given in; ``scores[i][j]`` is hypothesis i's
    ``raw_score / length ** alphas[j]``, ``ranks[i][j]`` its place under ``alphas[j]`` (1 = best;
    equal scores keep the earlier hypothesis first) and ``winners[j]`` the index of the best one
    (None when there are no hypotheses)."""

    alphas: tuple[float, ...]
    hypotheses: tuple[BeamHypothesis, ...]
    scores: tuple[tuple[float, ...], ...]
    ranks: tuple[tuple[int, ...], ...]
    winners: tuple[int | None, ...]


def rank_hypotheses(tree_or_hyps: BeamTree | Sequence[BeamHypothesis], alphas: Sequence[float]) -> HypothesisRanking:
    """Re-rank finished hypotheses by ``score = raw_score / length ** alpha`` for each alpha:
    the arithmetic step 4 ranks by, applied after the fact. Given a ``BeamTree``, the
    hypotheses are its ``ended_hypotheses``. A different alpha would also have changed which
    beams the search kept, so this re-ranks only the hypotheses one run found.

    Worked example: a short answer (2 tokens, sum of log-probs -1.0) against a long one
    (5 tokens, -2.0). Raw sums (alpha = 0) prefer the short one; the mean log-prob
    (alpha = 1) prefers the long one::

        >>> short = BeamHypothesis([5, 2], "Paris", -1.0, -0.5, 2, step=1, candidate=0, eos=True)
        >>> long = BeamHypothesis([7, 8, 9, 10, 2], "It is Paris", -2.0, -0.4, 5, step=4, candidate=1, eos=True)
        >>> r = rank_hypotheses([short, long], [0, 1])
        >>> r.scores                    # per hypothesis: -1.0 / 2 ** alpha, -2.0 / 5 ** alpha
        ((-1.0, -0.5), (-2.0, -0.4))
        >>> r.ranks, r.winners
        (((1, 2), (2, 1)), (0, 1))
    """
    alphas = tuple(float(a) for a in alphas)
    for a in alphas:
        if not math.isfinite(a) or abs(a) > MAX_ALPHA:
            raise SettingsError(f"length penalties must lie between -{MAX_ALPHA:g} and {MAX_ALPHA:g}, got {a!r}")
    hyps = tuple(ended_hypotheses(tree_or_hyps) if isinstance(tree_or_hyps, BeamTree) else tree_or_hyps)
    per_alpha = [[h.raw_score / h.length ** a for h in hyps] for a in alphas]    # [alpha][hypothesis]
    ranks_by_alpha, winners = [], []
    for scores in per_alpha:
        order = sorted(range(len(hyps)), key=lambda i: -scores[i])              # stable: ties keep their order
        place = {i: r + 1 for r, i in enumerate(order)}
        ranks_by_alpha.append([place[i] for i in range(len(hyps))])
        winners.append(order[0] if order else None)
    return HypothesisRanking(alphas, hyps,
                             tuple(tuple(s[i] for s in per_alpha) for i in range(len(hyps))),
                             tuple(tuple(r[i] for r in ranks_by_alpha) for i in range(len(hyps))),
                             tuple(winners))


def _run(lm: LanguageModel, prompt_ids: list[int], settings: SamplingSettings | None, num_beams: int, length_penalty: float,
         early_stopping: bool | str, num_return_sequences: int, max_new_tokens: int,
         extra_stages: dict[str, Stage] | None, should_stop: StopFn | None,
         every_step: bool) -> Iterator[GenerationResult | None]:
    prompt = check_prompt(lm, prompt_ids)
    K, alpha, early_stopping, n_return = check_beam_args(num_beams, length_penalty, early_stopping,
                                                         num_return_sequences)
    max_new_tokens = check_max_new_tokens(max_new_tokens)
    # Temperature divides every score by the same T, which changes no ranking: leave it out
    # (generate(do_sample=False) ignores it as well). Every other stage runs on log-probs.
    settings = check_settings(settings, SamplingSettings(temperature=0.0)).replace(temperature=0.0)
    stages = settings.build_chain(extra_stages, lm=lm)
    eos = eos_set(lm)
    eos_ids = torch.tensor(sorted(eos), dtype=torch.long)
    n_keep = max(2, 1 + len(eos)) * K
    info = settings_json(lm, settings, num_beams=K, length_penalty=alpha, early_stopping=early_stopping,
                         num_return_sequences=n_return, max_new_tokens=max_new_tokens)
    tree = BeamTree(K, alpha, early_stopping)
    t0 = time.perf_counter()
    yield None  # the arguments are valid: primed() stops here, before any model work

    # Live beams. All start as the bare prompt, but only beam 0 counts: the others score
    # -1e9, so step 1 does not pick the same token K times.
    beam_tokens: list[list[int]] = [[] for _ in range(K)]
    beam_lps: list[list[float]] = [[] for _ in range(K)]
    beam_ents: list[list[float]] = [[] for _ in range(K)]
    beam_scores = torch.full((K,), NEG)
    beam_scores[0] = 0.0
    # Finished hypotheses: K slots, best first; an empty slot scores -1e9.
    slot_scores = torch.full((K,), NEG)
    slot_done = torch.zeros(K, dtype=torch.bool)
    slot_hyps: list[BeamHypothesis | None] = [None] * K
    slot_lps: list[list[float]] = [[] for _ in range(K)]
    slot_ents: list[list[float]] = [[] for _ in range(K)]
    improvable = True

    def finish(done: bool, stopped: bool = False) -> GenerationResult:
        seqs = [GeneratedSequence(h.token_ids, h.text, h.score, slot_lps[j], h.eos, slot_ents[j])
                for j, h in enumerate(slot_hyps) if h is not None]
        if len(seqs) < n_return:  # stopped early: fill up with live beams, normalised the same way
            live = [make_sequence(lm, beam_tokens[b], beam_lps[b], beam_ents[b],
                                  float(beam_scores[b]) / max(1, len(beam_tokens[b])) ** alpha, eos)
                    for b in range(K) if float(beam_scores[b]) > NEG / 2]
            seqs = sorted(seqs + live, key=lambda s: -s.score)
        tree.hypotheses = [h for h in slot_hyps if h is not None]
        return GenerationResult("beam", seqs[:n_return], len(prompt), info, time.perf_counter() - t0,
                                beam_tree=tree, steps=len(tree.steps), done=done, stopped=stopped)

    def progress() -> GenerationResult:
        seqs = [make_sequence(lm, beam_tokens[b], beam_lps[b], beam_ents[b], float(beam_scores[b]), eos)
                for b in range(K)]
        return GenerationResult("beam", seqs, len(prompt), info, time.perf_counter() - t0, beam_tree=tree,
                                steps=len(tree.steps), done=False)

    start_stages(stages, K)
    cache, logits = prefill(lm, prompt, K)
    for step in range(max_new_tokens):
        if should_stop is not None and should_stop():
            tree.stop_reason = "stopped"
            yield finish(done=True, stopped=True)
            return
        if step > 0:
            logits = forward_next(lm, cache, [t[-1] for t in beam_tokens])

        # 1-2. processed log-probs, plus each beam's running score
        history = History(torch.tensor([prompt + t for t in beam_tokens]), len(prompt))
        logp = apply_stages(stages, torch.log_softmax(logits, dim=-1), history)     # [K, V]
        vocab = logp.shape[-1]
        total = (logp + beam_scores[:, None]).reshape(1, -1)                          # [1, K * V]

        # 3. the best n_keep candidates over all beams (topk sorts them, best first)
        top_scores, top_idx = torch.topk(total, k=min(n_keep, total.shape[-1]))
        top_scores, top_idx = top_scores[0], top_idx[0]
        if not math.isfinite(float(top_scores[0])):
            raise DeadEndError(f"step {step}: the stages left no token that any beam can take")
        parents, tokens = top_idx // vocab, top_idx % vocab
        ends = torch.isin(tokens, eos_ids) | (step + 1 >= max_new_tokens)

        # 5. new live beams: the best n_keep candidates, with ended ones pushed to the bottom
        running = top_scores + ends.to(torch.float32) * NEG
        live_idx = torch.topk(running, k=K)[1]

        # 4. hypotheses: only ended candidates in the top K may enter, scored by length
        in_top_k = torch.arange(len(top_scores)) < K
        may_enter = ends & in_top_k
        normalized = top_scores / ((step + 1) ** alpha)
        closed = (bool(slot_done.all()) and early_stopping is True) or not improvable
        offered = normalized + float(closed) * NEG + (~may_enter) * NEG
        merged_scores = torch.cat((slot_scores, offered))
        merged_done = torch.cat((slot_done, may_enter))
        keep_idx = torch.topk(merged_scores, k=K)[1].tolist()

        # Record every candidate. Per-candidate lists (tokens, log-probs, entropies) are
        # built only for the candidates that survive: its parent beam's list plus one entry.
        par, tok = parents.tolist(), tokens.tolist()
        step_lp = logp[parents, tokens].tolist()
        ents = row_entropies(logits)
        step_ent = [ents[p] for p in par]

        def extend(c: int, lists: list[list], values: list) -> list:
            return lists[par[c]] + [values[c]]

        entered = {j - K for j in keep_idx if j >= K and bool(may_enter[j - K])}
        live = live_idx.tolist()
        cands: list[BeamCandidate] = []
        for c in range(len(tok)):
            if bool(may_enter[c]):
                status = "finished" if c in entered else "rejected"
            else:
                status = "live" if c in live and not bool(ends[c]) else "pruned"
            cands.append(BeamCandidate(par[c], tok[c], lm.token_str(tok[c]), step_lp[c], float(top_scores[c]),
                                       status, tok[c] in eos,
                                       float(normalized[c]) if bool(ends[c]) else None))
        tree.steps.append(BeamStep(step, cands, live))

        new_hyps: list[BeamHypothesis | None] = []
        new_lps: list[list[float]] = []
        new_ents: list[list[float]] = []
        for j in keep_idx:
            if j < K:                     # a hypothesis that stays
                hyp, lps, hs = slot_hyps[j], slot_lps[j], slot_ents[j]
            elif j - K in entered:        # a candidate that just finished
                c = j - K
                toks = extend(c, beam_tokens, tok)
                is_eos = toks[-1] in eos
                hyp = BeamHypothesis(toks, lm.decode(toks[:-1] if is_eos else toks), float(top_scores[c]),
                                     float(normalized[c]), len(toks), step, c, is_eos)
                lps, hs = extend(c, beam_lps, step_lp), extend(c, beam_ents, step_ent)
            else:                         # an empty slot (nothing better was offered)
                hyp, lps, hs = None, [], []
            new_hyps.append(hyp)
            new_lps.append(lps)
            new_ents.append(hs)
        slot_scores, slot_done = merged_scores[keep_idx], merged_done[keep_idx]
        slot_hyps, slot_lps, slot_ents = new_hyps, new_lps, new_ents

        # The new live beams, following their back-pointers.
        beam_scores = running[live_idx]
        beam_tokens = [extend(c, beam_tokens, tok) for c in live]
        beam_lps = [extend(c, beam_lps, step_lp) for c in live]
        beam_ents = [extend(c, beam_ents, step_ent) for c in live]

        # 6. stop?
        improvable = improvable and _can_improve(float(beam_scores[0]), slot_scores, slot_done, step + 1,
                                                 max_new_tokens, alpha, early_stopping)
        if bool(ends.all()):
            tree.stop_reason = "max_new_tokens"
        elif bool(slot_done.all()) and early_stopping is True:
            tree.stop_reason = "early_stopping"
        elif not improvable:
            tree.stop_reason = "no_improvement"
        if tree.stop_reason:
            yield finish(done=True)
            return
        if every_step:
            yield progress()
        # the cache rows follow the back-pointers; so do stateful stages
        beam_parents = [par[c] for c in live]
        cache.reorder_cache(torch.tensor(beam_parents))
        advance_stages(stages, beam_parents, [t[-1] for t in beam_tokens])
    tree.stop_reason = tree.stop_reason or "max_new_tokens"
    yield finish(done=True)
