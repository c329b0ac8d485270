"""The Dockerfile's install and start commands, run in a fresh virtual environment
(Docker itself cannot run on these machines)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.real
ROOT = Path(__file__).resolve().parent.parent
INSTALL = "bash scripts/install.sh python3 /home/user/venv --runtime"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dockerfile_commands_install_and_serve(tmp_path):
    docker = (ROOT / "Dockerfile").read_text()
    assert f"RUN {INSTALL}" in docker, "the Dockerfile's install line changed: update this test"
    assert "RUN python -m decoding_lab models --prepare" in docker
    assert 'CMD ["python", "app.py"]' in docker and "EXPOSE 7860" in docker and "USER user" in docker
    venv = tmp_path / "venv"
    python = str(Path(sys.base_prefix) / "bin" / "python3")  # the interpreter outside any venv
    subprocess.run(["bash", "scripts/install.sh", python, str(venv), "--runtime"], cwd=ROOT, check=True,
                   timeout=1800)
    py = str(venv / "bin" / "python")
    env = dict(os.environ, HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False", PYTHONPATH=str(ROOT))
    subprocess.run([py, "-m", "decoding_lab", "models", "--prepare"], cwd=ROOT, check=True, env=env, timeout=1800)
    port = _free_port()
    env.update(DECODING_LAB_HOST="127.0.0.1", PORT=str(port), GRADIO_SERVER_PORT=str(port))
    proc = subprocess.Popen([py, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    from lanes import note_start
    note_start("app.py (child process)")
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    assert r.status == 200 and b"Decoding Lab" in r.read()
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                time.sleep(2)
        else:
            pytest.fail("the app did not answer within 300 s")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
