"""Compare's export is enough to run it again: through gradio_client, run three columns,
export, then read only the JSON file and re-run its columns with the core (no app code),
demanding the same tokens."""

from __future__ import annotations

import json

import pytest

from decoding_lab.settings import SamplingSettings
from decoding_lab.strategies import STRATEGIES

pytestmark = pytest.mark.real

PROMPT = "Name a colour of the sea."


def test_an_exported_file_alone_reproduces_its_run(client):
    args = {"model": "smollm2-135m-instruct", "prompt": PROMPT, "chat": "chat", "ncols": 3, "max_new_tokens": 5,
            "c0_strategy": "greedy", "c1_strategy": "beam", "c1_num_beams": 2,
            "c2_strategy": "sample", "c2_temperature": 1.2, "c2_top_p": 0.9, "c2_seed": 11}
    client.submit(**args, api_name="/compare_run").result(timeout=600)
    files = client.predict(api_name="/compare_export")
    files = files["value"] if isinstance(files, dict) else files
    path = next(f for f in files if f.endswith(".json"))
    with open(path, encoding="utf-8") as f:
        data = json.load(f)

    # what was run, in the file: the prompt text, the model, the format, every column's settings
    assert (data["model"], data["prompt"], data["chat"], data["max_new_tokens"]) == \
        ("smollm2-135m-instruct", PROMPT, True, 5)
    assert [c["strategy"] for c in data["columns"]] == ["greedy", "beam", "sample"]
    assert data["columns"][1]["num_beams"] == 2 and data["columns"][2]["settings"]["seed"] == 11

    # the CSV names the model, prompt and format on every row
    import csv
    with open(next(f for f in files if f.endswith(".csv")), encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 and all((r["model"], r["prompt"], r["format"]) == ("smollm2-135m-instruct", PROMPT, "chat")
                                  for r in rows)

    # the core, from the file alone
    from decoding_lab.models import get_model
    lm = get_model(data["model"])
    ids = lm.encode_prompt(data["prompt"], data["chat"])
    assert len(data["runs"]) == 3
    for run in data["runs"]:
        col = data["columns"][run["column"]]
        kw = {k: col[k] for k in ("num_beams", "length_penalty") if k in col}
        again = STRATEGIES[col["strategy"]](lm, ids, SamplingSettings.from_json(col["settings"]),
                                            max_new_tokens=data["max_new_tokens"], **kw)
        assert again.best.token_ids == run["sequences"][0]["token_ids"], run["label"]
