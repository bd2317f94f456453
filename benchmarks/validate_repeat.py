"""`rdzv-sim validate validate-quorum-lighthouse`, repeated: torchft 0.2.0's real side races
after a Lighthouse restart, so one run proves little. Each run's verdict, which path the lone
group's failed step took (its recorded error), and whether the model, given what the run's
start-up decided, drew the same quorum windows. Writes repeated.{json,md} beside the scenario's
validation report.

    python benchmarks/validate_repeat.py [--runs 6] [--scenario validate-quorum-lighthouse]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rdzv_sim.scenario.load import load  # noqa: E402


def lone_failure(steps: list[dict], back: float) -> str:
    """The error of the first uncommitted step after the Lighthouse is back of a group that
    trained alone then: which path the run took (a store wait timeout, or Gloo's connect)."""
    after = sorted((r for r in steps if r["q"] > back), key=lambda r: r["q"])
    lone = next((r["group"] for r in after if len(r["replicas"]) == 1 and r["committed"]), None)
    failed = next((r for r in after if r["group"] == lone and not r["committed"]), None)
    if failed is None:
        return "none"
    err = failed.get("error") or ""
    return ("store wait timeout" if "wait timeout" in err else
            "Gloo connect timeout" if "onnect" in err else err[:60] or "failed")


def stores_after(steps: list[dict], back: float) -> list:
    """The groups whose store served each quorum after the Lighthouse is back, in order (None
    where the records name no store: logs from before the runner kept it)."""
    owner = {r["own_store"]: r["group"] for r in steps if r.get("own_store")}
    seen, out = set(), []
    for r in sorted((r for r in steps if r["q"] > back), key=lambda r: r["q"]):
        key = (r["quorum_id"], tuple(r["replicas"]))
        if key not in seen:
            seen.add(key)
            out.append(f"{r['quorum_id']}:{','.join(x.lstrip('g') for x in r['replicas'])}@{owner.get(r.get('store'))}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--scenario", default="validate-quorum-lighthouse")
    ap.add_argument("--keep", type=Path, default=None, help="keep each run's step records here")
    ap.add_argument("--append", action="store_true", help="add to the runs already in repeated.json")
    args = ap.parse_args(argv)
    from real_backend.quorum_validate import validate_quorum
    sc = load(args.scenario)
    lost = next(f for f in sc.faults if f.kind == "lighthouse_crash")
    out = ROOT / "reports" / "validation" / args.scenario
    before = out / "repeated.json"
    rows = json.loads(before.read_text())["runs"] if args.append and before.exists() else []
    for i in range(len(rows), len(rows) + args.runs):
        with tempfile.TemporaryDirectory() as d:
            v = validate_quorum(sc, d)
            steps = json.loads((Path(d) / "steps.json").read_text())["steps"]
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / f"run{i + 1}.json").write_text((Path(d) / "steps.json").read_text())
        rows.append({"run": i + 1, "date": v["date"], "given": v.get("given_to_the_model"),
                     "lone_failure": lone_failure(steps, lost.at + lost.duration),
                     "quorums_after": stores_after(steps, lost.at + lost.duration),
                     "windows_real": v["windows_real"], "windows_sim": v["windows_sim"],
                     "stall_real": v["stall_s_real"], "stall_sim": v["stall_s_sim"],
                     "stall_error": v["stall_s_rel_error"], "passed": v["passed"]})
        print(json.dumps(rows[-1]), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "date": time.strftime("%Y-%m-%d %H:%M"),
            "torch": version("torch"), "torchft": version("torchft"), "python": platform.python_version()}
    (out / "repeated.json").write_text(json.dumps({**meta, "runs": rows}, indent=1) + "\n")
    passed = sum(r["passed"] for r in rows)
    dates = sorted({r["date"][:10] for r in rows})
    lines = [f"# {args.scenario}, {len(rows)} runs against torchft {meta['torchft']}", "",
             f"{', '.join(dates)} (to {meta['date']}), {meta['machine']}, torch {meta['torch']}; rebuild: "
             f"`python benchmarks/validate_repeat.py --runs {len(rows)}` (here in batches, "
             "`--append`). Each run is `rdzv-sim validate "
             f"{args.scenario}`; the model is given what the run's start-up and race decided (the "
             "groups' last quorum id, the group whose retry reached the fresh Lighthouse first, the "
             "group whose store served the last quorum before the loss) and draws the rest.", "",
             f"**{passed} of {len(rows)} passed.**", "",
             "| run | given | quorums after the restart (id:members@store) | the lone group's failed step "
             "| windows (real) | windows (simulated) | stall real, s | stall simulated, s | error | passed |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['run']} | {r['given']} | {' '.join(r.get('quorums_after', []))} | {r['lone_failure']} "
                     f"| {' -> '.join(r['windows_real'])} "
                     f"| {' -> '.join(r['windows_sim'])} | {r['stall_real']:.2f} | {r['stall_sim']:.2f} "
                     f"| {r['stall_error']:.0%} | {r['passed']} |")
    (out / "repeated.md").write_text("\n".join(lines) + "\n")
    print(f"{passed}/{len(rows)} passed; {out / 'repeated.md'}")
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
