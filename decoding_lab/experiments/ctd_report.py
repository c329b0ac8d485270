"""A shipped calibrated-temperature (CTD) result, read next to the sweep it was fitted on.

``calibrate --from-sweep`` (see ``calibration.py``) writes only the fit and the pass@k
comparison; the samples it was fitted on are the sweep's T = 1, no-truncation cell on the
calibration problems. ``calibration_samples`` takes them back out of the sweep JSON, so a
view can plot sequence log-prob against pass together with the fitted curve.

    >>> [round(v, 3) for v in logistic_curve(0.0, 1.0, [-1.0, 0.0, 1.0])]
    [0.269, 0.5, 0.731]
    >>> rates = binned_rates([-9.0, -8.0, -2.0, -1.0], [0, 0, 1, 1], bins=2)
    >>> [(r["n"], r["rate"]) for r in rates]
    [(2, 0.0), (2, 1.0)]
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from decoding_lab import limits
from decoding_lab.stages import SettingsError

CTD_FORMAT = "decoding-lab-ctd/1"


def load_ctd(path: str | Path) -> dict[str, Any]:
    d = limits.read_result_file(path, "CTD")
    if not isinstance(d, dict) or d.get("format") != CTD_FORMAT:
        raise SettingsError(f"{path}: not a {CTD_FORMAT} file")
    return d


def ctd_path_for(sweep_path: str | Path) -> Path | None:
    """The CTD file fitted on ``sweep_path``: ``<stem>_ctd.json`` beside it, else any CTD file in
    that folder whose command says ``--from-sweep .../<name>``; None when there is none."""
    sweep_path = Path(sweep_path)
    candidates = [sweep_path.with_name(sweep_path.stem + "_ctd.json")]
    candidates += sorted(p for p in sweep_path.parent.glob("*.json") if p not in candidates)
    for p in candidates:
        if not p.is_file():
            continue
        try:
            d = load_ctd(p)
        except SettingsError:
            continue
        if p == candidates[0] or _from_sweep(d.get("command", "")) == sweep_path.name:
            return p
    return None


def _from_sweep(command: str) -> str | None:
    """The file name after ``--from-sweep`` in a recorded command line, if any."""
    words = command.split()
    for flag, value in zip(words, words[1:]):
        if flag == "--from-sweep":
            return Path(value).name
    return None


def calibration_samples(sweep: dict[str, Any], problems: Sequence[int], temperature: float = 1.0
                        ) -> tuple[list[float], list[bool]]:
    """(sequence log-prob, passed) of every sample of ``problems`` in the sweep's cell at
    ``temperature`` without truncation or penalty: the data the CTD fit saw."""
    cell = next((c for c in sweep["cells"] if c["temperature"] == temperature and c["truncation"] == "none"
                 and c.get("penalty", "none") == "none"), None)
    if cell is None:
        raise SettingsError(f"the sweep has no T = {temperature:g} cell without truncation")
    wanted = set(problems)
    xs: list[float] = []
    ys: list[bool] = []
    for o in cell["outcomes"]:
        if o["index"] in wanted:
            xs += [float(v) for v in o["logprobs"]]
            ys += [bool(v) for v in o["correct"]]
    return xs, ys


def logistic_curve(alpha: float, beta: float, xs: Sequence[float]) -> list[float]:
    """P(pass | log-prob x) = σ(alpha + beta·x) at each x."""
    return [1.0 / (1.0 + math.exp(-(alpha + beta * x))) for x in xs]


def binned_rates(x: Sequence[float], y: Sequence[float], bins: int = 8) -> list[dict[str, float]]:
    """Pass rate in ``bins`` equal-count bins of x (sorted), with its binomial standard error:
    a picture of calibration that does not depend on the logistic fit."""
    order = np.argsort(np.asarray(x, float), kind="stable")
    xs, ys = np.asarray(x, float)[order], np.asarray(y, float)[order]
    out = []
    for chunk in np.array_split(np.arange(len(xs)), max(1, min(bins, len(xs)))):
        if len(chunk) == 0:
            continue
        rate = float(ys[chunk].mean())
        out.append({"x": float(xs[chunk].mean()), "lo": float(xs[chunk][0]), "hi": float(xs[chunk][-1]),
                    "n": int(len(chunk)), "rate": rate, "stderr": math.sqrt(rate * (1 - rate) / len(chunk))})
    return out


def headline(ctd: dict[str, Any]) -> dict[str, Any]:
    """The numbers a reader needs first: T_ctd, the fit, and pass@1 / pass@n on the held-out half."""
    rows = {r["k"]: r for r in ctd["rows"]}
    fit = ctd["fit"]
    return {"T_ctd": ctd["ctd_temperature"], "beta": fit["beta"], "slope": fit["slope"], "alpha": fit["alpha"],
            "samples": fit["samples"], "pass_rate": fit["pass_rate"], "n": ctd["n"],
            "calibration": (min(ctd["calibration_problems"]), max(ctd["calibration_problems"])),
            "heldout": (min(ctd["heldout_problems"]), max(ctd["heldout_problems"])),
            "first": rows[1], "last": rows[max(rows)]}
