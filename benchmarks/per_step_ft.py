"""Stop-the-world restarts against per-step quorum (torchft-style) on one failure trace.

Runs `llama3-54d` (the 54-day, 2,048-host job: the Llama 3 paper's interruptions, seed 54)
with `hrw` (stop-the-world: every interruption re-forms the whole job and reloads its
checkpoint) and with `quorum` at replica groups of 8, 16, 64 and 128 hosts (a group that fails
drops out at the next step and heals from a live peer when it is back). Each case is one
process (`--jobs` at a time). Writes reports/per_step_ft.json, .md and
reports/figures/per_step_ft.png.
Every case runs at fidelity: aggregate (quorum's error against per-operation:
docs/fidelities.md, tests/aggregate/test_quorum_rounds.py).
Usage: python benchmarks/per_step_ft.py [--groups 8,16,64,128] [--sync-every 8] [--jobs 2] [--merge] [--set key=value ...]
"""
from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench_io import environment, run_summary, write  # noqa: E402

# the per-step job's assumptions (docs/per-step.md): a 405B model's training state (bf16
# weights and gradients, fp32 master weights and Adam moments: 16 bytes a parameter), healed
# at 25 GB/s per host; a 6 s step; 5 s to configure a new quorum's collectives; a group that
# lost every host re-forms after its repair and a probe (probe_interval)
QUORUM = ["fidelity=aggregate", "protocol.name=quorum", "protocol.min_nodes=null", "protocol.max_nodes=null",
          "protocol.step_time=6", "protocol.state_bytes=6.48e12", "protocol.heal_bandwidth=25e9",
          "protocol.reconfigure_time=5", "protocol.probe_interval=300", "protocol.probe_timeout=15"]
COLUMNS = ("ettr", "goodput", "steps_committed", "steps_failed", "interruptions", "absorbed", "full_restarts", "rounds_completed",
           "lost_detection_s", "lost_rendezvous_s", "lost_worker_start_s", "lost_checkpoint_load_s",
           "lost_recompute_s", "lost_running_smaller_s", "lost_heal_s", "lost_reconfigure_s",
           "lost_quorum_s", "lost_checkpoint_stall_s", "mttr_s")


def cases(groups: list[int], sync_every: list[int] = ()) -> dict[str, list[str]]:
    out = {"hrw (stop-the-world)": ["fidelity=aggregate"]}
    for g in groups:
        # a replica of fewer hosts than the paper's PP 16 holds the model at PP = its size
        mp = [f"training.model_parallel_nodes={min(g, 16)}"]
        out[f"quorum, groups of {g}"] = [*QUORUM, f"protocol.group_size={g}", *mp]
        for k in sync_every:                   # torchft's LocalSGD / DiLoCo: a sync every k steps
            out[f"quorum, groups of {g}, sync every {k}"] = [*out[f"quorum, groups of {g}"],
                                                            f"protocol.sync_every={k}"]
    return out


def _order(name: str) -> tuple:
    """Stop-the-world first, then the groups by size."""
    size = name.split(",")[1] if "," in name else ""
    digits = "".join(c for c in size if c.isdigit())
    return (name.startswith("quorum"), int(digits) if digits else 0, name)


def one(name: str, sets: list[str], scenario: str, work: Path) -> dict:
    """One case in a process of its own: the summary row and its wall time and memory."""
    out = work / name.replace(" ", "_").replace(",", "").replace("(", "").replace(")", "")
    cmd = [sys.executable, "-m", "rdzv_sim", "run", scenario, "--long", "--out", str(out),
           *[a for s in sets for a in ("--set", s)]]
    return run_summary(cmd, out, COLUMNS)


def report(r: dict) -> str:
    lines = ["# Per-step fault tolerance against stop-the-world restarts", "",
             f"{r['date']}, {r['machine']}, Python {r['python']}. `python benchmarks/per_step_ft.py` "
             f"on `{r['scenario']}` (same seed, same failure trace for every case). What is assumed "
             "for the per-step job: docs/per-step.md. Every case runs at the aggregate fidelity (hrw's error "
             "against per-operation: reports/sim_speed.md; quorum's: docs/fidelities.md, the same steps "
             "and quorum windows on two days of llama3-54d-quorum).", "",
             "| case | ettr | goodput | interruptions | absorbed | full restarts | lost to detection + "
             "restart, h | lost to heal + reconfigure, h | lost running smaller, h | recompute, h | "
             "sim wall s | RSS MB |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    h = 3600.0
    for name, x in r["cases"].items():
        if "error" in x:
            lines.append(f"| {name} | failed: {x['error'].splitlines()[-1] if x['error'] else ''} |")
            continue
        restart = sum(x.get(k, 0.0) for k in ("lost_detection_s", "lost_rendezvous_s", "lost_worker_start_s",
                                                "lost_checkpoint_load_s"))
        wall = x.get("wall_s") if x.get("wall_s") is not None else "-"
        lines.append(f"| {name} | {x['ettr']:.4f} | {x['goodput']:.4f} | {x['interruptions']} | "
                     f"{x.get('absorbed', 0)} | {x.get('full_restarts', x['interruptions'])} | "
                     f"{restart / h:.1f} | {(x.get('lost_heal_s', 0) + x.get('lost_reconfigure_s', 0)) / h:.1f} | "
                     f"{x['lost_running_smaller_s'] / h:.1f} | {x['lost_recompute_s'] / h:.1f} | "
                     f"{wall} | {x.get('max_rss_mb') or '-'} |")
    notes = [f"- {n}: {x['note']}." for n, x in r["cases"].items() if x.get("note")]
    if notes:
        lines += ["", *notes]
    lines += reading(r)
    lines += ["", "![goodput by case](figures/per_step_ft.png)", "",
              "Hours are capacity-hours of the whole job (a quarter of the job idle for an hour is 0.25 h).",
              "`absorbed`: interruptions after which the survivors trained on from live state; "
              "`full restarts`: those that took every group down (job-wide faults), so the job "
              "reloaded its checkpoint.", ""]
    return "\n".join(lines)


def reading(r: dict) -> list[str]:
    """What the table says, from its own numbers."""
    c = {n: x for n, x in r["cases"].items() if "error" not in x}
    stw = c.get("hrw (stop-the-world)")
    per = {n: x for n, x in c.items() if n.startswith("quorum")}
    if stw is None or not per:
        return []
    best = max(per, key=lambda n: per[n]["goodput"])
    b = per[best]
    h = 3600.0
    full = b.get("full_restarts", 0)
    restart_loss = (b["lost_recompute_s"] + b["lost_rendezvous_s"] + b.get("lost_checkpoint_load_s", 0)) / h
    return ["", "## Reading it", "",
            f"- **Per-step keeps {b['goodput'] - stw['goodput']:+.3f} of the job's capacity** at its best "
            f"({best}: goodput {b['goodput']:.4f} against {stw['goodput']:.4f} for stop-the-world). "
            f"It absorbs {b.get('absorbed', 0)} of {b['interruptions']} interruptions: a failed host takes "
            "its group out for its restart (or its repair, where its group has no spare) while the others "
            "train on; stop-the-world pays every one of them with a whole-job restart and the work since "
            f"the last written checkpoint ({stw['lost_recompute_s'] / h:.0f} h of recompute, "
            f"{(stw['lost_detection_s'] + stw['lost_rendezvous_s'] + stw['lost_worker_start_s']) / h:.0f} h "
            "of detection, rendezvous and worker start).",
            f"- **What per-step cannot absorb** is a job-wide fault (software bugs, planned maintenance, NCCL "
            f"watchdog timeouts: {full} here): every group goes down at once, no live peer holds the state, "
            f"and the job reloads its checkpoint, as stop-the-world does. They cost {restart_loss:.0f} of the "
            f"{(1 - b['goodput']) * r.get('duration', 4665600) / h:.0f} capacity-hours it loses.",
            "- **Group size is a trade**: a small group heals a larger share of the state per host "
            "(state / group size at the same per-host bandwidth) and spreads the 32 spares over more "
            "groups; a large group takes more capacity out with every failure (`running smaller`). "
            "Goodput by group size: " + ", ".join(
                f"{n.split()[-1]} hosts {x['goodput']:.4f} (heal + reconfigure "
                f"{(x.get('lost_heal_s', 0) + x.get('lost_reconfigure_s', 0)) / h:.1f} h, running smaller "
                f"{x['lost_running_smaller_s'] / h:.1f} h)" for n, x in per.items() if "sync" not in n) + ".",
            *_local_sgd(per),
            "- **c10d** is not in the table: the model says torchrun's default c10d never forms round 0 at "
            "2,048 hosts with its 5 s keep-alive, and its re-rendezvous storms outlast any join timeout "
            "(reports/scale_c10d.md), and simulating 466 of those storms call by call would take days "
            "(`rdzv-sim run llama3-54d --set protocol.name=c10d` says so and refuses without --long).",
            "- Every per-step number rests on the model's assumptions (docs/per-step.md): the heal "
            "bandwidth, the 5 s reconfiguration, torchft's 60 s timeout for a vanished host, the 300 s "
            "probe before a wholly lost group re-forms. The model's Lighthouse rules and stalls are held "
            "to torchft's own on 3 groups (reports/validation/validate-quorum)."]


def _local_sgd(per: dict) -> list[str]:
    """LocalSGD / DiLoCo cases beside the per-step case of the same group size."""
    h, out = 3600.0, []
    for n, x in per.items():
        if "sync every" not in n:
            continue
        base = per.get(n.split(", sync")[0])
        k = n.split()[-1]
        if base is None:
            continue
        out.append(f"- **{n}** (torchft's LocalSGD / DiLoCo, a quorum and an all-reduce every {k} "
                   f"steps): goodput {x['goodput']:.4f} against {base['goodput']:.4f} syncing every "
                   "step; "
                   + (f"quorum calls {x.get('lost_quorum_s', 0) / h:.1f} h against "
                      f"{base.get('lost_quorum_s', 0) / h:.1f} h, "
                      if x.get("lost_quorum_s") or base.get("lost_quorum_s") else "")
                   + "heal + reconfigure "
                   f"{(x.get('lost_heal_s', 0) + x.get('lost_reconfigure_s', 0)) / h:.1f} h against "
                   f"{(base.get('lost_heal_s', 0) + base.get('lost_reconfigure_s', 0)) / h:.1f} h. A "
                   "group's death mid-window costs the survivors none of it (torchft asks for the "
                   "quorum at the window's end: reports/validation/validate-quorum-localsgd), but "
                   "nothing hides its heal or its quorum call behind compute. What the model does "
                   "not count: the all-reduce a step saves (`step_time` is the same in both "
                   "cases, so LocalSGD's gain on a slow network is not here) and the convergence "
                   "a window of unsynchronised steps costs; both are the training algorithm's, "
                   "not the rendezvous's.")
    return out


def figure(r: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [n for n, x in r["cases"].items() if "error" not in x]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.bar(range(len(names)), [r["cases"][n]["goodput"] for n in names], color="#4878a8", label="goodput")
    ax.plot(range(len(names)), [r["cases"][n]["ettr"] for n in names], "o", color="#c44", label="ettr")
    ax.set_xticks(range(len(names)), [n.replace(", ", "\n") for n in names], fontsize=8)
    lo = min(min(r["cases"][n]["goodput"] for n in names), 0.8)
    ax.set_ylim(lo - 0.02, 1.0)
    ax.set_ylabel("fraction of the job's capacity")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(f"{r['scenario']}: stop-the-world vs per-step quorum", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="llama3-54d")
    ap.add_argument("--groups", default="8,16,64,128")
    ap.add_argument("--sync-every", default="8", help="also each group size with LocalSGD / DiLoCo "
                    "syncing every k steps (comma-separated k)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--set", dest="sets", action="append", default=[])
    ap.add_argument("--out", default=str(ROOT / "reports"))
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from its JSON")
    ap.add_argument("--merge", action="store_true", help="add these cases to the JSON's (same scenario and sets)")
    a = ap.parse_args()
    out = Path(a.out)
    if a.report_only:
        r = json.loads((out / "per_step_ft.json").read_text())
        r.setdefault("duration", 4665600.0)
        figure(r, out / "figures" / "per_step_ft.png")
        write("per_step_ft", r, report(r), folder=out)
        print(report(r))
        return
    work = Path("runs/per_step_ft")
    todo = {n: [*s, *a.sets] for n, s in cases([int(g) for g in a.groups.split(",")],
                                                [int(k) for k in a.sync_every.split(",") if k]).items()}
    before = {}
    if a.merge and (out / "per_step_ft.json").exists():
        old = json.loads((out / "per_step_ft.json").read_text())
        if old["scenario"] == a.scenario and old["sets"] == a.sets:
            before = old["cases"]
            todo = {n: s for n, s in todo.items() if n not in before}
    with ThreadPoolExecutor(a.jobs) as pool:
        futs = {n: pool.submit(one, n, s, a.scenario, work) for n, s in todo.items()}
        results = {n: f.result() for n, f in futs.items()}
    results = dict(sorted({**before, **results}.items(), key=lambda kv: _order(kv[0])))
    from rdzv_sim.scenario.load import load
    duration = load(a.scenario, a.sets).duration
    r = environment(scenario=a.scenario, sets=a.sets, duration=duration, cases=results)
    figure(r, out / "figures" / "per_step_ft.png")
    write("per_step_ft", r, report(r), folder=out)
    print(report(r))


if __name__ == "__main__":
    main()
