"""Fast tests for decoding_lab.models: no real model, no network (a tiny random Llama instead)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, models as tk_models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from decoding_lab import models as M
from decoding_lab.backends import hf as H, registry as R
from decoding_lab.errors import ModelError
from decoding_lab.models import BUNDLED, DEFAULT_MODEL, ModelSpec
from decoding_lab.stages import SettingsError

WORDS = ["[UNK]", "<s>", "</s>", "the", "cat", "sat", "on", "mat", "a", "dog"]


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    tk = Tokenizer(tk_models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", bos_token="<s>", eos_token="</s>")


def tiny_model(seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=16, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
                      tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
    return LlamaForCausalLM(cfg).eval()


def logits(model, ids=(1, 3, 4, 5, 6, 3, 7)) -> torch.Tensor:
    with torch.inference_mode():
        return model(torch.tensor([list(ids)])).logits


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """Every test: its own cache root, no network, no device override."""
    monkeypatch.setenv("DECODING_LAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("DECODING_LAB_DEVICE", raising=False)


def test_registry():
    assert set(BUNDLED) == {"smollm2-135m-instruct", "gemma-3-270m"}
    assert DEFAULT_MODEL in BUNDLED
    assert BUNDLED["smollm2-135m-instruct"].hub_id == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert BUNDLED["gemma-3-270m"].hub_id == "google/gemma-3-270m"
    rows = M.list_models()
    assert [r["name"] for r in rows] == list(BUNDLED)
    for r in rows:
        assert set(r) == {"name", "description", "installed", "cached", "hub_id"}
        assert isinstance(r["installed"], bool) and r["cached"] is False


@pytest.mark.parametrize("junk", ["../etc", "", "   ", "a b", "/etc/passwd", "a/b/c", "owner/..",
                                  "-x/y", "x/y.", "x--y/z", "owner/na me", "ow\nner/name", "x" * 200 + "/y", None])
def test_junk_ids_rejected_before_network(junk, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(H, "_probe_hub", lambda rid: pytest.fail("network touched"))
    with pytest.raises(ModelError) as err:
        M.load_model(junk)
    assert "\n" not in str(err.value) and 0 < len(str(err.value)) < 320
    with pytest.raises(ModelError):
        M.get_model(junk)


def test_local_path_is_not_a_hub_id(tmp_path, monkeypatch):
    (tmp_path / "owner" / "name").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelError, match="local path"):
        M.load_model("owner/name")


def test_unknown_id_offline_fails_fast():
    start = time.perf_counter()
    with pytest.raises(ModelError) as err:
        M.load_model("nobody-xyz/definitely-not-a-model-123")
    assert time.perf_counter() - start < 3
    msg = str(err.value)
    assert "could not load" in msg and "unreachable" in msg and "\n" not in msg


def test_unreachable_hub_falls_back_to_local_cache_quickly(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")

    def no_network(repo_id):
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(H, "_probe_hub", no_network)
    start = time.perf_counter()
    with pytest.raises(ModelError, match="unreachable"):
        M.load_model("nobody-xyz/definitely-not-a-model-123")
    assert time.perf_counter() - start < 3


def test_not_found_and_remote_code_messages():
    class RepositoryNotFoundError(Exception):
        pass

    wrapped = OSError("x is not a valid model identifier")
    wrapped.__cause__ = RepositoryNotFoundError("404")
    assert "not found" in H._why(wrapped)
    assert "custom code" in H._why(ValueError("please pass trust_remote_code=True to load"))
    assert "MemoryError" not in H._why(KeyError("odd"))  # generic: type + message
    assert H._why(KeyError("odd")).startswith("KeyError")


def test_resolve_device(monkeypatch):
    assert M.resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setenv("DECODING_LAB_DEVICE", "cpu")
    assert M.resolve_device() == torch.device("cpu")
    with pytest.raises(ModelError):
        M.resolve_device("quantum")
    if not torch.cuda.is_available():
        with pytest.raises(ModelError, match="no CUDA"):
            M.resolve_device("cuda")
        monkeypatch.delenv("DECODING_LAB_DEVICE")
        assert M.resolve_device() == torch.device("cpu")


def test_cache_roundtrip_identical_logits(tmp_path):
    model, tok = tiny_model(), tiny_tokenizer()
    model.config.quantization_config = {"quant_method": "gguf", "gguf_file": "x.gguf"}  # like a GGUF load
    folder = tmp_path / "tiny"
    H._save_cache(model, tok, folder, source="x.gguf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny"]  # no temp folder left behind
    assert "quantization_config" not in (folder / "config.json").read_text()
    from safetensors import safe_open
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        assert "lm_head.weight" not in f.keys()  # tied copy dropped, re-tied on load
    model2, tok2 = H._load_cache(folder)
    assert model2.lm_head.weight.data_ptr() == model2.model.embed_tokens.weight.data_ptr()
    assert model2.dtype == torch.float32
    assert torch.equal(logits(model), logits(model2))
    assert tok2("the cat sat")["input_ids"] == tok("the cat sat")["input_ids"]


def test_cache_write_is_atomic(tmp_path, monkeypatch):
    model, tok = tiny_model(), tiny_tokenizer()
    folder = tmp_path / "tiny"

    def killed(*a, **k):
        raise KeyboardInterrupt  # like a kill arriving in the middle of the write

    monkeypatch.setattr(tok, "save_pretrained", killed)
    with pytest.raises(KeyboardInterrupt):
        H._save_cache(model, tok, folder)
    assert list(tmp_path.iterdir()) == []  # neither a half cache nor a temp folder
    stale = tmp_path / ".tiny.tmp-1-dead"  # a temp folder left by a process killed long ago
    stale.mkdir()
    import os
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    monkeypatch.undo()
    H._save_cache(model, tok, folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny"]


@pytest.fixture
def fake_bundled(monkeypatch):
    """A registry entry whose 'GGUF' is the tiny random model; counts GGUF conversions."""
    calls = []

    def fake_gguf(folder, filename):
        calls.append(filename)
        model = tiny_model()
        model.config.quantization_config = {"quant_method": "gguf", "gguf_file": filename}
        return model, tiny_tokenizer()

    monkeypatch.setitem(BUNDLED, "tiny-test", ModelSpec("tiny-test", "tiny", "nobody-xyz/tiny", "tokenizers",
                                                        lambda: ("/nowhere", "tiny.gguf"), "pip install tiny"))
    monkeypatch.setattr(H, "_load_gguf", fake_gguf)
    return calls


def test_bundled_resolution_gguf_then_cache_then_rebuild(fake_bundled, tmp_path):
    root = tmp_path / "root"
    cold = M.load_model("tiny-test", cache_dir=root)
    assert cold.source == "bundled-gguf" and fake_bundled == ["tiny.gguf"]
    assert not hasattr(cold.model.config, "quantization_config")  # the plain copy from the fresh cache
    warm = M.load_model("TINY-test ", cache_dir=root)
    assert warm.source == "cache" and len(fake_bundled) == 1
    assert torch.equal(logits(cold.model), logits(warm.model))
    assert not warm.model.training and warm.device == torch.device("cpu")
    assert warm.vocab_size == 16 and warm.eos_token_ids == (2,) and not warm.has_chat_template
    # corrupt the weights: detected, deleted, rebuilt from the GGUF
    (root / "tiny-test" / "model.safetensors").write_bytes(b"\0" * 100)
    again = M.load_model("tiny-test", cache_dir=root)
    assert again.source == "bundled-gguf" and len(fake_bundled) == 2
    assert M.load_model("tiny-test", cache_dir=root).source == "cache"
    # a missing file also counts as corrupt
    (root / "tiny-test" / "config.json").unlink()
    assert M.load_model("tiny-test", cache_dir=root).source == "bundled-gguf"


def test_list_models_reports_cache(fake_bundled, tmp_path):
    M.load_model("tiny-test", cache_dir=tmp_path)
    row = {r["name"]: r for r in M.list_models(cache_dir=tmp_path)}["tiny-test"]
    assert row["cached"] and row["installed"]


def test_missing_package_falls_back_to_hub(monkeypatch):
    monkeypatch.setitem(BUNDLED, "tiny-test", ModelSpec("tiny-test", "tiny", "nobody-xyz/tiny", "no_such_pkg_xyz",
                                                        lambda: None, "pip install tiny"))
    with pytest.raises(ModelError, match="pip install tiny") as err:
        M.load_model("tiny-test")
    assert "nobody-xyz/tiny" in str(err.value)


def test_broken_package_is_a_clear_error(monkeypatch):
    def broken():
        raise ValueError("Assembled file sha256 did not match expected value")

    monkeypatch.setitem(BUNDLED, "tiny-test", ModelSpec("tiny-test", "tiny", "x/y", "tokenizers", broken, "pip install tiny"))
    with pytest.raises(ModelError, match="broken.*pip install tiny"):
        M.load_model("tiny-test")


def test_loaded_model_helpers(fake_bundled, tmp_path):
    lm = M.load_model("tiny-test", cache_dir=tmp_path)
    assert lm.encode_prompt("the cat", chat=False) == [3, 4]
    assert lm.decode([3, 4]) == "the cat" and lm.token_str(5) == "sat" and lm.token_str(99) == "<unused 99>"
    with pytest.raises(ModelError, match="no chat template; use raw mode"):
        lm.encode_prompt("the cat", chat=True)
    with pytest.raises(ModelError, match="empty"):
        lm.encode_prompt("", chat=False)
    lm.tokenizer.chat_template = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}" \
                                 "{% if add_generation_prompt %} a{% endif %}"
    lm.has_chat_template = True
    assert lm.encode_prompt("the cat", chat=True) == [1, 3, 4, 8]  # BOS exactly once
    lm.tokenizer.chat_template = "{{ raise_exception('a system turn is required') }}"
    with pytest.raises(ModelError, match="chat template of tiny-test failed.*system turn"):
        lm.encode_prompt("the cat", chat=True)


def test_get_model_loads_once_across_threads(monkeypatch):
    calls = []

    def slow_load(name, device=None, cache_dir=None):
        calls.append(name)
        time.sleep(0.2)
        return object()

    monkeypatch.setattr(R, "load_model", slow_load)
    monkeypatch.setattr(R, "_LOADED", {})
    results = []
    threads = [threading.Thread(target=lambda: results.append(M.get_model(DEFAULT_MODEL))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [DEFAULT_MODEL] and len(results) == 4 and len({id(r) for r in results}) == 1
    assert M.get_model(" SmolLM2-135M-Instruct") is results[0]  # names are case/space-insensitive


# ----------------------------------------------------------------------------- public deployment
def test_remote_code_is_never_trusted(monkeypatch):
    """A typed Hub id loads with trust_remote_code=False: the repository's own Python never runs."""
    calls: list[dict] = []

    def recorder(make):
        def from_pretrained(path, *args, **kwargs):
            calls.append(kwargs)
            return make()
        return from_pretrained

    monkeypatch.setattr(H.AutoTokenizer, "from_pretrained", recorder(tiny_tokenizer))
    monkeypatch.setattr(H.AutoModelForCausalLM, "from_pretrained", recorder(tiny_model))
    lm = M.load_model("someone/some-model")
    assert lm.source == "hub" and len(calls) == 2
    assert all(kw["trust_remote_code"] is False for kw in calls)
    # and nowhere in the package is it ever switched on
    sources = Path(M.__file__).parent.rglob("*.py")
    assert not [p for p in sources if "trust_remote_code=True" in p.read_text(encoding="utf-8")]


def test_public_mode_serves_bundled_and_allow_listed_models_only(monkeypatch):
    monkeypatch.setattr(H, "_load_hub", lambda repo_id: pytest.fail("a refused id must not reach the Hub"))
    monkeypatch.setenv("DECODING_LAB_PUBLIC", "1")
    for load in (M.load_model, M.get_model):
        with pytest.raises(ModelError, match="not available here.*DECODING_LAB_ALLOWED_MODELS") as err:
            load("someone/some-model")
        assert "smollm2-135m-instruct" in str(err.value) and "\n" not in str(err.value)
    assert M.canonical(" SmolLM2-135M-Instruct ") == "smollm2-135m-instruct"  # bundled: always
    monkeypatch.setenv("DECODING_LAB_ALLOWED_MODELS", "Someone/Some-Model, other/x")
    assert M.canonical("someone/some-model") == "Someone/Some-Model"  # the list's spelling: one copy
    with pytest.raises(ModelError, match="bundled models .* and Someone/Some-Model, other/x"):
        M.canonical("third/party")
    with pytest.raises(ModelError, match="neither a bundled model"):  # the shape check still comes first
        M.canonical("../etc/passwd")
    monkeypatch.setenv("DECODING_LAB_ALLOWED_MODELS", "*")
    assert M.canonical("third/party") == "third/party"
    monkeypatch.delenv("DECODING_LAB_PUBLIC")  # a local run: any Hub id
    monkeypatch.delenv("DECODING_LAB_ALLOWED_MODELS")
    assert M.canonical("third/party") == "third/party"


def test_prompt_text_is_capped_before_tokenising(fake_bundled, tmp_path, monkeypatch):
    lm = M.load_model("tiny-test", cache_dir=tmp_path)
    monkeypatch.setenv("DECODING_LAB_MAX_PROMPT_TOKENS", "4")  # 4 tokens -> 64 characters
    assert lm.encode_prompt("the cat " * 8, chat=False)[:2] == [3, 4]
    with pytest.raises(SettingsError, match="65 characters; the limit here is 64"):
        lm.encode_prompt("a" * 65, chat=False)
    with pytest.raises(ModelError, match="must be text"):
        lm.encode_prompt(None, chat=False)
