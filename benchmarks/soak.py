"""A soak, for real: the `hrw` torchrun plugin training under random faults, then the checks.

    python benchmarks/soak.py --minutes 10 [--seed 0] [--dir DIR] [--report reports/soak.md]

Three torchrun agents (`--nnodes=2:3`) train `real_backend.tools.train_demo` as in the elastic
demo, each reaching the store through a fault proxy of its own. A seeded schedule picks, one
at a time, a fault, an agent and how long: SIGKILL of the agent and its workers then a new
agent on the same address, SIGSTOP/SIGCONT of both, a cut of the agent's store link (a silent
partition), or SIGTERM of the agent (a graceful exit) then a new one. After each fault the job
must train at world size 3 again within `RECOVER_S`, else the soak calls it a hang. At the
end a stop file ends training and every agent must exit 0. Then it checks the step log and the
rendezvous traces: no generation resumed from before the newest checkpoint written before it
(nor invented a step), and every round's members agreed (the `rdzv_sim.testing` checkers). The
kinds, targets and durations come from the seed; how long each recovery takes is real timing.
"""
from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd

from elastic_demo import ADDRS, Demo, DemoFailed, _kill_tree, _steps
from bench_io import environment, write  # noqa: E402

KINDS = ("kill", "stop", "partition", "terminate")
RECOVER_S = 90.0        # a fault over -> training at world size 3 again (else: a hang)
EXIT_S = 60.0           # the stop file -> every agent has exited
CONF = "join_timeout=60,last_call_timeout=1,close_timeout=10,is_host=false,read_timeout=5"


class Soak(Demo):
    def __init__(self, workdir, minutes: float, seed: int = 0, *, gap=(3.0, 10.0),
                 duration=(1.0, 15.0), max_faults: int | None = None):
        super().__init__("hrw", workdir, step_time=0.05, monitor_interval=0.5,
                         timeout=RECOVER_S, conf=CONF)
        self.max_restarts, self.pg_timeout = 100_000, 10.0
        self.minutes, self.seed, self.gap, self.duration = minutes, seed, gap, duration
        self.max_faults = max_faults
        self.rng = random.Random(seed)
        self.proxy = None
        self.addr = dict(zip("ABC", ADDRS))
        self.faults: list[dict] = []
        self.problems: list[str] = []

    def endpoint_port(self, name: str) -> int:
        return self.proxy.add(name)

    def _signal(self, name: str, sig) -> None:
        _kill_tree(self.agents[name].pid, sig)

    # --- one fault -------------------------------------------------------------------------
    def inject(self, kind: str, name: str, seconds: float) -> dict:
        t0 = time.time()
        if kind == "kill":
            self.kill(name)
            time.sleep(seconds)
            self.start_agent(name, self.addr[name])
        elif kind == "stop":
            self._signal(name, signal.SIGSTOP)
            time.sleep(seconds)
            self._signal(name, signal.SIGCONT)
        elif kind == "partition":
            self.proxy.cut(name)
            time.sleep(seconds)
            self.proxy.heal(name)
        elif kind == "terminate":                 # torchrun's agent shuts down on SIGTERM
            self.agents[name].send_signal(signal.SIGTERM)
            try:
                self.agents[name].wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.problems.append(f"agent {name} did not exit within 30 s of SIGTERM")
                self.kill(name)
            time.sleep(seconds)
            self.start_agent(name, self.addr[name])
        return {"kind": kind, "node": name, "seconds": round(seconds, 2), "t0": t0, "t_end": time.time()}

    def recovered(self, fault: dict) -> None:
        """Wait until rank 0 trains at world size 3 after the fault; restart agents that exited
        on their own (each one a problem)."""
        end = fault["t_end"]
        deadline = end + RECOVER_S
        while time.time() < deadline:
            for name, p in self.agents.items():
                if p.poll() is not None:
                    self.problems.append(f"agent {name} exited on its own (rc={p.returncode}) "
                                         f"after the {fault['kind']} of {fault['node']}")
                    self.start_agent(name, self.addr[name])
            done = [x for x in _steps(self.log) if x["world"] == 3 and x["rank"] == 0 and x["t"] > end]
            if len(done) >= 3:
                fault["recover_s"] = round(done[0]["t"] - end, 2)
                return
            time.sleep(0.2)
        fault["recover_s"] = None
        self.problems.append(f"hung: no training at world size 3 within {RECOVER_S:.0f} s of the "
                             f"{fault['kind']} of {fault['node']}\n{self.tails()}")

    # --- the soak ----------------------------------------------------------------------------
    def run(self) -> dict:
        from real_backend.proxy import FaultProxy
        try:
            self.start_store()
            self.proxy = FaultProxy("127.0.0.1", self.port, seed=self.seed)
            t_start = time.time()
            for name in "ABC":
                self.start_agent(name, self.addr[name])
            self.until("training at world size 3",
                       lambda s: sum(1 for x in s if x["world"] == 3 and x["rank"] == 0) >= 5)
            t_stop = t_start + 60.0 * self.minutes
            while (time.time() < t_stop and len(self.faults) < (self.max_faults or sys.maxsize)
                   and not any(p.startswith("hung") for p in self.problems)):
                time.sleep(self.rng.uniform(*self.gap))
                kind, name = self.rng.choice(KINDS), self.rng.choice("ABC")
                fault = self.inject(kind, name, self.rng.uniform(*self.duration))
                self.faults.append(fault)
                self.recovered(fault)
            self.stop.touch()
            rcs = {}
            for name, p in self.agents.items():
                try:
                    rcs[name] = p.wait(timeout=EXIT_S)
                except subprocess.TimeoutExpired:
                    rcs[name] = None
                    self.problems.append(f"hung: agent {name} did not exit within {EXIT_S:.0f} s of the stop")
            if any(rc != 0 for rc in rcs.values()):
                self.problems.append(f"unclean end: exit codes {rcs}\n{self.tails()}")
            return self.summary(t_start, rcs)
        finally:
            if self.proxy is not None:
                self.proxy.close()
            self.close()

    def summary(self, t_start: float, rcs: dict) -> dict:
        steps = _steps(self.log)
        gens = generations(steps)
        self.problems += checkpoint_problems(gens)
        events = traces(self.dir)
        self.problems += round_problems(events)
        rounds = sorted(events.loc[events["event"] == "rank_assigned", "round"].dropna().unique())
        recover = [f["recover_s"] for f in self.faults if f.get("recover_s") is not None]
        return {"seed": self.seed, "minutes": self.minutes, "wall_s": round(time.time() - t_start, 1),
                "faults": dict(Counter(f["kind"] for f in self.faults)),
                "fault_log": [{k: v for k, v in f.items() if k not in ("t0", "t_end")} for f in self.faults],
                "rounds": len(rounds), "generations": len(gens),
                "steps": max((x["step"] for x in steps), default=0),
                "steps_lost": sum(g["lost"] for g in gens),
                "lost_past_checkpoint": sum(g["past_checkpoint"] for g in gens),
                "recover_s_max": max(recover, default=None),
                "recover_s_median": sorted(recover)[len(recover) // 2] if recover else None,
                "hung": sum(p.startswith("hung") for p in self.problems),
                "exit_codes": rcs, "problems": self.problems, "dir": str(self.dir)}


def generations(steps: list[dict]) -> list[dict]:
    """Rank 0's worker generations in time order, each with what it resumed from and what was
    known before it started: the newest checkpoint written and the furthest step done."""
    r0 = sorted((x for x in steps if x["rank"] == 0), key=lambda x: x["t"])
    out: list[dict] = []
    for x in r0:
        key = (x["world"], x["resumed_from"], x["host"], x["restart"])
        if out and out[-1]["key"] == key and x["step"] > out[-1]["last"]:
            out[-1]["last"] = x["step"]
            continue
        before = [y for y in steps if y["t"] < x["t"]]
        ckpt = max((y.get("ckpt") or 0 for y in before if y["rank"] == 0), default=0)
        done = max((y["step"] for y in before), default=0)
        out.append({"key": key, "world": x["world"], "resumed_from": x["resumed_from"],
                    "first": x["step"], "last": x["step"], "t0": x["t"], "ckpt_before": ckpt,
                    "done_before": done, "lost": max(0, done - x["resumed_from"]),
                    "past_checkpoint": max(0, ckpt - x["resumed_from"])})
    return out


def checkpoint_problems(gens: list[dict]) -> list[str]:
    out = []
    for g in gens:
        if g["resumed_from"] < g["ckpt_before"]:
            out.append(f"generation at {g['t0']:.1f} resumed from step {g['resumed_from']}, before "
                       f"the checkpoint of step {g['ckpt_before']}")
        if g["resumed_from"] > g["done_before"] or g["first"] != g["resumed_from"] + 1:
            out.append(f"generation at {g['t0']:.1f} starts at step {g['first']} resuming "
                       f"{g['resumed_from']}: steps invented (done before: {g['done_before']})")
    return out


def traces(folder: Path) -> pd.DataFrame:
    """Every agent's rendezvous trace (the plugin's JSON lines), in wall-clock order, shaped as
    the simulator's events table so the `rdzv_sim.testing` checkers read it."""
    rows = []
    for f in sorted(Path(folder).glob("trace-*.jsonl")):
        for line in f.read_text(errors="replace").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue                        # a line cut by a SIGKILL
            r["detail"] = json.dumps(r.get("detail")) if r.get("detail") else ""
            rows.append(r)
    cols = ["t", "wall", "node", "event", "round", "rank", "world_size", "detail"]
    df = pd.DataFrame(rows, columns=cols).sort_values("wall", kind="stable").reset_index(drop=True)
    df["t"] = df["wall"] - (df["wall"].min() if len(df) else 0.0)
    return df


def round_problems(events: pd.DataFrame) -> list[str]:
    from rdzv_sim.testing.invariants import members_agree, ranks_are_a_permutation
    return [str(v) for v in members_agree(events) + ranks_are_a_permutation(events)]


def report(r: dict, env: dict) -> str:
    lines = ["# Soak: the hrw torchrun plugin under random faults, for real", "",
             f"{env['date']}, {env['machine']}, Python {env['python']}, torch {env['torch']} (gloo). "
             f"`python benchmarks/soak.py --minutes {r['minutes']:g} --seed {r['seed']}` "
             f"({r['wall_s']:.0f} s of wall time).", "",
             "Three torchrun agents (`--nnodes=2:3`, `--rdzv-backend=hrw`, `--rdzv-conf=" + CONF + "`) "
             "train `real_backend/tools/train_demo.py` (checkpoint every 10 steps, gloo timeout 10 s), "
             "each through its own fault proxy to the store. One fault at a time; after each the job "
             f"must train at world size 3 again within {RECOVER_S:.0f} s of the fault's end (a stop or a "
             "cut shorter than the gloo timeout stalls the job and it carries on: ~0 s).", "",
             "| what | count |", "|---|---:|"]
    for k in KINDS:
        lines.append(f"| faults: {k} | {r['faults'].get(k, 0)} |")
    lines += [f"| rounds (rendezvous completed) | {r['rounds']} |",
              f"| worker generations | {r['generations']} |",
              f"| steps trained (furthest) | {r['steps']} |",
              f"| steps redone (work since the last checkpoint) | {r['steps_lost']} |",
              f"| steps lost past the last checkpoint | {r['lost_past_checkpoint']} |",
              f"| hung agents | {r['hung']} |",
              f"| recovery to world 3, median / max | {r['recover_s_median']} s / {r['recover_s_max']} s |",
              f"| exit codes at the end | {r['exit_codes']} |", "",
              "Problems: " + ("none." if not r["problems"] else ""), ""]
    lines += [f"- {p.splitlines()[0]}" for p in r["problems"]]
    lines += ["", "| # | fault | agent | seconds | world 3 again, after the fault's end |", "|---:|---|---|---:|---:|"]
    for i, f in enumerate(r["fault_log"]):
        lines.append(f"| {i} | {f['kind']} | {f['node']} | {f['seconds']} | {f.get('recover_s')} s |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="how long to inject faults")
    ap.add_argument("--seed", type=int, default=0, help="the fault schedule's seed")
    ap.add_argument("--faults", type=int, default=None, help="stop after this many faults")
    ap.add_argument("--dir", default=None, help="work folder (logs, traces; default: a temporary one)")
    ap.add_argument("--report", default=None, help="write the markdown report (and .json beside it)")
    a = ap.parse_args(argv)
    if not 0 < a.minutes <= 24 * 60:
        print("soak: --minutes must be in (0, 1440]", file=sys.stderr)
        return 2
    import tempfile
    folder = a.dir or tempfile.mkdtemp(prefix="soak-")
    try:
        r = Soak(folder, a.minutes, a.seed, max_faults=a.faults).run()
    except DemoFailed as e:
        print(f"soak: {e}", file=sys.stderr)
        return 1
    env = environment()
    text = report(r, env)
    print(text)
    if a.report:
        path = Path(a.report)
        write(path.stem, env | r, text, folder=path.parent)
    return 1 if r["problems"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
