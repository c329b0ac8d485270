"""Does a temperature-0 answer on vLLM change when other requests share its batch?

Starts vLLM's CPU server on 127.0.0.1 (``make vllm``; raw-logits mode, the bundled SmolLM2), asks
for one prompt's greedy continuation alone, then again while other prompts of other lengths are in
flight (vLLM batches concurrent requests into one forward), several times, and compares the tokens
and the raw logits of the top-5 at every position. Prints one JSON object.

    .venv/bin/python scripts/vllm_batch_invariance.py --tokens 48 --others 7 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "tests")]
from conftest_app import loopback_vllm  # noqa: E402  (the tests' launcher: loopback only)

PROMPT = "Tell me a short story about a lighthouse keeper and a storm."
OTHERS = ["What is 2 + 2?", "List five colours.", "Write a haiku about autumn leaves falling on a quiet pond.",
          "Explain photosynthesis to a child in three sentences, with an example from a garden.",
          "Say hello.", "Name the planets of the solar system in order from the sun, one per line.",
          "Translate 'good morning' into French, Spanish and German.", "Why is the sky blue?"]


def ask(url: str, text: str, tokens: int) -> dict:
    body = {"model": "smollm2", "prompt": text, "max_tokens": tokens, "temperature": 0.0, "logprobs": 5,
            "return_tokens_as_token_ids": True}
    r = httpx.post(url + "/v1/completions", json=body, timeout=600)
    r.raise_for_status()
    lp = r.json()["choices"][0]["logprobs"]
    return {"tokens": lp["tokens"], "top": lp["top_logprobs"]}


def compare(a: dict, b: dict) -> dict:
    first = next((i for i, (x, y) in enumerate(zip(a["tokens"], b["tokens"])) if x != y), None)
    upto = len(a["tokens"]) if first is None else first + 1
    worst = 0.0
    for i in range(upto):
        shared = set(a["top"][i]) & set(b["top"][i])
        worst = max([worst] + [abs(a["top"][i][k] - b["top"][i][k]) for k in shared])
    return {"first_different_token": first, "largest_logit_difference": worst}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--others", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with loopback_vllm("raw_logits") as url:
        alone = [ask(url, PROMPT, a.tokens) for _ in range(2)]
        batched = []
        with ThreadPoolExecutor(a.others + 1) as pool:
            for _ in range(a.rounds):
                futures = [pool.submit(ask, url, text, a.tokens) for text in OTHERS[:a.others]]
                batched.append(pool.submit(ask, url, PROMPT, a.tokens).result())
                for f in futures:
                    f.result()
    print(json.dumps({"tokens": a.tokens, "others": a.others, "rounds": a.rounds,
                      "alone_twice": compare(alone[0], alone[1]),
                      "batched": [compare(alone[0], b) for b in batched]}, indent=1))


if __name__ == "__main__":
    main()
