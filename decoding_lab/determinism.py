"""Temperature 0 is not a promise of determinism: the same greedy decode along
different numerical paths.

Greedy takes the argmax. When the two best logits are nearly tied (a small *margin*),
anything that perturbs the logits by more than that margin can flip the choice — and
once one token differs, the rest of the text follows a different path. Perturbations
come from floating-point arithmetic: a sum computed in another order rounds
differently. Real sources of such differences:

* precision: float32 here, bfloat16 on many GPU servers;
* the cache path: logits of a step computed incrementally from the KV cache versus
  recomputed from the whole prefix in one pass (different matrix shapes, different
  reduction orders);
* batch composition: the same prompt alone or in a batch next to a longer prompt
  (left padding changes shapes and kernels);
* the engine: the same GGUF file run by llama.cpp's quantised kernels instead of being
  de-quantised to float32 for PyTorch (``llama.cpp kernels, same GGUF``). On SmolLM2 and
  "What is the capital of France?" the two part at the very first token.

``greedy_variants`` decodes the same prompt greedily along each path (each stops at its
end-of-sequence token, kept as its last token) and reports where the texts first diverge,
with the margin that was too small at that step.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from decoding_lab import limits
from decoding_lab.backends.base import Backend, LanguageModel
from decoding_lab.backends.hf import HFBackend
from decoding_lab.decode import forward_fresh, forward_next, recompute, run as run_rows
from decoding_lab.stages import SettingsError
from decoding_lab.stepper import check_prompt_ids
from decoding_lab.stats import top_margin

VARIANTS = ("float32, cached", "float32, full recompute", "bfloat16, cached", "batched with a longer prompt",
            "llama.cpp kernels, same GGUF")
#: The full-recompute path costs (prompt + new tokens)^2 / 2 token-positions: keep that bounded.
MAX_RECOMPUTE_TOKENS = 1024


@dataclass
class VariantRun:
    name: str
    tokens: list[int]
    margins: list[float]   # top-1 minus top-2 logit at each step, along this path

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "tokens": self.tokens, "margins": self.margins}


def _greedy_cached(backend: Backend, prompt: list[int], n: int, eos: frozenset[int] = frozenset()) -> VariantRun:
    cache, logits = forward_fresh(backend, prompt)
    logits = logits[0]
    toks, margins = [], []
    for _ in range(n):
        margins.append(top_margin(logits))
        tok = int(logits.argmax())
        toks.append(tok)
        if tok in eos:      # the text is over: a path stops at its end-of-sequence token
            break
        logits = forward_next(backend, cache, [tok])[0]
    return VariantRun("", toks, margins)


@torch.inference_mode()
def _greedy_full(backend: Any, prompt: list[int], n: int, eos: frozenset[int] = frozenset()) -> VariantRun:
    """Every step reads the whole text again, without a cache (only the last position's
    logits are projected onto the vocabulary: the others would be thrown away)."""
    toks, margins = [], []
    for _ in range(n):
        logits = recompute(backend, prompt + toks)[0]
        margins.append(top_margin(logits))
        toks.append(int(logits.argmax()))
        if toks[-1] in eos:
            break
    return VariantRun("", toks, margins)


@torch.inference_mode()
def _greedy_batched(backend: Backend, prompt: list[int], n: int, pad_id: int,
                    eos: frozenset[int] = frozenset()) -> VariantRun:
    """Decode ``prompt`` as row 1 of a batch whose row 0 is a longer prompt (left padding)."""
    other = (prompt * 3)[: len(prompt) * 2]
    width = len(other)
    ids = torch.tensor([other, [pad_id] * (width - len(prompt)) + prompt])
    mask = torch.tensor([[1] * width, [0] * (width - len(prompt)) + [1] * len(prompt)])
    cache = backend.new_cache()
    toks, margins = [], []
    logits = run_rows(backend, cache, ids, attention_mask=mask)
    for _ in range(n):
        row = logits[1]
        margins.append(top_margin(row))
        tok = int(row.argmax())
        toks.append(tok)
        if tok in eos:
            break
        nxt = torch.tensor([[int(logits[0].argmax())], [tok]])
        mask = torch.cat([mask, torch.ones(2, 1, dtype=mask.dtype)], dim=1)
        logits = run_rows(backend, cache, nxt, attention_mask=mask)
    return VariantRun("", toks, margins)


def greedy_variants(lm: LanguageModel, prompt_ids: list[int], max_new_tokens: int = 40,
                    variants: tuple[str, ...] = VARIANTS) -> dict[str, Any]:
    """Run greedy decoding of ``prompt_ids`` along several numerical paths.

    Returns ``{"runs": [...], "divergence": [{"variant", "step", "reference_token",
    "variant_token", "reference_margin"}]}`` where each divergence is against the first
    variant (the reference)."""
    runs = list(iter_variants(lm, prompt_ids, max_new_tokens, variants))
    return summarize(lm, runs)


def iter_variants(lm: LanguageModel, prompt_ids: list[int], max_new_tokens: int = 40,
                  variants: tuple[str, ...] = VARIANTS) -> Iterator[VariantRun]:
    """The paths one at a time, each a ``VariantRun`` as soon as it is done (a UI shows
    progress per path; ``summarize`` turns the list into ``greedy_variants``' result). Every
    argument is checked before the first path runs."""
    if not lm.caps.transformers:   # llama.cpp's kernels, a served model
        raise SettingsError(f"the numerical paths re-run a transformers model's own weights (float32, bfloat16, "
                            f"recomputed, batched); {lm.name} runs on {lm.source}: choose a transformers model "
                            "(a bundled one's llama.cpp run is one of the paths)")
    prompt_ids = check_prompt_ids(lm, prompt_ids)
    max_new_tokens = limits.check_new_tokens(max_new_tokens)
    if not variants:
        raise SettingsError("choose at least one numerical path")
    if "float32, full recompute" in variants and len(prompt_ids) + max_new_tokens > MAX_RECOMPUTE_TOKENS:
        raise SettingsError(f"the full-recompute path re-reads the whole text at every step: prompt + new tokens "
                            f"must be at most {MAX_RECOMPUTE_TOKENS}, got {len(prompt_ids) + max_new_tokens}")
    eos = frozenset(int(t) for t in (getattr(lm, "eos_token_ids", ()) or ()))
    n = max_new_tokens
    runners: dict[str, Callable[[], VariantRun]] = {
        "float32, cached": lambda: _greedy_cached(lm.backend, prompt_ids, n, eos),
        "float32, full recompute": lambda: _greedy_full(lm.backend, prompt_ids, n, eos),
        "bfloat16, cached": lambda: _greedy_cached(_bf16(lm), prompt_ids, n, eos),
        "batched with a longer prompt": lambda: _greedy_batched(lm.backend, prompt_ids, n, int(lm.eos_token_ids[0]),
                                                                eos),
        "llama.cpp kernels, same GGUF": lambda: _greedy_cached(_on_llamacpp(lm).backend, prompt_ids, n, eos),
    }
    unknown = [name for name in variants if name not in runners]
    if unknown:  # before any model work
        raise SettingsError(f"unknown variant {unknown[0]!r}; known: {', '.join(runners)}")
    for name in variants:
        run = runners[name]()
        run.name = name
        yield run


def summarize(lm: LanguageModel, runs: list[VariantRun]) -> dict[str, Any]:
    """Texts, and where each path first differs from the first one (with the first's margin there)."""
    ref = runs[0]
    divergences = []
    for run in runs[1:]:
        step = next((i for i, (a, b) in enumerate(zip(ref.tokens, run.tokens)) if a != b), None)
        divergences.append({
            "variant": run.name, "step": step,
            "reference_token": None if step is None else lm.token_str(ref.tokens[step]),
            "variant_token": None if step is None else lm.token_str(run.tokens[step]),
            "reference_margin": None if step is None else ref.margins[step],
        })
    return {"runs": [r.to_json() for r in runs], "texts": {r.name: lm.decode(r.tokens) for r in runs},
            "divergence": divergences}


def _on_llamacpp(lm: LanguageModel) -> LanguageModel:
    """The same bundled GGUF on llama.cpp's kernels (a one-line message when it cannot be)."""
    from decoding_lab.backends import get_model
    from decoding_lab.bundled import BUNDLED
    from decoding_lab.backends.llamacpp import SUFFIX as LLAMACPP_SUFFIX

    if lm.name not in BUNDLED:
        raise SettingsError(f"the llama.cpp path needs a bundled GGUF model ({', '.join(BUNDLED)}); "
                            f"{lm.name} has no GGUF file here")
    return get_model(lm.name + LLAMACPP_SUFFIX)


_BF16: dict[int, HFBackend] = {}


def _bf16(lm: LanguageModel) -> HFBackend:
    """A bfloat16 copy of the shared transformers model, made once per process (read-only like
    the original)."""
    key = id(lm.model)
    if key not in _BF16:
        _BF16[key] = HFBackend(copy.deepcopy(lm.model).to(torch.bfloat16).eval())
    return _BF16[key]
