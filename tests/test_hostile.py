"""What a hostile visitor tried, as regression tests: oversized and over-nested grammars, engine
panics, files that never end, HTML in messages. Each case is bounded in size and time."""

from __future__ import annotations

import sys
import threading
import os
import time

import pytest

from cli_helpers import CliResult, cli_in_process, cli_process
from decoding_lab import limits
from decoding_lab.grammar import GrammarError, build_constraint
from decoding_lab.grammar import compile as gcompile
from decoding_lab.ui.common.errors import plain



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


def _cli(*args: str) -> CliResult:
    return cli_in_process(*args)


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
    # the real entry point: the bytes reach Python's argv as a lone surrogate
    r = cli_process("step", "--steps", "1", "--prompt", b"caf\xe9 au lait")
    err = r.stderr
    assert r.returncode == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "lone surrogate" in lines[0] and "Traceback" not in err


def test_a_caller_that_compiles_twice_in_a_row_is_never_its_own_busy(monkeypatch):
    """A Reset compiles the constraint, then its matcher. Two visitors doing that at once with
    two workers must never be refused: each worker is given back before its call returns."""
    monkeypatch.setenv("DECODING_LAB_GRAMMAR_WORKERS", "2")
    refused: list[str] = []

    def visitor() -> None:
        for i in range(1500):
            try:
                gcompile.bounded(sum, range(200))
            except GrammarError as e:
                refused.append(str(e))

    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # switch threads as often as possible: a gap, if any, shows at once
    try:
        threads = [threading.Thread(target=visitor) for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=60)
    finally:
        sys.setswitchinterval(before)
    assert refused == []


# ----------------------------------------------------------------------------- properties (hypothesis)
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

BOUNDED = settings(max_examples=120, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
ANY_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                      st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30), st.sampled_from(["NaN", "Infinity", "-inf", "1e999", " ", "1.5", "0x10"]))


@BOUNDED
@given(st.text(max_size=600))
@example("<À")   # a letter outside ASCII after "<" (found by this test)
def test_no_message_can_open_a_tag(text):
    out = plain(text)
    assert "\n" not in out and "\r" not in out and len(out) <= 400
    assert not any(out[i] == "<" and out[i + 1:i + 2].isalpha() or out[i:i + 2] in ("</", "<!", "<?")
                   for i in range(len(out)))


@BOUNDED
@given(ANY_VALUE)
def test_a_number_box_gives_a_finite_number_or_a_message_naming_it(value):
    from decoding_lab.errors import SettingsError
    from decoding_lab.ui.common.state import as_number, number_input
    try:
        got = number_input("token budget", value, 8, 256, integer=True)
        assert isinstance(got, int) and not isinstance(got, bool) and 8 <= got <= 256
    except SettingsError as e:
        assert "token budget" in str(e)
    for key in ("top_k", "top_p", "temperature"):   # the parameter table's rows, as the API sends them
        from decoding_lab.params import PARAMS
        try:
            PARAMS[key].check(as_number(key, value))
        except SettingsError as e:
            assert PARAMS[key].label in str(e)


@settings(max_examples=60, deadline=3000, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["regex", "json_schema", "choices", "lark", "gbnf"]),
       st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]) | st.sampled_from(
           list("[](){}|*+?.\\\"':,\n") + ["\udcff"]), max_size=200))
def test_any_constraint_text_compiles_or_is_one_line(kind, text):
    """Whatever the text (brackets, quotes, a lone surrogate ...), the answer is a constraint
    or one GrammarError line, quickly: never a panic, a recursion error or a traceback."""
    t0 = time.monotonic()
    try:
        build_constraint(kind, text)
    except GrammarError as e:
        assert "\n" not in str(e)
    assert time.monotonic() - t0 < 2.0


@settings(max_examples=25, deadline=5000)
@given(st.integers(33, 5000), st.sampled_from(["[", '{"a": ']))
def test_any_nesting_past_the_depth_limit_is_refused_by_counting(depth, opener):
    closer = "]" if opener == "[" else "}"
    with pytest.raises(GrammarError, match="MAX_GRAMMAR_DEPTH|MAX_GRAMMAR_CHARS"):   # whichever bound comes first
        build_constraint("json_schema", opener * depth + "1" + closer * depth)


@pytest.mark.real
def test_an_expired_grammar_session_says_so(monkeypatch, smollm):
    """After the TTL the Grammar tab's session is gone; the tab's next Step starts at step 0 and says why."""
    from decoding_lab.ui.grammar import handlers
    from decoding_lab.ui.grammar.session import GrammarRequest
    said: list[str] = []
    monkeypatch.setattr(handlers.gr, "Warning", lambda text, *a, **k: said.append(text))
    values = {"lang": "en", "model": "smollm2-135m-instruct", "hub_id": "", "kind": "preset", "preset": "integer",
              "constraint": "", "prompt": "How many legs does a spider have?", "chat": "chat", "temperature": 0.0,
              "seed": 0, "max_new_tokens": 16}
    req = GrammarRequest.from_inputs(values)
    fresh = handlers.session_for(req, None, started=False)
    assert said == [] and fresh.stepper.tokens == []
    handlers.session_for(req, None, started=True)
    assert len(said) == 1 and "expired" in said[0] and "step 0" in said[0]
    handlers.session_for(GrammarRequest.from_inputs({**values, "lang": "zh"}), None, started=True)
    assert "过期" in said[-1]


def test_export_folders_do_not_pile_up(tmp_path, monkeypatch):
    """Every export wrote a folder that stayed forever (20 exports: 20 folders); an export now
    removes the ones older than ``KEEP_S`` first."""
    import tempfile

    from decoding_lab.ui.common import export
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    old = tmp_path / (export.PREFIX + "old")
    old.mkdir()
    (old / "x.json").write_text("{}")
    os.utime(old, (time.time() - export.KEEP_S - 5,) * 2)
    fresh = export.write_files("run", {"a": 1}, ["h"], [[1]])
    assert not old.exists() and all(os.path.isfile(f) for f in fresh)
    assert len(list(tmp_path.glob(export.PREFIX + "*"))) == 1


def test_the_upload_route_is_capped_and_the_file_cache_cleaned(app_url):
    """The page has no upload control, yet gradio serves its upload route: 150 MB went in. Now
    anything past the cap is refused, and gradio's file cache is cleared of old files."""
    import httpx

    from decoding_lab.ui import page
    big = httpx.post(app_url + "gradio_api/upload", files={"files": ("big.bin", b"x" * 200_000)}, timeout=60)
    small = httpx.post(app_url + "gradio_api/upload", files={"files": ("small.txt", b"hello")}, timeout=60)
    assert big.status_code >= 400 and small.status_code == 200, (big.status_code, big.text[:200], small.status_code)
    assert page.DELETE_CACHE[1] <= 3600
