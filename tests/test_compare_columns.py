"""Compare's columns as data (no model, no browser): which knobs a strategy reads, and the
temperature range its controls offer."""

from __future__ import annotations

import json

import pytest

from decoding_lab.params import PARAMS
from decoding_lab.ui.common.state import DEFAULTS
from decoding_lab.ui.compare.handlers import ColumnSpec
from decoding_lab.ui.compare.layout import SAMPLE_ONLY


def column(strategy: str, **kw):
    return {**DEFAULTS, "strategy": strategy, "order": "transformers", "num_beams": 4, "length_penalty": 1.0, **kw}


def test_sampling_only_knobs_are_every_warper():
    # every truncation stage, temperature and its dynamic range, XTC and the seed; no penalty
    assert {"temperature", "seed", "top_k", "top_p", "min_p", "typical_p", "top_n_sigma", "xtc_probability"} \
        <= set(SAMPLE_ONLY)
    assert not {k for k in SAMPLE_ONLY if PARAMS[k].group == "penalties"}


@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_hidden_knobs_cannot_act_on_greedy_or_beam(strategy):
    # values left in the hidden boxes (a cut, an emptied seed, a bad top-p) are not read
    spec = ColumnSpec.from_values(column(strategy, temperature=1.7, top_k=3, top_p=1.5, min_p=0.2, seed=None,
                                         repetition_penalty=1.3))
    s = spec.settings
    assert (s.temperature, s.top_k, s.top_p, s.min_p) == (0.0, 0, 1.0, 0.0)
    assert s.repetition_penalty == 1.3  # a processor: it still applies


def test_sampling_reads_them_and_checks_them():
    s = ColumnSpec.from_values(column("sample", temperature=1.7, top_k=3, min_p=0.2, seed=5)).settings
    assert (s.temperature, s.top_k, s.min_p, s.seed) == (1.7, 3, 0.2, 5)
    with pytest.raises(Exception, match="top-p"):
        ColumnSpec.from_values(column("sample", top_p=1.5))


def test_a_request_survives_its_json():
    from decoding_lab.ui.compare.request import CompareRequest
    v = {"model": "smollm2-135m-instruct", "prompt": "Hi", "chat": "raw", "ncols": 3, "max_new_tokens": 7}
    for i, col in enumerate([column("greedy"), column("beam", num_beams=3, length_penalty=0.5),
                             column("sample", temperature=0.7, min_p=0.1, seed=4)]):
        v.update({f"c{i}_{k}": x for k, x in col.items()})
    req = CompareRequest.from_inputs(v)
    data = req.to_json(seeds=[None, None, 9])  # the seed a sampling column really drew with wins
    back = CompareRequest.from_json(json.loads(json.dumps(data)))
    assert back.columns[:2] == req.columns[:2] and (back.prompt, back.chat) == ("Hi", False)
    assert back.columns[2].settings == req.columns[2].settings.replace(seed=9)
