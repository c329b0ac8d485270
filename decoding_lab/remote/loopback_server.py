"""llama-cpp-python's own OpenAI-compatible server, on the loopback interface only.

    python -m decoding_lab.remote.loopback_server --port 8765            # the bundled SmolLM2 GGUF
    python -m decoding_lab.remote.loopback_server --model FILE.gguf --port 8765

Why not ``python -m llama_cpp.server`` directly: these VMs advertise AMX, and llama.cpp
faults in its AMX kernels unless the weights load with ``use_extra_bufts = False`` (see
``decoding_lab.backends.llamacpp``). The stock server builds its ``Llama`` from
``llama_model_default_params()`` and offers no flag for that field, so this launcher wraps
that one function to clear the field, then hands over to llama-cpp-python's unmodified
``create_app`` and uvicorn. Nothing else is changed.

Flash attention is on by default here, as in llama.cpp's own default context (``auto``, which
llama-server and ``decoding_lab.backends.llamacpp`` use): llama-cpp-python's server turns it
*off* by default, and on the bundled SmolLM2 Q4_1 that alone moves log-probabilities by up to
~0.3 (measured: " Paris" after "The capital of France is" is -0.2486 with it, -0.2644 without).

It binds to 127.0.0.1 (or ``localhost`` / ``::1``) and refuses any other host: it is for
tests and a teacher's own machine, with no key and no limits, never for a network.

What this server accepts (llama-cpp-python 0.3.36): ``/v1/completions`` with ``prompt`` as
text only (its request model types it ``str | list[str]``; a list of token ids is a 422),
``logprobs`` up to the vocabulary (text-keyed ``top_logprobs``, raw log-softmax of the
logits), ``top_k``, ``top_p``, ``min_p``, ``repeat_penalty``, ``seed``; and
``/extras/tokenize`` (``{"input": text}`` -> ``{"tokens": [...]}``). Configure it as
``{"api": "openai", "prompt_ids": false}``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

__all__ = ["LOOPBACK_HOSTS", "bundled_gguf", "main", "patch_default_params"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def bundled_gguf(name: str = "smollm2-135m-instruct") -> str:
    from decoding_lab.errors import ModelError
    from decoding_lab.bundled import BUNDLED

    found = BUNDLED[name].locate_gguf()
    if found is None:
        raise ModelError(f"the GGUF of {name} is not installed ({BUNDLED[name].install_hint})")
    return str(Path(found[0]) / found[1])


def patch_default_params() -> None:
    """Make every model llama-cpp-python loads in this process skip the extra (AMX / repacked)
    weight buffers. Idempotent."""
    import llama_cpp.llama_cpp as lib  # the module llama_cpp.llama reads the function from at call time

    original = lib.llama_model_default_params
    if getattr(original, "_decoding_lab_patched", False):
        return

    def default_params_without_extra_bufts():  # noqa: ANN202 - returns a ctypes struct
        params = original()
        params.use_extra_bufts = False
        return params

    default_params_without_extra_bufts._decoding_lab_patched = True  # type: ignore[attr-defined]
    lib.llama_model_default_params = default_params_without_extra_bufts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a GGUF file (default: the bundled SmolLM2 135M Instruct)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n_ctx", type=int, default=2048)
    parser.add_argument("--n_threads", type=int, default=1)
    parser.add_argument("--model_alias", default="smollm2-135m-instruct")
    parser.add_argument("--no_flash_attn", action="store_true",
                        help="turn flash attention off (llama-cpp-python's own default)")
    args = parser.parse_args(argv)
    if args.host not in LOOPBACK_HOSTS:
        print(f"refusing host {args.host!r}: this server binds to the loopback interface only "
              f"({', '.join(LOOPBACK_HOSTS)})", file=sys.stderr)
        return 2
    if not 1 <= args.port <= 65535:
        print(f"port {args.port} is not in 1..65535", file=sys.stderr)
        return 2
    model = args.model or bundled_gguf()
    if not os.path.isfile(model):
        print(f"no model file {model!r}", file=sys.stderr)
        return 2

    patch_default_params()  # before llama_cpp.server loads the model
    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    server = ServerSettings(host=args.host, port=args.port)
    models = [ModelSettings(model=model, model_alias=args.model_alias, n_ctx=args.n_ctx, n_threads=args.n_threads,
                            n_threads_batch=args.n_threads, logits_all=True, verbose=False,
                            flash_attn=not args.no_flash_attn)]
    app = create_app(server_settings=server, model_settings=models)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
