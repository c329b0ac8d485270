"""``python -m decoding_lab bench --json``: measured side by side, in one run.

Ratios, not absolute times, are the point: these machines are shared, so each
comparison interleaves its two contenders round by round and reports the ratio of
medians. Each figure that has a target carries it beside the measurement. Sections:

* the Explorer's Step through the real app (gradio's queue and event stream) against the core
  step it wraps (``--only ui``, ``ui/bench_roundtrip.py``, in a fresh process);
* step overhead: a fully traced step (every stage recorded, statistics computed)
  relative to a bare KV-cached forward pass plus argmax;
* throughput against transformers ``generate`` with identical settings (greedy, beam
  search with 4 beams, 16 samples of one 400-token prompt), with output identity checked
  for greedy and beam;
* per-operation sampling cost on the 49k and 262k vocabularies (random logits, the worst case
  for top-p) and on the model's own logits (top-p's partial sort against its full sort);
* the Temperature 0 tab's run, every numerical path on its default question (``--only t0``);
* Compare's four sampling columns as one batch against one column alone (``--only compare``);
* a sweep cell's problems sampled eight to a batch against one problem at a time, same samples
  checked (``--only sweep``; not in the default set: about four minutes on one thread);
* a traced step on the llama.cpp backend against the transformers float32 path (same GGUF);
* grammar mask cost per token relative to the forward pass (when the grammar module is present);
* another visitor's Reset + Step alone and beside a grammar compile at the caps (``--only
  grammar_load``; not in the default set: it measures the cores' contention, not the code);
* verifier-tilt cost per token relative to plain sampling (``--only tilt``; not in the default set:
  it runs a few hundred rollouts, about two minutes on one thread);
* cold and warm start of each bundled model, and resident memory with 8 sessions open
  (measured in a fresh process that holds only the model and the sessions).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch

from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import MinP, TopK, TopP, TypicalP, History
from decoding_lab.backends.base import LanguageModel
from decoding_lab.decode import forward_fresh, forward_next

TRACED_SETTINGS = SamplingSettings(temperature=0.7, top_k=40, top_p=0.95, min_p=0.05, repetition_penalty=1.1, seed=0)


def _times(fn: Callable[[], Any], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def _interleaved(a: Callable[[], Any], b: Callable[[], Any], rounds: int) -> tuple[float, float]:
    """Median seconds of a and of b, alternating a, b, a, b … so load drifts hit both."""
    ta, tb = [], []
    for _ in range(rounds):
        t0 = time.perf_counter(); a(); ta.append(time.perf_counter() - t0)  # noqa: E702
        t0 = time.perf_counter(); b(); tb.append(time.perf_counter() - t0)  # noqa: E702
    return statistics.median(ta), statistics.median(tb)


# ------------------------------------------------------------------------------ sections
def step_overhead(lm: LanguageModel, tokens: int = 24, rounds: int = 5) -> dict[str, Any]:
    from decoding_lab.stepper import Stepper
    prompt = lm.encode_prompt("Write a short story about a lighthouse keeper.", lm.has_chat_template)

    def traced() -> None:
        s = Stepper(lm, prompt, TRACED_SETTINGS)
        t0 = time.perf_counter()
        s.steps(tokens)
        traced.per_step = (time.perf_counter() - t0) / max(1, len(s.tokens))  # type: ignore[attr-defined]

    def bare() -> None:
        cache, logits = forward_fresh(lm, prompt)
        t0 = time.perf_counter()
        for _ in range(tokens):
            logits = forward_next(lm, cache, logits.argmax(-1).tolist())
        bare.per_step = (time.perf_counter() - t0) / tokens  # type: ignore[attr-defined]

    per_traced, per_bare = [], []
    for _ in range(rounds):
        traced(); per_traced.append(traced.per_step)  # type: ignore[attr-defined]  # noqa: E702
        bare(); per_bare.append(bare.per_step)  # type: ignore[attr-defined]  # noqa: E702
    t, b = statistics.median(per_traced), statistics.median(per_bare)
    return {"model": lm.name, "settings": TRACED_SETTINGS.to_json(), "traced_step_s": t, "bare_step_s": b,
            "ratio": t / b, "target": 1.10}


def backend_steps(name: str, tokens: int = 24, rounds: int = 5) -> dict[str, Any]:
    """A traced step on the llama.cpp backend (the GGUF's own quantised kernels) against the
    transformers float32 path: same file, same prompt and settings, rounds interleaved."""
    from decoding_lab.models import LLAMACPP_SUFFIX, get_model
    from decoding_lab.stepper import Stepper
    torch_lm, cpp_lm = get_model(name), get_model(name + LLAMACPP_SUFFIX)
    prompt = torch_lm.encode_prompt("Write a short story about a lighthouse keeper.", torch_lm.has_chat_template)

    def per_step(lm: LanguageModel) -> float:
        s = Stepper(lm, prompt, TRACED_SETTINGS)
        t0 = time.perf_counter()
        s.steps(tokens)
        return (time.perf_counter() - t0) / max(1, len(s.tokens))

    a, b = [], []
    for _ in range(rounds):
        a.append(per_step(torch_lm))
        b.append(per_step(cpp_lm))
    t, c = statistics.median(a), statistics.median(b)
    return {"model": name, "transformers_step_s": t, "llamacpp_step_s": c, "speedup": t / c,
            "threads": torch.get_num_threads()}


def sampling_ops(lm: LanguageModel | None = None, vocab_sizes: tuple[int, ...] = (49152, 262144),
                 repeats: int = 30) -> list[dict[str, Any]]:
    """Each stage's cost on one row of logits. Two kinds of row: random logits (N(0, 9): a flat
    distribution whose nucleus holds most of the vocabulary, the worst case for top-p, which
    then sorts everything) and, with ``lm``, the model's own next-token logits for a story
    prompt (a few likely tokens, the usual case). Top-p / typical-p also run their full sort
    on the same row (``… full sort``), so the partial sort's gain is a ratio from one run."""
    inputs: list[tuple[str, torch.Tensor]] = [
        (f"random, vocab {v}", torch.randn(1, v, generator=torch.Generator().manual_seed(0)) * 3) for v in vocab_sizes]
    if lm is not None:
        prompt = lm.encode_prompt("Tell me a story about a lighthouse keeper.", lm.has_chat_template)
        inputs.append((f"{lm.name} logits, vocab {lm.vocab_size}", forward_fresh(lm, prompt)[1]))
    rows = []
    h = History.empty()
    for label, z in inputs:
        ops: dict[str, Callable[[], Any]] = {
            "softmax": lambda: torch.softmax(z, -1), "top-k 40": lambda: TopK(40).transform(z, h),
            "min-p 0.05": lambda: MinP(0.05).transform(z, h), "top-p 0.95": lambda: TopP(0.95).transform(z, h),
            "top-p 0.95, full sort": lambda: TopP(0.95)._full_sort(z),
            "typical-p 0.95": lambda: TypicalP(0.95).transform(z, h)}
        for name, fn in ops.items():
            fn()
            times = _times(fn, repeats)
            # The minimum is the least disturbed run on a shared machine; the median shows the spread.
            rows.append({"logits": label, "vocab": z.shape[-1], "op": name, "us_min": 1e6 * min(times),
                         "us_median": 1e6 * statistics.median(times),
                         "kept": int(torch.isfinite(fn()).sum()) if name != "softmax" else None})
    return rows


def temperature_zero(lm: LanguageModel, tokens: int = 40) -> list[dict[str, Any]]:
    """The Temperature 0 tab's run: every numerical path, greedy, on its default question
    (which ends in a few tokens) and on a story prompt that runs the full 40; seconds per path
    and in all (target: 30 s on these 2-core machines)."""
    from decoding_lab.determinism import LOCAL_VARIANTS as VARIANTS, iter_variants
    from decoding_lab.models import BUNDLED
    variants = VARIANTS if lm.name in BUNDLED else tuple(v for v in VARIANTS if "llama.cpp" not in v)
    out = []
    for question in ("What is the capital of France?", "Write a short story about a dog."):
        prompt = lm.encode_prompt(question, lm.has_chat_template)
        paths, t0 = [], time.perf_counter()
        it = iter_variants(lm, prompt, tokens, variants)
        while True:
            t = time.perf_counter()
            run = next(it, None)
            if run is None:
                break
            paths.append({"path": run.name, "s": time.perf_counter() - t, "tokens": len(run.tokens)})
        out.append({"model": lm.name, "prompt": question, "max_new_tokens": tokens, "paths": paths,
                    "total_s": time.perf_counter() - t0, "target_s": 30.0})
    return out


def compare_columns(lm: LanguageModel, tokens: int = 40, rounds: int = 3) -> dict[str, Any]:
    """The Compare tab's four sampling columns as one batch (``iter_columns``) against one column
    alone, and against the four run one after another (the tab before batching); interleaved
    rounds, medians. Target: four columns within 1.5x of one."""
    from decoding_lab.strategies import sample
    from decoding_lab.strategies.columns import iter_columns
    prompt = lm.encode_prompt("Write a short story about a lighthouse keeper.", lm.has_chat_template)
    settings = [SamplingSettings(temperature=t, seed=i, top_p=0.95) for i, t in enumerate((0.5, 0.8, 1.1, 1.4))]
    long = settings   # a story runs the whole length at these temperatures (``tokens`` records it)

    def one() -> None:
        sample(lm, prompt, long[0], max_new_tokens=tokens)

    def batch() -> None:
        *_, last = iter_columns(lm, prompt, [("sample", s) for s in long], max_new_tokens=tokens)
        batch.lengths = [len(r.best.token_ids) for r in last]  # type: ignore[attr-defined]

    def serial() -> None:
        for s in long:
            sample(lm, prompt, s, max_new_tokens=tokens)

    t_one, t_batch, t_serial = [], [], []
    for _ in range(rounds):
        for fn, acc in ((one, t_one), (batch, t_batch), (serial, t_serial)):
            t0 = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t0)
    a, b, c = (statistics.median(x) for x in (t_one, t_batch, t_serial))
    return {"model": lm.name, "columns": 4, "tokens": tokens, "one_column_s": a, "four_batched_s": b,
            "four_one_after_another_s": c, "ratio": b / a, "ratio_before": c / a, "target": 1.5,
            "lengths": batch.lengths}  # type: ignore[attr-defined]


def sweep_cell(lm: LanguageModel, problems: int = 8, n: int = 16, tokens: int = 40, rounds: int = 2) -> dict[str, Any]:
    """A slice of a sweep cell (addition, T = 0.7, no truncation): ``problems`` problems sampled as
    one batch against one problem at a time, interleaved rounds, medians; the two must give the
    same outcomes. Target: 3x."""
    from decoding_lab.experiments.grid import Cell, SweepConfig
    from decoding_lab.experiments.sweep import run_cell
    from decoding_lab.tasks.sets import get_task
    task = get_task("addition")
    config = SweepConfig(model=lm.name, task="addition", problems=problems, n=n, max_new_tokens=tokens,
                         temperatures=(0.7,), truncations=("none",))
    probs = task.problems(problems, seed=0)
    cell = Cell(0.7, "none", "none")
    out: dict[str, Any] = {}

    def batched() -> None:
        out["batched"] = run_cell(lm, task, probs, cell, config, batch=problems)

    def alone() -> None:
        out["alone"] = run_cell(lm, task, probs, cell, config, batch=1)

    t_batch, t_alone = _interleaved(batched, alone, rounds)
    same = [o.answers for o in out["batched"].outcomes] == [o.answers for o in out["alone"].outcomes]
    return {"model": lm.name, "problems": problems, "n": n, "max_new_tokens": tokens, "one_at_a_time_s": t_alone,
            "batched_s": t_batch, "speedup": t_alone / t_batch, "target": 3.0, "same_outcomes": same,
            "mean_length": sum(sum(o.lengths) for o in out["alone"].outcomes) / (problems * n)}


def start_times(names: tuple[str, ...]) -> list[dict[str, Any]]:
    from decoding_lab.models import load_model
    out = []
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            cold = load_model(name, cache_dir=Path(tmp))
            cold_s = cold.load_seconds
            del cold; gc.collect()  # noqa: E702
            warm = load_model(name, cache_dir=Path(tmp))
            out.append({"model": name, "cold_s": cold_s, "warm_s": warm.load_seconds, "warm_source": warm.source,
                        "target_warm_s": 10.0 if name == "smollm2-135m-instruct" else None})
            del warm; gc.collect()  # noqa: E702
    return out


def gguf_load(names: tuple[str, ...], rounds: int = 1) -> list[dict[str, Any]]:
    """transformers' GGUF load of each bundled model (what a first start converts) as transformers
    does it, against the app's (``gguf_reading``: one faster reader for the config, the tokenizer
    and the weights, and gguf's tensor-name table built once), alternating, in seconds (median of
    ``rounds``)."""
    from decoding_lab.backends.hf import _load_gguf_with
    from decoding_lab.bundled import BUNDLED
    out: list[dict[str, Any]] = []
    for name in names:
        located = BUNDLED[name].locate_gguf()
        if located is None:
            out.append({"model": name, "skipped": f"its GGUF package is not installed ({BUNDLED[name].install_hint})"})
            continue
        own, fast = _interleaved(lambda: _load_gguf_with(*located, fast=False),
                                 lambda: _load_gguf_with(*located, fast=True), rounds)
        out.append({"model": name, "transformers_s": round(own, 2), "gguf_reading_s": round(fast, 2),
                    "ratio": round(own / fast, 2)})
    return out


def memory_with_sessions(lm: LanguageModel, sessions: int = 8, tokens: int = 32) -> dict[str, Any]:
    """Resident memory with ``sessions`` steppers open, each ``tokens`` steps in (KV caches kept)."""
    import psutil
    from decoding_lab.stepper import Stepper
    proc = psutil.Process()
    before = proc.memory_info().rss
    prompt = lm.encode_prompt("Tell me about the moon.", lm.has_chat_template)
    open_sessions = [Stepper(lm, prompt, TRACED_SETTINGS.replace(seed=i)) for i in range(sessions)]
    for s in open_sessions:
        s.steps(tokens)
    rss = proc.memory_info().rss
    return {"model": lm.name, "sessions": sessions, "tokens_each": tokens, "rss_gb": rss / 1e9,
            "rss_before_sessions_gb": before / 1e9, "peak_rss_gb": _peak_rss_bytes() / 1e9, "target_gb": 1.5}


def _peak_rss_bytes() -> int:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports kilobytes


def memory_in_fresh_process(name: str, sessions: int = 8) -> dict[str, Any]:
    """``memory_with_sessions`` in a new Python process, so that the other sections' tensors and
    the allocator's leftovers do not count: the process holds what a server would (imports, one
    model, the sessions)."""
    code = ("import json, torch; torch.set_num_threads(1); from decoding_lab.models import get_model; "
            "from decoding_lab.bench import memory_with_sessions; "
            f"print(json.dumps(memory_with_sessions(get_model({name!r}), {int(sessions)})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ui_roundtrip_in_fresh_process(name: str) -> list[dict[str, Any]]:
    """The Explorer's Step through the real app against the core step (``ui/bench_roundtrip.py``),
    in a new process: the app is the UI's, which the core does not import."""
    out = subprocess.run([sys.executable, "-m", "decoding_lab.ui.bench_roundtrip", name], capture_output=True,
                         text=True, timeout=1800, check=True, env={**os.environ})
    return json.loads(out.stdout.strip().splitlines()[-1])


def throughput(lm: LanguageModel, rounds: int = 3) -> list[dict[str, Any]]:
    """Our strategies against ``model.generate`` with the same settings."""
    from decoding_lab import strategies
    rows = []
    prompt = lm.encode_prompt("Explain why the sky is blue.", lm.has_chat_template)
    ids = torch.tensor([prompt])
    greedy_settings = SamplingSettings(temperature=0.0)
    common = dict(do_sample=False, top_k=None, top_p=None, temperature=None, pad_token_id=lm.eos_token_ids[0])

    def ours_greedy() -> None:
        ours_greedy.out = strategies.greedy(lm, prompt, greedy_settings, 48).sequences[0].token_ids  # type: ignore

    def hf_greedy() -> None:
        with torch.inference_mode():
            hf_greedy.out = lm.model.generate(ids, max_new_tokens=48, min_new_tokens=0, **common)[0, len(prompt):].tolist()  # type: ignore

    a, b = _interleaved(ours_greedy, hf_greedy, rounds)
    rows.append({"case": "greedy, 48 tokens", "ours_s": a, "generate_s": b, "speedup": b / a, "target": 1.2,
                 "identical": _strip_eos(ours_greedy.out, lm) == _strip_eos(hf_greedy.out, lm)})  # type: ignore

    def ours_beam() -> None:
        ours_beam.out = strategies.beam_search(lm, prompt, greedy_settings, 32, num_beams=4).sequences[0].token_ids  # type: ignore

    def hf_beam() -> None:
        with torch.inference_mode():
            hf_beam.out = lm.model.generate(ids, max_new_tokens=32, num_beams=4, **common)[0, len(prompt):].tolist()  # type: ignore

    a, b = _interleaved(ours_beam, hf_beam, rounds)
    rows.append({"case": "beam search, 4 beams, 32 tokens", "ours_s": a, "generate_s": b, "speedup": b / a,
                 "target": 1.2, "identical": _strip_eos(ours_beam.out, lm) == _strip_eos(hf_beam.out, lm)})  # type: ignore

    long_prompt = (prompt * (400 // len(prompt) + 1))[:400]
    long_ids = torch.tensor([long_prompt])
    sample_settings = SamplingSettings(temperature=0.8, top_p=0.95, seed=0)

    def ours_sample() -> None:
        strategies.sample(lm, long_prompt, sample_settings, 32, n=16)

    def hf_sample() -> None:
        with torch.inference_mode():
            lm.model.generate(long_ids, max_new_tokens=32, do_sample=True, temperature=0.8, top_p=0.95, top_k=None,
                              num_return_sequences=16, pad_token_id=lm.eos_token_ids[0])

    a, b = _interleaved(ours_sample, hf_sample, max(1, rounds - 1))
    rows.append({"case": "16 samples of a 400-token prompt, 32 tokens", "ours_s": a, "generate_s": b,
                 "speedup": b / a, "target": 10.0})
    return rows


def _strip_eos(ids: list[int], lm: LanguageModel) -> list[int]:
    out = []
    for t in ids:
        if t in lm.eos_token_ids:
            break
        out.append(t)
    return out


def tilt_cost(lm: LanguageModel, tokens: int = 12, configs: tuple[tuple[int, int], ...] = ((2, 8), (4, 16), (8, 16)),
              rounds: int = 3, eta: float = 1.0) -> list[dict[str, Any]]:
    """Seconds per generated token of a ``VerifierTilt`` chain (top-m candidates, each scored by a
    greedy rollout of ``rollout_tokens``) against the plain chain, both at T = 0.7 with seed 0, on the
    addition problem "What is 2 + 5?". Plain and tilted runs alternate, round by round; medians.
    ``stage_ms`` is the time the tilt stage itself took per token (read from its records)."""
    from decoding_lab.tasks.sets import get_task
    from decoding_lab.multisample.tilt import RolloutPotential, VerifierTilt
    from decoding_lab.stepper import Stepper
    task = get_task("addition")
    problem = task.problems(81, seed=0)[2]
    ids = lm.encode_prompt(problem.prompt, lm.has_chat_template)
    settings = SamplingSettings(temperature=0.7, seed=0)

    def run(top_m: int = 0, rollout: int = 0) -> dict[str, float]:
        extra, pot = {}, None
        if top_m:
            pot = RolloutPotential.for_problem(lm, task, problem, rollout_tokens=rollout)   # a fresh cache each run
            extra = {"verifier-tilt": VerifierTilt(pot, eta=eta, top_m=top_m)}
        stepper = Stepper(lm, ids, settings, extra_stages=extra, max_new_tokens=tokens)
        t0 = time.perf_counter()
        traces = stepper.steps(tokens)
        n = max(1, len(traces))
        stage = sum(r.seconds for t in traces for r in t.stages if r.name == "verifier-tilt")
        return {"s": (time.perf_counter() - t0) / n, "stage": stage / n, "tokens": len(traces),
                "rollouts": len(pot.cache) / n if pot else 0.0, "computed": pot.computed / n if pot else 0.0,
                # the chain's own forward (one a token) and the tilt's: a count, the same on every machine
                "calls": 1.0 + (pot.forwards / n if pot else 0.0)}

    run()                                                      # warm up
    rows = []
    for top_m, rollout in configs:
        plain, tilted = [], []
        for _ in range(rounds):
            plain.append(run())
            tilted.append(run(top_m, rollout))
        p_s = statistics.median(r["s"] for r in plain)
        t_s = statistics.median(r["s"] for r in tilted)
        rows.append({"top_m": top_m, "rollout_tokens": rollout, "eta": eta, "plain_ms_per_token": 1e3 * p_s,
                     "tilted_ms_per_token": 1e3 * t_s, "ratio": t_s / p_s,
                     "stage_ms_per_token": 1e3 * statistics.median(r["stage"] for r in tilted),
                     "rollouts_per_token": statistics.median(r["rollouts"] for r in tilted),
                     "rollouts_run_per_token": statistics.median(r["computed"] for r in tilted),   # the rest reused
                     "model_calls_per_token": statistics.median(r["calls"] for r in tilted),   # plain: 1
                     "target": 4.0,
                     "tokens": [r["tokens"] for r in tilted]})
    return rows


def grammar_cost(lm: LanguageModel) -> dict[str, Any] | None:
    """Mask time per token against the forward pass, greedy under the JSON preset."""
    from decoding_lab.grammar import benchmark_mask, preset, preset_prompt
    return benchmark_mask(lm, preset("json-person"), n_tokens=48, prompt=preset_prompt("json-person"))


def cap_choices(seed: int, count: int = 1000) -> str:
    """``count`` choices of 16 characters, a new list for each seed (so no compile is cached):
    at the default caps, 1,000 choices and about 17,000 of the 20,000 characters."""
    import random
    rnd = random.Random(seed)
    return "\n".join(f"{i:03d} " + "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(12))
                     for i in range(count))


def grammar_load(lm: LanguageModel, rounds: int = 5) -> dict[str, Any]:
    """Another visitor's Reset + Step alone, and while a grammar at the caps compiles beside it in
    the grammar pool (as the app runs it: a compile holds no model slot), rounds interleaved.
    The ratio is what a compile costs a Step on this machine's cores; the app's tests check only
    the rule (the compile ran beside the Step, and the Step answered), not this figure."""
    from decoding_lab.grammar import GrammarMask, build_constraint
    from decoding_lab.grammar import compile as gcompile
    from decoding_lab.stepper import Stepper
    prompt = lm.encode_prompt("What is the capital of France?", lm.has_chat_template)

    def reset_and_step() -> float:
        t0 = time.perf_counter()
        Stepper(lm, prompt, TRACED_SETTINGS).step()
        return time.perf_counter() - t0

    reset_and_step()
    alone, beside, overlapped = [], [], 0
    for rnd in range(rounds):
        alone.append(reset_and_step())
        job = gcompile.submit(lambda text: GrammarMask(build_constraint("choices", text), lm), cap_choices(rnd))
        beside.append(reset_and_step())
        overlapped += not job.done()
        gcompile.result(job)
    a, b = statistics.median(alone), statistics.median(beside)
    return {"model": lm.name, "rounds": rounds, "step_alone_s": a, "step_beside_compile_s": b, "ratio": b / a,
            "rounds_compile_outlasted_step": overlapped}


# ------------------------------------------------------------------------------ command
#: Every section ``--only`` can name; the default set leaves out the slow and the load-bound ones.
SECTIONS = ("ui", "overhead", "ops", "t0", "compare", "backends", "throughput", "grammar", "start", "memory", "tilt",
            "sweep", "grammar_load", "gguf")
DEFAULT_SECTIONS = tuple(s for s in SECTIONS if s not in ("tilt", "sweep", "grammar_load", "gguf"))


def chosen_sections(only: str | None) -> set[str]:
    """The sections ``--only`` names (all of the default set when it is not given).

    >>> sorted(chosen_sections("ops, t0"))
    ['ops', 't0']
    >>> chosen_sections("ops,nope")
    Traceback (most recent call last):
    ...
    decoding_lab.errors.SettingsError: unknown bench section 'nope'; known: ui, overhead, ops, t0, compare, backends, throughput, grammar, start, memory, tilt, sweep, grammar_load, gguf
    """
    from decoding_lab.errors import SettingsError
    if only is None:
        return set(DEFAULT_SECTIONS)
    names = {s.strip() for s in only.split(",") if s.strip()}
    unknown = sorted(names - set(SECTIONS))
    if unknown or not names:
        raise SettingsError(f"unknown bench section {(unknown or [only])[0]!r}; known: {', '.join(SECTIONS)}")
    return names


def run(args: argparse.Namespace) -> None:
    from decoding_lab.models import BUNDLED, DEFAULT_MODEL, get_model
    torch.manual_seed(0)
    sections = chosen_sections(args.only)
    lm = get_model(args.model or DEFAULT_MODEL)
    report: dict[str, Any] = {"torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count()}
    failed: list[str] = []

    def section(key: str, fn: Callable[[], Any]) -> None:
        """Run one section; a failure is recorded and the others still run."""
        t0 = time.perf_counter()
        try:
            report[key] = fn()
        except Exception as e:  # a bench run reports what broke instead of losing every other figure
            report[key] = {"error": f"{type(e).__name__}: {e}"}
            failed.append(key)
        print(f"[bench] {key}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

    if "ui" in sections:
        section("ui_roundtrip", lambda: ui_roundtrip_in_fresh_process(lm.name))
    if "overhead" in sections:
        section("step_overhead", lambda: [step_overhead(lm)] + (
            [step_overhead(get_model(n)) for n in BUNDLED if n != lm.name] if args.all_models else []))
    if "ops" in sections:
        section("sampling_ops", lambda: sampling_ops(lm))
    if "t0" in sections:
        section("temperature_zero", lambda: temperature_zero(lm))
    if "compare" in sections:
        section("compare", lambda: compare_columns(lm))
    if "backends" in sections:
        section("backends", lambda: [backend_steps(n) for n in ([lm.name] + (
            [n for n in BUNDLED if n != lm.name] if args.all_models else [])) if n in BUNDLED])
    if "throughput" in sections:
        section("throughput", lambda: throughput(lm))
    if "grammar" in sections:
        section("grammar", lambda: grammar_cost(lm))
    if "grammar_load" in sections:
        section("grammar_load", lambda: grammar_load(lm))
    if "memory" in sections:
        section("memory", lambda: memory_in_fresh_process(lm.name))
    if "tilt" in sections:
        section("tilt", lambda: tilt_cost(lm))
    if "sweep" in sections:
        section("sweep", lambda: sweep_cell(lm))
    if "gguf" in sections:
        section("gguf", lambda: gguf_load(tuple(BUNDLED) if args.all_models else (lm.name,)))
    if "start" in sections:
        section("start", lambda: start_times(tuple(BUNDLED) if args.all_models else (lm.name,)))
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for k, v in report.items():
            print(k, json.dumps(v, indent=1))
    if failed:
        raise SystemExit(f"bench sections failed: {', '.join(failed)}")


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="measure overhead, throughput, sampling cost, start time, memory")
    p.add_argument("--model", default=None)
    p.add_argument("--json", action="store_true")
    p.add_argument("--all-models", action="store_true", help="also measure the other bundled models")
    p.add_argument("--only", default=None,
                   help=f"comma-separated sections: {','.join(SECTIONS)} (default: all but tilt, sweep, grammar_load and gguf)")
    p.set_defaults(handler=run)
