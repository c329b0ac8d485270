"""All decoding stages, by family. ``STAGE_CLASSES`` maps a stage's name to its class."""

from decoding_lab.stages.base import History, SettingsError, Stage, StageRecord, make_record
from decoding_lab.stages.penalties import (FrequencyPenalty, LogitBias, NoRepeatNGram, PresencePenalty,
                                           RepetitionPenalty)
from decoding_lab.stages.temperature import Temperature
from decoding_lab.stages.truncation import MinP, TopK, TopP, TypicalP

STAGE_CLASSES: dict[str, type[Stage]] = {
    cls.name: cls
    for cls in (Temperature, TopK, TopP, MinP, TypicalP, RepetitionPenalty, PresencePenalty,
                FrequencyPenalty, NoRepeatNGram, LogitBias)
}

__all__ = [
    "History", "SettingsError", "Stage", "StageRecord", "make_record", "Temperature", "TopK", "TopP", "MinP",
    "TypicalP", "RepetitionPenalty", "PresencePenalty", "FrequencyPenalty", "NoRepeatNGram", "LogitBias",
    "STAGE_CLASSES",
]
