"""What every benchmark writes: reports/NAME.json, its results beside where, when and with what
they ran (`environment()`), and reports/NAME.md, the report rendered from them. Each file is
written whole or not at all, so an interrupted run leaves the last report standing."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "reports"
PACKAGES = ("numpy", "pandas", "simpy", "torch", "torchft", "etcd3")


def environment(**extra) -> dict:
    """The machine, the date (UTC), the commit and the versions a run used, plus `extra`."""
    env = {"machine": f"{platform.node()} {platform.processor() or platform.machine()}, "
                      f"{os.cpu_count()} cores",
           "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            env[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    try:
        env["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                                       capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return env | extra


def _atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write(name: str, results: dict, markdown: str | None = None, folder: Path = REPORTS) -> Path:
    """reports/NAME.json (and NAME.md when given); returns the JSON's path."""
    path = Path(folder) / f"{name}.json"
    _atomic(path, json.dumps(results, indent=1) + "\n")
    if markdown is not None:
        _atomic(path.with_suffix(".md"), markdown if markdown.endswith("\n") else markdown + "\n")
    return path


def read(name: str, folder: Path = REPORTS) -> dict:
    return json.loads((Path(folder) / f"{name}.json").read_text())


def run_summary(cmd: list[str], out: Path, columns) -> dict:
    """Run `cmd` (an `rdzv-sim run ... --out out`) in a process of its own: its summary row's
    `columns`, its wall time and its peak memory, or the error it printed."""
    import time
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t
    if proc.returncode:
        return {"error": proc.stderr[-2000:], "wall_s": round(wall, 1)}
    import pandas as pd
    row = pd.read_parquet(Path(out) / "summary.parquet").iloc[0]
    r = {c: (row[c].item() if hasattr(row[c], "item") else row[c]) for c in columns if c in row}
    r["wall_s"] = round(wall, 1)
    r["max_rss_mb"] = round(int(proc.stderr.strip().splitlines()[-1]) / 1024)
    return r


def in_parallel(calls: dict, jobs: int = 2) -> dict:
    """Each name's call (no arguments), `jobs` at a time, side by side in one run: {name: result}
    in the order given. Load what the calls need before (the main thread's imports)."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(jobs) as pool:
        futs = {n: pool.submit(f) for n, f in calls.items()}
        return {n: f.result() for n, f in futs.items()}


def side_by_side_args(argv=None):
    """The arguments of a benchmark that runs its cases side by side: --jobs, --out."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(REPORTS))
    return ap.parse_args(argv)
