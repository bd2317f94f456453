"""How often the kernel cuts a torch c10d client's CAS attempt before it is sent.

One forked storm (benchmarks/c10d_contention_torch.py's setup: N processes, one TCPStore) run
under `perf sched record`, with each node's store calls timed by perf_counter (CLOCK_MONOTONIC,
no system call, so no new preemption point). For every retry, the stretch between a failed
CAS's reply and the next CAS's send is one burst of client CPU (decode, decide, encode); it
was cut if the node's process left its core runnable (state R) inside it. The model's CPU
(rdzv_sim/sim/fair_cpu.py) decides the same thing with a 4 ms slice and a wake-up draw; this
is what to hold it to. Needs root, perf and tracefs (mounted here if missing).
Usage: python benchmarks/c10d_burst_cuts.py N [EXTRA_MS]     (e.g. 96 1)
"""
from __future__ import annotations

import bisect
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SWITCH = re.compile(r"\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch: prev_comm=.*? prev_pid=(\d+) "
                    r"prev_prio=\d+ prev_state=(\S+) ==>")


def storm(n: int, extra_ms: float, out: str) -> None:
    """The child side: the torch storm, each node logging (call, start, end, pid) per store call."""
    sys.path.insert(0, str(HERE))
    import c10d_contention_torch as B

    class Timed(B.CountingStore):
        def __getattr__(self, name):
            fn = getattr(self._store, name)

            def call(*a, **k):
                if self.burn and name == "compare_set":
                    for _ in range(self.burn):
                        pass
                t0 = time.perf_counter()
                r = fn(*a, **k)
                self._counts.setdefault("log", []).append((name, t0, time.perf_counter(), os.getpid()))
                self._counts[name] = self._counts.get(name, 0) + 1
                return r
            return call
    B.CountingStore = Timed
    import multiprocessing as mp
    import socket
    from datetime import timedelta
    burn = B.burn_iterations(extra_ms)
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=B._process_node, args=(i, n, port, q, False, burn)) for i in range(n)]
    for p in procs:
        p.start()
    server = B.dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False,
                             timeout=timedelta(seconds=300), use_libuv=True)
    while int(server.add("bench/ready", 0)) < n:
        time.sleep(0.2)
    server.set("bench/go", b"1")
    rows = [q.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(30)
    Path(out).write_text(json.dumps([r["counts"]["log"] for r in rows]))


def cuts(switches: dict, logs: list) -> dict:
    """Share of retries whose burst was cut, and how long the uncut bursts took."""
    total, cut, uncut = 0, 0, []
    for log in logs:
        cas = [e for e in log if e[0] == "compare_set"]
        if len(cas) < 3:
            continue
        outs = switches.get(cas[0][3], [])
        times = [t for t, _ in outs]
        for a, b in zip(cas[1:], cas[2:]):          # the sentinel CAS is not part of the storm
            i, j = bisect.bisect_left(times, a[2]), bisect.bisect_left(times, b[1])
            total += 1
            if any(outs[k][1].startswith("R") for k in range(i, j)):
                cut += 1
            else:
                uncut.append(b[1] - a[2])
    uncut.sort()
    return {"retries": total, "cut": cut, "cut_share": cut / total if total else float("nan"),
            "uncut_burst_ms_p50": 1e3 * uncut[len(uncut) // 2] if uncut else float("nan"),
            "cas_total": sum(1 for log in logs for e in log if e[0] == "compare_set")}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--storm":
        storm(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 96
    extra = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    if not shutil.which("perf"):
        sys.exit("error: perf is not installed (apt-get install linux-perf or linux-tools)")
    if not Path("/sys/kernel/tracing/events/sched").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], capture_output=True)
        if not Path("/sys/kernel/tracing/events/sched").exists():
            sys.exit("error: no tracefs at /sys/kernel/tracing (and mounting it failed: not root?)")
    with tempfile.TemporaryDirectory() as tmp:
        data, logs = f"{tmp}/perf.data", f"{tmp}/logs.json"
        subprocess.run(["perf", "sched", "record", "-k", "CLOCK_MONOTONIC", "-o", data, "--",
                        sys.executable, __file__, "--storm", str(n), str(extra), logs],
                       check=True, capture_output=True)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "pid,tid,cpu,time,event,trace"],
                                check=True, capture_output=True, text=True).stdout
        switches = collections.defaultdict(list)
        for m in SWITCH.finditer(script):
            switches[int(m.group(3))].append((float(m.group(2)), m.group(4)))
        r = {"n": n, "extra_cpu_ms": extra, **cuts(switches, json.loads(Path(logs).read_text()))}
    print(json.dumps(r))


if __name__ == "__main__":
    main()
