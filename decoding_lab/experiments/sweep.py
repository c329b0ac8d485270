"""A temperature x truncation (x penalty) sweep: what each setting does to pass@1, pass@k,
length, repetition and self-consistency on a task with a verifier.

For every *cell* of the grid we draw ``n`` samples for each of the same ``problems``
(one prefill per problem, n rows in one batch) and record, per sample, the extracted
answer, whether it is right, its length, its sequence log-prob and its 4-gram
repetition rate. From those the cell reports

* pass@1 (= mean accuracy over the n samples) and unbiased pass@k for every k <= n,
  each with its standard error across problems;
* mean output length (tokens, EOS included) and mean 4-gram repetition rate;
* self-consistency accuracy: majority vote over the n extracted answers;
* distinct-2 pooled over each problem's n samples (how different the samples are);
* the share of samples with no extractable answer.

The grid itself (``Cell``, ``SweepConfig``, the axis presets) lives in ``grid.py``.

The lesson to look for (seed chapter 7): the temperature that maximises pass@1 is low,
the one that maximises pass@k grows with k, because pass@k is carried by the problems
the model only *sometimes* solves and samples at low temperature are near-copies.
``best_by_k`` reads that off the grid.

Design choices, all visible in the output JSON:

* **Common random numbers**: problem i uses seed ``seed + i`` in every cell, so
  differences between cells are not differences in luck.
* **Temperature 0** is greedy: one generation stands for all n samples (they would be
  identical), and truncation is left out (it never removes the argmax).
* **Cache**: each finished cell is written to ``cache_dir/<key>.json``; the key hashes
  everything that decides the cell (model, task, problems, n, length, settings, order,
  chat mode, seed). A rerun (or a run that was stopped) picks up finished cells.

    >>> cfg = SweepConfig(model="smollm2-135m-instruct", task="addition", problems=50, n=16)
    >>> len(cfg.cells())                         # 4 temperatures x 4 truncations x 1 penalty
    16
    >>> [c.label for c in cfg.cells()[3:7]]     # the no-truncation curve, then truncations from high T down
    ['T=1.3 none none', 'T=1.3 top-p none', 'T=1.3 min-p none', 'T=1.3 top-k none']
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from decoding_lab import limits
from decoding_lab.metrics import distinct_n, ngram_repetition_rate
from decoding_lab.multisample import passk
from decoding_lab.tasks.extract import EXTRACT_VERSIONS
from decoding_lab.experiments.grid import (PENALTIES, TRUNCATIONS, Cell, SweepConfig, parse_penalty,  # noqa: F401
                                           parse_truncation)
from decoding_lab.multisample.selection import majority_vote
from decoding_lab.remote.config import PREFIX as REMOTE_PREFIX
from decoding_lab.result_files import check_folder, write_text_atomically
from decoding_lab.tasks.sets import Problem, Task, get_task
from decoding_lab.stages import SettingsError
from decoding_lab.backends.base import LanguageModel

log = logging.getLogger(__name__)

FORMAT = "decoding-lab-sweep/1"
CELL_FORMAT = 1     # bump when what a cell stores changes: old cache files are then ignored


# --------------------------------------------------------------------------- per-cell results
def repetition_rate(tokens: list[int], n: int = 4) -> float:
    """Share of the output's n-grams that already appeared earlier in the same output
    (``decoding_lab.metrics.ngram_repetition_rate``)."""
    return float(ngram_repetition_rate(list(tokens), n))


def diversity(outputs: list[list[int]], n: int = 2) -> float:
    """distinct-n pooled over one problem's samples: unique n-grams / all n-grams. n copies of
    one text score 1/n of a single copy, so it falls when low temperature makes near-copies."""
    return float(distinct_n([list(t) for t in outputs], n))


@dataclass
class ProblemOutcome:
    index: int
    reference: str
    answers: list[str | None]
    correct: list[bool]
    lengths: list[int]
    logprobs: list[float]             # sequence log-prob under the final (sampled) distribution
    repetition: list[float]
    vote: str | None = None
    vote_correct: bool = False
    distinct2: float | None = None    # distinct-2 pooled over this problem's n samples

    @property
    def c(self) -> int:
        return sum(self.correct)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class CellResult:
    cell: Cell
    settings: dict[str, Any]
    n: int
    outcomes: list[ProblemOutcome]
    seconds: float
    examples: list[dict[str, Any]] = field(default_factory=list)
    cached: bool = False
    texts: list[list[str]] | None = field(default=None, repr=False)   # in the cache only: answers can be re-extracted
    tokens: list[list[list[int]]] | None = field(default=None, repr=False)   # likewise, for token-level metrics

    def metrics(self) -> dict[str, Any]:
        c = [o.c for o in self.outcomes]
        flat = lambda attr: [x for o in self.outcomes for x in getattr(o, attr)]  # noqa: E731
        answers = flat("answers")
        return {
            "pass_at_k": [s.to_json() for s in passk.pass_at_k_curve(self.n, c)],
            "pass1": passk.summarize(self.n, c, 1).mean,
            "mean_length": sum(flat("lengths")) / len(answers),
            "repetition_4gram": sum(flat("repetition")) / len(answers),
            "self_consistency": sum(o.vote_correct for o in self.outcomes) / len(self.outcomes),
            "no_answer": sum(a is None for a in answers) / len(answers),
            "distinct2": (sum(d) / len(d)) if (d := [o.distinct2 for o in self.outcomes if o.distinct2 is not None])
            else None,
            "problems": len(self.outcomes),
        }

    def pass_at(self, k: int) -> float:
        return passk.summarize(self.n, [o.c for o in self.outcomes], k).mean

    def to_json(self, texts: bool = False) -> dict[str, Any]:
        extra = {"texts": self.texts, "tokens": self.tokens} if texts and self.texts is not None else {}
        return {**extra, "temperature": self.cell.temperature, "truncation": self.cell.truncation,
                "penalty": self.cell.penalty,
                "label": self.cell.label, "settings": self.settings, "n": self.n, "seconds": self.seconds,
                "cached": self.cached, "metrics": self.metrics(), "outcomes": [o.to_json() for o in self.outcomes],
                "examples": self.examples}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "CellResult":
        for o, toks in zip(d["outcomes"], d.get("tokens") or []):     # cells cached before distinct-2 existed
            if o.get("distinct2") is None:
                o["distinct2"] = diversity(toks * (d["n"] if len(toks) == 1 else 1))
        return CellResult(Cell(d["temperature"], d["truncation"], d["penalty"]), d["settings"], d["n"],
                          [ProblemOutcome(**o) for o in d["outcomes"]], d["seconds"], d.get("examples", []),
                          cached=True, texts=d.get("texts"), tokens=d.get("tokens"))


@dataclass(frozen=True)
class Progress:
    """Reported after each problem (and once per cached cell)."""

    cell_index: int
    cells: int
    label: str
    problem: int                      # problems done in this cell
    problems: int
    elapsed: float                    # seconds since the sweep started
    cached: bool = False


ProgressFn = Callable[[Progress], None]
StopFn = Callable[[], bool]


#: Problems sampled as one batch (``strategies.prompt_batch``): the same samples as one problem at a
#: time, fewer forwards. 1 runs them one by one.
BATCH_PROBLEMS = 8


def _sample_problems(lm: LanguageModel, task: Task, problems: list[Problem], cell: Cell, config: SweepConfig, rows: int,
                     batch: int, should_stop: StopFn | None) -> list[Any] | None:
    """Each problem's generation (``rows`` samples), ``batch`` problems at a time; None if stopped."""
    from decoding_lab.strategies import sample
    from decoding_lab.strategies.prompt_batch import sample_prompts
    chat = task.chat if config.chat is None else config.chat
    ids = [lm.encode_prompt(p.prompt, chat) for p in problems]
    settings = [cell.settings(config.order, seed=config.seed + p.index) for p in problems]
    if lm.caps.whole_samples:  # a served model: the engine draws its own n samples
        from decoding_lab.strategies.engine_samples import engine_samples
        out = []
        for i, s in zip(ids, settings):
            if should_stop is not None and should_stop():
                return None
            out.append(engine_samples(lm, i, s, n=rows, max_new_tokens=config.max_new_tokens))
        return out
    if batch > 1 and lm.caps.batch:
        return sample_prompts(lm, ids, settings, n=rows, max_new_tokens=config.max_new_tokens, batch=batch,
                              should_stop=should_stop)
    out = []
    for i, s in zip(ids, settings):
        res = sample(lm, i, s, n=rows, max_new_tokens=config.max_new_tokens, should_stop=should_stop)
        if res.stopped:
            return None
        out.append(res)
    return out


def run_cell(lm: LanguageModel, task: Task, problems: list[Problem], cell: Cell, config: SweepConfig,
             should_stop: StopFn | None = None, on_problem: Callable[[int], None] | None = None,
             examples: int = 2, batch: int = BATCH_PROBLEMS) -> CellResult | None:
    """Sample, extract and verify one cell, ``batch`` problems per batch (same samples for any
    ``batch``). Returns None when ``should_stop`` interrupted it."""
    t0 = time.perf_counter()
    greedy = cell.temperature == 0
    outcomes: list[ProblemOutcome] = []
    shown: list[dict[str, Any]] = []
    texts: list[list[str]] = []
    tokens: list[list[list[int]]] = []
    step = max(1, batch)
    results: list[Any] = []
    for j, prob in enumerate(problems):
        if j % step == 0:                   # the next batch of problems, sampled together
            if should_stop is not None and should_stop():
                return None
            results = _sample_problems(lm, task, problems[j:j + step], cell, config, 1 if greedy else config.n,
                                       step, should_stop)
            if results is None:
                return None
        res = results[j % step]
        seqs = res.sequences * (config.n if greedy else 1)
        verdicts = [task.verify(prob, s.text) for s in seqs]
        texts.append([s.text for s in res.sequences])
        tokens.append([list(s.token_ids) for s in res.sequences])
        o = ProblemOutcome(prob.index, prob.answer, [v.answer for v in verdicts], [v.correct for v in verdicts],
                           [len(s.token_ids) for s in seqs], [float(s.score) for s in seqs],
                           [repetition_rate(s.token_ids) for s in seqs],
                           distinct2=diversity([s.token_ids for s in seqs]))
        if task.comparable:
            vote = majority_vote(o.answers, o.logprobs)
            o.vote = vote.answer
            o.vote_correct = task.check(prob, vote.answer)
        outcomes.append(o)
        if j < examples:
            shown.append({"problem": prob.index, "prompt": prob.prompt, "reference": prob.answer,
                          "samples": [{"text": s.text, "answer": v.answer, "correct": v.correct}
                                      for s, v in list(zip(seqs, verdicts))[:4]]})
        if on_problem is not None:
            on_problem(j + 1)
    return CellResult(cell, cell.settings(config.order, config.seed).to_json(), config.n, outcomes,
                      time.perf_counter() - t0, shown, texts=texts, tokens=tokens)


def cell_key(config: SweepConfig, cell: Cell, model_name: str, task_kind: str = "number") -> str:
    """The cache file name of a cell: a hash of everything that decides its numbers."""
    blob = json.dumps({"format": CELL_FORMAT, "extract": EXTRACT_VERSIONS.get(task_kind, 1), "model": model_name,
                       "task": config.task, "problems": config.problems, "start": config.start, "n": config.n,
                       "max_new_tokens": config.max_new_tokens, "seed": config.seed, "chat": config.chat,
                       "order": config.order,
                       "settings": cell.settings(config.order, config.seed).to_json(),
                       # a served model's samples are the engine's own (decoding_lab.strategies.engine_samples)
                       **({"sampler": "engine"} if model_name.startswith(REMOTE_PREFIX) else {})}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- the sweep
@dataclass
class SweepResult:
    config: SweepConfig
    cells: list[CellResult]
    seconds: float
    stopped: bool
    model: str
    task_description: str
    environment: dict[str, Any] = field(default_factory=dict)
    command: str | None = None

    @property
    def complete(self) -> bool:
        return len(self.cells) == len(self.config.cells())

    def best_by_k(self, truncation: str | None = None, penalty: str | None = None) -> dict[int, dict[str, Any]]:
        """For each k: the cell (temperature, truncation, penalty) with the highest mean pass@k,
        optionally among cells with the given truncation / penalty. Ties: the lower temperature."""
        cells = [c for c in self.cells if (truncation is None or c.cell.truncation == truncation)
                 and (penalty is None or c.cell.penalty == penalty)]
        out: dict[int, dict[str, Any]] = {}
        if not cells:
            return out
        for k in range(1, self.config.n + 1):
            scored = [(c.pass_at(k), -c.cell.temperature, c) for c in cells]
            best_val, _, best = max(scored, key=lambda x: (x[0], x[1]))
            se = passk.summarize(best.n, [o.c for o in best.outcomes], k).stderr
            out[k] = {"temperature": best.cell.temperature, "truncation": best.cell.truncation,
                      "penalty": best.cell.penalty, "pass": best_val, "stderr": se}
        return out

    def to_json(self) -> dict[str, Any]:
        truncs = sorted({c.cell.truncation for c in self.cells})
        return {
            "format": FORMAT, "command": self.command, "model": self.model,
            "task": {"name": self.config.task, "description": self.task_description},
            "config": self.config.to_json(), "environment": self.environment,
            "complete": self.complete, "stopped": self.stopped, "seconds": self.seconds,
            "cells_done": len(self.cells), "cells_total": len(self.config.cells()),
            "best_by_k": {str(k): v for k, v in self.best_by_k().items()},
            "best_by_k_per_truncation": {t: {str(k): v for k, v in self.best_by_k(truncation=t).items()}
                                         for t in truncs},
            "cells": [c.to_json() for c in self.cells],
        }


def environment() -> dict[str, Any]:
    import platform
    import torch
    return {"torch": torch.__version__, "threads": torch.get_num_threads(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "machine": platform.machine()}


def read_cached_cell(path: Path) -> "CellResult | None":
    """A cached cell, or None when the file cannot be read as one (cut short by a full disk, say,
    or edited by hand): it is then renamed ``….corrupt`` beside the cache, said once on stderr, and
    the cell is sampled again, so one bad file never blocks a sweep from resuming."""
    try:
        return CellResult.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError, RecursionError) as e:
        aside = path.with_name(path.name + ".corrupt")
        os.replace(path, aside)
        log.warning("the cached cell %s is unreadable (%s: %.80s); set aside as %s and sampled again",
                    path.name, type(e).__name__, e, aside.name)
        return None


def run_sweep(config: SweepConfig, lm: LanguageModel | None = None, cache_dir: str | Path | None = None,
              progress: ProgressFn | None = None, should_stop: StopFn | None = None,
              task: Task | None = None, on_cell: Callable[["SweepResult"], None] | None = None,
              batch: int = BATCH_PROBLEMS) -> SweepResult:
    """Run (or resume) every cell of ``config``. Cells already in ``cache_dir`` are loaded,
    not recomputed. ``should_stop`` is checked between problems and inside generation; a
    stopped sweep returns the finished cells with ``stopped=True``. ``on_cell`` gets the
    partial result after every finished cell (the CLI rewrites its output file there). ``batch``
    problems share a batch (the samples do not depend on it, so it is not part of a cell's key)."""
    task = task or get_task(config.task)
    batch = limits.check_count("problems per batch", batch, hi=64)
    if lm is None:
        from decoding_lab.models import get_model
        lm = get_model(config.model)
    model_name = getattr(lm, "name", config.model)
    problems = task.problems(config.problems, seed=config.seed, start=config.start)
    cache = check_folder(cache_dir, "the sweep cache") if cache_dir is not None else None
    t0 = time.perf_counter()
    grid = config.cells()
    paths = [cache / f"{cell_key(config, c, model_name, task.kind)}.json" if cache is not None else None for c in grid]
    done: dict[int, CellResult] = {}
    for i, (cell, path) in enumerate(zip(grid, paths)):      # every cached cell first, whatever its place
        if path is not None and path.is_file():
            cached = read_cached_cell(path)
            if cached is None:                               # set aside: the cell is sampled again
                continue
            done[i] = cached
            if progress:
                progress(Progress(i, len(grid), cell.label, len(problems), len(problems), time.perf_counter() - t0,
                                  cached=True))

    def result(stopped: bool) -> SweepResult:                # finished cells, in grid order
        env = environment()
        if lm.caps.whole_samples:  # say whose sampler drew the samples
            env["sampler"] = (f"{model_name}'s own, n completions per request (decoding_lab.strategies.engine_samples); "
                              "llama-server runs llama.cpp's order whatever the sweep's order")
        return SweepResult(config, [done[i] for i in sorted(done)], time.perf_counter() - t0, stopped, model_name,
                           task.description, env)

    for i, (cell, path) in enumerate(zip(grid, paths)):
        if i in done:
            continue
        report = (lambda j, i=i, cell=cell: progress(Progress(i, len(grid), cell.label, j, len(problems),
                                                              time.perf_counter() - t0))) if progress else None
        res = run_cell(lm, task, problems, cell, config, should_stop, report, batch=batch)
        if res is None:
            return result(stopped=True)
        if path is not None:               # atomic: a killed run never leaves half a cell
            write_text_atomically(path, json.dumps(res.to_json(texts=True), ensure_ascii=False), "a cached cell")
        done[i] = res
        if on_cell is not None:
            on_cell(result(stopped=False))
    return result(stopped=False)


def curve(result: dict[str, Any], k: int = 1, truncation: str = "none", penalty: str = "none",
          metric: str = "pass_at_k") -> list[tuple[float, float, float | None]]:
    """One line of a plot from a sweep JSON: ``(temperature, value, stderr)`` sorted by T, for
    ``metric`` = ``pass_at_k`` (at ``k``) or any per-cell metric name (``mean_length``,
    ``repetition_4gram``, ``self_consistency``, ``distinct2``, ``no_answer``; stderr None).
    The greedy cell (T = 0) belongs to every truncation's curve."""
    out = []
    for c in result["cells"]:
        if c["penalty"] != penalty or (c["truncation"] != truncation and c["temperature"] != 0):
            continue
        m = c["metrics"]
        if metric == "pass_at_k":
            if not 1 <= k <= len(m["pass_at_k"]):
                raise SettingsError(f"k must lie in 1..{len(m['pass_at_k'])}, got {k}")
            p = m["pass_at_k"][k - 1]
            out.append((c["temperature"], p["mean"], p["stderr"]))
        elif metric in m:
            out.append((c["temperature"], m[metric], None))
        else:
            known = ", ".join(name for name in m if name != "pass_at_k")
            raise SettingsError(f"unknown metric {metric!r}; known: pass_at_k, {known}")
    return sorted(out)


#: Precomputed sweeps shipped with the app (see ``assets/sweeps/README.md`` for how each was made).
ASSET_DIR = Path(__file__).resolve().parents[2] / "assets" / "sweeps"


def shipped_results() -> list[Path]:
    """The sweep JSON files in ``assets/sweeps`` (empty when the folder is absent)."""
    return sorted(p for p in ASSET_DIR.glob("*.json") if _is_sweep(p))


def _is_sweep(path: Path) -> bool:
    try:
        return load_result(path) is not None
    except SettingsError:
        return False


def load_result(path: str | Path) -> dict[str, Any]:
    """Read a sweep JSON (e.g. the shipped ``assets/sweeps/*.json``) and check its format."""
    if not Path(path).exists():
        raise SettingsError(f"no such sweep file: {path}")
    d = limits.read_result_file(path, "sweep")
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        found = d.get("format") if isinstance(d, dict) else None
        raise SettingsError(f"{path}: not a {FORMAT} file (format {found!r})")
    shapes = {"config": dict, "cells": list, "model": str}
    missing = [k for k, kind in shapes.items() if not isinstance(d.get(k), kind)]
    if missing or not all(isinstance(c, dict) for c in d["cells"]):
        raise SettingsError(f"{path}: not a whole sweep result (missing or malformed {(missing or ['cells'])[0]})")
    return d
