"""How much does a grammar cost? Compile time, and mask time per token next to the forward pass.

    python -m decoding_lab.grammar.bench                       # every preset on SmolLM2
    python -m decoding_lab.grammar.bench --model gemma-3-270m --tokens 48 --threads 1

``benchmark_mask`` decodes greedily under the constraint (so the masks are the ones a
real generation meets) and times, per token: the engine's mask (llguidance computing the
bitmask + unpacking it into a bool tensor), the whole grammar stage (mask, -inf fill,
record), and the model's forward pass for one position with a KV cache.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import torch

from decoding_lab.grammar.constraints import PRESETS, Constraint, preset, preset_prompt, validate_output
from decoding_lab.grammar.stage import GrammarMask
from decoding_lab.grammar.vocab import GrammarTokenizer
from decoding_lab.stages.base import History
from decoding_lab.backends.base import LanguageModel
from decoding_lab.decode import forward_fresh, forward_next


def _ms(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {"mean": 0.0, "median": 0.0, "max": 0.0}
    return {"mean": 1e3 * statistics.fmean(xs), "median": 1e3 * statistics.median(xs), "max": 1e3 * max(xs)}


@torch.inference_mode()
def benchmark_mask(lm: LanguageModel, constraint: Constraint, n_tokens: int = 32, prompt: str | None = None,
                   chat: bool | None = None) -> dict[str, Any]:
    """Greedy-decode up to ``n_tokens`` under ``constraint`` and return timings (milliseconds)."""
    t0 = time.perf_counter()
    GrammarTokenizer.from_lm(lm)  # cached after the first call for this model
    tokenizer_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    mask = GrammarMask(constraint, lm)
    compile_s = time.perf_counter() - t0
    chat = getattr(lm, "has_chat_template", False) if chat is None else chat
    ids = lm.encode_prompt(prompt or "Write the answer.", chat)
    t0 = time.perf_counter()
    cache, logits = forward_fresh(lm, ids)
    logits = logits[0]
    prefill_s = time.perf_counter() - t0
    eos = set(lm.eos_token_ids)
    engine, engine_cpu, stage, fwd, fwd_cpu, out = [], [], [], [], [], []
    for _ in range(int(n_tokens)):
        t0 = time.perf_counter()
        masked, rec = mask.apply(logits, History.from_lists(ids, out))
        stage.append(time.perf_counter() - t0)
        engine.append(rec.extra.mask_seconds)
        engine_cpu.append(rec.extra.mask_cpu_seconds)
        tok = int(masked.argmax())
        mask.accept(tok)
        out.append(tok)
        if tok in eos:
            break
        t0, c0 = time.perf_counter(), time.process_time()
        logits = forward_next(lm, cache, [tok])[0]
        fwd.append(time.perf_counter() - t0)
        fwd_cpu.append(time.process_time() - c0)  # all torch threads together
    text = lm.decode([t for t in out if t not in eos])
    result = {
        "constraint": constraint.label(), "model": getattr(lm, "name", "?"), "tokens": len(out),
        "status": mask.status(), "text": text, "valid": validate_output(text, constraint),
        "tokenizer_ms": 1e3 * tokenizer_s, "compile_ms": 1e3 * compile_s, "prefill_ms": 1e3 * prefill_s,
        "mask_ms": _ms(engine), "mask_cpu_ms": _ms(engine_cpu), "stage_ms": _ms(stage),
        "forward_ms": _ms(fwd), "forward_cpu_ms": _ms(fwd_cpu),
    }
    f, fc = result["forward_ms"]["mean"], result["forward_cpu_ms"]["mean"]
    result["mask_over_forward"] = result["mask_ms"]["mean"] / f if f else None
    result["mask_over_forward_cpu"] = result["mask_cpu_ms"]["mean"] / fc if fc else None
    return result


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--tokens", type=int, default=40)
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--json", action="store_true", help="print one JSON object per preset")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = ap.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    from decoding_lab.models import get_model

    lm = get_model(args.model)
    if not args.json:
        print(f"model {lm.name}, torch threads {torch.get_num_threads()}; wall = elapsed time (noisy on a shared "
              "machine), cpu = CPU time of this process")
        print(f"{'preset':12} {'compile':>9} {'tokens':>6} {'mask wall':>10} {'mask cpu':>9} {'mask cpu max':>12} "
              f"{'stage wall':>11} {'fwd wall':>9} {'fwd cpu':>9} {'mask/fwd cpu':>12}  output")
    for name in [p.strip() for p in args.presets.split(",") if p.strip()]:
        r = benchmark_mask(lm, preset(name), args.tokens, preset_prompt(name))
        if args.json:
            print(json.dumps({"preset": name, **r}))
            continue
        print(f"{name:12} {r['compile_ms']:7.2f}ms {r['tokens']:6d} {r['mask_ms']['mean']:8.3f}ms "
              f"{r['mask_cpu_ms']['mean']:7.3f}ms {r['mask_cpu_ms']['max']:10.3f}ms {r['stage_ms']['mean']:9.3f}ms "
              f"{r['forward_ms']['mean']:7.2f}ms {r['forward_cpu_ms']['mean']:7.2f}ms "
              f"{r['mask_over_forward_cpu']:12.5f}  {r['text']!r} ({r['status']}, valid={r['valid']})")


if __name__ == "__main__":
    main()
