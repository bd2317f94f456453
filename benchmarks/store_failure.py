"""The store's host dies during training: for real (torchrun, 3 agents, one machine) and
simulated, for each way of keeping the store.

Cases: torch's `c10d` on a TCPStore and `hrw` on a TCPStore (the store dies with its host),
`hrw` with `store_failover=true` (the store in agent A's process, a successor elected);
torch's `etcd-v2` (c10d's dynamic handler on etcd's v2 API) and `hrw` on etcd
(`--rdzv-conf store=etcd`), each on a local 3-member etcd cluster whose leader dies. Three
agents train `train_demo`; once at world size 3, agent A and the store it hosts are killed
together (the TCPStore process, or the etcd leader's member, whose endpoint A was given). We
time the first step at world size 2, count the steps redone (trained before the kill, past
the checkpoint the survivors resumed from), or note that the survivors exit. Simulated: the
same three hosts with the store on host 0 (`store.host: 0`, or a replicated store on hosts
0-2), host 0 crashing; and at 2,048 hosts. Writes reports/store_failure.md and .json.
Usage: python benchmarks/store_failure.py
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench_io import environment, read, write  # noqa: E402
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")

from elastic_demo import Demo, EtcdDemo, FailoverDemo, _steps

CASES = [("c10d", "tcpstore"), ("hrw", "tcpstore"), ("etcd-v2", "etcd"), ("hrw", "etcd"),
         ("hrw", "failover")]
DEMOS = {"etcd": EtcdDemo, "failover": FailoverDemo}


def real(backend: str, store: str) -> dict:
    cls = DEMOS.get(store, Demo)
    d = cls(backend, tempfile.mkdtemp(prefix=f"storefail-{backend}-{store}-"), timeout=90)
    try:
        d.start_job()
        before = max(x["step"] for x in _steps(d.log))
        t = time.time()
        d.kill("A")
        if store != "failover":                 # (there the store is A's)
            d.kill_store()
        out = {"backend": backend, "store": store, "recover_s": None, "peers_exit_s": None,
               "steps_redone": None}
        deadline = time.time() + 90
        while time.time() < deadline:
            w2 = sorted((x for x in _steps(d.log) if x["world"] == 2 and x["rank"] == 0 and x["t"] > t),
                        key=lambda x: x["t"])
            if len(w2) >= 5:
                out["recover_s"] = w2[0]["t"] - t
                out["steps_redone"] = max(0, before - w2[0]["resumed_from"])
                break
            if all(d.agents[n].poll() is not None for n in "BC"):
                out["peers_exit_s"] = time.time() - t
                break
            time.sleep(0.1)
        out["exit_codes"] = d.finish("BC")
        logs = " ".join((d.dir / f"agent-{n}.log").read_text(errors="replace") for n in "BC")
        out["election_error"] = "previous leader failure" in logs or "request timed out" in logs
        return out
    finally:
        d.close()


def simulated(protocol: str, store: str, nodes: int = 3) -> dict:
    import rdzv_sim
    st = ("{kind: replicated, host: null, hosts: [0, 1, 2], commit_time: 0.0085}" if store == "etcd"
          else "{host: 0}")
    failover = [f"protocol.store_failover={store == 'failover'}"] if protocol == "hrw" else []
    if nodes == 3:
        sets = ["protocol.name=" + protocol, f"store={st}", "faults=[{kind: crash, node: 0, at: 30}]",
                *failover]
        sc = rdzv_sim.load_scenario("sigterm-one-agent", sets)
    else:
        sc = rdzv_sim.load_scenario("c10d-2048-crash", [
            f"protocol.name={protocol}", "protocol.min_nodes=1997", "protocol.last_call_timeout=30",
            f"store={st}", "faults=[{kind: crash, node: 0, at: 300}]", "duration=1500", *failover])
    t0 = time.perf_counter()
    ev = rdzv_sim.run(sc).events
    at = sc.faults[0].at
    n = sc.cluster.nodes
    back = ev[(ev.event == "workers_started") & (ev.t > at) & (ev.world_size == (n - 1) * sc.cluster.nproc_per_node)]
    crashed = ev[ev.event == "fault_crash"].node.iloc[0]
    exits = ev[(ev.event == "agent_exit") & (ev.node != crashed)]
    return {"protocol": protocol, "store": store, "nodes": n,
            "recover_s": float(back.t.min() - at) if len(back) else None,
            "peers_exit_s": float(exits.t.max() - at) if len(exits) >= n - 1 else None,
            "wall_s": round(time.perf_counter() - t0, 1)}


def outcome(r: dict) -> str:
    if r.get("recover_s") is not None:
        return f"trains at world {r.get('nodes', 3) - 1:,} after {r['recover_s']:.1f} s"
    if r.get("peers_exit_s") is not None:
        return f"job ends: the others exit after {r['peers_exit_s']:.1f} s"
    return "neither within the run"


def summary(runs: list[dict]) -> str:
    ok = [r["recover_s"] for r in runs if r["recover_s"] is not None]
    text = []
    if ok:
        text.append(f"{len(ok)} of {len(runs)} runs train at world 2, after {statistics.median(ok):.1f} s "
                    f"(median; {', '.join(f'{x:.1f}' for x in ok)})")
    ends = [r for r in runs if r["recover_s"] is None]
    if ends:
        why = " (etcd's election timeout, taken for a lost connection)" if any(r.get("election_error") for r in ends) else ""
        text.append(f"{len(ends)} of {len(runs)} runs end: the others exit{why}")
    return "; ".join(text)


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", help="run this case for real (BACKEND:STORE, e.g. hrw:failover) and "
                                   "keep the other cases' real rows from the last report's JSON")
    a = ap.parse_args()
    cases = CASES
    rows = []
    if a.only:
        cases = [tuple(a.only.split(":"))]
        if cases[0] not in CASES:
            sys.exit(f"--only {a.only}: expected one of {', '.join(b + ':' + s for b, s in CASES)}")
        old = read("store_failure")
        rows = [r for r in old["rows"] if (r["backend"], r["store"]) != cases[0]]
    for _ in range(a.repeats):
        for backend, store in cases:
            rows.append(real(backend, store))
            print(json.dumps(rows[-1]), flush=True)
    sims = [simulated(p, s) for p, s in (("c10d", "tcpstore"), ("hrw", "tcpstore"),
                                         ("c10d", "etcd"), ("hrw", "etcd"), ("hrw", "failover"))]
    sims += [simulated("hrw", s, 2048) for s in ("tcpstore", "etcd", "failover")]
    merged = f" (the {a.only} row; the other real rows from the run of {old['date']})" if a.only else ""
    out = environment(repeats=a.repeats, rows=rows, simulated=sims)
    out["date"] += merged
    L = ["# The store's host dies during training", "",
         f"{out['date']}, {out['machine']}, Python {out['python']}, torch {out['torch']} (gloo), "
         f"etcd 3.4 (Debian). `python benchmarks/store_failure.py --repeats {a.repeats}`. Real: three torchrun agents "
         "(`--nnodes=2:3`) train `train_demo`; agent A and the store it hosts are killed together "
         "(the TCPStore process, or the leader of a local 3-member etcd cluster, A's endpoint). "
         "Simulated: the bundled `sigterm-one-agent` set-up with the store on host 0 (a TCPStore "
         "there, or a replicated store on hosts 0-2, commit time as measured here), host 0 crashing.",
         "", "| backend | store | real | steps redone (each run that re-formed) | simulated |",
         "|---|---|---|---|---|"]
    sim_of = {("c10d", "tcpstore"): 0, ("hrw", "tcpstore"): 1, ("etcd-v2", "etcd"): 2, ("hrw", "etcd"): 3,
              ("hrw", "failover"): 4}
    for backend, store in CASES:
        runs = [r for r in rows if r["backend"] == backend and r["store"] == store]
        s = sims[sim_of[(backend, store)]]
        redone = ", ".join(str(r["steps_redone"]) for r in runs if r["steps_redone"] is not None) or "-"
        L.append(f"| {backend} | {store} | {summary(runs)} | {redone} | "
                 f"{outcome(s)}{' (the c10d model on a replicated store)' if backend == 'etcd-v2' else ''} |")
    L += ["", "torch's etcd-v2 backend takes etcd's transient \"request timed out, possibly due to "
          "previous leader failure\" (an election in progress) for a lost connection: a survivor "
          "whose rendezvous call meets it exits with RendezvousConnectionError, and the job with it. "
          "The hrw handler's etcd client retries through the election (its request deadline, then "
          "the next member). The simulator has no such error path: its c10d model on a "
          "replicated store waits out the election, so it shows etcd-v2's run that re-forms.",
          "", "At 2,048 hosts (simulated: the bundled `c10d-2048-crash` with hrw, host 0 crashing "
          "at 300 s, NCCL's 600 s collective timeout):", "",
          "| protocol | store | outcome | simulation wall (s) |", "|---|---|---|---:|"]
    for s in sims[5:]:
        L.append(f"| {s['protocol']} | {s['store']} | {outcome(s)} | {s['wall_s']} |")
    L += ["", "c10d is not in the 2,048-host table: at that size its rendezvous does not form on "
          "any store (reports/scale_c10d.md).", "",
          "**hrw with failover** (`--rdzv-conf store_failover=true`; the store in agent A's "
          "process, torchrun's `is_host`): the survivors elect the first of the successors "
          "every assignment lists (HRW over the members, the store's own address left out), it "
          "starts a TCPStore on the endpoint's port at its address, the other connects, and the "
          "round after the last forms there; it needs a majority of the last round's members "
          "(the fence that keeps a cut-off store's side from forming a round too). A new agent "
          "pointed at the old endpoint does not find the successor: grow the job back by "
          "pointing newcomers at it (docs/stores.md). "
          "At 2,048 hosts failover and etcd re-form at the same time: the survivors do not stop training for a lost store (torchrun's workers do not use it), so they notice host 0's death when NCCL's collective times out (600 s), then rendezvous on the successor's store in its 30 s last call and start workers (60 s); where host 0's processes are killed rather than vanish (the real runs above), the peers notice at once."]
    write("store_failure", out, "\n".join(L))
    print("\n".join(L))


if __name__ == "__main__":
    main()
