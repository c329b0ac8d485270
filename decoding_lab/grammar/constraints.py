"""Constraints: which texts the model is allowed to write.

A ``Constraint`` is a description of a formal language — a regular expression, a JSON
Schema, a list of choices, or a context-free grammar (Lark or llama.cpp's GBNF) —
compiled to llguidance's grammar format and checked once, here, so a mistake is
reported when the user types it, never halfway through a generation:

    >>> regex("[0-9]+").kind
    'regex'
    >>> for bad in (lambda: regex("[a-"), lambda: json_schema({"type": "integer", "minimum": 5, "maximum": 3})):
    ...     try:
    ...         bad()
    ...     except GrammarError as e:
    ...         print(e)
    invalid regex '[a-': unclosed character class
    invalid JSON schema: Unsatisfiable schema: minimum (5) is greater than maximum (3)

A constraint knows nothing about a model. ``GrammarMask`` (stage.py) joins it to a
model's vocabulary and turns "the next bytes must be a digit" into "these token ids".

``validate_output(text, constraint)`` checks a finished text (constrained or not): the
lab uses it to compare how often free and constrained generation break the format.

Presets (``PRESETS``) are the lesson examples: a JSON object with typed fields, an
answer letter A–D, an integer, a tool call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import llguidance
from llguidance.gbnf_to_lark import any_to_lark

from decoding_lab import limits
from decoding_lab.errors import UserError


class GrammarError(UserError, ValueError):
    """A grammar, regex or schema the engine cannot use. The message is one line, for users."""


#: JSON is generated compactly but readably — ``{"name": "Ada", "age": 36}`` — with no free
#: whitespace: a small model allowed to emit whitespace can pad forever and never close.
JSON_OPTIONS: dict[str, Any] = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}

KINDS: tuple[str, ...] = ("regex", "json_schema", "choices", "lark", "gbnf")


@dataclass(frozen=True)
class Constraint:
    """A checked language description. ``grammar`` is what llguidance consumes."""

    kind: str                 # one of KINDS
    source: str               # what the user gave (a JSON schema is stored as canonical JSON text)
    grammar: str = field(repr=False)
    name: str = ""            # short label for records and plots

    @property
    def schema(self) -> dict[str, Any] | None:
        return json.loads(self.source) if self.kind == "json_schema" else None

    @property
    def options(self) -> list[str] | None:
        return json.loads(self.source) if self.kind == "choices" else None

    def label(self) -> str:
        return self.name or f"{self.kind}: {_short(self.source, 40)}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "name": self.label()}


# ----------------------------------------------------------------------------- builders
def regex(pattern: str, name: str = "") -> Constraint:
    """The whole output must match ``pattern`` (Rust regex syntax: no look-around, no backreferences)."""
    _need_text("regex", pattern)
    return _checked("regex", pattern, engine_call("regex", llguidance.LLMatcher.grammar_from_regex, pattern), name)


def json_schema(schema: dict | str, name: str = "", options: dict[str, Any] | None = None) -> Constraint:
    """The output must be JSON valid under ``schema`` (a dict or its JSON text).

    Unsupported keywords (e.g. ``not``) are reported, not ignored. Properties are written
    in the schema's order. ``options`` override ``JSON_OPTIONS`` (llguidance's
    JsonCompileOptions)."""
    if isinstance(schema, str):
        _need_text("JSON schema", schema)
        check_text_size("JSON schema", schema)
        check_json_depth(schema)        # before json.loads: deep nesting would raise RecursionError
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise GrammarError.coded("json_syntax", msg=e.msg, line=e.lineno, column=e.colno) from None
    if not isinstance(schema, (dict, bool)):
        raise GrammarError(f"a JSON schema must be a JSON object, got {type(schema).__name__}")
    try:
        source = json.dumps(schema, ensure_ascii=False)
    except (RecursionError, ValueError) as e:   # a dict nested too deep, or one that contains itself
        raise GrammarError(f"the JSON schema cannot be written as JSON ({_short(str(e), 80)})") from None
    check_text_size("JSON schema", source)
    check_json_depth(source)
    try:
        grammar = engine_call("JSON schema", llguidance.LLMatcher.grammar_from_json_schema, source,
                              defaults={**JSON_OPTIONS, **(options or {})})
    except (ValueError, TypeError) as e:
        raise GrammarError.coded("json_schema", detail=_short(str(e), 160)) from None
    return _checked("json_schema", source, grammar, name)


def choices(options: Sequence[str], name: str = "") -> Constraint:
    """The output must be exactly one of ``options``."""
    if isinstance(options, str) or not isinstance(options, Sequence):
        raise GrammarError("choices must be a list of strings, e.g. [\"yes\", \"no\"]")
    opts = [o for o in options]
    if not opts:
        raise GrammarError.coded("no_choices")
    bad = [o for o in opts if not isinstance(o, str)]
    if bad:
        raise GrammarError(f"choices must be strings, got {bad[0]!r}")
    if any(o == "" for o in opts):
        raise GrammarError("choices: an empty string is not a valid choice")
    lim = limits.current()
    if len(opts) > lim.max_choices:
        raise GrammarError(f"choices: {len(opts):,} strings; at most {lim.max_choices:,} are allowed "
                           f"({limits.PREFIX}MAX_CHOICES)")
    source = json.dumps(opts, ensure_ascii=False)
    check_text_size("list of choices", source)
    lark_text = "start: " + " | ".join(json.dumps(o, ensure_ascii=False) for o in opts)
    return _checked("choices", source, engine_call("choices", llguidance.LLMatcher.grammar_from_lark, lark_text), name)


def lark(text: str, name: str = "") -> Constraint:
    """A context-free grammar in llguidance's Lark dialect (``start: ...``; tokens as /regex/ or "text")."""
    _need_text("Lark grammar", text)
    return _checked("lark", text, engine_call("Lark grammar", llguidance.LLMatcher.grammar_from_lark, text), name)


def gbnf(text: str, name: str = "") -> Constraint:
    """A llama.cpp GBNF grammar (``root ::= ...``), converted to Lark by llguidance."""
    _need_text("GBNF grammar", text)
    try:
        lark_text = any_to_lark(text)
    except RecursionError:
        raise GrammarError.coded("grammar", what="GBNF grammar", detail="nested too deep") from None
    except Exception as e:
        raise GrammarError.coded("grammar", what="GBNF grammar", detail=_short(str(e), 160)) from None
    return _checked("gbnf", text, engine_call("GBNF grammar", llguidance.LLMatcher.grammar_from_lark, lark_text), name)


def build_constraint(kind: str, text: str | dict | Sequence[str], name: str = "") -> Constraint:
    """One entry point for the UI and CLI: ``kind`` is one of KINDS (``json`` and ``choice``
    are accepted too); for ``choices`` the text may be a JSON list or one choice per line."""
    if kind is not None and not isinstance(kind, str):
        raise GrammarError(f"unknown constraint kind {kind!r:.40}; kinds: {', '.join(KINDS)}")
    k = (kind or "").strip().lower().replace("-", "_").replace(" ", "_")
    k = {"json": "json_schema", "schema": "json_schema", "choice": "choices", "cfg": "lark", "ebnf": "gbnf"}.get(k, k)
    if k == "regex":
        return regex(_as_text(text, kind), name)
    if k == "json_schema":
        return json_schema(text if isinstance(text, dict) else _as_text(text, kind), name)
    if k == "choices":
        if isinstance(text, str):
            stripped = text.strip()
            if stripped.startswith("["):
                try:
                    text = json.loads(stripped)
                except json.JSONDecodeError as e:
                    raise GrammarError(f"choices: not a valid JSON list ({e.msg})") from None
            else:
                text = [line.strip() for line in stripped.splitlines() if line.strip()]
        return choices(text, name)  # type: ignore[arg-type]
    if k == "lark":
        return lark(_as_text(text, kind), name)
    if k == "gbnf":
        return gbnf(_as_text(text, kind), name)
    raise GrammarError(f"unknown constraint kind {kind!r}; use one of {', '.join(KINDS)}")


# ----------------------------------------------------------------------------- presets
PERSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "city": {"type": "string", "minLength": 1, "maxLength": 24},
        "is_student": {"type": "boolean"},
    },
    "required": ["name", "age", "city", "is_student"],
    "additionalProperties": False,
}

TOOL_CALL_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "object",
         "properties": {"tool": {"const": "get_weather"},
                        "arguments": {"type": "object",
                                      "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 30},
                                                     "unit": {"enum": ["celsius", "fahrenheit"]}},
                                      "required": ["city", "unit"], "additionalProperties": False}},
         "required": ["tool", "arguments"], "additionalProperties": False},
        {"type": "object",
         "properties": {"tool": {"const": "search"},
                        "arguments": {"type": "object",
                                      "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 40}},
                                      "required": ["query"], "additionalProperties": False}},
         "required": ["tool", "arguments"], "additionalProperties": False},
    ]
}

#: name -> (builder, a prompt that suits it). Every preset language is finite (bounded
#: strings and numbers), so a generation always ends within a known number of tokens.
PRESETS: dict[str, tuple[Any, str]] = {
    "json-person": (lambda: json_schema(PERSON_SCHEMA, name="JSON person"),
                    "Describe a fictional person as JSON with the fields name, age, city and is_student."),
    "answer-abcd": (lambda: choices(["A", "B", "C", "D"], name="answer A-D"),
                    "Which planet is known as the Red Planet? A) Venus B) Mars C) Jupiter D) Saturn. "
                    "Answer with the letter only."),
    "integer": (lambda: regex(r"-?(0|[1-9][0-9]{0,5})", name="integer"),
                "How many legs does a spider have? Answer with a number."),
    "tool-call": (lambda: json_schema(TOOL_CALL_SCHEMA, name="tool call"),
                  "You can call the tools get_weather(city, unit) and search(query). "
                  "The user asks: what is the weather in Paris? Reply with the tool call as JSON."),
}


def preset(name: str) -> Constraint:
    if name is not None and not isinstance(name, str):   # an API caller's number or list
        raise GrammarError(f"unknown grammar preset {name!r:.40}; presets: {', '.join(PRESETS)}")
    key = (name or "").strip().lower().replace("_", "-")
    if key not in PRESETS:
        raise GrammarError(f"unknown grammar preset {name!r}; presets: {', '.join(PRESETS)}")
    return PRESETS[key][0]()


def preset_prompt(name: str) -> str:
    preset(name)  # validates the name
    return PRESETS[name.strip().lower().replace("_", "-")][1]


# ----------------------------------------------------------------------------- checking output
def validate_output(text: str, constraint: Constraint, strip: bool = True) -> bool:
    """Is ``text`` in the constraint's language? (Surrounding whitespace is ignored by default.)

    JSON schema: the text must parse as JSON and validate — with the ``jsonschema`` package
    when it is installed, otherwise by running llguidance's own matcher over the JSON
    re-serialised in the schema's property order. Everything else: llguidance's matcher
    must accept the exact bytes of the text."""
    if strip:
        text = text.strip()
    if constraint.kind == "json_schema":
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return False
        schema = constraint.schema
        try:
            import jsonschema
        except ImportError:
            jsonschema = None
        if jsonschema is not None:
            try:
                jsonschema.validate(value, schema)
                return True
            except jsonschema.ValidationError:
                return False
            except jsonschema.SchemaError:
                pass  # fall back to the engine's reading of the schema
        text = json.dumps(_schema_order(value, schema), ensure_ascii=False)
    return matches(text, constraint)


def matches(text: str, constraint: Constraint) -> bool:
    """Exact match of ``text``'s bytes against the compiled grammar (no JSON re-parsing)."""
    m = llguidance.LLMatcher(_byte_tokenizer(), constraint.grammar, log_level=0)
    data = list(text.encode("utf-8"))
    return not m.is_error() and m.try_consume_tokens(data) == len(data) and m.is_accepting()


# ----------------------------------------------------------------------------- internals
def _checked(kind: str, source: str, grammar: str, name: str) -> Constraint:
    """Compile once on a 256-byte vocabulary: reports syntax errors, unsupported features and
    empty languages at construction. llguidance's fuel limits bound the work (no hang)."""
    what = {"regex": "regex", "json_schema": "JSON schema", "choices": "choices", "lark": "Lark grammar",
            "gbnf": "GBNF grammar"}[kind]
    m = engine_call(what, llguidance.LLMatcher, _byte_tokenizer(), grammar, log_level=0, limits=_limits())
    if not m.is_error():
        engine_call(what, m.compute_bitmask)  # first mask: an empty language shows up here
    if m.is_error():
        err = m.get_error()
        if _is_dead_end(err):  # the very first mask is empty: no text can ever match
            raise GrammarError.coded("matches_nothing", what=what)
        raise engine_error(what, source, err)
    return Constraint(kind, source, grammar, name)


def _limits() -> llguidance.LLParserLimits:
    # llguidance's defaults (~20 ms of lexer work to build, a few ms per mask at most), with
    # terse errors: verbose ones dump parser state that means nothing to a user.
    return llguidance.LLParserLimits(verbose_errors=False)


def engine_error(what: str, source: str, err: str) -> GrammarError:
    """llguidance errors are multi-line (regex caret diagrams, parser dumps); keep the gist, as a
    coded error (the engine's own detail stays as it wrote it)."""
    lines = [ln.strip() for ln in err.strip().splitlines() if ln.strip()]
    detail = next((ln[len("error: "):] for ln in lines if ln.startswith("error: ")), None)
    head = _clean(lines[0]) if lines else "unknown error"
    if detail:  # a regex syntax error, inside a regex, a Lark grammar or a schema "pattern"
        bad = re.search(r'invalid regex "(.*?)" \(', head)
        shown = source if what == "regex" else (bad.group(1) if bad else "")
        where = f" '{_short(shown, 60)}'" if shown else ""
        if what == "regex" or bad:
            return GrammarError.coded("invalid_regex", where=where, detail=detail)
        return GrammarError.coded("grammar", what=what, detail=detail)   # (``where`` is shown for a regex only)
    if what in ("Lark grammar", "GBNF grammar", "choices"):
        m = re.match(r"(?:at )?(\d+)\((\d+)\):\s*(.*)", head)
        if m:
            return GrammarError.coded("grammar_at", what=what, line=m.group(1), column=m.group(2), detail=m.group(3))
    return GrammarError.coded("grammar", what=what, detail=_short(head, 200))


def _is_dead_end(err: str) -> bool:
    """llguidance reports "no token can extend the text" as an error whose first line is the
    stop reason ``NoExtension``/``NoExtensionBias`` (or an empty message)."""
    return not err.strip() or err.strip().split()[0].startswith("NoExtension")


def _clean(line: str) -> str:
    return re.sub(r"^(Parser Error|Error|error):\s*", "", line).strip()


def _short(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _need_text(what: str, text: Any) -> None:
    if not isinstance(text, str):
        raise GrammarError(f"the {what} must be text, got {type(text).__name__}")
    if not text.strip():
        raise GrammarError.coded("empty_source", what=what)
    check_text_size(what, text)


def check_text_size(what: str, text: str) -> None:
    """At most ``DECODING_LAB_MAX_GRAMMAR_CHARS`` characters, and real text (a lone surrogate,
    from the API or invalid UTF-8 on a command line, would fail inside the engine), before any
    engine work."""
    try:
        limits.check_text_size(what, text)
    except limits.SettingsError as e:
        raise GrammarError(str(e)) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise GrammarError(f"the {what} is not valid text: character {e.start} is a lone surrogate "
                           f"({text[e.start]!r})") from None


def check_json_depth(text: str) -> None:
    """Refuse JSON nested deeper than ``DECODING_LAB_MAX_GRAMMAR_DEPTH``, counted on the text
    (brackets outside strings) without parsing it, so no parser can recurse too deep.

        >>> check_json_depth('{"a": [1, {"b": "[[["}]}')    # 3 levels; brackets in strings do not count
    """
    cap = limits.current().max_grammar_depth
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > cap:
                raise GrammarError(f"the JSON schema is nested more than {cap} levels deep "
                                   f"({limits.PREFIX}MAX_GRAMMAR_DEPTH)")
        elif ch in "]}":
            depth -= 1


def engine_call(what: str, fn: Any, *args: Any, **kw: Any) -> Any:
    """Call into the grammar engine; a Rust panic or a too-deep recursion becomes one line.

    A panic inside llguidance reaches Python as ``pyo3_runtime.PanicException``, which derives
    from ``BaseException`` (not ``Exception``), so it is caught here by elimination."""
    try:
        return fn(*args, **kw)
    except RecursionError:
        raise GrammarError(f"the {what} is nested too deep for the grammar engine") from None
    except (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError):
        raise
    except (ValueError, TypeError):
        raise
    except BaseException as e:  # noqa: BLE001  (the engine's panic: see above)
        raise GrammarError(f"the grammar engine could not handle this {what}: {_short(str(e), 120)}") from None


def _as_text(text: Any, kind: str) -> str:
    if not isinstance(text, str):
        raise GrammarError(f"a {kind} constraint must be given as text, got {type(text).__name__}")
    return text


def _schema_order(value: Any, schema: Any) -> Any:
    """Re-key objects in the order the schema lists their properties (llguidance writes
    and checks properties in that order; JSON itself does not care)."""
    if not isinstance(schema, dict):
        return value
    branches = [schema] + [b for k in ("anyOf", "oneOf", "allOf") for b in schema.get(k, []) if isinstance(b, dict)]
    if isinstance(value, dict):
        props: dict[str, Any] = {}
        for b in branches:
            for k, sub in (b.get("properties") or {}).items():
                props.setdefault(k, sub)
        keys = [k for k in props if k in value] + [k for k in value if k not in props]
        return {k: _schema_order(value[k], props.get(k)) for k in keys}
    if isinstance(value, list):
        items = next((b["items"] for b in branches if isinstance(b.get("items"), dict)), None)
        return [_schema_order(v, items) for v in value]
    return value


class _Bytes:
    """A 256-token vocabulary (one token per byte) + EOS: lets llguidance check raw text."""

    eos_token_id = 256
    bos_token_id = None
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    special_token_ids = [256]

    def __call__(self, s: bytes | str) -> list[int]:
        return list(s.encode("utf-8") if isinstance(s, str) else s)


_BYTE_TOKENIZER: llguidance.LLTokenizer | None = None


def _byte_tokenizer() -> llguidance.LLTokenizer:
    global _BYTE_TOKENIZER
    if _BYTE_TOKENIZER is None:  # read-only after creation; a race only builds it twice
        _BYTE_TOKENIZER = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Bytes()))
    return _BYTE_TOKENIZER
