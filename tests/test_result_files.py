"""The command line writes only regular files it may replace, whole or not at all; a stopped
sweep exits non-zero; a corrupt cached cell is set aside and sampled again. (As root, a plain
``os.replace`` once replaced the ``/dev/full`` device node with a sweep's JSON: these tests use a
FIFO and folders made for them, never a real device.)"""

from __future__ import annotations

import json
import os
import threading

import pytest

from cli_helpers import cli_in_process
from decoding_lab.errors import SettingsError
from decoding_lab.result_files import check_folder, check_output_file, write_text_atomically


def test_only_a_regular_file_or_nothing_may_be_written(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "afile").write_text("x")
    link = tmp_path / "link-to-pipe"
    link.symlink_to(fifo)
    for bad, says in ((tmp_path, "is a directory"), (fifo, "not a regular file"), (link, "not a regular file"),
                      (tmp_path / "afile" / "out.json", "afile")):
        with pytest.raises(SettingsError, match=says):
            check_output_file(bad, "--out")
        with pytest.raises(SettingsError):
            write_text_atomically(bad, "{}", "--out")
    assert (tmp_path / "afile").read_text() == "x" and os.path.islink(link)
    check_output_file(tmp_path / "new" / "r.json", "--out")                  # nothing there yet: fine
    write_text_atomically(tmp_path / "afile", "replaced")                      # a regular file: replaced
    assert (tmp_path / "afile").read_text() == "replaced"
    with pytest.raises(SettingsError, match="is a file, not a folder"):
        check_folder(tmp_path / "afile", "--cache-dir")


def test_two_writers_never_share_a_temporary_file(tmp_path):
    target, errors = tmp_path / "r.json", []

    def write(i: int) -> None:
        try:
            for _ in range(30):
                write_text_atomically(target, json.dumps({"writer": i, "pad": "x" * 5000}))
        except Exception as e:   # noqa: BLE001 - any failure is the finding
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and json.loads(target.read_text())["writer"] in range(4)
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]                  # no temporary file left


@pytest.mark.parametrize("make,args,says", [
    (lambda d: d, ["--out", "{p}"], "is a directory"),
    (lambda d: (os.mkfifo(d / "p"), d / "p")[1], ["--out", "{p}"], "not a regular file"),
    (lambda d: ((d / "f").write_text("x"), d / "f")[1], ["--out", "{d}/r.json", "--cache-dir", "{p}"],
     "is a file, not a folder"),
])
def test_the_sweep_command_refuses_a_bad_path_before_any_work(tmp_path, make, args, says):
    p = make(tmp_path)
    argv = [a.format(p=p, d=tmp_path) for a in args]
    r = cli_in_process("sweep", "--task", "addition", "--problems", "2", "--n", "1", *argv)
    assert r.returncode == 2 and len(r.error_lines()) == 1 and says in r.stderr, r.stderr


def test_sweep_report_on_the_right_format_without_its_content_is_one_line(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"format": "decoding-lab-sweep/1"}))
    r = cli_in_process("sweep-report", str(f))
    assert r.returncode == 2 and len(r.error_lines()) == 1 and "not a whole sweep result" in r.stderr, r.stderr


def test_a_corrupt_cached_cell_is_set_aside_and_sampled_again(tiny_lm, tmp_path, caplog):
    from decoding_lab.experiments.sweep import SweepConfig, run_sweep
    from test_multisample import ParityTask
    task = ParityTask()
    cfg = SweepConfig(model="tiny", task="parity", problems=2, n=2, temperatures=(0.0, 0.8), truncations=("none",),
                      max_new_tokens=2, chat=False)
    first = run_sweep(cfg, tiny_lm, tmp_path, task=task)
    cells = sorted(tmp_path.glob("*.json"))
    assert len(cells) == 2
    cells[0].write_text('{"truncated')                       # a write cut short
    again = run_sweep(cfg, tiny_lm, tmp_path, task=task)
    assert again.complete and sorted(c.cached for c in again.cells) == [False, True]
    assert [c.metrics() for c in again.cells] == [c.metrics() for c in first.cells]   # the same seeds, resampled
    assert (tmp_path / (cells[0].name + ".corrupt")).read_text() == '{"truncated'
    assert any("set aside" in r.getMessage() for r in caplog.records)


def test_a_stopped_sweep_keeps_its_partial_file_and_exits_non_zero(tiny_lm, tmp_path, monkeypatch):
    """Ctrl-C: the finished cells are written, and the exit status says the run did not finish
    (it was 0, so a script could not tell a stopped sweep from a complete one)."""
    from decoding_lab.experiments import cli as ecli
    out = tmp_path / "s.json"
    monkeypatch.setattr(ecli, "_setup", lambda a: (tiny_lm, out, tmp_path / "cache"))
    monkeypatch.setattr(ecli, "_run_interruptible", lambda fn: fn(lambda: True))   # Ctrl-C at once
    r = cli_in_process("sweep", "--task", "addition", "--problems", "2", "--n", "2", "--temperatures", "0,0.8",
                       "--truncations", "none", "--max-new-tokens", "2", "--raw", "--out", str(out), "--quiet")
    assert r.returncode == 130 and "interrupted" in r.stderr, (r.returncode, r.stderr)
    d = json.loads(out.read_text())
    assert d["stopped"] and not d["complete"]


def test_calibrating_from_a_sweep_file_without_its_content_is_one_line(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"format": "decoding-lab-sweep/1", "cells": []}))
    r = cli_in_process("calibrate", "--from-sweep", str(f), "--out", str(tmp_path / "c.json"))
    assert r.returncode == 2 and len(r.error_lines()) == 1 and "not a whole sweep result" in r.stderr, r.stderr
