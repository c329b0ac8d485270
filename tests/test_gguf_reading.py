"""``gguf_reading``: the faster reader reads every field and tensor exactly as gguf's own reader,
``shared_readers()`` parses a file once per load and puts gguf's reader back afterwards, and
``one_name_map()`` hands out gguf's tensor-name table built once, the same table."""

from __future__ import annotations

import threading
from pathlib import Path

import gguf
import numpy as np
import pytest

from decoding_lab.backends.gguf_reading import PlainViewReader, one_name_map, shared_readers


def same_reading(a: gguf.GGUFReader, b: gguf.GGUFReader) -> None:
    """Every metadata field (its raw parts, types, data indices and decoded contents) and every
    tensor (name, type, shape, offset, bytes) of ``a`` equals ``b``'s."""
    assert list(a.fields) == list(b.fields)
    for name, fa in a.fields.items():
        fb = b.fields[name]
        assert (fa.offset, fa.types, fa.data) == (fb.offset, fb.types, fb.data), name
        assert len(fa.parts) == len(fb.parts), name
        for pa, pb in zip(fa.parts, fb.parts):
            assert pa.dtype == pb.dtype and np.array_equal(pa, pb), name
        assert fa.contents() == fb.contents(), name
    assert len(a.tensors) == len(b.tensors)
    for ta, tb in zip(a.tensors, b.tensors):
        assert (ta.name, ta.tensor_type, list(ta.shape), ta.n_elements, ta.n_bytes, ta.data_offset) == \
               (tb.name, tb.tensor_type, list(tb.shape), tb.n_elements, tb.n_bytes, tb.data_offset)
        assert ta.data.dtype == tb.data.dtype and np.array_equal(ta.data, tb.data), ta.name
    assert a.data_offset == b.data_offset and a.alignment == b.alignment


@pytest.fixture
def small_gguf(tmp_path: Path) -> Path:
    """A small GGUF with what a model file holds: strings, a vocabulary's arrays (strings with
    multi-byte characters, float scores, int types), scalars of several types, and tensors."""
    path = tmp_path / "small.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("a test file")
    w.add_uint32("test.u32", 7)
    w.add_int64("test.i64", -3)
    w.add_float32("test.f32", 0.25)
    w.add_bool("test.flag", True)
    w.add_string("test.text", "température 温度")
    tokens = [f"tok{i}" for i in range(300)] + ["▁Paris", "温", "\n", ""]
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.scores", [float(-i) / 7 for i in range(len(tokens))])
    w.add_array("tokenizer.ggml.token_type", [i % 4 for i in range(len(tokens))])
    w.add_array("test.merges", ["a b", "ab c"])
    rng = np.random.default_rng(0)
    w.add_tensor("embed.weight", rng.standard_normal((16, 8)).astype(np.float32))
    w.add_tensor("norm.weight", rng.standard_normal(8).astype(np.float16))
    w.add_tensor("ids", np.arange(10, dtype=np.int32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_the_plain_view_reader_reads_a_file_as_gguf_does(small_gguf):
    fast, own = PlainViewReader(small_gguf), gguf.GGUFReader(small_gguf)
    same_reading(fast, own)
    assert fast.fields["tokenizer.ggml.tokens"].contents()[-4:] == ["▁Paris", "温", "\n", ""]
    assert type(fast.tensors[0].data) is np.ndarray and isinstance(own.tensors[0].data, np.memmap)


def test_a_file_that_is_not_gguf_is_refused_as_gguf_refuses_it(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all" * 4)
    with pytest.raises(ValueError, match="GGUF magic invalid"):
        gguf.GGUFReader(bad)
    with pytest.raises(ValueError, match="GGUF magic invalid"):
        PlainViewReader(bad)


def test_shared_readers_parse_a_file_once_and_put_gguf_s_reader_back(small_gguf, tmp_path):
    original = gguf.GGUFReader
    with shared_readers() as readers:
        first = gguf.GGUFReader(small_gguf)
        assert gguf.GGUFReader(str(small_gguf)) is first          # a second call: the same parse
        assert isinstance(first, PlainViewReader) and list(readers) == [(str(small_gguf), "r")]
    assert gguf.GGUFReader is original
    with pytest.raises(RuntimeError), shared_readers():
        raise RuntimeError("a load that fails")
    assert gguf.GGUFReader is original                             # also after a failure


def test_two_threads_loading_at_once_each_get_their_own_readers_and_gguf_s_reader_is_back(small_gguf):
    original, seen, start = gguf.GGUFReader, [], threading.Barrier(2)

    def load() -> None:
        start.wait()
        with shared_readers():
            seen.append(gguf.GGUFReader(small_gguf))
    threads = [threading.Thread(target=load) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert gguf.GGUFReader is original and len(seen) == 2 and seen[0] is not seen[1]


@pytest.mark.real
def test_the_bundled_smollm_file_reads_as_gguf_reads_it():
    """The real thing: a 49,152-token vocabulary with its merges, and every quantised tensor."""
    from decoding_lab.bundled import BUNDLED
    located = BUNDLED["smollm2-135m-instruct"].locate_gguf()
    if located is None:
        pytest.skip("the SmolLM2 GGUF package is not installed (make setup)")
    path = Path(located[0]) / located[1]
    same_reading(PlainViewReader(path), gguf.GGUFReader(path))


def test_one_name_map_is_gguf_s_table_built_once_and_gguf_s_function_is_back():
    original = gguf.get_tensor_name_map
    arch, blocks = gguf.MODEL_ARCH.LLAMA, 30
    own = original(arch, blocks)
    with one_name_map() as once:
        first = gguf.get_tensor_name_map(arch, blocks)
        assert gguf.get_tensor_name_map(arch, blocks) is first     # asked again: the same table
        assert gguf.get_tensor_name_map(arch, 4) is not first      # another shape: its own table
        assert once.cache_info().misses == 2
    assert gguf.get_tensor_name_map is original
    assert first.mapping == own.mapping                            # the very map gguf builds
    assert first.get_name("model.layers.29.self_attn.q_proj") == own.get_name("model.layers.29.self_attn.q_proj") \
        == "blk.29.attn_q"
    with pytest.raises(RuntimeError), one_name_map():
        raise RuntimeError("a load that fails")
    assert gguf.get_tensor_name_map is original                    # also after a failure
