"""llama.cpp itself, through llama-cpp-python: its sampler chain as ground truth for the
engine presets (``sampler``), and its kernels as a second model backend (``backend``).

llama-cpp-python is optional: it compiles llama.cpp from source when installed (minutes).
``require()`` turns a missing or broken install into one clear message; everything else in
the app works without it.
"""

from __future__ import annotations

from types import ModuleType

from decoding_lab.errors import ModelError

__all__ = ["require", "available"]


def require() -> ModuleType:
    """The ``llama_cpp`` module, or a ``ModelError`` that says how to get it."""
    try:
        import llama_cpp  # noqa: PLC0415 - optional, heavy
    except (ImportError, OSError) as e:  # OSError: the shared library failed to load
        raise ModelError(f"llama.cpp is not available here (llama-cpp-python: {str(e).splitlines()[0][:120]}); "
                         "install it with `pip install llama-cpp-python==0.3.36` (it compiles for minutes), "
                         "or use the transformers backend") from None
    from llama_cpp import _logger  # its C log callback prints everything unless told otherwise

    _logger.set_verbose(False)  # errors only
    return llama_cpp


def available() -> bool:
    try:
        require()
    except ModelError:
        return False
    return True
