"""Output folders that appear whole or not at all: a run writes into a temporary folder beside
`--out` and renames it at the end, so a failed or interrupted run leaves nothing half-written,
and an earlier run's folder is replaced only once the new one is complete."""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .errors import Error

MARK = "scenario.yaml"          # every run folder has one


class OutputError(Error):
    """An output folder that cannot be (re)written."""


def replaceable(target: Path) -> bool:
    """An output folder may be replaced if it is empty or holds a run (its scenario.yaml)."""
    return not target.exists() or (target.is_dir() and (not any(target.iterdir())
                                                          or (target / MARK).exists()))


@contextmanager
def atomic_folder(target: str | Path):
    """Yield a temporary folder beside `target`; when the block succeeds it becomes `target`."""
    target = Path(target)
    if not replaceable(target):
        raise OutputError(f"{target} exists and is not a run's folder (no {MARK}): "
                          "choose another --out, or remove it")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        target.rename(old)
    tmp.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
