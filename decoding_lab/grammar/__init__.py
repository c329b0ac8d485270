"""Grammar-constrained decoding: let the model write only texts of a formal language.

    >>> from decoding_lab.grammar import json_schema, GrammarMask        # doctest: +SKIP
    >>> mask = GrammarMask(json_schema({"type": "integer"}), lm)          # doctest: +SKIP
    >>> stepper = Stepper(lm, ids, settings, extra_stages={"grammar": mask})   # doctest: +SKIP

* ``constraints`` — build a ``Constraint`` from a regex, a JSON Schema, a list of choices or
  a Lark / GBNF grammar (checked at once: a bad one raises ``GrammarError``); presets;
  ``validate_output`` for finished texts.
* ``stage`` — ``GrammarMask``, the stage that turns the grammar into a token mask.
* ``healing`` — token healing at the prompt boundary.
* ``vocab`` — ``GrammarTokenizer``, the model vocabulary as the engine sees it.
* ``bench`` — compile and mask times against the model's forward pass.

The engine is llguidance (Rust; masks in microseconds on CPU, rollback and cheap copies
built in). Nothing here parses regexes or builds automata by hand.
"""

from decoding_lab.grammar.constraints import (KINDS, PRESETS, Constraint, GrammarError, build_constraint, choices,
                                              gbnf, json_schema, lark, matches, preset, preset_prompt, regex,
                                              validate_output)
from decoding_lab.grammar.healing import Healing, HealingDemo, HealingMask, heal_prompt, healing_demo
from decoding_lab.grammar.stage import GrammarMask
from decoding_lab.grammar.vocab import GrammarTokenizer

__all__ = [
    "KINDS", "PRESETS", "Constraint", "GrammarError", "build_constraint", "choices", "gbnf", "json_schema", "lark",
    "matches", "preset", "preset_prompt", "regex", "validate_output", "GrammarMask", "GrammarTokenizer",
    "Healing", "HealingDemo", "HealingMask", "heal_prompt", "healing_demo", "benchmark_mask",
]


def benchmark_mask(*args, **kwargs):
    """See ``decoding_lab.grammar.bench.benchmark_mask`` (imported lazily: it loads the forward helpers)."""
    from decoding_lab.grammar.bench import benchmark_mask as run

    return run(*args, **kwargs)
