"""Mutation testing of the rule modules with mutmut (3.8): each group of modules is mutated in a
copy of the tree, every mutant checked by the tests of its own modules, and the survivors
listed with the change that survived. Writes reports/mutation.json and reports/mutation.md.

    python benchmarks/mutation.py                          # every group below, 10 minutes each at most
    python benchmarks/mutation.py --only recovery --budget 120
    make mutate MODULES=recovery,kit                       # the same, from make

A group is modules to mutate (mutmut's `only_mutate` globs) and the tests that state their
rules; a mutant the tests of its own module do not kill is a survivor, whatever the rest of the
suite would say. Survivors known to be equivalent (no behaviour can tell them apart) are listed
in EQUIVALENT with why."""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_io import ROOT, environment, write  # noqa: E402

# group -> (the modules mutated, the tests of their own that must kill every mutant)
GROUPS = {
    "recovery": (["rdzv_sim/protocols/recovery/*"],
                 ["tests/protocols/recovery/", "tests/testing/test_recovery_invariants.py"]),
    "kit": (["rdzv_sim/protocols/kit.py"],
            ["tests/protocols/test_kit_parts.py", "tests/protocols/test_kit_capabilities.py",
             "tests/protocols/test_registry.py"]),
    "events": (["rdzv_sim/events.py", "rdzv_sim/reasons.py"],
               # (not tests/test_words.py: it reads the sources, which mutmut rewrites)
               ["tests/test_events.py", "tests/test_reasons.py"]),
    "quorum": (["rdzv_sim/protocols/quorum/rules.py", "rdzv_sim/protocols/quorum/costs.py",
                "rdzv_sim/protocols/quorum/lighthouse.py"],
               ["tests/protocols/quorum/"]),
    "trace": (["rdzv_sim/trace/chunks.py", "rdzv_sim/trace/rounds.py", "rdzv_sim/trace/thin.py",
               "rdzv_sim/trace/spill.py"], ["tests/trace/"]),
    "training": (["rdzv_sim/training/spans.py", "rdzv_sim/training/account.py"],
                 ["tests/training/", "tests/sim/test_goodput.py"]),
}

# mutants no test can tell from the code (name -> why), found by reading each survivor
EQUIVALENT: dict[str, str] = {
    "rdzv_sim.protocols.recovery.rules.x_plan__mutmut_74":
        "Plan's `start` defaults to 0.0: passing 0.0 or leaving it out is the same Plan",
    "rdzv_sim.protocols.recovery.machine.xǁMachineǁformed__mutmut_2":
        "`k >= rnd` also keeps round rnd's old world, which the next line replaces",
    "rdzv_sim.protocols.kit.x_where__mutmut_6":
        "without a ':' the attribute is empty, never an identifier: either test refuses the path",
    "rdzv_sim.protocols.kit.x_missing__mutmut_24":
        "only the closest match is said: get_close_matches' first is the same for any n",
    "rdzv_sim.protocols.kit.x_missing__mutmut_26":
        "only the closest match is said: get_close_matches' first is the same for any n",
    "rdzv_sim.events.x_register_event__mutmut_10":
        "underscores become letters instead of nothing: the same names are alphanumeric either way",
    "rdzv_sim.protocols.kit.x__source__mutmut_5":
        "find_spec of an imported top-level module returns that module's __spec__",
}

_RESULT = re.compile(r"^\s*(\S+): (\w[\w ]*)$")


def copy_tree(dst: Path) -> None:
    """The tracked files, as they are in the working tree, into `dst`."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)


def config(modules: list[str], tests: list[str]) -> str:
    return "\n".join(["", "[tool.mutmut]", 'source_paths = ["rdzv_sim"]',
                      f"only_mutate = {modules!r}".replace("'", '"'),
                      'also_copy = ["hrw/", "real_backend/", "benchmarks/"]',
                      f"pytest_add_cli_args_test_selection = {tests!r}".replace("'", '"'),
                      'pytest_add_cli_args = ["-p", "no:xdist", "-q", "-p", "no:cacheprovider"]', ""])


def run_group(name: str, budget: float, jobs: int) -> dict:
    modules, tests = GROUPS[name]
    mutmut = str(Path(sys.executable).with_name("mutmut"))
    with tempfile.TemporaryDirectory(prefix=f"rdzv-mutate-{name}-") as tmp:
        work = Path(tmp)
        copy_tree(work)
        with open(work / "pyproject.toml", "a") as f:
            f.write(config(modules, tests))
        t0 = time.perf_counter()
        try:
            run = subprocess.run([mutmut, "run", "--max-children", str(jobs)], cwd=work, capture_output=True,
                                 text=True, timeout=budget)
            finished = run.returncode == 0
        except subprocess.TimeoutExpired:
            finished = False
        wall = time.perf_counter() - t0
        listed = subprocess.run([mutmut, "results", "--all", "true"], cwd=work, capture_output=True, text=True)
        status = {m.group(1): m.group(2) for m in map(_RESULT.match, listed.stdout.splitlines()) if m}
        survivors = []
        for mutant, st in status.items():
            if st != "survived":
                continue
            shown = subprocess.run([mutmut, "show", mutant], cwd=work, capture_output=True, text=True).stdout
            survivors.append({"mutant": mutant, "diff": _change(shown), "equivalent": EQUIVALENT.get(mutant)})
    counts = {}
    for st in status.values():
        counts[st] = counts.get(st, 0) + 1
    return {"modules": modules, "tests": tests, "wall_s": round(wall, 1), "finished": finished,
            "counts": counts, "survivors": survivors}


def _change(shown: str) -> str:
    """The lines a mutant changed, from `mutmut show` (its - and + lines)."""
    return "\n".join(line for line in shown.splitlines()
                     if line.startswith(("-", "+")) and not line.startswith(("---", "+++")))


def report(r: dict) -> str:
    lines = ["# Mutation testing of the rule modules", "",
             f"{r['date']}, {r['machine']}, mutmut {r.get('mutmut', '?')}, commit {r.get('commit', '?')}. "
             "`python benchmarks/mutation.py` (or `make mutate MODULES=...`): each group's modules "
             "mutated in a copy of the tree, each mutant run against the tests of its own modules only. "
             "`checked`: the mutants run before the group's time budget was spent (the rest are "
             "`not checked`); `no tests`: mutants in code none of the group's tests runs (survivors "
             "in all but name). The share is of the checked ones, the equivalent ones left out.", "",
             "| group | modules | mutants | checked | killed | survived | timed out | no tests | killed, of the checked non-equivalent | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, g in r["groups"].items():
        c = g["counts"]
        total = sum(c.values())
        killed, survived, timeout, untested = (c.get(k, 0) for k in ("killed", "survived", "timeout", "no tests"))
        equiv = sum(1 for s in g["survivors"] if s["equivalent"])
        checked = killed + survived + timeout + untested
        judged = checked - equiv
        share = f"{killed / judged:.1%}" if judged else "-"
        lines.append(f"| {name} | {', '.join(f'`{m}`' for m in g['modules'])} | {total} | {checked} | {killed} | "
                     f"{survived} | {timeout} | {untested} | {share} | "
                     f"{g['wall_s']}{'' if g['finished'] else ' (budget spent)'} |")
    for name, g in r["groups"].items():
        if not g["survivors"]:
            continue
        lines += ["", f"## {name}: the survivors", "", f"Tests: {', '.join(f'`{t}`' for t in g['tests'])}.", ""]
        for s in g["survivors"]:
            why = f" Equivalent: {s['equivalent']}" if s["equivalent"] else ""
            lines += [f"- `{s['mutant']}`{why}", "", "  ```diff", *(f"  {x}" for x in s["diff"].splitlines()),
                      "  ```"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", action="append", choices=sorted(GROUPS),
                    help="a group to run (repeatable, or comma-separated by make's MODULES)")
    ap.add_argument("--budget", type=float, default=600.0, help="seconds a group may take")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "reports"))
    a = ap.parse_args()
    names = a.only or list(GROUPS)
    from importlib import metadata
    r = environment(mutmut=metadata.version("mutmut"), groups={})
    old = Path(a.out) / "mutation.json"
    if a.only and old.exists():                       # a partial run keeps the other groups' rows
        import json
        r["groups"] = {k: v for k, v in json.loads(old.read_text()).get("groups", {}).items() if k not in names}
    for name in names:
        r["groups"][name] = run_group(name, a.budget, a.jobs)
        print(f"{name}: {r['groups'][name]['counts']} in {r['groups'][name]['wall_s']} s", flush=True)
    r["groups"] = dict(sorted(r["groups"].items()))
    write("mutation", r, report(r), folder=Path(a.out))
    print(report(r))


def rewrite(folder: Path = ROOT / "reports") -> None:
    """reports/mutation.md again from reports/mutation.json (the report's form changed)."""
    import json
    r = json.loads((folder / "mutation.json").read_text())
    write("mutation", r, report(r), folder=folder)


if __name__ == "__main__":
    main()
