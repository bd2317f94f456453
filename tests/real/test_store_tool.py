"""The standalone store: agents reach it, it says where it listens, SIGTERM ends it with 0, and
a port that is taken is one clear line and exit 1."""
import os
import signal
import subprocess
import sys
from datetime import timedelta

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

pytestmark = pytest.mark.real
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def test_standalone_store_serves_until_sigterm_and_a_taken_port_is_refused():
    p = subprocess.Popen([sys.executable, "-m", "real_backend.tools.store", "--host", "127.0.0.1",
                          "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = p.stdout.readline().strip()
        assert line.startswith("store listening on 127.0.0.1:"), (line, p.stderr.read())
        port = int(line.rsplit(":", 1)[1])
        c = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=10), use_libuv=True)
        assert c.check(["epoch"])                          # as an agent-hosted store writes it
        c.set("k", b"v")
        assert c.get("k") == b"v"
        again = subprocess.run([sys.executable, "-m", "real_backend.tools.store", "--host", "127.0.0.1",
                                "--port", str(port)], capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert again.returncode == 1 and again.stderr.count("\n") == 1
        assert again.stderr.startswith(f"store: cannot listen on 127.0.0.1:{port}")
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=10) == 0
    finally:
        p.kill()
