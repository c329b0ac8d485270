"""The ``sweep``, ``sweep-report``, ``calibrate`` and ``extract-compare`` subcommands
(registered into ``python -m decoding_lab``).

    python -m decoding_lab sweep --task addition --problems 50 --n 16 \\
        --temperatures 0.3,0.7,1.0,1.3 --truncations none,top-p,min-p,top-k \\
        --max-new-tokens 40 --out results.json

    python -m decoding_lab calibrate --task addition --problems 20 --n 16 --out ctd.json
    python -m decoding_lab calibrate --from-sweep assets/sweeps/smollm2-135m-instruct_addition.json --out ctd.json
    python -m decoding_lab extract-compare --task addition --problems 10 --n 4 --out extract.json
    python -m decoding_lab sweep-report assets/sweeps/smollm2-135m-instruct_addition.json

Progress goes to stderr, one line per problem; finished cells are cached
(``~/.cache/decoding_lab/sweeps``, see ``default_cache_dir``) so an interrupted run resumes
where it stopped (Ctrl-C keeps the finished
cells and still writes the partial result).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from decoding_lab.stages import SettingsError


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="bundled model name or Hub id (default: the bundled default)")
    p.add_argument("--task", default="addition",
                   help="addition, capitals, mc-capitals, humaneval, or rg:<reasoning-gym dataset>[?k=v&...]")
    p.add_argument("--problems", type=int, default=50, help="number of problems")
    p.add_argument("--n", type=int, default=16, help="samples per problem and cell")
    p.add_argument("--max-new-tokens", type=int, default=40)
    p.add_argument("--seed", type=int, default=0, help="problem i uses seed + i in every cell")
    p.add_argument("--order", default="transformers", help="stage order preset or list")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--chat", dest="chat", action="store_true", default=None, help="chat template (task default)")
    mode.add_argument("--raw", dest="chat", action="store_false", help="use the prompt as is")
    p.add_argument("--threads", type=int, default=0,
                   help="torch threads (0: torch's default; on busy shared CPUs 1 is often several times faster)")
    p.add_argument("--out", required=True, help="where to write the result JSON")
    p.add_argument("--cache-dir", default=None, help="per-cell cache (default: ~/.cache/decoding_lab/sweeps)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def register(subparsers: Any) -> None:
    s = subparsers.add_parser("sweep", help="temperature x truncation sweep: pass@k, length, repetition, voting")
    _common(s)
    s.add_argument("--temperatures", type=_floats, default=(0.3, 0.7, 1.0, 1.3), help="e.g. 0,0.3,0.7,1.0,1.3")
    s.add_argument("--truncations", type=_names, default=("none", "top-p", "min-p", "top-k"),
                   help="none, top-p, min-p, top-k (presets 0.95 / 0.05 / 40) or name=value")
    s.add_argument("--penalties", type=_names, default=("none",), help="none, rep, presence, frequency or name=value")
    s.add_argument("--batch-problems", type=int, default=None,
                   help="problems sampled as one batch (default 8; the samples are the same for any value)")
    s.set_defaults(handler=cmd_sweep)

    c = subparsers.add_parser("calibrate", help="calibrated temperature (CTD) vs the best grid temperature")
    _common(c)
    c.add_argument("--temperatures", type=_floats, default=(0.3, 0.7, 1.0, 1.3), help="the grid to compare with")
    c.add_argument("--eta", type=float, default=1.0, help="tilt strength (1: V = log P(pass | y))")
    c.add_argument("--from-sweep", default=None, metavar="FILE",
                   help="reuse a sweep's cells (split its problems in half); only the T_ctd cell is sampled")
    c.set_defaults(handler=cmd_calibrate)

    r = subparsers.add_parser("sweep-report", help="print the table of a sweep JSON (e.g. assets/sweeps/*.json)")
    r.add_argument("file")
    r.add_argument("--json", action="store_true", help="per-cell metrics as JSON lines")
    r.set_defaults(handler=cmd_sweep_report)

    e = subparsers.add_parser("extract-compare", help="answer extraction by pattern vs by constrained generation")
    _common(e)
    e.add_argument("--temperature", type=float, default=0.7)
    e.set_defaults(handler=cmd_extract_compare, problems=10, n=4)


def _setup(a: argparse.Namespace) -> tuple[Any, Path, Path]:
    import torch
    if a.threads < 0:
        raise SettingsError(f"--threads must be >= 0, got {a.threads}")
    if a.threads:
        torch.set_num_threads(a.threads)
    from decoding_lab.models import DEFAULT_MODEL, get_model
    from decoding_lab.result_files import check_folder, check_output_file
    out = check_output_file(a.out, "--out")            # before any work: a run never ends unable to write
    cache = check_folder(a.cache_dir, "--cache-dir") if a.cache_dir else default_cache_dir()
    return get_model(a.model or DEFAULT_MODEL), out, cache


def default_cache_dir() -> Path:
    """``$DECODING_LAB_SWEEP_CACHE`` or ``~/.cache/decoding_lab/sweeps``. One directory serves
    every sweep: a cell's file name hashes everything that decides it."""
    import os
    env = os.environ.get("DECODING_LAB_SWEEP_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "decoding_lab" / "sweeps"


def _progress(quiet: bool):
    if quiet:
        return None

    def show(p: Any) -> None:
        tag = " (cached)" if p.cached else ""
        print(f"[{p.elapsed:7.0f}s] cell {p.cell_index + 1}/{p.cells} {p.label}: problem {p.problem}/{p.problems}{tag}",
              file=sys.stderr, flush=True)
    return show


class _Interrupt:
    """Ctrl-C sets a flag the sweep checks between tokens; a second Ctrl-C aborts."""

    def __init__(self) -> None:
        self.hit = False

    def __call__(self) -> bool:
        return self.hit


def _write(path: Path, obj: dict[str, Any]) -> None:
    """Atomic: a reader (the app, a second command) never sees half a file; only a regular file
    (or nothing) at ``--out`` is replaced (``result_files``)."""
    from decoding_lab.result_files import write_text_atomically
    write_text_atomically(path, json.dumps(obj, ensure_ascii=False, indent=1), "--out")


def _run_interruptible(fn: Any) -> Any:
    import signal
    stop = _Interrupt()
    old = signal.getsignal(signal.SIGINT)

    def on_int(signum: int, frame: Any) -> None:
        if stop.hit:
            raise KeyboardInterrupt
        stop.hit = True
        print("stopping after the current step (Ctrl-C again to abort)", file=sys.stderr)
    signal.signal(signal.SIGINT, on_int)
    try:
        return fn(stop)
    finally:
        signal.signal(signal.SIGINT, old)


def cmd_sweep(a: argparse.Namespace) -> None:
    from decoding_lab.experiments.sweep import BATCH_PROBLEMS, SweepConfig, run_sweep
    config = SweepConfig(model=a.model or "", task=a.task, problems=a.problems, n=a.n, temperatures=a.temperatures,
                         truncations=a.truncations, penalties=a.penalties, max_new_tokens=a.max_new_tokens,
                         seed=a.seed, chat=a.chat, order=a.order)
    lm, out, cache = _setup(a)
    config = SweepConfig(**{**config.__dict__, "model": lm.name})
    command = _command("sweep", a, out)

    def save(partial: Any) -> None:      # after every cell: a long run always has a readable file
        partial.command = command
        _write(out, partial.to_json())
    batch = BATCH_PROBLEMS if a.batch_problems is None else a.batch_problems
    result = _run_interruptible(lambda stop: run_sweep(config, lm, cache, _progress(a.quiet), stop, on_cell=save,
                                                       batch=batch))
    result.command = command
    _write(out, result.to_json())
    _summary(result, out)
    if result.stopped:                 # the partial file is written; a script must still see the stop
        raise KeyboardInterrupt


def _command(name: str, a: argparse.Namespace, out: Path) -> str:
    """The command line that reproduces this run (every option spelled out, defaults included)."""
    parts: list[Any] = ["python -m decoding_lab", name, "--model", a.model or "smollm2-135m-instruct", "--task", a.task,
                        "--problems", a.problems, "--n", a.n, "--max-new-tokens", a.max_new_tokens, "--seed", a.seed,
                        "--order", a.order]
    if name == "extract-compare":
        parts += ["--temperature", f"{a.temperature:g}"]
    else:
        parts += ["--temperatures", ",".join(f"{t:g}" for t in a.temperatures)]
    if name == "sweep":
        parts += ["--truncations", ",".join(a.truncations), "--penalties", ",".join(a.penalties)]
    if name == "calibrate":
        parts += ["--eta", a.eta] + (["--from-sweep", a.from_sweep] if a.from_sweep else [])
    if a.chat is not None:
        parts.append("--chat" if a.chat else "--raw")
    if a.threads:
        parts += ["--threads", a.threads]
    parts += ["--out", str(out)]
    return " ".join(shlex.quote(str(x)) if i > 1 else str(x) for i, x in enumerate(parts))


def _summary(result: Any, out: Path) -> None:
    print("\n".join(report_lines(result.to_json())))
    state = "complete" if result.complete else f"{len(result.cells)}/{len(result.config.cells())} cells"
    print(f"{state}, {result.seconds:.0f} s -> {out}", file=sys.stderr)


def cmd_calibrate(a: argparse.Namespace) -> None:
    from decoding_lab.experiments.calibration import compare_ctd, compare_ctd_from_sweep
    from decoding_lab.experiments.sweep import load_result
    sweep = load_result(a.from_sweep) if a.from_sweep else None
    lm, out, cache = _setup(a)
    t0 = time.perf_counter()
    if sweep is not None:
        report = _run_interruptible(lambda stop: compare_ctd_from_sweep(lm, sweep, eta=a.eta, should_stop=stop))
    else:
        report = _run_interruptible(lambda stop: compare_ctd(
            lm, a.task, problems=a.problems, n=a.n, temperatures=a.temperatures, max_new_tokens=a.max_new_tokens,
            seed=a.seed, chat=a.chat, order=a.order, eta=a.eta, cache_dir=cache, progress=_progress(a.quiet),
            should_stop=stop))
    d = report.to_json()
    d["command"] = _command("calibrate", a, out)
    d["seconds"] = time.perf_counter() - t0
    _write(out, d)
    print(report.summary())


def cmd_extract_compare(a: argparse.Namespace) -> None:
    """Sample n completions per problem, then read each one's answer twice: by pattern and by
    a constrained continuation; also ask each problem once with the constraint up front."""
    from decoding_lab.experiments.constrained_answers import compare_extractors
    from decoding_lab.tasks.sets import get_task
    from decoding_lab.settings import SamplingSettings
    from decoding_lab.strategies import sample
    task = get_task(a.task)
    probs = task.problems(a.problems, seed=a.seed)
    lm, out, _ = _setup(a)
    chat = task.chat if a.chat is None else a.chat
    t0 = time.perf_counter()
    comps = []
    for p in probs:
        s = SamplingSettings(temperature=a.temperature, seed=a.seed + p.index, order=a.order)
        comps.append(sample(lm, lm.encode_prompt(p.prompt, chat), s, n=a.n, max_new_tokens=a.max_new_tokens).sequences)
    cmp = compare_extractors(lm, task, probs, comps, chat=chat)
    d = {"format": "decoding-lab-extract-compare/1", "model": lm.name, "task": a.task, "problems": a.problems,
         "n": a.n, "temperature": a.temperature, "max_new_tokens": a.max_new_tokens, **cmp.to_json(),
         "seconds": time.perf_counter() - t0,
         "command": _command("extract-compare", a, out)}
    _write(out, d)
    print(json.dumps({k: v for k, v in d.items() if k != "command"}, indent=1))


def report_lines(d: dict[str, Any]) -> list[str]:
    """The summary table of a sweep result (a dict as written by ``sweep``)."""
    n = d["config"]["n"]
    k_mid = min(4, n)
    lines = [f"{d['model']} on {d['task']['name']}: {d['config']['problems']} problems x n={n}, "
             f"{d['cells_done']}/{d['cells_total']} cells{'' if d['complete'] else ' (partial)'}",
             f"{'cell':<20} {'pass@1':>12} {f'pass@{k_mid}':>7} {f'pass@{n}':>12} {'SC':>5} {'len':>5} {'rep4':>6} "
             f"{'dist2':>6} {'no-ans':>6} {'sec':>5}"]
    for c in d["cells"]:
        m = c["metrics"]
        p1, pm, pn = m["pass_at_k"][0], m["pass_at_k"][k_mid - 1], m["pass_at_k"][n - 1]
        lines.append(f"{c['label']:<20} {p1['mean']:6.3f}±{p1['stderr']:.3f} {pm['mean']:7.3f} "
                     f"{pn['mean']:6.3f}±{pn['stderr']:.3f} {m['self_consistency']:5.2f} {m['mean_length']:5.1f} "
                     f"{m['repetition_4gram']:6.3f} {m.get('distinct2') or 0:6.3f} {m['no_answer']:6.3f} "
                     f"{c['seconds']:5.0f}")
    best = d.get("best_by_k", {})
    if best:
        def where(v: dict) -> str:  # the penalty is named only when the grid has one
            pen = v.get("penalty") or "none"
            return f"T={v['temperature']:g} {v['truncation']}" + ("" if pen == "none" else f" {pen}")
        lines.append("best cell by k: " + ", ".join(f"k={k}: {where(v)} ({v['pass']:.3f})" for k, v in best.items()))
    return lines


def cmd_sweep_report(a: argparse.Namespace) -> None:
    from decoding_lab.experiments.sweep import load_result
    d = load_result(a.file)
    try:
        lines = ([json.dumps({"label": c["label"], **c["metrics"]}) for c in d["cells"]] if a.json
                 else report_lines(d))
    except (KeyError, TypeError, IndexError, ValueError) as e:   # the right format, the wrong content
        raise SettingsError(f"{a.file}: not a whole sweep result (missing or malformed {e!s:.60})") from None
    print("\n".join(lines))
