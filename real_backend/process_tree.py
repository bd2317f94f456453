"""A process and its descendants, found through Linux /proc: torchrun starts its workers in
sessions of their own, so killing an agent's process group alone would leave them running.
And a pause that has taken effect: SIGSTOP stops a process's threads only as each is next
scheduled, so on a busy machine a thread of a "paused" store can still answer after kill()."""
from __future__ import annotations

import os
import signal
import time


def tree(pid: int) -> list[int]:
    """pid and all its descendants."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat").read()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def kill_tree(pid: int, sig: int = signal.SIGKILL) -> None:
    for p in tree(pid):
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def stopped(pid: int) -> bool:
    """Whether every thread of pid is stopped (a vanished process counts as stopped)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in tids:
        try:
            state = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in "Tt":
            return False
    return True


def stop(pid: int, limit: float = 30.0) -> bool:
    """SIGSTOP pid and wait until every one of its threads has stopped (at most `limit`
    seconds: False if one still runs then)."""
    os.kill(pid, signal.SIGSTOP)
    return wait_stopped(pid, limit)


def wait_stopped(pid: int, limit: float = 30.0) -> bool:
    """Wait until every thread of pid has stopped (False if one still runs after `limit` s)."""
    end = time.monotonic() + limit
    while not stopped(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.001)
    return True


def signal_now(pid: int, sig: int) -> None:
    """os.kill, except that a SIGSTOP returns once the process has stopped."""
    if sig == signal.SIGSTOP:
        stop(pid)
    else:
        os.kill(pid, sig)
