"""What a user sees when llama.cpp cannot help: one line each, and the transformers path untouched."""

from __future__ import annotations

import builtins

import pytest

from decoding_lab import llamacpp
from decoding_lab.errors import ModelError


def test_a_missing_build_is_one_line(monkeypatch):
    real_import = builtins.__import__

    def no_llama(name, *args, **kw):
        if name == "llama_cpp" or name.startswith("llama_cpp."):
            raise ImportError("No module named 'llama_cpp'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_llama)
    with pytest.raises(ModelError, match="llama.cpp is not available here") as e:
        llamacpp.require()
    assert "\n" not in str(e.value) and "pip install llama-cpp-python" in str(e.value)
    assert llamacpp.available() is False


def test_a_file_llamacpp_cannot_load_is_one_line(tmp_path):
    from decoding_lab.backends.llamacpp import LlamaCppBackend
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"GGUF but not really" * 10)
    with pytest.raises(ModelError, match="llama.cpp could not load 'not-a-model.gguf'") as e:
        LlamaCppBackend(str(bad), n_ctx=64)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name,match", [("owner/model@llama.cpp", "has no GGUF file"),
                                        ("@llama.cpp", "has no GGUF file")])
def test_names_without_a_gguf_are_refused_before_any_loading(name, match):
    from decoding_lab.models import canonical as _canonical
    with pytest.raises(ModelError, match=match):
        _canonical(name)
