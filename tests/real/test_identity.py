"""Agents on one host told apart: a live duplicate gets `host#2`, a dead predecessor's name is
free again (the kernel drops its lock however it dies), an explicit name in use is refused."""
import os
import signal
import subprocess
import sys
import uuid

import pytest

from real_backend import identity


@pytest.fixture
def run_id():
    return f"test-{uuid.uuid4().hex[:8]}"


def test_a_live_duplicate_gets_the_next_name_and_a_released_name_is_free(run_id):
    a, fa = identity.claim("host1", run_id)
    b, fb = identity.claim("host1", run_id)
    c, fc = identity.claim("host1", run_id)
    assert (a, b, c) == ("host1", "host1#2", "host1#3")
    assert identity.claim("host1", "another-run")[0] == "host1"      # runs apart
    identity.release(fb)
    assert identity.claim("host1", run_id)[0] == "host1#2"            # the freed one, first
    for fd in (fa, fc):
        identity.release(fd)


def test_an_explicit_name_held_by_a_live_agent_is_refused_by_name(run_id):
    _, fd = identity.claim("trainer-0", run_id, explicit=True)
    with pytest.raises(identity.IdentityInUse, match=f"node_name=trainer-0: a live agent on this host \\(pid {os.getpid()}\\)"):
        identity.claim("trainer-0", run_id, explicit=True)
    identity.release(fd)


def test_a_killed_agents_name_is_taken_by_its_successor(run_id):
    code = ("import sys, time; from real_backend import identity; "
            f"print(identity.claim('host1', {run_id!r})[0], flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert p.stdout.readline().strip() == "host1"
    assert identity.claim("host1", run_id)[0] == "host1#2"            # alive: a duplicate
    p.send_signal(signal.SIGKILL)
    p.wait()
    name, fd = identity.claim("host1", run_id)
    assert name == "host1"                                            # dead: its successor
    identity.release(fd)
