"""Every stage's name, in one place.

The stages built from ``SamplingSettings`` are the classes in ``STAGE_CLASSES``
(``decoding_lab.stages``). Three more need inputs the settings do not hold, so they are
built by their own packages and handed to the chain as ``extra`` stages: the grammar
mask and token healing (``decoding_lab.grammar``) and the verifier tilt
(``decoding_lab.multisample.tilt``). Their names are registered here, so an order such as
``"grammar,top-k,temperature"`` is understood everywhere without importing those packages.

    >>> "grammar" in STAGE_NAMES and "top-p" in STAGE_NAMES
    True
"""

from __future__ import annotations

#: Settings-built stages, in the order the Explorer lists them.
SETTINGS_STAGE_NAMES: tuple[str, ...] = (
    "temperature", "top-k", "top-p", "min-p", "typical-p", "top-n-sigma", "xtc", "repetition-penalty",
    "presence-penalty", "frequency-penalty", "no-repeat-ngram", "dry", "logit-bias")

#: Stages that live in their own packages (they need a grammar or a verifier).
EXTRA_STAGE_NAMES: tuple[str, ...] = ("grammar", "healing", "verifier-tilt")

STAGE_NAMES: tuple[str, ...] = SETTINGS_STAGE_NAMES + EXTRA_STAGE_NAMES
