"""Write a run's records to files that ``gr.File`` can offer for download.

Each export gets its own temporary folder (gradio serves files from the temp dir), so
two visitors exporting at the same moment never overwrite each other's files."""

from __future__ import annotations

import csv
import json
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence


PREFIX = "decoding_lab_export_"
#: an export folder older than this is removed when the next export is written (gradio has
#: copied its files into its own cache by then, which ``delete_cache`` clears)
KEEP_S = 600


def _folder() -> Path:
    remove_old_exports()
    return Path(tempfile.mkdtemp(prefix=PREFIX))


def remove_old_exports(keep_s: float = KEEP_S, root: str | None = None) -> int:
    """Remove export folders older than ``keep_s`` seconds; returns how many went."""
    import shutil
    now, gone = time.time(), 0
    for folder in Path(root or tempfile.gettempdir()).glob(PREFIX + "*"):
        try:
            if folder.is_dir() and not folder.is_symlink() and now - folder.stat().st_mtime > keep_s:
                shutil.rmtree(folder, ignore_errors=True)
                gone += 1
        except OSError:   # another process removed it first
            continue
    return gone


def _stem(name: str) -> str:
    return f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def write_files(name: str, payload: dict[str, Any], headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """``payload`` as pretty JSON and ``headers``/``rows`` as UTF-8 CSV (with BOM, so
    spreadsheet programs read Chinese headers and token text correctly). Returns paths."""
    folder, stem = _folder(), _stem(name)
    json_path = folder / f"{stem}.json"
    json_path.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
    csv_path = folder / f"{stem}.csv"
    with csv_path.open("w", newline="", encoding="utf-8-sig") as f:
        w = csv.writer(f)
        w.writerow(list(headers))
        w.writerows([list(r) for r in rows])
    return [str(json_path), str(csv_path)]


def write_text(filename: str, text: str) -> str:
    """``text`` written as ``filename`` in a fresh export folder; returns its path."""
    path = _folder() / Path(filename).name
    path.write_text(text, encoding="utf-8")
    return str(path)
