"""torchft for real: its Lighthouse and one Manager per replica group, gloo on CPU.

`run_torchft(...)` starts torchft's Lighthouse (`torchft_lighthouse`, a process of its own) and
one OS process per replica group (`python -m real_backend.torchft_run replica ...`: its own
TCPStore, a reconfigurable `ProcessGroupGloo`, a `Manager`, a small model and a state blob of
`state_mb` that a healing group fetches from a live peer). Faults are SIGKILL of a group's
process (or of the Lighthouse's) at a time and its restart at another. Every group writes one JSON line per step (the quorum it
got, whether it healed, whether the step committed, the Manager's error); `quorum_validate.py`
compares them with the simulated protocol.

torchft is an optional extra (`pip install -e '.[torchft]'`); without it `available()` says why.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


def available() -> str | None:
    """None when torchft imports here, else why not (a test's skip reason)."""
    try:
        import torchft  # noqa: F401
        from torchft._torchft import LighthouseServer  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any failure to import is the reason to skip
        return f"torchft is not usable here ({type(e).__name__}: {e}); pip install -e '.[torchft]'"
    return None


@dataclass
class GroupFault:
    group: int | None              # None: the Lighthouse's own process
    kill_at: float                 # seconds after the start (or after the anchor)
    restart_at: float | None = None
    after_steps: int | None = None  # the anchor: every group has committed this many steps
    killed: float | None = None    # when it was done (seconds after the start), by the run
    restarted: float | None = None


@dataclass
class TorchftRun:
    groups: int = 3
    duration: float = 40.0
    step_time: float = 0.2         # seconds of compute per step (a sleep: the CPU is shared)
    state_mb: float = 64.0         # the state a healing group fetches from a peer
    min_replicas: int = 1
    min_replica_size: int | None = None   # the Manager's commit gate (None: min_replicas)
    join_timeout: float = 1.0
    quorum_tick: float = 0.1
    heartbeat_timeout: float = 1.0
    timeout: float = 5.0           # the Manager's collective / commit / heal timeout
    quorum_timeout: float = 60.0   # the Manager's wait for a quorum (torchft's default)
    quorum_retries: int = 0        # the Manager's retries of a failed Lighthouse call (torchft's default)
    async_quorum: bool = False     # the Manager's use_async_quorum (torchft's default is True)
    sync_every: int = 1            # >1: torchft's LocalSGD, the groups meet every sync_every steps
    faults: list[GroupFault] = field(default_factory=list)
    workdir: Path | None = None
    settle_steps: int | None = None  # end once every group committed this many after the last
                                     # fault, each with every group in the quorum


def _replica(args) -> None:
    """One replica group (group world size 1): train until killed or `--until`."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist
    from torchft import Manager, ProcessGroupGloo

    out = open(args.log, "a", buffering=1)
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 64)
    blob = torch.zeros(int(args.state_mb * 2**20) // 4)       # the state a peer heals from
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    healed = {"n": 0}

    def load_state_dict(sd):
        model.load_state_dict(sd["model"])
        opt.load_state_dict(sd["optim"])
        blob.copy_(sd["blob"])
        healed["n"] += 1

    def state_dict():
        return {"model": model.state_dict(), "optim": opt.state_dict(), "blob": blob}

    t = timedelta(seconds=args.timeout)
    manager = Manager(pg=ProcessGroupGloo(timeout=t), min_replica_size=args.min_replica_size,
                      load_state_dict=load_state_dict, state_dict=state_dict,
                      replica_id=f"g{args.group}", lighthouse_addr=args.lighthouse,
                      store_addr="127.0.0.1", store_port=store.port, rank=0, world_size=1,
                      timeout=t, quorum_timeout=timedelta(seconds=args.quorum_timeout),
                      connect_timeout=t, quorum_retries=args.quorum_retries,
                      use_async_quorum=args.async_quorum)
    seen = {}
    client = manager._client

    class Recording:
        """The Manager's own client, keeping what each quorum answer said."""
        def _quorum(self, **kw):
            q = client._quorum(**kw)
            # store: the TCPStore its process groups meet on (torchft's primary), as `own_store` names it
            seen.update(quorum_id=q.quorum_id, replicas=sorted(r.split(":")[0] for r in q.replica_ids),
                        heal=bool(q.heal), max_step=int(q.max_step), answered=time.monotonic(),
                        store=str(q.store_address), own_store=f"127.0.0.1:{store.port}")
            return q

        def __getattr__(self, name):
            return getattr(client, name)

    manager._client = Recording()
    train = _local_sgd if args.sync_every > 1 else _per_step
    train(args, manager, model, opt, out, seen, healed)
    manager.shutdown(wait=False)


def _per_step(args, manager, model, opt, out, seen: dict, healed: dict) -> None:
    """Train with torchft's Optimizer: each step's quorum in `zero_grad`, its gradients
    all-reduced by the Manager, the commit in `step`. A record a step; `q` when the quorum
    (and a synchronous heal) returned."""
    import torch
    from torchft import Optimizer

    optim = Optimizer(manager, opt)
    x = torch.randn(8, 64)
    tails = [0.0]                              # recent steps' backward and all-reduce
    while _running(args):
        t0 = time.monotonic()
        before = healed["n"]
        optim.zero_grad()                      # the quorum (with its heal: in the background
                                               # when async, waited for at the first all-reduce)
        q = time.monotonic()
        # the step's compute first, its gradients' all-reduce at its end (as DDP's last
        # buckets): a step takes step_time when nothing stalls it, and a peer that dies
        # during it fails its all-reduce, so the step does not commit
        time.sleep(max(0.0, args.step_time - min(tails[-5:]) - (time.monotonic() - q)))
        c = time.monotonic()
        model(x).sum().backward()
        # the Manager all-reduces across the quorum (an error fails the commit); torchft
        # 0.2.0's DistributedDataParallel hook asserts instead when a peer dies mid all-reduce,
        # killing the survivors (docs/per-step.md)
        for w in [manager.allreduce(p.grad) for p in model.parameters()]:
            w.wait()
        tails.append(min(time.monotonic() - c, args.step_time / 2))
        step_before = manager.current_step()
        optim.step()                           # commits only if every group's step went well
        out.write(json.dumps({"t0": t0, "q": q, "t": time.monotonic(), "group": args.group,
                              "pid": os.getpid(), "step": manager.current_step(),
                              "committed": manager.current_step() > step_before,
                              "error": _error_text(manager),
                              "healed": healed["n"] > before,
                              "participants": manager.num_participants(), **seen}) + "\n")


def _local_sgd(args, manager, model, opt, out, seen: dict, healed: dict) -> None:
    """Train with torchft's own LocalSGD: `sync_every` steps on the group's own, then the
    quorum (with a joiner's heal: the synchronous quorum heals inside it), the parameters'
    all-reduce and the commit, in the optimizer's step hook. A record a step; `synced` marks
    the steps that ended in a sync, `q` when their quorum (and heal) returned."""
    import torch
    from torchft.local_sgd import LocalSGD

    marks = {}
    start_quorum = manager.start_quorum

    def timed(*a, **kw):                       # when the quorum (and a heal) returned
        r = start_quorum(*a, **kw)
        marks["q"] = time.monotonic()
        return r
    manager.start_quorum = timed
    x = torch.randn(8, 64)
    with LocalSGD(manager, model, opt, sync_every=args.sync_every):
        while _running(args):
            t0 = time.monotonic()
            before, step_before = healed["n"], manager.current_step()
            marks.clear()
            opt.zero_grad()
            time.sleep(args.step_time)             # the step's compute
            model(x).sum().backward()
            opt.step()                             # every sync_every-th: quorum, all-reduce, commit
            synced = "q" in marks
            out.write(json.dumps({"t0": t0, "q": marks.get("q", t0), "t": time.monotonic(),
                                  "group": args.group, "pid": os.getpid(), "synced": synced,
                                  "step": manager.current_step(),
                                  "committed": manager.current_step() > step_before,
                                  "error": _error_text(manager),
                                  "healed": healed["n"] > before,
                                  "participants": manager.num_participants() if synced else None,
                                  **(seen if synced else {})}) + "\n")


def _running(args) -> bool:
    """Until `--until`, or until the runner writes the stop file."""
    return time.monotonic() < args.until and not (args.stop_file and os.path.exists(args.stop_file))


def _error_text(manager) -> str | None:
    """The Manager's error of the last step, on one line (None: none)."""
    error = manager.errored()
    if error is None:
        return None
    e = error.original_exception
    return f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"


class Lighthouse:
    """torchft's Lighthouse as its own process (`torchft_lighthouse`), on a port that stays
    its address when it is killed and started again, as a job's Lighthouse service would."""

    def __init__(self, cfg: TorchftRun, log: Path):
        # torchft's own entry point (it reads the process's arguments, so not `python -c`)
        self.script = shutil.which("torchft_lighthouse", path=str(Path(sys.executable).parent)) \
            or shutil.which("torchft_lighthouse")
        if self.script is None:
            raise RuntimeError("torchft_lighthouse is not installed beside this Python; "
                               "pip install -e '.[torchft]'")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.cfg, self.log, self.proc = cfg, log, None
        self.address = f"http://127.0.0.1:{self.port}"

    def start(self, wait_s: float = 60.0) -> None:
        """Start it and return once it accepts connections."""
        c = self.cfg
        cmd = [sys.executable, self.script, "--bind", f"127.0.0.1:{self.port}",
               "--min_replicas", str(c.min_replicas),
               "--join_timeout_ms", str(int(c.join_timeout * 1000)),
               "--quorum_tick_ms", str(int(c.quorum_tick * 1000)),
               "--heartbeat_timeout_ms", str(int(c.heartbeat_timeout * 1000))]
        with open(self.log, "a") as err:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + wait_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"torchft's Lighthouse exited ({self.proc.returncode}); see {self.log}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1.0).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"torchft's Lighthouse did not listen within {wait_s:.0f} s") from None
                time.sleep(0.02)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


def run_torchft(cfg: TorchftRun) -> tuple[list[dict], list[dict]]:
    """Run the job with its faults: (the step records of every group in time order, the
    starts, kills and restarts done), both also in `<workdir>/steps.json`. A fault whose
    group is None kills (and restarts) the Lighthouse's process.

    Once settled, the run asks the groups to stop (a `stop` event): they see it one by one, so
    the last steps of those still going may have a quorum without the ones already gone. Those
    steps, ended after the stop, are the run's wind-down, not its faults': they stay in
    steps.json and are left out of the list returned."""
    job = _Job(cfg)
    try:
        job.faults()
        job.settle()
        job.wait()
    finally:
        job.end()
    return job.steps()


class _Job:
    """One torchft run's processes: the Lighthouse, a replica process a group, their logs."""

    def __init__(self, cfg: TorchftRun):
        self.cfg = cfg
        self.work = work = Path(cfg.workdir or Path.cwd() / "runs" / "torchft")
        work.mkdir(parents=True, exist_ok=True)
        self.lighthouse = Lighthouse(cfg, work / "lighthouse.err")
        self.lighthouse.start()
        self.start = time.monotonic()
        self.until = self.start + cfg.duration
        self.logs = [work / f"g{g}.jsonl" for g in range(cfg.groups)]
        for p in self.logs:
            p.write_text("")
        self.events = [{"t": 0.0, "event": "start", "group": g} for g in range(cfg.groups)]
        self.stop = work / "STOP"
        self.stop.unlink(missing_ok=True)
        self.procs = {g: self.spawn(g) for g in range(cfg.groups)}

    def commits(self, g, after=-1.0, full=False):
        """Steps group g committed so far (after `after`, seconds from the start; `full`: only
        those with every group in the quorum, so a job split in two after a fault is not
        taken as settled)."""
        rows = (json.loads(line) for line in self.logs[g].read_text().splitlines()
                if '"committed": true' in line)
        return sum(1 for r in rows if r["t"] - self.start > after
                   and (not full or len(r.get("replicas", ())) == self.cfg.groups))

    def spawn(self, g):
        cfg = self.cfg
        env = dict(os.environ, GLOO_SOCKET_IFNAME=os.environ.get("GLOO_SOCKET_IFNAME", "lo"))
        cmd = [sys.executable, "-m", "real_backend.torchft_run", "replica", "--group", str(g),
               "--lighthouse", self.lighthouse.address, "--log", str(self.logs[g]), "--until", repr(self.until),
               "--step-time", repr(cfg.step_time), "--state-mb", repr(cfg.state_mb),
               "--timeout", repr(cfg.timeout),
               "--min-replica-size", str(cfg.min_replica_size or cfg.min_replicas),
               "--quorum-timeout", repr(cfg.quorum_timeout), "--quorum-retries", str(cfg.quorum_retries),
               *(["--async-quorum"] if cfg.async_quorum else []),
               "--sync-every", str(cfg.sync_every),
               "--stop-file", str(self.stop)]
        with open(self.work / f"g{g}.err", "a") as err:          # the child keeps its own copy
            return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)

    def faults(self) -> None:
        """Kill and restart as the faults say, each when due (after its anchor's steps, if any)."""
        cfg = self.cfg
        todo = [(f, "kill", f.kill_at) for f in cfg.faults]
        todo += [(f, "restart", f.restart_at) for f in cfg.faults if f.restart_at is not None]
        anchors: dict[int, float] = {}             # after_steps -> when every group had committed them
        while todo and time.monotonic() < self.until:
            now = time.monotonic() - self.start
            for n in {f.after_steps for f, _, _ in todo if f.after_steps is not None} - set(anchors):
                if all(self.commits(g) >= n for g in range(cfg.groups)):
                    anchors[n] = now
            due = [(f, what, at) for f, what, at in todo
                   if (0.0 if f.after_steps is None else anchors.get(f.after_steps, now + 1e9)) + at <= now]
            for f, what, at in sorted(due, key=lambda d: d[1] != "kill"):
                todo.remove((f, what, at))
                self._do(f, what, now)
            time.sleep(0.05)

    def _do(self, f, what: str, now: float) -> None:
        if what == "kill":
            if f.group is None:
                self.lighthouse.kill()
            else:
                self.procs[f.group].send_signal(signal.SIGKILL)
                self.procs[f.group].wait()
            f.killed = now
        else:
            if f.group is None:
                self.lighthouse.start()
            else:
                self.procs[f.group] = self.spawn(f.group)
            f.restarted = now
        self.events.append({"t": now, "event": what, "group": f.group})

    def settle(self) -> None:
        """Once every group committed `settle_steps` whole-quorum steps since the last fault, stop."""
        cfg = self.cfg
        last = max((e["t"] for e in self.events), default=0.0)
        while cfg.settle_steps and time.monotonic() < self.until:
            if all(self.commits(g, last, full=True) >= cfg.settle_steps for g in range(cfg.groups)):
                self.events.append({"t": time.monotonic() - self.start, "event": "stop", "group": None})
                self.stop.touch()
                break
            time.sleep(0.1)

    def wait(self) -> None:
        for g, p in self.procs.items():
            p.wait(timeout=max(1.0, self.until - time.monotonic() + self.cfg.timeout + 30))
            self.events.append({"t": time.monotonic() - self.start, "event": "exit", "group": g,
                                "returncode": p.returncode})

    def end(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
        self.lighthouse.kill()

    def steps(self) -> tuple[list[dict], list[dict]]:
        """Every group's step records in time order (seconds from the start), and the events."""
        steps = []
        for p in self.logs:
            for line in p.read_text().splitlines():
                r = json.loads(line)
                for k in ("t0", "q", "t", "answered"):
                    if k in r:
                        r[k] -= self.start
                steps.append(r)
        steps.sort(key=lambda r: r["t"])
        (self.work / "steps.json").write_text(json.dumps({"steps": steps, "events": self.events}))
        stopped = min((e["t"] for e in self.events if e["event"] == "stop"), default=float("inf"))
        return [r for r in steps if r["t"] <= stopped], self.events


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m real_backend.torchft_run")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("replica")
    r.add_argument("--group", type=int, required=True)
    r.add_argument("--lighthouse", required=True)
    r.add_argument("--log", required=True)
    r.add_argument("--until", type=float, required=True)
    r.add_argument("--step-time", type=float, default=0.2)
    r.add_argument("--state-mb", type=float, default=64.0)
    r.add_argument("--timeout", type=float, default=5.0)
    r.add_argument("--min-replica-size", type=int, default=1)
    r.add_argument("--stop-file", default=None)
    r.add_argument("--quorum-timeout", type=float, default=60.0)
    r.add_argument("--quorum-retries", type=int, default=0)
    r.add_argument("--async-quorum", action="store_true")
    r.add_argument("--sync-every", type=int, default=1)
    d = sub.add_parser("demo")
    d.add_argument("--out", default="runs/torchft")
    args = ap.parse_args(argv)
    if args.cmd == "replica":
        _replica(args)
    else:
        steps, events = run_torchft(TorchftRun(workdir=Path(args.out),
                                               faults=[GroupFault(1, 12.0, 20.0)]))
        for e in events:
            print(e)
        print(len(steps), "steps")


if __name__ == "__main__":
    main()
