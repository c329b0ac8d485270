"""All decoding stages, by family. ``STAGE_CLASSES`` maps a stage's name to its class.

* ``temperature``: temperature, and llama.cpp's dynamic temperature (a range around T);
* ``truncation``: top-k, top-p, min-p, typical-p, top-n-sigma;
* ``xtc``: exclude the top choices (llama.cpp's XTC);
* ``penalties``: repetition, presence, frequency, no-repeat n-gram, logit bias;
* ``dry``: "don't repeat yourself", a penalty on extending a repeated sequence.

Every class here builds itself from ``SamplingSettings`` (``from_settings``); its knobs are
rows of ``decoding_lab.params``. The stages built elsewhere (grammar mask, token healing,
verifier tilt) are named in ``registry``.
"""

from decoding_lab.stages.base import History, SettingsError, Stage, StageRecord, make_record
from decoding_lab.stages.dry import DRY
from decoding_lab.stages.penalties import (FrequencyPenalty, LogitBias, NoRepeatNGram, PresencePenalty,
                                           RepetitionPenalty)
from decoding_lab.stages.registry import SETTINGS_STAGE_NAMES
from decoding_lab.stages.temperature import Temperature
from decoding_lab.stages.truncation import MinP, TopK, TopNSigma, TopP, TypicalP
from decoding_lab.stages.xtc import XTC

_CLASSES = {cls.name: cls for cls in (Temperature, TopK, TopP, MinP, TypicalP, TopNSigma, XTC, RepetitionPenalty,
                                      PresencePenalty, FrequencyPenalty, NoRepeatNGram, DRY, LogitBias)}
#: name -> class, in the registry's order (a new class must also be named in ``registry``)
STAGE_CLASSES: dict[str, type[Stage]] = {name: _CLASSES[name] for name in SETTINGS_STAGE_NAMES}

__all__ = [
    "History", "SettingsError", "Stage", "StageRecord", "make_record", "Temperature", "TopK", "TopP", "MinP",
    "TypicalP", "TopNSigma", "XTC", "RepetitionPenalty", "PresencePenalty", "FrequencyPenalty", "NoRepeatNGram",
    "DRY", "LogitBias", "STAGE_CLASSES",
]
