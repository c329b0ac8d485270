"""Command line: ``python -m decoding_lab {models,step,generate} [--json]``.

Examples::

    python -m decoding_lab models
    python -m decoding_lab step --prompt "The capital of France is" --raw --temperature 0.7 --top-p 0.9 --steps 5 --json
    python -m decoding_lab generate --strategy beam --num-beams 4 --length-penalty 1.0 --prompt "Write a haiku"

A stage whose flag is not given is off (no hidden defaults). Bad values exit with
status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from decoding_lab.errors import UserError
from decoding_lab.params import PARAMS, parse_bias_text
from decoding_lab.engines import DEFAULTS_PRESETS
from decoding_lab.settings import engine_defaults
from decoding_lab.settings import PRESET_ORDERS, SamplingSettings
from decoding_lab.backends.base import LanguageModel


class CliError(UserError):
    """A user error: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        raise CliError(f"{self.prog}: {message}")


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="bundled model name or a Hub id (default: the bundled default)")
    p.add_argument("--prompt", default="The capital of France is", help="prompt text")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--chat", dest="chat", action="store_true", default=None, help="apply the chat template")
    mode.add_argument("--raw", dest="chat", action="store_false", help="use the prompt as is")
    _add_settings(p)
    p.add_argument("--order", default=None,
                   help=f"a preset ({', '.join(PRESET_ORDERS)}) or comma-separated stage names (default transformers)")
    p.add_argument("--engine-defaults", default=None, choices=list(DEFAULTS_PRESETS),
                   help="start from what this engine uses when a request sets nothing (its order and defaults; "
                        "for transformers and vllm, the model's generation_config); the flags you give override it")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _add_grammar(p)


def _add_settings(p: argparse.ArgumentParser) -> None:
    """One flag per row of the parameter table (``decoding_lab.params``). A flag not given is
    ``None``: off, or the engine's default with ``--engine-defaults``."""
    for param in PARAMS.values():
        dest = param.key
        if param.kind == "bool":
            p.add_argument(param.cli_flag, dest=dest, action="store_const", const=True, default=None, help=param.help)
        elif param.kind == "bias":
            p.add_argument(param.cli_flag, dest=dest, default=None, metavar="ID:BIAS,…", help=param.help)
        else:
            p.add_argument(param.cli_flag, dest=dest, type=int if param.integer else float, default=None,
                           help=param.help)


def _add_grammar(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--json-schema", metavar="FILE", help="constrain output to a JSON Schema (file)")
    g.add_argument("--regex", metavar="PATTERN", help="constrain output to a regular expression")
    g.add_argument("--choices", metavar="A,B,C", help="constrain output to one of these strings")
    g.add_argument("--grammar", metavar="FILE", help="constrain output to a Lark / GBNF grammar (file)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m decoding_lab", description="Decoding Lab: see how decoding turns "
                     "a next-token distribution into text.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    m = sub.add_parser("models", help="list the models")
    m.add_argument("--json", action="store_true")
    m.add_argument("--prepare", action="store_true", help="load every bundled model once to build its cache")

    s = sub.add_parser("step", help="step through decoding one token at a time")
    _add_common(s)
    s.add_argument("--steps", type=int, default=8, help="how many tokens to step")
    s.add_argument("--top-n", type=int, default=10, help="candidates to show per step")

    g = sub.add_parser("generate", help="run a complete strategy")
    _add_common(g)
    g.add_argument("--strategy", choices=["greedy", "beam", "sample"], default="greedy")
    g.add_argument("--num-beams", type=int, default=4)
    g.add_argument("--length-penalty", type=float, default=1.0)
    g.add_argument("--early-stopping", choices=["true", "false", "never"], default="false")
    g.add_argument("--num-return-sequences", type=int, default=1)
    g.add_argument("--num-samples", type=int, default=1)

    _add_extra_commands(sub)
    return parser


def _add_extra_commands(sub: Any) -> None:
    """The experiments' and the benchmark's subcommands register here (imported when the
    parser is built, so ``step`` and ``generate`` do not pay for them at import time)."""
    from decoding_lab import bench
    from decoding_lab.experiments import cli as experiments_cli
    for mod in (experiments_cli, bench):
        mod.register(sub)


# ---------------------------------------------------------------------------- helpers
def settings_from_args(a: argparse.Namespace, lm: LanguageModel | None = None) -> SamplingSettings:
    """The flags given, over the engine's defaults (``--engine-defaults``) or over "off"."""
    given = {k: getattr(a, k) for k in PARAMS if getattr(a, k, None) is not None}
    if "logit_bias" in given:
        given["logit_bias"] = parse_bias_text(given["logit_bias"])
    name = getattr(a, "engine_defaults", None)
    if name:
        base = engine_defaults(name, lm.generation_config if lm is not None else None)
        return base.replace(**given, **({"order": a.order} if a.order else {}))
    return SamplingSettings(**given, order=a.order or "transformers")


def _model(a: argparse.Namespace) -> Any:
    from decoding_lab.models import DEFAULT_MODEL, get_model
    return get_model(a.model or DEFAULT_MODEL)


def _prompt_ids(lm: LanguageModel, a: argparse.Namespace) -> list[int]:
    chat = lm.has_chat_template if a.chat is None else a.chat
    return lm.encode_prompt(a.prompt, chat)


def _read(path: str, what: str) -> str:
    from decoding_lab.limits import read_text_file
    return read_text_file(path, what)   # a regular file, size-capped, UTF-8


def _constraint(a: argparse.Namespace) -> Any:
    """The constraint of --json-schema FILE, --regex, --choices a,b,c or --grammar FILE, checked
    (None without one). It needs no model, so a bad one is refused before a model loads."""
    if all(getattr(a, k, None) is None for k in ("json_schema", "regex", "choices", "grammar")):
        return None   # (an empty --choices "" is given, and refused below: never silently unconstrained)
    from decoding_lab.grammar import build_constraint
    if a.json_schema is not None:
        return build_constraint("json_schema", _read(a.json_schema, "JSON schema"))
    if a.regex is not None:
        return build_constraint("regex", a.regex)
    if a.choices is not None:
        return build_constraint("choices", [c for c in a.choices.split(",") if c.strip()])
    text = _read(a.grammar, "grammar")
    return build_constraint("gbnf" if "::=" in text else "lark", text)


def _grammar_stages(lm: LanguageModel, constraint: Any) -> dict:
    """The grammar mask of ``constraint`` on ``lm``'s vocabulary (none without a constraint)."""
    if constraint is None:
        return {}
    from decoding_lab.grammar import GrammarMask
    from decoding_lab.grammar.compile import bounded
    return {"grammar": bounded(GrammarMask, constraint, lm)}


def _check_positive(name: str, value: int, lo: int = 1) -> None:
    if value < lo:
        raise CliError(f"{name} must be >= {lo}, got {value}")


def _emit(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False))


# ---------------------------------------------------------------------------- commands
def cmd_models(a: argparse.Namespace) -> None:
    from decoding_lab.models import BUNDLED, get_model, list_models
    if a.prepare:
        for name in BUNDLED:
            lm = get_model(name)
            print(f"{name}: ready ({lm.source}, {lm.load_seconds:.1f} s)", file=sys.stderr)
    rows = list_models()
    if a.json:
        _emit({"models": rows})
        return
    for r in rows:
        flags = ", ".join(k for k in ("installed", "cached") if r.get(k))
        print(f"{r['name']:<24} {r.get('description', '')}  [{flags or 'not installed'}]")


def cmd_step(a: argparse.Namespace) -> None:
    from decoding_lab.stepper import Stepper
    _check_positive("--steps", a.steps)
    _check_positive("--max-new-tokens", a.max_new_tokens)
    _check_positive("--top-n", a.top_n)
    settings = settings_from_args(a)   # bad flags fail before the model loads
    constraint = _constraint(a)        # and so does a bad constraint
    lm = _model(a)
    if a.engine_defaults in ("transformers", "vllm"):   # these read the model's generation_config
        settings = settings_from_args(a, lm)
    stepper = Stepper(lm, _prompt_ids(lm, a), settings, top_n=a.top_n, extra_stages=_grammar_stages(lm, constraint),
                      max_new_tokens=a.max_new_tokens)
    for _ in range(min(a.steps, a.max_new_tokens)):
        if stepper.finished:
            break
        t = stepper.step()
        if a.json:
            _emit(t.to_json())
            continue
        stages = "  ".join(f"{r.name}:{r.kept}" for r in t.stages) or "(no stages)"
        dh = "-" if t.dH_dT is None else f"{t.dH_dT:.3f}"
        print(f"[{t.step:>3}] {t.chosen_token!r:<14} p={t.chosen_p_final:.3f} rank={t.chosen_rank:<5} "
              f"H={t.entropy:.3f} dH/dT={dh} kept {stages}")
    if not a.json:
        print("\n" + stepper.prompt_text() + stepper.text())


def cmd_generate(a: argparse.Namespace) -> None:
    _check_positive("--max-new-tokens", a.max_new_tokens)
    settings = settings_from_args(a)
    if a.strategy == "sample" and settings.greedy:
        raise CliError("sampling needs --temperature > 0; use --strategy greedy for temperature 0")
    from decoding_lab import strategies
    constraint = _constraint(a)
    lm = _model(a)
    if a.engine_defaults in ("transformers", "vllm"):   # these read the model's generation_config
        settings = settings_from_args(a, lm)
    ids = _prompt_ids(lm, a)
    extra = _grammar_stages(lm, constraint)
    if a.strategy == "greedy":
        result = strategies.greedy(lm, ids, settings.replace(temperature=0.0), a.max_new_tokens, extra_stages=extra)
    elif a.strategy == "beam":
        _check_positive("--num-beams", a.num_beams)
        _check_positive("--num-return-sequences", a.num_return_sequences)
        if a.num_return_sequences > a.num_beams:
            raise CliError(f"--num-return-sequences ({a.num_return_sequences}) cannot exceed --num-beams ({a.num_beams})")
        early: bool | str = {"true": True, "false": False, "never": "never"}[a.early_stopping]
        result = strategies.beam_search(lm, ids, settings.replace(temperature=0.0), a.max_new_tokens,
                                        num_beams=a.num_beams, length_penalty=a.length_penalty, early_stopping=early,
                                        num_return_sequences=a.num_return_sequences, extra_stages=extra)
    else:
        _check_positive("--num-samples", a.num_samples)
        result = strategies.sample(lm, ids, settings, a.max_new_tokens, n=a.num_samples, extra_stages=extra)
    if a.json:
        _emit(result.to_json())
        return
    for i, seq in enumerate(result.sequences):
        print(f"--- {a.strategy} #{i}  score={seq.score:.3f}  tokens={len(seq.token_ids)}")
        print(seq.text)


COMMANDS = {"models": cmd_models, "step": cmd_step, "generate": cmd_generate}


def _quiet_libraries() -> None:
    """Keep stderr for our one-line messages: no weight-loading progress bars."""
    import os
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def main(argv: Sequence[str] | None = None) -> int:
    _quiet_libraries()
    try:
        args = build_parser().parse_args(argv)
        handler = COMMANDS.get(args.command) or getattr(args, "handler", None)
        handler(args)
        return 0
    except UserError as e:
        print(f"error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("error: out of memory", file=sys.stderr)
        return 2
