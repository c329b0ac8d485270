"""The command line: bad input exits 2 with one line and no traceback; real runs print JSON.

The cases run ``cli.main(argv)`` in this process (``cli_in_process``); the smoke tests at the end
start the real entry point, ``python -m decoding_lab``, once per subcommand, and check its exit
code and what it writes to each stream."""

from __future__ import annotations

import json

import pytest

from cli_helpers import ROOT, CliResult, cli_in_process, cli_process


def run_cli(*args: str) -> CliResult:
    return cli_in_process(*args)


@pytest.mark.parametrize("args,needle", [
    (["step", "--temperature", "-1"], "temperature"),
    (["step", "--top-p", "1.5"], "top-p"),
    (["step", "--top-k", "-5"], "top-k"),
    (["step", "--order", "temperature,bogus"], "bogus"),
    (["step", "--temperature", "abc"], "invalid float"),
    (["step", "--steps", "0"], "--steps"),
    (["generate", "--strategy", "sample", "--temperature", "0"], "temperature"),
    (["generate", "--strategy", "nope"], "invalid choice"),
    (["step", "--model", "no-such-owner/no-such-model-xyz"], "could not"),
    (["step", "--model", "../../etc/passwd"], ""),
    (["frobnicate"], "invalid choice"),
    (["step", "--top-k", "1.5"], "invalid int"),
    (["step", "--xtc-probability", "0.5"], "only llama.cpp"),
    (["step", "--dry-allowed-length", "0"], "DRY allowed length"),
    (["step", "--logit-bias", "12:abc"], "token id:bias"),
])
def test_bad_input_is_one_clear_line(args, needle):
    r = run_cli(*args)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert needle.lower() in lines[0].lower()


def test_models_lists_bundled():
    r = run_cli("models", "--json")
    assert r.returncode == 0, r.stderr
    names = [m["name"] for m in json.loads(r.stdout)["models"]]
    assert "smollm2-135m-instruct" in names and "gemma-3-270m" in names


@pytest.mark.real
def test_step_json_on_the_default_model():
    r = run_cli("step", "--prompt", "The capital of France is", "--raw", "--temperature", "0.7", "--top-p", "0.9",
                "--steps", "3", "--seed", "1", "--json")
    assert r.returncode == 0, r.stderr
    steps = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(steps) == 3
    for s in steps:
        assert {"chosen_token_id", "chosen_token", "entropy", "dH_dT", "stages", "top"} <= set(s)
        assert [st["name"] for st in s["stages"]] == ["temperature", "top-p"]
        for st in s["stages"]:
            assert {"name", "kept", "removed_mass", "entropy_after"} <= set(st)
        assert {"token_id", "token", "logit", "p_raw", "p_final"} <= set(s["top"][0])
    # same seed, same tokens
    again = run_cli("step", "--prompt", "The capital of France is", "--raw", "--temperature", "0.7", "--top-p", "0.9",
                    "--steps", "3", "--seed", "1", "--json")
    assert [json.loads(x)["chosen_token_id"] for x in again.stdout.splitlines()] == [s["chosen_token_id"] for s in steps]


@pytest.mark.real
def test_generate_json_greedy_chat():
    r = run_cli("generate", "--prompt", "What is the capital of France?", "--chat", "--strategy", "greedy",
                "--max-new-tokens", "12", "--json")
    assert r.returncode == 0, r.stderr
    seqs = json.loads(r.stdout)["sequences"]
    assert len(seqs) == 1 and "Paris" in seqs[0]["text"]
    assert all(isinstance(t, int) for t in seqs[0]["token_ids"]) and "score" in seqs[0]


@pytest.mark.real
def test_generate_with_a_regex_constraint(tmp_path):
    r = run_cli("generate", "--prompt", "Pick a number from 1 to 9.", "--chat", "--strategy", "sample",
                "--temperature", "1.0", "--num-samples", "3", "--regex", "[1-9]", "--max-new-tokens", "4", "--json")
    assert r.returncode == 0, r.stderr
    texts = [s["text"] for s in json.loads(r.stdout)["sequences"]]
    assert len(texts) == 3 and all(t in list("123456789") for t in texts), texts


@pytest.mark.real
def test_step_with_a_json_schema_file(tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], '
                      '"additionalProperties": false}')
    r = run_cli("step", "--prompt", "Reply in JSON.", "--chat", "--temperature", "0", "--json-schema", str(schema),
                "--steps", "20", "--json")
    assert r.returncode == 0, r.stderr
    steps = [json.loads(line) for line in r.stdout.splitlines()]
    assert any(st["name"] == "grammar" for st in steps[0]["stages"])
    assert steps[-1]["finished"], "the grammar ends the object and then allows only the end token"
    text = "".join(s["chosen_token"] for s in steps if not s["finished"])
    assert json.loads(text) in ({"ok": True}, {"ok": False})


def test_bad_grammar_inputs_are_one_line(tmp_path):
    r = run_cli("step", "--regex", "[a-")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "regex" in r.stderr.lower()
    r = run_cli("step", "--json-schema", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "cannot read" in r.stderr


@pytest.mark.real
def test_llama_cpp_samplers_from_the_command_line():
    """Every row of the parameter table has a flag; the four llama.cpp samplers run in its order."""
    r = run_cli("step", "--prompt", "Once upon a time", "--raw", "--order", "llama.cpp", "--temperature", "0.9",
                "--dynatemp-range", "0.5", "--top-n-sigma", "2", "--xtc-probability", "1", "--xtc-threshold", "0.05",
                "--dry-multiplier", "0.8", "--logit-bias", "13:-100", "--steps", "3", "--seed", "2", "--json")
    assert r.returncode == 0, r.stderr
    steps = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(steps) == 3
    names = [st["name"] for st in steps[0]["stages"]]
    assert names == ["logit-bias", "dry", "top-n-sigma", "xtc", "temperature"]
    temp = steps[0]["stages"][-1]
    assert temp["params"]["delta"] == 0.5 and 0.4 <= temp["extra"]["T_used"] <= 1.4
    assert all(s["chosen_token_id"] != 13 for s in steps)


# ----------------------------------------------------------------------------- the real entry point
# One child process per subcommand: the module runs as a program, exits with the code the
# in-process cases above see, and keeps stdout for results and stderr for the one-line error.
# Each start pays torch's and transformers' imports (5-6 s here), so they run in the model lane.
SHIPPED_SWEEP = sorted((ROOT / "assets" / "sweeps").glob("*.json"))


def one_error_line(r: CliResult) -> str:
    lines = r.error_lines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, (r.returncode, r.stderr)
    assert r.stdout == ""
    return lines[0]


@pytest.mark.real
def test_entry_point_step_prints_json_lines():
    r = cli_process("step", "--prompt", "The capital of France is", "--raw", "--temperature", "0", "--steps", "2",
                    "--json")
    assert r.returncode == 0, r.stderr
    steps = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(steps) == 2 and all("chosen_token_id" in s for s in steps)
    assert "Traceback" not in r.stderr


@pytest.mark.real
def test_entry_point_models_lists_to_stdout():
    r = cli_process("models", "--json")
    assert r.returncode == 0, r.stderr
    assert {"smollm2-135m-instruct", "gemma-3-270m"} <= {m["name"] for m in json.loads(r.stdout)["models"]}


@pytest.mark.real
@pytest.mark.parametrize("args,needle", [
    (["generate", "--strategy", "nope"], "invalid choice"),
    (["sweep", "--task", "no-such-task", "--out", "{tmp}/s.json"], "no-such-task"),
    (["calibrate", "--problems", "-3", "--out", "{tmp}/c.json"], "at least 4 problems"),
    (["extract-compare", "--n", "0", "--out", "{tmp}/e.json"], "number of samples n"),
    (["bench", "--only", "no-such-section"], "no-such-section"),
])
def test_entry_point_bad_input_is_one_line_on_stderr(args, needle, tmp_path):
    line = one_error_line(cli_process(*(a.replace("{tmp}", str(tmp_path)) for a in args)))
    assert needle.lower() in line.lower(), line
    assert not any(tmp_path.iterdir()), "a refused command wrote a file"


@pytest.mark.real
@pytest.mark.skipif(not SHIPPED_SWEEP, reason="no shipped sweep file")
def test_entry_point_sweep_report_prints_the_table():
    r = cli_process("sweep-report", str(SHIPPED_SWEEP[0]))
    assert r.returncode == 0 and r.stdout.strip() and "Traceback" not in r.stderr, r.stderr
