"""How much flash attention moves llama.cpp's numbers: the loopback server's top-20
log-probabilities after "The capital of France is", with flash attention (llama.cpp's default,
the launcher's) and without it (llama-cpp-python's server default).

    .venv/bin/python scripts/remote_flash_attn.py
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx

PROMPT = "The capital of France is"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def top20(extra: list[str]) -> dict[str, float]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "decoding_lab.remote.loopback_server", "--port", str(port), *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                sys.exit("the loopback server did not start")
            time.sleep(0.5)
        body = {"prompt": PROMPT, "max_tokens": 1, "logprobs": 20, "temperature": 0}
        return httpx.post(url + "/v1/completions", json=body, timeout=60).json()["choices"][0]["logprobs"]["top_logprobs"][0]
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def main() -> None:
    on, off = top20([]), top20(["--no_flash_attn"])
    shared = set(on) & set(off)
    print(f"' Paris': {on.get(' Paris'):.4f} with flash attention, {off.get(' Paris'):.4f} without")
    print(f"largest difference over the {len(shared)} tokens in both top-20s: "
          f"{max(abs(on[k] - off[k]) for k in shared):.4f}")


if __name__ == "__main__":
    main()
