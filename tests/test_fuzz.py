"""Random and invalid parameters, generated with hypothesis: every call gives a result or a clear
error, never a crash, a traceback or a hang.

* core: ``SamplingSettings``, the stepper and the three strategies on the tiny random model;
* CLI: ``cli.main(argv)`` in this process with random argv (exit 0, or 2 with one line);
* API: ``gradio_client`` calls with random values against a live app; a refused call leaves the
  session's earlier steps as they were.

Small deployment limits (set below) keep every *valid* random call short, so the example counts
alone bound the running time."""

from __future__ import annotations

import contextlib
import io
import math
from datetime import timedelta
from typing import Any, Iterator

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from decoding_lab.errors import USER_ERRORS
from decoding_lab.settings import PRESET_ORDERS, SamplingSettings
from decoding_lab.stepper import Stepper
from decoding_lab.strategies import beam_search, greedy, sample

LIMITS = {"DECODING_LAB_MAX_NEW_TOKENS": "8", "DECODING_LAB_MAX_BEAMS": "4", "DECODING_LAB_MAX_SAMPLES": "4",
          "DECODING_LAB_MAX_PROMPT_TOKENS": "64"}
FAST = settings(max_examples=60, deadline=timedelta(seconds=10), derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module", autouse=True)
def small_limits() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        for k, v in LIMITS.items():
            mp.setenv(k, v)
        yield


# Values a careless or hostile caller may send: wrong types, edges, non-finite numbers.
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                 st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                 st.sampled_from(["", "1", "top-k,foo", "vllm", "temperature,top-p", [], {}, (1, 2)]))


def mostly(valid: st.SearchStrategy, junk: st.SearchStrategy = JUNK) -> st.SearchStrategy:
    """Three draws in four from the valid range, so runs get past validation and into the model.
    (``one_of(valid, valid, junk)`` would not weigh: hypothesis merges the repeated branch.)"""
    return st.sampled_from([valid, valid, valid, junk]).flatmap(lambda strategy: strategy)


UNIT = st.floats(0.01, 1.0)
VALID = {"temperature": st.floats(0.0, 2.0), "top_k": st.integers(0, 50), "top_p": UNIT,
         "min_p": st.floats(0.0, 0.5), "typical_p": UNIT, "repetition_penalty": st.floats(0.5, 2.0),
         "presence_penalty": st.floats(-2, 2), "frequency_penalty": st.floats(-2, 2),
         "no_repeat_ngram_size": st.integers(0, 3),
         "logit_bias": st.lists(st.tuples(st.integers(0, 95), st.floats(-5, 5)), max_size=3),
         "repetition_window": st.one_of(st.none(), st.integers(0, 10)),
         "order": st.one_of(st.sampled_from(["transformers", "vllm", "llama.cpp"]),
                            st.permutations(list(PRESET_ORDERS["vllm"]))),
         "seed": st.one_of(st.none(), st.integers(0, 100)), "penalty_include_prompt": st.booleans()}
# Either every setting valid, or any of them junk: each field alone would rarely let a run through.
SETTINGS_KW = mostly(st.fixed_dictionaries({}, optional=VALID),
                     st.fixed_dictionaries({}, optional={k: st.one_of(v, JUNK) for k, v in VALID.items()}))
PROMPT = mostly(st.lists(st.integers(2, 95), min_size=1, max_size=12),
                st.one_of(JUNK, st.lists(st.integers(-2, 200), max_size=70)))
COUNT = mostly(st.integers(1, 8), st.one_of(JUNK, st.integers(-2, 100)))
SETTING = mostly(st.floats(-3, 3))


def settings_or_error(kw: dict[str, Any]) -> SamplingSettings | None:
    try:
        return SamplingSettings(**kw)
    except USER_ERRORS as e:
        assert str(e) and "\n" not in str(e)
        return None


# ----------------------------------------------------------------------------- core
@FAST
@given(SETTINGS_KW)
def test_settings_accept_or_refuse_clearly(kw):
    s = settings_or_error(kw)
    if s is not None:  # accepted settings survive JSON and always build a chain
        assert SamplingSettings.from_json(s.to_json()) == s
        assert all(st_.is_active() for st_ in s.build_chain())


@FAST
@given(st.dictionaries(st.one_of(st.text(max_size=20), st.sampled_from(list(SamplingSettings.__dataclass_fields__))),
                       JUNK, max_size=4))
def test_settings_from_json_with_unknown_keys(d):
    try:
        SamplingSettings.from_json(d)
    except USER_ERRORS as e:
        assert str(e)


OPS = st.lists(st.one_of(
    st.tuples(st.just("step"), st.none()), st.tuples(st.just("force"), COUNT),
    st.tuples(st.just("rewind"), COUNT), st.tuples(st.just("undo"), st.none()),
    st.tuples(st.just("checkout"), COUNT), st.tuples(st.just("settings"), SETTINGS_KW),
    st.tuples(st.just("steps"), COUNT)), max_size=8)


@FAST
@given(PROMPT, SETTINGS_KW, mostly(st.integers(1, 30)), mostly(st.one_of(st.none(), st.integers(1, 8))), OPS)
def test_stepper_random_sessions(tiny_lm, prompt, kw, top_n, max_new, ops):
    s = settings_or_error(kw)
    try:
        st_ = Stepper(tiny_lm, prompt, s, top_n=top_n, max_new_tokens=max_new)
    except USER_ERRORS:
        event("stepper refused")  # --hypothesis-show-statistics shows how often each path ran
        return
    event("stepper built")
    for op, arg in ops:
        before = (list(st_.tokens), len(st_.branches))
        try:
            if op == "step":
                st_.step()
            elif op == "force":
                st_.step(force_token_id=arg)
            elif op == "rewind":
                st_.rewind(arg)
            elif op == "undo":
                st_.undo()
            elif op == "checkout":
                st_.checkout(arg)
            elif op == "settings":
                new = settings_or_error(arg)
                st_.set_settings(new if new is not None else "not settings")  # type: ignore[arg-type]
            else:
                st_.steps(arg)
        except USER_ERRORS as e:
            event(f"{op} refused")
            assert str(e)
            if op != "steps":  # (steps(n) keeps the steps it took before a refusal)
                assert (st_.tokens, len(st_.branches)) == before  # a refused action changes nothing
        else:
            event(f"{op} done")
        assert len(st_.tokens) == len(st_.traces) <= st_.max_new_tokens <= 8


@FAST
@given(st.sampled_from(["greedy", "sample", "beam"]), PROMPT, SETTINGS_KW, COUNT,
       st.fixed_dictionaries({}, optional={"n": COUNT, "num_beams": COUNT, "length_penalty": SETTING,
                                           "early_stopping": st.one_of(JUNK, st.sampled_from([True, "never"])),
                                           "num_return_sequences": COUNT}))
def test_strategies_random_arguments(tiny_lm, which, prompt, kw, max_new, extra):
    fn = {"greedy": greedy, "sample": sample, "beam": beam_search}[which]
    allowed = {"greedy": (), "sample": ("n",), "beam": ("num_beams", "length_penalty", "early_stopping",
                                                       "num_return_sequences")}[which]
    s = settings_or_error(kw)
    try:
        r = fn(tiny_lm, prompt, s, max_new, **{k: v for k, v in extra.items() if k in allowed})
    except USER_ERRORS as e:
        event(f"{which} refused")
        assert str(e)
        return
    event(f"{which} ran")
    assert r.done and r.sequences
    assert all(1 <= len(q.token_ids) <= max_new for q in r.sequences)
    assert all(math.isfinite(q.score) or q.score == -math.inf for q in r.sequences)


# ----------------------------------------------------------------------------- CLI
WORDS = st.one_of(st.sampled_from(["0", "1", "-1", "2", "0.5", "1e9", "nan", "inf", "-inf", "abc", "",
                                   "vllm", "top-k,bogus", "a,b", "[0-9]+", "/no/such/file", "x/y", "999999999"]),
                  st.text(alphabet="abc019.-,/ ", max_size=8))
UNIT_WORD = st.floats(0.05, 1.0).map(lambda x: f"{x:.2f}")
SMALL = st.integers(1, 4).map(str)
CLI_FLAGS = {  # flag -> values that pass (junk words are mixed in by mostly())
    "--temperature": st.floats(0, 1.5).map(lambda x: f"{x:.2f}"), "--top-k": st.integers(0, 50).map(str),
    "--top-p": UNIT_WORD, "--min-p": st.sampled_from(["0", "0.05", "0.2"]), "--typical-p": UNIT_WORD,
    "--repetition-penalty": st.sampled_from(["1", "1.2", "0.8"]), "--presence-penalty": st.sampled_from(["0", "0.5"]),
    "--frequency-penalty": st.sampled_from(["0", "-0.5"]), "--no-repeat-ngram-size": st.sampled_from(["0", "2"]),
    "--order": st.sampled_from(["vllm", "llama.cpp", "transformers", "temperature,top-p"]),
    "--seed": st.integers(0, 9).map(str), "--max-new-tokens": SMALL, "--steps": SMALL,
    "--top-n": st.integers(1, 30).map(str), "--strategy": st.sampled_from(["greedy", "beam", "sample"]),
    "--num-beams": SMALL, "--length-penalty": st.sampled_from(["0", "1", "-1"]),
    "--early-stopping": st.sampled_from(["true", "false", "never"]), "--num-return-sequences": SMALL,
    "--num-samples": SMALL, "--regex": st.sampled_from(["[0-9]+", "(yes|no)", "a{2,3}"]),
    "--choices": st.sampled_from(["yes,no", "Paris,London"]), "--json-schema": st.just("/no/such/schema.json"),
    "--grammar": st.just("/no/such/grammar.lark"), "--model": st.sampled_from(["smollm2-135m-instruct", "x/y"])}
SWITCHES = ["--json", "--raw", "--chat", "--penalize-prompt"]
ONLY = {"step": {"--strategy", "--num-beams", "--length-penalty", "--early-stopping", "--num-return-sequences",
                 "--num-samples"}, "generate": {"--steps", "--top-n"}}  # flags the command does not take


def command_argv(command: str) -> st.SearchStrategy:
    """``command`` with up to four of its flags (now and then a wrong one), each mostly valid, and
    always a length: the CLI's default of 64 new tokens is over this module's limit."""
    flags = sorted(set(CLI_FLAGS) - ONLY.get(command, set()))
    pair = st.sampled_from(flags).flatmap(lambda f: st.tuples(st.just(f), mostly(CLI_FLAGS[f], WORDS)))
    return st.tuples(mostly(SMALL, WORDS), st.lists(mostly(pair, st.tuples(st.sampled_from(sorted(CLI_FLAGS)),
                                                                            WORDS)), max_size=4),
                     st.lists(st.sampled_from(SWITCHES), max_size=2)).map(
        lambda t: [command, "--max-new-tokens", t[0], *[w for p in t[1] for w in p], *t[2]])


ARGV = st.one_of(st.sampled_from(["step", "generate"]).flatmap(command_argv),
                 st.lists(st.sampled_from(["models", "--json", "--prepare-not", "frobnicate", "-x"]), min_size=1,
                          max_size=3))


@contextlib.contextmanager
def captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


@pytest.mark.real
@settings(max_examples=30, deadline=timedelta(seconds=60), derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ARGV)
def test_cli_random_argv(smollm, argv):
    from decoding_lab import cli
    if "gemma" in " ".join(argv):  # a second real model would only add a minute of loading
        return
    with captured() as (out, err):
        code = cli.main(argv)
    event(f"exit {code}")
    lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
    assert code in (0, 2), (argv, err.getvalue())
    assert "Traceback" not in err.getvalue()
    if code == 2:
        assert len(lines) == 1 and len(lines[0]) < 400, (argv, lines)
    else:
        assert out.getvalue().strip()


# ----------------------------------------------------------------------------- API
GENERIC = "has not enabled verbose error reporting"  # what a client sees for an unexpected exception
TEXTS = st.one_of(st.sampled_from(["", "Hello", "x/y", "owner/name", "top-k,foo", "a" * 3000, "../../etc/passwd",
                                   "[a-z]+", '{"type": "integer"}', "start: /ab/", "中文", "nan", "-5", "\x00"]),
                  st.text(max_size=20))
NUMBERS = st.one_of(st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False),
                    st.sampled_from([0, 1, 2, 0.5, 64, 10**18, -1]))


def api_value(p: dict[str, Any]) -> st.SearchStrategy:
    """A value of the JSON type the API page declares for this parameter, often out of range.
    (Values of another type are gradio's to refuse, before our code runs.)"""
    t, comp = p["type"], p["component"]
    if "items" in t:
        return st.lists(st.one_of(st.sampled_from(t["items"].get("enum") or [""]), TEXTS), max_size=4)
    if "enum" in t:
        choices = [str(e) for e in t["enum"] if "gemma" not in str(e)]  # one real model is enough here
        return st.one_of(st.sampled_from(choices), TEXTS) if choices else TEXTS
    if t.get("type") in ("number", "integer"):
        return st.one_of(NUMBERS, st.none()) if comp == "Number" else NUMBERS  # a cleared Number sends null
    if t.get("type") == "boolean":
        return st.booleans()
    if t.get("type") == "string":
        return TEXTS
    return st.just(p.get("example_input"))  # e.g. a BrowserState: leave it as the browser would


@pytest.fixture(scope="module")
def live(smollm):
    from gradio_client import Client

    from conftest_app import explorer_args, running_app
    with running_app() as (_, url):
        client = Client(url, verbose=False)
        client.predict(**explorer_args(), api_name="/explorer_step")
        client.predict(**explorer_args(), api_name="/explorer_step")  # the session's earlier work
        api = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        yield client, api


def session_rows(client: Any) -> list:
    return client.predict(api_name="/explorer_redraw")[5]["data"]


@pytest.mark.real
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_api_random_calls(live, data):
    from gradio_client.exceptions import AppError, ValidationError
    client, api = live
    endpoint = data.draw(st.sampled_from(sorted(api)), label="endpoint")
    kwargs = {}
    for p in api[endpoint]["parameters"]:
        if p["parameter_has_default"] and data.draw(st.booleans()):
            continue  # leave it at its default
        kwargs[p["parameter_name"]] = data.draw(api_value(p), label=p["parameter_name"])
    before = session_rows(client)
    try:
        client.submit(**kwargs, api_name=endpoint).result(timeout=120)  # a hang fails here
        event("call answered")
    except (AppError, ValidationError) as e:   # refused by the handler, or by the event's validator
        event("call refused")
        assert GENERIC not in str(e) and str(e).strip(), (endpoint, kwargs, str(e))
        assert session_rows(client) == before, "a refused call changed the session"
    except httpx.HTTPStatusError as e:         # refused by gradio as the call joins the queue (a value that
        event("call refused on joining")       # a choices list lacks): a 400 that names the value
        assert e.response.status_code == 400 and "not in the list of choices" in e.response.text, \
            (endpoint, kwargs, e.response.status_code, e.response.text[:300])
        assert session_rows(client) == before, "a refused call changed the session"


@pytest.mark.real
def test_api_wrong_types_leave_the_server_and_session_intact(live):
    """Values of the wrong JSON type are refused (by the Explorer's validator, naming the field,
    or in gradio's own input processing); the server and the session carry on."""
    from gradio_client.exceptions import AppError, ValidationError
    client, _ = live
    before = session_rows(client)
    for kw in ({"top_n": "many"}, {"temperature": None}, {"model": 3}, {"seed": "zero"}):
        with pytest.raises((AppError, ValidationError)):
            client.predict(**kw, api_name="/explorer_step")
    assert session_rows(client) == before
    assert len(client.predict(api_name="/explorer_undo")[5]["data"]) == len(before) - 1
