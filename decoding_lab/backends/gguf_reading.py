"""Reading a bundled GGUF file once, and quickly, while transformers loads it.

transformers' GGUF loader (``from_pretrained(..., gguf_file=...)``) builds ``gguf.GGUFReader``
three times for one model, once each for the config, the tokenizer and the weights, and each
reader parses the whole metadata block. That block is mostly the vocabulary: for
``gemma-3-270m`` 262,144 tokens with their scores and types, about 2.4 million small slices of
the file. The reader takes every slice from an ``np.memmap``, and each slice of a memmap goes
through memmap's Python-level ``__getitem__`` and ``__array_finalize__`` (microseconds each).

``shared_readers()`` replaces the reader for the duration of one load with

* one reader per file, handed to all three of transformers' calls, and
* ``PlainViewReader``: the same reader reading through a plain ``ndarray`` view of the same
  mapping, so a slice is numpy's C path: the same bytes, without memmap's per-slice Python.

The result is bit for bit the same model, config and tokenizer (``tests/test_gguf_reading.py``
checks the reader field by field and tensor by tensor against gguf's own, on a small file written
for the test and on the bundled SmolLM2 file; ``tests/test_models_real.py`` checks the converted
cache against such a load).

``one_name_map()`` spares the weights' half of the load a second cost: to match the model's
tensor names to the file's, transformers walks the model module by module (397 modules for
SmolLM2) and asks gguf for the architecture's name table at each one; gguf builds that table
anew every time (a ``str.format`` for every tensor kind of every block: 3.4 million calls, about
half of SmolLM2's whole load). While the block runs, the table is built once per (architecture,
number of blocks) and handed out again; nothing writes to it, so the map is the same.

Both loads side by side: ``python -m decoding_lab bench --only gguf --all-models`` (the README's
model section has the figures).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from typing import Any, Iterator

import gguf
import numpy as np

#: One swap of ``gguf.GGUFReader`` at a time: the swap is process-wide, and two overlapping
#: swaps could restore each other's replacement instead of gguf's reader.
_SWAP_LOCK = threading.Lock()
#: One swap of ``gguf.get_tensor_name_map`` at a time (process-wide too).
_NAME_MAP_LOCK = threading.Lock()


class PlainViewReader(gguf.GGUFReader):
    """``gguf.GGUFReader`` whose slices come from a plain ``ndarray`` view of its memmap.

    The base class reads every value with ``_get``; this ``_get`` is the same code on
    ``self.data.view(np.ndarray)`` (the same memory, not a copy)."""

    def _get(self, offset: int, dtype: Any, count: int = 1, override_order: str | None = None) -> np.ndarray:
        plain = self.__dict__.get("_plain")
        if plain is None:   # the first call comes from the base __init__, right after it maps the file
            plain = self._plain = self.data.view(np.ndarray)
        count = int(count)
        arr = plain[offset:offset + np.dtype(dtype).itemsize * count].view(dtype=dtype)[:count]
        return arr.view(arr.dtype.newbyteorder(self.byte_order if override_order is None else override_order))


@contextlib.contextmanager
def shared_readers() -> Iterator[dict[tuple[str, str], Any]]:
    """While the block runs, ``gguf.GGUFReader(path)`` returns one ``PlainViewReader`` per
    (path, mode), built on the first call; gguf's own reader is back afterwards. Yields the
    readers built, by (path, mode). Blocks in other threads wait for each other (the swap is
    process-wide)."""
    readers: dict[tuple[str, str], Any] = {}

    def shared(path: os.PathLike[str] | str, mode: str = "r") -> Any:
        key = (os.fspath(path), mode)
        if key not in readers:
            readers[key] = PlainViewReader(path, mode)
        return readers[key]

    with _SWAP_LOCK:
        original = gguf.GGUFReader
        gguf.GGUFReader = shared
        try:
            yield readers
        finally:
            gguf.GGUFReader = original


@contextlib.contextmanager
def one_name_map() -> Iterator[Any]:
    """While the block runs, ``gguf.get_tensor_name_map(arch, n_blocks)`` builds its table once
    per (arch, n_blocks) and returns that one table afterwards; gguf's function is back after
    the block. Yields the memoised function (its ``cache_info()`` counts the tables built).
    Blocks in other threads wait for each other, as with the reader (its own lock: a load takes
    this one inside ``shared_readers``)."""
    with _NAME_MAP_LOCK:
        original = gguf.get_tensor_name_map
        once = functools.lru_cache(maxsize=None)(original)
        gguf.get_tensor_name_map = once
        try:
            yield once
        finally:
            gguf.get_tensor_name_map = original
