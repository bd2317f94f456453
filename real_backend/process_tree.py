"""A process and its descendants, found through Linux /proc: torchrun starts its workers in
sessions of their own, so killing an agent's process group alone would leave them running."""
from __future__ import annotations

import os
import signal


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
