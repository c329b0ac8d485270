"""The sandbox's timeout holds and nothing it started outlives the call.

Every test runs twice: with the isolation this machine gives (a PID namespace where
``unshare -rnpf`` works) and with the subreaper fallback forced (what a container without
user namespaces gets). Each process a test starts carries a unique token in its argv
(``sleep 30.<token>``) so the test can look for survivors in ``/proc`` afterwards.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time

import pytest

from decoding_lab.tasks import sandbox
from decoding_lab.tasks.sandbox import run_python

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc")

MARGIN = 4.0          # seconds a call may take past its timeout (kill + reap + interpreter start)


@pytest.fixture(params=["native", "subreaper"])
def mode(request, monkeypatch):
    if request.param == "subreaper":
        net = "netns" if sandbox._unshare_works() else "socket-block"
        monkeypatch.setattr(sandbox, "isolation", lambda: f"{net}+subreaper")
    return request.param


def token() -> str:
    return f"30.{random.randrange(10**8, 10**9)}"


def alive(tok: str) -> list[int]:
    """Pids of live (not zombie) processes whose argv contains ``tok``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if tok.encode() in argv and state != b"Z":
            found.append(int(name))
    return found


def run_timed(code: str, timeout: float, **kw):
    t = time.monotonic()
    r = run_python(code, timeout=timeout, **kw)
    took = time.monotonic() - t
    assert took < timeout + MARGIN, (took, r)
    return r, took


def assert_none_left(tok: str) -> None:
    left = alive(tok)
    for pid in left:                      # do not leave them behind for the next test
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"processes with {tok} outlived the call: {left}"


def test_isolation_is_recorded(mode):
    r = run_python("print(1)")
    assert r.isolation.startswith(sandbox.isolation().removesuffix("+nproc"))
    assert ("pidns" if mode == "native" and sandbox._namespaces()[1] else "subreaper") in r.isolation
    assert ("nproc" in r.isolation) == (os.getuid() != 0)


@pytest.mark.parametrize("main_waits", [False, True])
def test_setsid_grandchild_holding_stdout_does_not_hold_the_call(mode, main_waits):
    tok = token()
    code = ("import subprocess, time\n"
            f"subprocess.Popen(['setsid', 'sleep', '{tok}'])\n"      # inherits stdout/stderr
            "print('started', flush=True)\n"
            + ("time.sleep(60)\n" if main_waits else ""))
    r, took = run_timed(code, timeout=2)
    if main_waits:
        assert r.status == "timeout" and took >= 1.9, (r, took)
    else:                                  # the call ends when the main program ends
        assert r.status == "passed" and took < 1.9, (r, took)
    assert r.stdout == "started\n"
    assert_none_left(tok)


@pytest.mark.parametrize("main_waits", [False, True])
def test_double_forked_daemon_with_closed_fds_is_killed(mode, main_waits):
    tok = token()
    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        os.closerange(0, 1024)\n"
            f"        os.execv('/bin/sleep', ['sleep', '{tok}'])\n"
            "    os._exit(0)\n"
            "os.wait()\n"
            "time.sleep(0.3)\n"
            "print('parent done', flush=True)\n"
            + ("time.sleep(60)\n" if main_waits else ""))
    r, took = run_timed(code, timeout=2)
    assert r.status == ("timeout" if main_waits else "passed"), r
    assert r.stdout == "parent done\n"
    assert_none_left(tok)


def test_fork_bomb_is_stopped_and_leaves_nothing(mode):
    # Bounded so that it cannot hurt a shared machine where no RLIMIT_NPROC applies (root):
    # 8 generations of fork -> at most 256 processes, each in its own session (so killing
    # the program's process group misses them), all of which then sleep.
    tok = token()
    code = ("import os\n"
            "for _ in range(8):\n"
            "    try:\n"
            "        if os.fork() == 0:\n"
            "            os.setsid()\n"
            "    except OSError:\n"
            "        pass\n"
            f"os.execv('/bin/sleep', ['sleep', '{tok}'])\n")
    r, took = run_timed(code, timeout=2)
    assert r.status == "timeout", r
    assert_none_left(tok)


def test_process_count_is_bounded_where_rlimit_nproc_applies(mode):
    if "nproc" not in run_python("pass").isolation:
        pytest.skip("RLIMIT_NPROC does not apply to root")
    tok = token()
    code = ("import os, time\n"
            "n = 0\n"
            "for _ in range(200):\n"
            "    try:\n"
            "        if os.fork() == 0:\n"
            f"            os.execv('/bin/sleep', ['sleep', '{tok}'])\n"
            "        n += 1\n"
            "    except OSError:\n"
            "        break\n"
            "print(n)\n")
    r, _ = run_timed(code, timeout=3, max_procs=10)
    assert r.status == "passed" and int(r.stdout) < 10, r
    assert_none_left(tok)


def test_killing_the_supervisor(mode):
    """With a PID namespace the program cannot kill its supervisor (PID 1); with the
    subreaper fallback it can (documented hole), and the call still returns on time."""
    tok = token()
    code = ("import os, signal, subprocess, time\n"
            f"subprocess.Popen(['setsid', 'sleep', '{tok}'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "time.sleep(0.2)\n"
            "try:\n"
            "    os.kill(os.getppid(), signal.SIGKILL)\n"
            "except OSError as e:\n"
            "    print('kill failed', e)\n"
            "time.sleep(0.2)\n"
            "print('still here')\n")
    r, _ = run_timed(code, timeout=2)
    if "pidns" in r.isolation:
        assert r.status == "passed" and "still here" in r.stdout, r
        assert_none_left(tok)
    else:
        assert r.status == "failed" and "supervisor" in r.stderr, r
        for pid in alive(tok):                 # the hole: clean up after it
            os.kill(pid, signal.SIGKILL)


def test_normal_program_timeout_and_memory(mode):
    r, _ = run_timed("import sys\nprint(6 * 7)\nprint('warn', file=sys.stderr)", timeout=5)
    assert (r.status, r.returncode, r.stdout, r.stderr, r.truncated) == ("passed", 0, "42\n", "warn\n", False)
    r, _ = run_timed("raise SystemExit(3)", timeout=5)
    assert (r.status, r.returncode) == ("failed", 3)
    r, took = run_timed("while True: pass", timeout=1)
    assert r.status == "timeout" and took >= 0.9
    r, _ = run_timed("x = bytearray(2_000_000_000)", timeout=5, memory_mb=256)
    assert r.status == "memory", r.stderr


def test_output_is_capped(mode):
    r, _ = run_timed("import sys\nprint('a' * 100000)\nprint('b' * 100000, file=sys.stderr)", timeout=5,
                     max_output=1000)
    assert r.stdout == "a" * 1000 and r.stderr == "b" * 999 + "\n" and r.truncated


def test_public_mode_still_refuses(monkeypatch):
    monkeypatch.setenv("DECODING_LAB_PUBLIC", "1")
    with pytest.raises(sandbox.SettingsError, match="disabled"):
        run_python("print(1)")
