"""The shipped sweep files (``assets/sweeps``) and what the tab reads from one.

Only files shipped with the app can be opened (``resolve`` refuses every other name). A file is
parsed once per version (its mtime) and shared by every visitor as a read-only view: nested
``MappingProxyType`` mappings and tuples, so no handler can change what the next visitor sees.
``SweepCache`` holds one entry per shipped file behind a lock.

The helpers below select and arrange the file's cells (best cell per k, the heatmap grid); every
number they return is one the sweep wrote."""

from __future__ import annotations

import threading
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from decoding_lab.experiments import sweep
from decoding_lab.stages import SettingsError
from decoding_lab.ui.multisample.strings import tr

KS = (1, 2, 4, 8, 16)
METRICS = ("pass_at_k", "self_consistency", "mean_length", "repetition_4gram", "distinct2", "no_answer")


def frozen(value: Any) -> Any:
    """A read-only view of parsed JSON: dicts become ``MappingProxyType``, lists tuples."""
    if isinstance(value, dict):
        return MappingProxyType({k: frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(frozen(v) for v in value)
    return value


class SweepCache:
    """Parsed shipped sweep files, one entry per file, re-read when the file changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, tuple[float, Mapping[str, Any]]] = {}

    def get(self, path: Path) -> Mapping[str, Any]:
        """The file at ``path`` as a read-only view (raises ``SettingsError`` if it cannot be read)."""
        try:
            mtime = path.stat().st_mtime
        except OSError:
            raise SettingsError(f"no such sweep file: {path.name}") from None
        with self._lock:
            hit = self._items.get(str(path))
            if hit is None or hit[0] != mtime:
                hit = (mtime, frozen(sweep.load_result(path)))
                self._items[str(path)] = hit
            return hit[1]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


SWEEPS = SweepCache()


def file_names() -> list[str]:
    return [p.name for p in sweep.shipped_results()]


def bad_file(name: Any, lang: str = "en") -> SettingsError:
    return SettingsError(tr(lang, "bad_file", name=name, names=", ".join(file_names()) or "-"))


def resolve(name: str | None, lang: str = "en") -> Path:
    """A shipped file's path from its name; only names in ``assets/sweeps`` are accepted."""
    for p in sweep.shipped_results():
        if p.name == name:
            return p
    raise bad_file(name, lang)


def load(name: str | None, lang: str = "en") -> tuple[Path, Mapping[str, Any]]:
    path = resolve(name, lang)
    return path, SWEEPS.get(path)


def default_view() -> dict[str, Any]:
    names = file_names()
    return {"file": names[0] if names else None, "k": 8, "metric": "pass_at_k", "truncation": "none"}


def n_samples(result: Mapping[str, Any]) -> int:
    return int(result.get("config", {}).get("n") or max(len(c["metrics"]["pass_at_k"]) for c in result["cells"]))


def truncations(result: Mapping[str, Any]) -> list[str]:
    cfg = list(result.get("config", {}).get("truncations") or [])
    return cfg + [t for t in dict.fromkeys(c["truncation"] for c in result["cells"]) if t not in cfg]


def temperatures(result: Mapping[str, Any]) -> list[float]:
    cfg = [float(x) for x in result.get("config", {}).get("temperatures") or []]
    return sorted(set(cfg) | {float(c["temperature"]) for c in result["cells"]})


def ks_for(result: Mapping[str, Any]) -> list[int]:
    n = n_samples(result)
    return [k for k in KS if k <= n] or [1]


def metric_value(cell: Mapping[str, Any], metric: str, k: int) -> tuple[float | None, float | None]:
    m = cell["metrics"]
    if metric == "pass_at_k":
        p = m["pass_at_k"][k - 1]
        return p["mean"], p["stderr"]
    return m.get(metric), None


def best_by_k(result: Mapping[str, Any], truncation: str | None = None) -> dict[int, dict[str, Any]]:
    """Like ``SweepResult.best_by_k``: per k the cell with the highest mean pass@k (ties: lower T),
    among cells with ``truncation`` (the greedy cell counts for every truncation) or all cells."""
    cells = [c for c in result["cells"] if truncation is None or c["truncation"] == truncation
             or c["temperature"] == 0]
    out: dict[int, dict[str, Any]] = {}
    for k in range(1, n_samples(result) + 1):
        scored = [(c["metrics"]["pass_at_k"][k - 1]["mean"], -c["temperature"], c) for c in cells
                  if len(c["metrics"]["pass_at_k"]) >= k]
        if not scored:
            continue
        val, _, best = max(scored, key=lambda x: (x[0], x[1]))
        out[k] = {"temperature": best["temperature"], "truncation": best["truncation"], "pass": val,
                  "stderr": best["metrics"]["pass_at_k"][k - 1]["stderr"]}
    return out


def row_label(cell: Mapping[str, Any]) -> str:
    """A heatmap row: the truncation, and the penalty when the cell has one ("none · rep")."""
    pen = cell.get("penalty", "none")
    return cell["truncation"] if pen == "none" else f"{cell['truncation']} · {pen}"


def heatmap_rows(result: Mapping[str, Any]) -> list[str]:
    """Truncations in the config's order, then every truncation · penalty combination run."""
    rows = truncations(result)
    return rows + [r for r in dict.fromkeys(row_label(c) for c in result["cells"]) if r not in rows]


def heatmap_matrix(result: Mapping[str, Any], metric: str = "pass_at_k", k: int = 1
                   ) -> tuple[list[str], list[float], list[list[float | None]]]:
    """Rows = truncations (and truncation · penalty where a penalty axis was swept), columns =
    temperatures; None where no cell was run. The greedy cell (T = 0) without a penalty stands for
    every truncation without a penalty (truncation never removes the argmax)."""
    if metric not in METRICS:
        raise SettingsError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if metric == "pass_at_k" and not 1 <= k <= n_samples(result):
        raise SettingsError(f"k must lie in 1..{n_samples(result)}, got {k}")
    rows, cols = heatmap_rows(result), temperatures(result)
    plain = set(truncations(result))
    z: list[list[float | None]] = [[None] * len(cols) for _ in rows]
    for c in result["cells"]:
        j = cols.index(float(c["temperature"]))
        greedy_plain = c["temperature"] == 0 and c.get("penalty", "none") == "none"
        for i, r in enumerate(rows):
            if r == row_label(c) or (greedy_plain and r in plain):
                z[i][j] = metric_value(c, metric, k)[0]
    return rows, cols, z
