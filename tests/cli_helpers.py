"""Running the command line in tests: in this process through ``cli.main(argv)`` (the parser, the
handlers and the one-line errors, without paying the imports and a model load per call), and as
the real entry point ``python -m decoding_lab`` for the smoke tests that check exit codes and
streams end to end."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class CliResult:
    """What a caller of the command line sees: the exit status and both streams."""
    returncode: int
    stdout: str
    stderr: str

    def error_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.strip()]


def cli_in_process(*args: str) -> CliResult:
    """``python -m decoding_lab ARGS`` as ``cli.main(ARGS)`` here, with stdout and stderr captured."""
    from decoding_lab import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return CliResult(code, out.getvalue(), err.getvalue())


def cli_process(*args: str | bytes, timeout: int = 300) -> CliResult:
    """The real entry point in a child process (bytes arguments pass as they are)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    argv = [os.fsencode(sys.executable), b"-m", b"decoding_lab", *(os.fsencode(a) for a in args)]
    r = subprocess.run(argv, capture_output=True, timeout=timeout, env=env, cwd=ROOT)
    return CliResult(r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace"))
