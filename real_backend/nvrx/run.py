"""Run NVRx's in-process restart for real: one process per rank on this machine, one fault,
and what each part took, from the ranks' own records (`worker.py`)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..ports import free_ports
from .worker import FAULTS
from rdzv_sim.events import Event


@dataclass
class Restart:
    """One real run: the fault at t = 0, and what the survivors did after it (seconds)."""
    fault: str
    ranks: int
    settings: dict
    aborted: float | None = None        # the first survivor's abort (the restart begins)
    reentered: float | None = None      # the last survivor back in the wrapped function
    trained: float | None = None        # the last survivor's process group ready again
    world_after: int | None = None
    survivors: list = field(default_factory=list)   # initial ranks that came back
    ok: bool = False
    error: str = ""

    @property
    def latency(self) -> float | None:
        """From the fault until every survivor trains again."""
        return self.trained


def run_inprocess(workdir: Path, fault: str, ranks: int = 4, *, fail_step: int = 20, steps: int = 40,
                  pg_timeout: float = 3.0, timeouts: dict | None = None, deadline: float = 240.0) -> Restart:
    """Start `ranks` processes under NVRx's Wrapper on gloo; the last rank fails as `fault`
    says at step `fail_step`. `timeouts`: the Wrapper's soft/hard/heartbeat timeouts (seconds;
    its defaults where not given)."""
    if fault not in FAULTS:
        raise ValueError(f"fault {fault!r}: one of {', '.join(FAULTS)}")
    workdir.mkdir(parents=True, exist_ok=True)
    for f in workdir.glob("rank*.jsonl"):
        f.unlink()
    port, base_port = free_ports(2)          # NVRx's store, and the one the ranks' groups use
    settings = {"pg_timeout": pg_timeout, **(timeouts or {})}
    env = dict(os.environ, WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               BASE_PORT=str(base_port), LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
               PG_TIMEOUT=str(pg_timeout),
               **{k.upper(): str(v) for k, v in (timeouts or {}).items()})
    procs = []
    for r in range(ranks):
        cmd = [sys.executable, "-m", "real_backend.nvrx.worker", str(workdir), fault, str(ranks - 1),
               str(fail_step), str(steps)]
        procs.append(subprocess.Popen(cmd, env={**env, "RANK": str(r)}, start_new_session=True,
                                      stdout=open(workdir / f"out{r}.log", "w"), stderr=subprocess.STDOUT))
    end = time.monotonic() + deadline
    error = ""
    survivors = procs[:-1]                     # the survivors finish; the failing rank may not
    while any(p.poll() is None for p in survivors):
        broken = [r for r, p in enumerate(survivors) if p.poll() not in (None, 0)]
        if broken:                             # a survivor that fails ends the wait at once
            last = (workdir / f"out{broken[0]}.log").read_text().strip().splitlines()[-1:]
            error = f"rank {broken[0]} exited with {survivors[broken[0]].returncode}: {' '.join(last)[:200]}"
            break
        if time.monotonic() > end:
            error = "a survivor did not finish before the deadline"
            break
        try:
            survivors[[p.poll() for p in survivors].index(None)].wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    return read(workdir, fault, ranks, settings, error)


def read(workdir: Path, fault: str, ranks: int, settings: dict, error: str = "") -> Restart:
    rows = [json.loads(line) for f in sorted(workdir.glob("rank*.jsonl")) for line in open(f)]
    r = Restart(fault, ranks, settings, error=error)
    at = [x["t"] for x in rows if x["event"] == "fault"]
    if not at:
        r.error = r.error or "the fault never happened"
        return r
    t0 = at[0]
    failed = ranks - 1
    aborted = [x["t"] - t0 for x in rows if x["event"] == "aborted" and x["initial_rank"] != failed]
    back = [x for x in rows if x["event"] == "enter" and x.get("iteration", 0) >= 1]
    ready = [x["t"] - t0 for x in rows if x["event"] == Event.PG_READY and x.get("iteration", 0) >= 1]
    done = {x["initial_rank"] for x in rows if x["event"] == "done" and x.get("iteration", 0) >= 1}
    r.aborted = min(aborted) if aborted else None
    r.reentered = max(x["t"] - t0 for x in back) if back else None
    r.trained = max(ready) if ready else None
    r.world_after = back[0]["world"] if back else None
    r.survivors = sorted({x["initial_rank"] for x in back})
    want = set(range(ranks)) - ({failed} if fault != "raise" else set())
    r.ok = not r.error and done == want and set(r.survivors) == want
    if not r.ok and not r.error:
        r.error = f"ranks that trained again: {sorted(done)}, expected {sorted(want)}"
    return r
