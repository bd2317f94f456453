"""Scaling report: how each protocol's rendezvous grows with N, and goodput against cluster
size and MTBF. Writes reports/scaling.md, reports/scaling.json and reports/figures/scaling.png.

(1) One round of N nodes joining at once (per-operation simulation), N up to 10,000 for static
and hrw; c10d up to 256, beyond that extrapolated from its N^2 growth (marked). (2) Three days
of training with exponential node failures (repair 1 h, checkpoint every 30 min at 60 s cost):
goodput per protocol for several sizes and per-node MTBFs, 2 seeds each.
Usage: python benchmarks/scaling.py
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench_io import environment, write  # noqa: E402

import rdzv_sim  # noqa: E402
from rdzv_sim.trace import details  # noqa: E402

SIZES = {"static": [16, 64, 256, 1024, 4096, 10000], "hrw": [16, 64, 256, 1024, 4096, 10000],
         "c10d": [16, 64, 128, 256]}
DAY = 86400.0


def one_round(protocol: str, n: int) -> dict:
    sc = {"name": f"scale-{protocol}-{n}", "seed": 1, "duration": 3600,
          "cluster": {"nodes": n, "nproc_per_node": 8, "start_spread": 0.0},
          "store": {"host": None}, "shards": {"count": 0},
          "protocol": {"name": protocol, "min_nodes": n, "max_nodes": n, "last_call_timeout": 1}}
    r = rdzv_sim.run(sc)
    ev, s = r.events, r.summary.iloc[0]
    lat = ev.loc[ev.event == "rank_assigned", "latency"].tolist()
    cas = sum(d.get("cas_attempts", 0) for d in details(ev[ev.event == "confirmed"]))
    return {"protocol": protocol, "n": n, "latency_p50": statistics.median(lat), "latency_max": max(lat),
            "ops_per_node": s.store_ops / n, "bytes_per_node": s.store_bytes / n,
            "cas_attempts": int(cas), "extrapolated": False}


def goodput(protocol: str, n: int, mtbf_days: float, seed: int) -> float:
    sc = {"name": f"goodput-{protocol}-{n}", "seed": seed, "duration": 3 * DAY,
          "cluster": {"nodes": n, "nproc_per_node": 8, "start_spread": 5.0},
          "store": {"host": None}, "shards": {"count": 0},
          "protocol": {"name": protocol, "last_call_timeout": 5, "join_timeout": 86400,
                       **({} if protocol == "static" else {"min_nodes": max(1, n * 3 // 4), "max_nodes": n})},
          "agent": {"max_restarts": 100000, "max_rendezvous_attempts": 100000, "monitor_interval": 5,
                    "collective_timeout": 600, "peer_crash_detection": 30, "worker_start": 60},
          "training": {"checkpoint_interval": 1800, "checkpoint_cost": 60},
          "random_faults": [{"kind": "node_failures", "mtbf": mtbf_days * DAY, "repair": 3600}]}
    return float(rdzv_sim.run(sc).summary.goodput.iloc[0])


def figure(rows, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, key, title in zip(axes, ("latency_p50", "ops_per_node", "bytes_per_node"),
                              ("rendezvous latency p50 (s)", "store ops per node", "store bytes per node")):
        for p in SIZES:
            pts = [r for r in rows if r["protocol"] == p]
            ax.plot([r["n"] for r in pts if not r["extrapolated"]],
                    [r[key] for r in pts if not r["extrapolated"]], marker="o", label=p)
            ext = [r for r in pts if r["extrapolated"]]
            if ext and key != "latency_p50":
                ax.plot([pts[len(pts) - len(ext) - 1]["n"]] + [r["n"] for r in ext],
                        [pts[len(pts) - len(ext) - 1][key]] + [r[key] for r in ext], ls=":", color="gray")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes")
        ax.set_title(title)
    axes[0].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)


def main():
    t0 = time.time()
    rows = []
    for p, ns in SIZES.items():
        for n in ns:
            rows.append(one_round(p, n))
            print(rows[-1], flush=True)
    last = rows[-1]                               # c10d: per-node ops and bytes grow ~N, CAS ~N^2
    for n in (1024, 4096, 10000):
        f = n / last["n"]
        rows.append({**last, "n": n, "latency_p50": float("nan"), "latency_max": float("nan"),
                     "ops_per_node": last["ops_per_node"] * f, "bytes_per_node": last["bytes_per_node"] * f * f,
                     "cas_attempts": int(last["cas_attempts"] * f * f), "extrapolated": True})
    good = []
    for p in ("static", "hrw", "c10d"):
        # c10d at 64+ nodes under failure churn: its 1 s sync polling while a round cannot
        # complete is simulated call by call, which costs minutes per run
        for n in ((16, 32) if p == "c10d" else (16, 64, 128)):
            for mtbf in (2.0, 10.0):
                g = [goodput(p, n, mtbf, s) for s in (1, 2)]
                good.append({"protocol": p, "n": n, "mtbf_days": mtbf, "goodput": statistics.mean(g),
                             "seeds": g})
                print(good[-1], flush=True)
    meta = environment(wall_s=time.time() - t0)
    figure(rows, ROOT / "reports" / "figures" / "scaling.png")
    lines = ["# Scaling: rendezvous cost against N, goodput against size and MTBF", "",
             f"{meta['date']}, {meta['machine']}, simulated (per-operation), "
             f"`python benchmarks/scaling.py` ({meta['wall_s']:.0f} s).", "",
             "## One round of N nodes joining at once", "",
             "![latency, ops and bytes per node against N](figures/scaling.png)", "",
             "| protocol | N | latency p50 (s) | latency max (s) | store ops / node | bytes / node | CAS attempts |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ext = " (extrapolated)" if r["extrapolated"] else ""
        lat = "-" if r["extrapolated"] else f"{r['latency_p50']:.3f}"
        mx = "-" if r["extrapolated"] else f"{r['latency_max']:.3f}"
        lines.append(f"| {r['protocol']}{ext} | {r['n']:,} | {lat} | {mx} | {r['ops_per_node']:.1f} | "
                     f"{r['bytes_per_node']:,.0f} | {r['cas_attempts']:,} |")
    lines += ["", "hrw and static do O(1) store operations per node (hrw's closer O(N) once); c10d's "
              "every attempt moves the whole state blob (O(N) bytes) and its compare-and-set "
              "storm makes attempts grow ~N^2/4, so its per-node bytes grow ~N^2. c10d rows past "
              "256 nodes are extrapolated from the 256-node run, not simulated.", "",
             "## Goodput: 3 days, exponential node failures, repair 1 h, checkpoint 30 min / 60 s", "",
             "| protocol | nodes | node MTBF (days) | goodput (mean of 2 seeds) |", "|---|---:|---:|---:|"]
    for g in good:
        lines.append(f"| {g['protocol']} | {g['n']} | {g['mtbf_days']:g} | {g['goodput']:.3f} |")
    lines += ["", "static cannot shrink: every failure stops the job until the host is repaired (join_timeout is "
              "a day here, so the survivors wait for it); "
              "hrw and c10d go on at >= 3/4 of the nodes (min_nodes) and grow back after repair. c10d "
              "is run at 16 and 32 nodes only: at 64 and more, under failure churn, its 1 s "
              "polling while a round cannot complete is simulated call by call and a run takes "
              "minutes (to be aggregated like its heartbeats)."]
    write("scaling", {**meta, "rounds": rows, "goodput": good}, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
