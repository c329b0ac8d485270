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


def _folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="decoding_lab_export_"))


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
