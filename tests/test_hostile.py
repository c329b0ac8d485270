"""What a hostile visitor tried, as regression tests: oversized and over-nested grammars, engine
panics, files that never end, HTML in messages. Each case is bounded in size and time."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from decoding_lab import limits
from decoding_lab.grammar import GrammarError, build_constraint
from decoding_lab.grammar import compile as gcompile
from decoding_lab.ui.common.errors import plain

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("kind,text,needle", [
    ("choices", "\n".join(f"option {i}" for i in range(5000)), "MAX_CHOICES"),
    ("choices", "\n".join("x" * 100 for _ in range(900)), "MAX_GRAMMAR_CHARS"),
    ("regex", "a" * 50_000, "MAX_GRAMMAR_CHARS"),
    ("json_schema", "[" * 2000 + "]" * 2000, "MAX_GRAMMAR_DEPTH"),
    ("json_schema", '{"type": "array", "items": ' * 60 + '{"type": "integer"}' + "}" * 60, "MAX_GRAMMAR_DEPTH"),
    ("lark", "start: " + " | ".join(f'"w{i}"' for i in range(4000)), "MAX_GRAMMAR_CHARS"),
])
def test_oversized_constraints_are_refused_before_the_engine(kind, text, needle):
    t0 = time.monotonic()
    with pytest.raises(GrammarError, match=needle):
        build_constraint(kind, text)
    assert time.monotonic() - t0 < 2.0      # refused by counting, not after compiling


def test_a_deep_python_schema_is_one_line_not_a_recursion_error():
    schema: dict = {"type": "integer"}
    for _ in range(3000):
        schema = {"type": "array", "items": schema}
    with pytest.raises(GrammarError) as e:
        build_constraint("json_schema", schema)
    assert "\n" not in str(e.value) and ("deep" in str(e.value) or "JSON" in str(e.value))


def test_engine_panic_becomes_a_grammar_error():
    from decoding_lab.grammar.constraints import engine_call

    class PanicException(BaseException):   # what pyo3 raises for a Rust panic
        pass

    def boom() -> None:
        raise PanicException("assertion failed: ...\nstack backtrace: ...")
    with pytest.raises(GrammarError, match="could not handle this regex: assertion failed"):
        engine_call("regex", boom)


def test_the_compile_pool_refuses_when_full_and_bounds_the_wait(monkeypatch):
    monkeypatch.setenv("DECODING_LAB_GRAMMAR_WORKERS", "1")
    monkeypatch.setenv("DECODING_LAB_GRAMMAR_SECONDS", "1")
    release = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(GrammarError, match="took longer than 1 s"):
        gcompile.bounded(release.wait, 5)
    assert time.monotonic() - t0 < 3
    with pytest.raises(GrammarError, match="busy"):        # the stuck compile still holds the one worker
        gcompile.bounded(lambda: 1)
    release.set()
    deadline = time.monotonic() + 5
    while gcompile.busy() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gcompile.bounded(lambda: 7) == 7


def test_messages_cannot_carry_markup():
    for bad in ('<a href="https://evil.example">click</a>', "<img src=x onerror=alert(1)>",
                "<form><input type=password></form>", "<!-- x -->", "</div><script>1</script>"):
        out = plain(f"unknown stage {bad!r}")
        assert "<" + bad[1] not in out and "&lt;" in out
    assert plain("line one\nline two") == "line one"
    assert plain("top-p must be > 0, got 0") == "top-p must be > 0, got 0"


def test_read_text_file_refuses_special_large_and_binary_files(tmp_path, monkeypatch):
    monkeypatch.setenv("DECODING_LAB_MAX_FILE_BYTES", "1000")
    with pytest.raises(limits.SettingsError, match="not a regular file"):
        limits.read_text_file("/dev/zero", "JSON schema")
    with pytest.raises(limits.SettingsError, match="not a regular file"):
        limits.read_text_file(str(tmp_path), "grammar")
    big = tmp_path / "big.json"
    big.write_text("x" * 5000)
    with pytest.raises(limits.SettingsError, match="larger than 1,000 bytes"):
        limits.read_text_file(str(big), "JSON schema")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(limits.SettingsError, match="not UTF-8"):
        limits.read_text_file(str(bad), "JSON schema")


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "decoding_lab", *args], capture_output=True, text=True, timeout=300,
                          env=env, cwd=ROOT)


@pytest.mark.real
@pytest.mark.parametrize("args,needle", [
    (["--json-schema", "/dev/zero"], "not a regular file"),
    (["--grammar", "/dev/zero"], "not a regular file"),
    (["--choices", ""], "choices"),
    (["--choices", ",,,"], "choices"),
])
def test_cli_constraint_inputs_are_one_line(args, needle):
    r = _cli("step", "--steps", "1", *args)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in r.stderr


def test_cli_sweep_report_refuses_an_endless_file():
    r = _cli("sweep-report", "/dev/zero")
    assert r.returncode == 2, r.stderr
    assert "not a regular file" in r.stderr and "Traceback" not in r.stderr


def test_a_prompt_with_a_lone_surrogate_is_refused_by_name():
    with pytest.raises(limits.SettingsError, match="character 3 is a lone surrogate"):
        limits.check_prompt_text("abc\udcff def")
    limits.check_prompt_text("héllo 你好 ✓")   # real text passes


@pytest.mark.real
def test_invalid_utf8_on_the_command_line_is_one_line():
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable.encode(), b"-m", b"decoding_lab", b"step", b"--steps", b"1", b"--prompt",
                        b"caf\xe9 au lait"], capture_output=True, timeout=300, env=env, cwd=ROOT)
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "lone surrogate" in lines[0] and "Traceback" not in err
