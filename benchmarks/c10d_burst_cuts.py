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
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SWITCH = re.compile(r"\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch: prev_comm=.*? prev_pid=(\d+) "
                    r"prev_prio=\d+ prev_state=(\S+) ==>")


def storm(n: int, extra_ms: float, out: str) -> None:
    """The child side: the torch storm, each node logging (call, start, end, pid) per store call."""
    sys.path.insert(0, str(HERE))
    import c10d_contention_torch as B
    r = B.measure_processes(n, "fork", extra_ms=extra_ms, log=True)
    Path(out).write_text(json.dumps(r["logs"]))


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
