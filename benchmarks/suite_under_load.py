"""The whole suite, several times in a row, with one core kept busy: does it hold on a busy machine?

    python benchmarks/suite_under_load.py            # 3 runs of the README's test command
    python benchmarks/suite_under_load.py --runs 1 -- tests/real   # a part, once

Each run is `make test`'s command (`pytest -n 2 --durations=20`, the README's), beside one
process that spins on a core for the whole run. The counts come from pytest's own JUnit XML;
reports/suite_under_load.json and .md hold each run's counts, time and failures, with the
machine, date, commit and versions (bench_io). Exits 1 if any run failed, so a script that calls
it can tell.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from bench_io import ROOT, environment, write

PYTEST = ["-m", "pytest", "-n", "2", "--durations=20", "-p", "no:cacheprovider"]   # as `make test`


def counts(junit: Path) -> dict:
    """passed, failed, errors, skipped and the failing tests' ids, from pytest's JUnit XML."""
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    total = failed = errors = skipped = 0
    names = []
    for s in suites:
        total += int(s.get("tests", 0))
        failed += int(s.get("failures", 0))
        errors += int(s.get("errors", 0))
        skipped += int(s.get("skipped", 0))
        for case in s.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                names.append(f"{case.get('classname', '')}::{case.get('name', '')}")
    return {"passed": total - failed - errors - skipped, "failed": failed, "errors": errors,
            "skipped": skipped, "failures": names}


def one_run(args: list[str], log: Path) -> dict:
    """One suite run beside a spinning core: its counts and wall time."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        t0 = time.monotonic()
        try:
            with open(log, "w") as out:
                rc = subprocess.run([sys.executable, *PYTEST, f"--junitxml={junit}", *args], cwd=ROOT,
                                    stdout=out, stderr=subprocess.STDOUT).returncode
        finally:
            hog.kill()
            hog.wait()
        wall = time.monotonic() - t0
        got = counts(junit) if junit.exists() else {"passed": 0, "failed": 0, "errors": 1, "skipped": 0,
                                                    "failures": ["pytest wrote no report"]}
    return {"rc": rc, "wall_s": round(wall, 1), **got}


def markdown(env: dict, runs: list[dict], args: list[str]) -> str:
    green = all(r["rc"] == 0 for r in runs)
    lines = ["# The suite under load", "",
             f"{len(runs)} runs in a row of `python {' '.join(PYTEST[:-2] + args)}` (the README's "
             "`make test`), each beside one process spinning on a core for the whole run "
             "(`python benchmarks/suite_under_load.py`).", "",
             f"Machine: {env['machine']}. Date: {env['date']}. Commit: {env.get('commit', '?')}. "
             f"Python {env['python']}, torch {env.get('torch', '-')}, torchft {env.get('torchft', '-')}.", "",
             f"**{'All green' if green else 'Not green'}.**", "",
             "| run | passed | failed | errors | skipped | wall |", "|---|---|---|---|---|---|"]
    for i, r in enumerate(runs, 1):
        lines.append(f"| {i} | {r['passed']} | {r['failed']} | {r['errors']} | {r['skipped']} | "
                     f"{r['wall_s'] / 60:.1f} min |")
    failing = [(i, f) for i, r in enumerate(runs, 1) for f in r["failures"]]
    lines += ["", "## Failures", ""]
    lines += [f"- run {i}: `{f}`" for i, f in failing] or ["None."]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--name", default="suite_under_load", help="reports/NAME.json and .md")
    ap.add_argument("pytest_args", nargs="*", help="after --: what pytest runs (default: the whole suite)")
    a = ap.parse_args()
    runs = []
    for i in range(a.runs):
        log = ROOT / "reports" / f".{a.name}-run{i + 1}.log"
        r = one_run(a.pytest_args, log)
        runs.append(r)
        print(f"run {i + 1}: {r['passed']} passed, {r['failed']} failed, {r['errors']} errors, "
              f"{r['skipped']} skipped in {r['wall_s'] / 60:.1f} min", flush=True)
    env = environment(runs=a.runs, spinning_cores=1)
    write(a.name, {"environment": env, "runs": runs}, markdown(env, runs, a.pytest_args))
    return 0 if all(r["rc"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
