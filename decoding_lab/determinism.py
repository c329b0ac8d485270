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
  "What is the capital of France?" the two part at the very first token;
* other clients: a served model (vLLM, llama-server, SGLang) batches the requests in flight into
  one forward pass, so what shares the batch with ours changes shapes and reduction orders from
  one request to the next. The served paths ask the server for the same greedy text alone, alone
  again, and while other requests keep its batch busy (``SERVED_VARIANTS``). Whether that moves
  any logit depends on the server's kernels: on vLLM's CPU build here it does not (the logits come
  back bit-identical, ``tests/test_vllm.py``); GPU kernels that split a reduction by batch size
  do, unless the server runs in a batch-invariant mode.

``greedy_variants`` decodes the same prompt greedily along each path (each stops at its
end-of-sequence token, kept as its last token) and reports where the texts first diverge,
with the margin that was too small at that step, and how far apart the paths' five best logits
were while the texts still agreed (zero: bit-identical arithmetic).
"""

from __future__ import annotations

import copy
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol, cast

import torch

from decoding_lab import limits
from decoding_lab.backends.base import Backend, LanguageModel
from decoding_lab.backends.hf import HFBackend
from decoding_lab.decode import forward_fresh, forward_next, recompute, run as run_rows
from decoding_lab.errors import ModelError
from decoding_lab.stages import SettingsError
from decoding_lab.stepper import check_prompt_ids
from decoding_lab.stats import top_margin

#: Paths that re-run a transformers model's own weights in this process (and the same GGUF on llama.cpp).
LOCAL_VARIANTS = ("float32, cached", "float32, full recompute", "bfloat16, cached", "batched with a longer prompt",
                  "llama.cpp kernels, same GGUF")
#: Paths that ask a served model (``Caps.shared``) for the same greedy text.
SERVED_VARIANTS = ("on the server, alone", "on the server, alone again", "on the server, beside other requests")
VARIANTS = LOCAL_VARIANTS + SERVED_VARIANTS
#: The full-recompute path costs (prompt + new tokens)^2 / 2 token-positions: keep that bounded.
MAX_RECOMPUTE_TOKENS = 1024
#: What the other clients ask while the "beside other requests" path steps: prompts of other lengths,
#: each asked again and again for ``OTHER_TOKENS`` greedy tokens, so that every step of ours is
#: computed in a batch with some of theirs (mid-prefill or mid-decode).
OTHER_REQUESTS = ("What is 2 + 2?", "List five colours.", "Write a haiku about autumn leaves falling on a pond.",
                  "Explain photosynthesis to a child in three sentences, with an example from a garden.")
OTHER_TOKENS = 32
#: The five best logits of each step are kept, to say how far apart two paths' numbers were.
TOP_KEPT = 5


@dataclass
class VariantRun:
    name: str
    tokens: list[int]
    margins: list[float]   # top-1 minus top-2 logit at each step, along this path
    tops: list[dict[int, float]] = field(default_factory=list)   # each step's five best: token id -> logit
    others_in_flight: int | None = None   # the fewest other requests on the server at any step (served paths)

    def record(self, logits: torch.Tensor) -> int:
        """Note one step's margin and best logits; return the greedy token."""
        self.margins.append(top_margin(logits))
        best = torch.topk(logits.float(), min(TOP_KEPT, logits.numel()))
        self.tops.append(dict(zip(best.indices.tolist(), best.values.tolist())))
        tok = int(logits.argmax())
        self.tokens.append(tok)
        return tok

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "tokens": self.tokens, "margins": self.margins}
        if self.others_in_flight is not None:
            out["others_in_flight"] = self.others_in_flight
        return out


def _greedy_cached(backend: Backend, prompt: list[int], n: int, eos: frozenset[int] = frozenset(),
                   before_step: Callable[[], None] | None = None) -> VariantRun:
    """Greedy with the KV cache (``before_step`` is called before each forward pass)."""
    if before_step:
        before_step()
    cache, logits = forward_fresh(backend, prompt)
    run = VariantRun("", [], [])
    for _ in range(n):
        tok = run.record(logits[0])
        if tok in eos:      # the text is over: a path stops at its end-of-sequence token
            break
        if before_step:
            before_step()
        logits = forward_next(backend, cache, [tok])
    return run


@torch.inference_mode()
def _greedy_full(backend: Any, prompt: list[int], n: int, eos: frozenset[int] = frozenset()) -> VariantRun:
    """Every step reads the whole text again, without a cache (only the last position's
    logits are projected onto the vocabulary: the others would be thrown away)."""
    run = VariantRun("", [], [])
    for _ in range(n):
        if run.record(recompute(backend, prompt + run.tokens)[0]) in eos:
            break
    return run


class _Served(Protocol):
    def continue_greedily(self, ids: list[int], tokens: int) -> None: ...


def _greedy_beside_others(lm: LanguageModel, prompt: list[int], n: int, eos: frozenset[int]) -> VariantRun:
    """Greedy on the server while one thread per ``OTHER_REQUESTS`` keeps asking it for text: a
    server that batches what is in flight computes each of our steps beside theirs. The run notes
    the fewest other requests that were in flight when a step of ours was asked."""
    served = cast(_Served, lm.backend)
    others = [lm.encode_prompt(text, lm.has_chat_template) for text in OTHER_REQUESTS]
    stop, lock = threading.Event(), threading.Lock()
    in_flight, seen, failures = [0], [], []

    def keep_asking(ids: list[int]) -> None:
        while not stop.is_set():
            with lock:
                in_flight[0] += 1
            try:
                served.continue_greedily(ids, OTHER_TOKENS)
            except ModelError as e:
                failures.append(str(e))
                return
            finally:
                with lock:
                    in_flight[0] -= 1

    with ThreadPoolExecutor(len(others)) as pool:
        for ids in others:
            pool.submit(keep_asking, ids)
        started = time.monotonic()
        while in_flight[0] < len(others) and time.monotonic() - started < 2.0:
            time.sleep(0.01)   # let every other request be sent before the first of ours
        try:
            run = _greedy_cached(lm.backend, prompt, n, eos, before_step=lambda: seen.append(in_flight[0]))
        finally:
            stop.set()         # each thread ends after the request it is in
    if failures:
        raise ModelError(f"the other requests of the path 'beside other requests' failed: {failures[0]}")
    run.others_in_flight = min(seen)
    return run


@torch.inference_mode()
def _greedy_batched(backend: Backend, prompt: list[int], n: int, pad_id: int,
                    eos: frozenset[int] = frozenset()) -> VariantRun:
    """Decode ``prompt`` as row 1 of a batch whose row 0 is a longer prompt (left padding)."""
    other = (prompt * 3)[: len(prompt) * 2]
    width = len(other)
    ids = torch.tensor([other, [pad_id] * (width - len(prompt)) + prompt])
    mask = torch.tensor([[1] * width, [0] * (width - len(prompt)) + [1] * len(prompt)])
    cache = backend.new_cache()
    run = VariantRun("", [], [])
    logits = run_rows(backend, cache, ids, attention_mask=mask)
    for _ in range(n):
        tok = run.record(logits[1])
        if tok in eos:
            break
        nxt = torch.tensor([[int(logits[0].argmax())], [tok]])
        mask = torch.cat([mask, torch.ones(2, 1, dtype=mask.dtype)], dim=1)
        logits = run_rows(backend, cache, nxt, attention_mask=mask)
    return run


def greedy_variants(lm: LanguageModel, prompt_ids: list[int], max_new_tokens: int = 40,
                    variants: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Run greedy decoding of ``prompt_ids`` along several numerical paths.

    Returns ``{"runs": [...], "divergence": [{"variant", "step", "reference_token",
    "variant_token", "reference_margin", "logit_gap"}]}`` where each divergence is against the first
    variant (the reference), and ``logit_gap`` is the largest difference between the two paths'
    logits for the tokens both had among their five best, over the steps before they part."""
    runs = list(iter_variants(lm, prompt_ids, max_new_tokens, variants))
    return summarize(lm, runs)


def iter_variants(lm: LanguageModel, prompt_ids: list[int], max_new_tokens: int = 40,
                  variants: tuple[str, ...] | None = None) -> Iterator[VariantRun]:
    """The paths one at a time, each a ``VariantRun`` as soon as it is done (a UI shows
    progress per path; ``summarize`` turns the list into ``greedy_variants``' result). Every
    argument is checked before the first path runs. The local paths need a transformers model,
    the served ones a served model; one run takes paths of one kind (by default, every path of the
    model's kind)."""
    if variants is None:
        variants = SERVED_VARIANTS if lm.caps.shared else LOCAL_VARIANTS
    local = [name for name in variants if name in LOCAL_VARIANTS]
    served = [name for name in variants if name in SERVED_VARIANTS]
    if local and not lm.caps.transformers:   # llama.cpp's kernels, a served model
        extra = (f"; for a served model, choose the paths on the server ({', '.join(SERVED_VARIANTS)})"
                 if lm.caps.shared else "")
        raise SettingsError(f"the paths {', '.join(local)} re-run a transformers model's own weights; {lm.name} "
                            f"runs on {lm.source}: choose a transformers model (a bundled one's llama.cpp run is "
                            f"one of the paths){extra}")
    if served and not lm.caps.shared:
        raise SettingsError(f"the paths {', '.join(served)} ask a served model (a configured endpoint, remote:…); "
                            f"{lm.name} runs in this process: choose one, or the local paths")
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
        "on the server, alone": lambda: _greedy_cached(lm.backend, prompt_ids, n, eos),
        "on the server, alone again": lambda: _greedy_cached(lm.backend, prompt_ids, n, eos),
        "on the server, beside other requests": lambda: _greedy_beside_others(lm, prompt_ids, n, eos),
    }
    unknown = [name for name in variants if name not in runners]
    if unknown:  # before any model work
        raise SettingsError(f"unknown variant {unknown[0]!r}; known: {', '.join(runners)}")
    for name in variants:
        run = runners[name]()
        run.name = name
        yield run


def summarize(lm: LanguageModel, runs: list[VariantRun]) -> dict[str, Any]:
    """Texts, and where each path first differs from the first one (with the first's margin there,
    and how far apart their best logits were before)."""
    ref = runs[0]
    divergences = []
    for run in runs[1:]:
        step = next((i for i, (a, b) in enumerate(zip(ref.tokens, run.tokens)) if a != b), None)
        divergences.append({
            "variant": run.name, "step": step,
            "reference_token": None if step is None else lm.token_str(ref.tokens[step]),
            "variant_token": None if step is None else lm.token_str(run.tokens[step]),
            "reference_margin": None if step is None else ref.margins[step],
            "logit_gap": logit_gap(ref, run, step),
        })
    return {"runs": [r.to_json() for r in runs], "texts": {r.name: lm.decode(r.tokens) for r in runs},
            "divergence": divergences}


def logit_gap(a: VariantRun, b: VariantRun, upto: int | None = None) -> float | None:
    """The largest |logit difference| between two paths, over the tokens both had among their five
    best at the same step, up to step ``upto`` (where the texts part: its context is still the same
    on both; None: every step). 0.0 means the same numbers to the last bit; None, that no step could
    be compared.

    >>> a = VariantRun("a", [1, 2], [0.5, 0.5], [{1: 3.0, 2: 2.5}, {2: 1.0, 4: 0.5}])
    >>> b = VariantRun("b", [1, 4], [0.5, 0.1], [{1: 3.0, 2: 2.25}, {4: 1.0, 2: 0.9}])
    >>> logit_gap(a, b, 0), logit_gap(a, b, 1)
    (0.25, 0.5)
    """
    steps = list(zip(a.tops, b.tops))[: None if upto is None else upto + 1]
    gaps = [abs(x[t] - y[t]) for x, y in steps for t in x.keys() & y.keys()]
    return max(gaps) if gaps else None


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
