"""The recorded tilted run (``multisample.tilt_run``) on the tiny random model, and the reading of the
shipped CTD result (``multisample.ctd_report``). Fast: no real model."""

from __future__ import annotations

import math

import pytest

from decoding_lab.experiments import ctd_report as R
from decoding_lab.experiments import sweep
from decoding_lab.experiments.calibration import fit_ctd
from decoding_lab.tasks.sets import Problem, Task
from decoding_lab.experiments.tilt_run import TiltConfig, TiltRun, first_difference, iter_tilted, run_tilted
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.stepper import Stepper


class HasNine(Task):
    """A toy task for the tiny model: right when token <9> appears in the generated text."""

    name = "has-nine"

    def problems(self, count: int, seed: int = 0, start: int = 0) -> list[Problem]:
        return [Problem(self.name, 0, "abc", "9")]

    def extract(self, problem: Problem, text: str) -> str | None:
        return "9" if "<9>" in text else None


TASK = HasNine()
PROBLEM = TASK.problems(1)[0]


@pytest.mark.parametrize("bad, word", [(dict(eta=-1), "eta"), (dict(temperature=5.5), "temperature"),
                                       (dict(top_m=9), "top-m"), (dict(rollout_tokens=0), "rollout tokens"),
                                       (dict(max_new_tokens=49), "max new tokens"), (dict(seed=1.5), "seed")])
def test_config_refuses_bad_values_by_name(bad, word):
    with pytest.raises(SettingsError, match=word):
        TiltConfig(**bad)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eta_zero_is_plain_sampling_token_for_token(tiny_lm, seed):
    cfg = TiltConfig(eta=0.0, temperature=0.8, seed=seed, max_new_tokens=10)
    run = run_tilted(tiny_lm, TASK, PROBLEM, cfg, chat=False)
    plain = Stepper(tiny_lm, tiny_lm.encode_prompt("abc"), SamplingSettings(temperature=0.8, seed=seed),
                    max_new_tokens=10)
    plain.steps(10)
    assert run.tokens == plain.tokens and len(run.tokens) >= 1
    assert run.rollouts == 0                                   # V is never computed at eta = 0
    assert all(c.V is None for st in run.steps for c in st.candidates)
    assert all(st.verifier_greedy is None for st in run.steps)


def test_greedy_tilt_records_z_plus_eta_v_and_picks_its_argmax(tiny_lm):
    cfg = TiltConfig(eta=3.0, temperature=0.0, top_m=4, rollout_tokens=3, max_new_tokens=6)
    run = run_tilted(tiny_lm, TASK, PROBLEM, cfg, chat=False)
    assert run.done and run.stop_reason in ("end of text", "token limit") and run.rollouts > 0
    for st in run.steps:
        assert len(st.candidates) == 4
        for c in st.candidates:
            assert c.V in (0.0, 1.0) and c.tilted == pytest.approx(c.z + 3.0 * c.V) and c.logit is None
            assert c.p == (1.0 if c.token_id == st.chosen_id else 0.0)
            assert c.rollout                                   # the text the verifier judged
        assert st.chosen_id == max(st.candidates, key=lambda c: c.tilted).token_id
    assert run.correct == ("<9>" in run.text)


def test_small_temperature_large_eta_is_verifier_greedy(tiny_lm):
    cfg = TiltConfig(eta=100.0, temperature=0.05, top_m=8, rollout_tokens=4, seed=3, max_new_tokens=6)
    run = run_tilted(tiny_lm, TASK, PROBLEM, cfg, chat=False)
    assert run.steps and all(st.verifier_greedy for st in run.steps)
    for st in run.steps:
        for c in st.candidates:
            assert c.logit == pytest.approx(c.tilted / 0.05)
    assert math.isclose(sum(c.p for c in run.steps[0].candidates), 1.0, abs_tol=1e-3)


def test_json_round_trip_and_first_difference(tiny_lm):
    cfg = TiltConfig(eta=5.0, temperature=0.0, top_m=3, rollout_tokens=2, max_new_tokens=4)
    run = run_tilted(tiny_lm, TASK, PROBLEM, cfg, chat=False)
    back = TiltRun.from_json(run.to_json())
    assert back == run
    plain = run_tilted(tiny_lm, TASK, PROBLEM, cfg.plain, chat=False)
    diff = first_difference(plain, run)
    assert diff is None or plain.tokens[:diff] == run.tokens[:diff]
    assert first_difference(plain, plain) is None


def test_stop_and_time_limit(tiny_lm):
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 2
    run = run_tilted(tiny_lm, TASK, PROBLEM, TiltConfig(eta=1.0, rollout_tokens=2, max_new_tokens=20), False, stop)
    assert run.stop_reason == "stopped" and len(run.steps) == 2 and run.done
    timed = run_tilted(tiny_lm, TASK, PROBLEM, TiltConfig(eta=1.0, max_new_tokens=20, time_limit=1e-9), False)
    assert timed.stop_reason == "time limit" and timed.steps == []
    steps = [len(r.steps) for r in iter_tilted(tiny_lm, TASK, PROBLEM, TiltConfig(eta=0.0, max_new_tokens=3), False)]
    assert steps[:-1] == list(range(1, len(steps)))           # one yield per step, then the verdict


# --------------------------------------------------------------------------- shipped CTD result
SWEEPS = sweep.shipped_results()
needs_ctd = pytest.mark.skipif(not SWEEPS or R.ctd_path_for(SWEEPS[0]) is None, reason="no shipped CTD file")


@needs_ctd
def test_shipped_fit_is_reproduced_from_the_sweeps_samples():
    ctd = R.load_ctd(R.ctd_path_for(SWEEPS[0]))
    x, y = R.calibration_samples(sweep.load_result(SWEEPS[0]), ctd["calibration_problems"])
    assert len(x) == ctd["fit"]["samples"] and sum(y) / len(y) == pytest.approx(ctd["fit"]["pass_rate"])
    fit = fit_ctd(x, y)
    for key in ("alpha", "beta", "slope", "temperature"):
        assert getattr(fit, key) == pytest.approx(ctd["fit"][key], rel=1e-9)
    assert round(fit.temperature, 3) == ctd["ctd_temperature"]
    bins = R.binned_rates(x, [float(v) for v in y], bins=8)
    assert sum(b["n"] for b in bins) == len(x) and [b["x"] for b in bins] == sorted(b["x"] for b in bins)


@needs_ctd
def test_headline_and_refusals(tmp_path):
    ctd = R.load_ctd(R.ctd_path_for(SWEEPS[0]))
    h = R.headline(ctd)
    assert h["first"]["k"] == 1 and h["last"]["k"] == ctd["n"] and h["T_ctd"] == ctd["ctd_temperature"]
    bad = tmp_path / "x.json"
    bad.write_text('{"format": "something else"}')
    with pytest.raises(SettingsError, match="not a decoding-lab-ctd"):
        R.load_ctd(bad)
    assert R.ctd_path_for(tmp_path / "lonely.json") is None
    with pytest.raises(SettingsError, match="no T = 0.5 cell"):
        R.calibration_samples(sweep.load_result(SWEEPS[0]), [0], temperature=0.5)


def test_core_stays_free_of_gradio_and_plotly():
    import subprocess
    import sys
    from pathlib import Path
    code = ("import sys, decoding_lab.experiments.tilt_run, decoding_lab.experiments.ctd_report, decoding_lab.bench; "
            "print(sorted(m for m in ('gradio', 'plotly') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.stdout.strip() == "[]"


def test_tilt_benchmark_runs_and_counts_rollouts(tiny_lm):
    from decoding_lab.bench import tilt_cost
    (row,) = tilt_cost(tiny_lm, tokens=3, configs=((2, 2),), rounds=1)
    assert row["top_m"] == 2 and row["rollout_tokens"] == 2 and row["tokens"] == [3]
    assert row["rollouts_per_token"] == 2.0                    # one rollout per candidate per step
    assert row["tilted_ms_per_token"] > 0 and row["stage_ms_per_token"] > 0 and row["ratio"] > 0
    # what does not depend on the machine's load: a tilted token calls the model more than once (a
    # plain token once); how many times slower it is, is the bench's figure (0.99 in one run beside
    # the browser tests, on this tiny model where a call costs next to nothing)
    assert row["model_calls_per_token"] > 1


def test_ctd_file_found_by_its_recorded_command(tmp_path):
    (tmp_path / "runs.json").write_text("{}")
    (tmp_path / "fit.json").write_text('{"format": "decoding-lab-ctd/1", '
                                       '"command": "python -m decoding_lab calibrate --from-sweep some/dir/runs.json"}')
    assert R.ctd_path_for(tmp_path / "runs.json") == tmp_path / "fit.json"
    assert R.ctd_path_for(tmp_path / "other.json") is None
