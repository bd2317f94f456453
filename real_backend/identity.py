"""Which agent on this host is which: a live duplicate told apart from a dead predecessor.

An `hrw` node is its host, so that an agent restarted on the same host takes its old slot at
once. Several live agents on one host (as people test elastic jobs locally) would then replace
each other's slot forever. The host's kernel knows who is alive: each agent holds an exclusive
`flock` on a file named after the run and its identity, and the kernel drops it when the
process dies, however it dies. So a restarted agent finds its host's name free and takes it; a
second live agent finds it held and takes `host#2` (then `#3`, ...). An identity given
explicitly (`node_name=`) that a live agent holds is refused instead, by name.
"""
from __future__ import annotations

import fcntl
import os
import re
import tempfile
from pathlib import Path

MAX_AGENTS_PER_HOST = 1024


class IdentityInUse(ValueError):
    """An explicit node_name that a live agent on this host already holds."""


def _lock_dir() -> Path:
    d = Path(tempfile.gettempdir()) / f"rdzv-sim-{os.getuid()}"
    d.mkdir(mode=0o700, exist_ok=True)
    return d


def _try(path: Path):
    """An open file holding the lock, or None if a live process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def _holder(path: Path) -> str:
    try:
        return path.read_text().strip() or "?"
    except OSError:
        return "?"


def claim(base: str, run_id: str, explicit: bool = False) -> tuple[str, int]:
    """This agent's identity in run `run_id` and the descriptor that holds it (keep it open for
    the agent's life): `base` when no live agent on this host holds it, else `base#k`."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", f"{run_id}--{base}")
    for k in range(1, MAX_AGENTS_PER_HOST + 1):
        name = base if k == 1 else f"{base}#{k}"
        path = _lock_dir() / (safe + ("" if k == 1 else f"#{k}") + ".lock")
        fd = _try(path)
        if fd is not None:
            return name, fd
        if explicit:
            raise IdentityInUse(
                f"--rdzv-conf node_name={base}: a live agent on this host (pid {_holder(path)}) "
                f"already is {base!r} in run {run_id!r}; give each agent its own node_name, or "
                "leave it out and the agents on one host are told apart by themselves")
    raise IdentityInUse(f"more than {MAX_AGENTS_PER_HOST} live agents of run {run_id!r} on this host")


def release(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
