"""`rdzv-sim validate` and `rdzv-sim calibrate`: the commands that need torch, added to the
`rdzv-sim` CLI through the `rdzv_sim.commands` entry-point group (see pyproject.toml)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from rdzv_sim.cli import _fail, _fmt, out_console


def validate(
    scenario: str = typer.Argument(..., help="A bundled scenario name or a YAML file."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Default: reports/validation/<name>."),
    set_: List[str] = typer.Option([], "--set", help="Override a field: key.path=value (repeatable)."),
    calibration: Optional[Path] = typer.Option(None, "--calibration", "-c",
                                               help="A file from `rdzv-sim calibrate` to merge under the scenario."),
    torch_static: bool = typer.Option(False, "--torch-static",
                                      help="For a static scenario: the real side is torch's StaticTCPRendezvous."),
    torchrun: bool = typer.Option(False, "--torchrun",
                                  help="The real side is torchrun's own agents (--rdzv-backend=rdzv-sim), "
                                       "for any protocol the plugin serves; faults: crash, restart, slow_join."),
):
    """Simulate the scenario and run it for real (processes, TCPStore, gloo), then compare."""
    from rdzv_sim.scenario.load import ScenarioError, load
    try:
        sc = load(scenario, set_)
        if calibration is not None:
            data = sc.model_dump(mode="json", exclude_unset=True)   # what the scenario says
            data["include"] = [str(calibration.resolve())]
            sc = load(data)
    except ScenarioError as e:
        _fail(e.messages)
    try:
        from .validate import validate as do_validate
    except ImportError as e:
        _fail([f"validate needs the real backend and torch (pip install 'rdzv-sim[real]'): {e}"], 1)
    target = out or Path("reports/validation") / sc.name
    try:
        verdict = do_validate(sc, target, torch_static=torch_static, torchrun=torchrun)
    except ValueError as e:
        _fail([str(e)])
    t = Table(title=f"{sc.name}: simulated vs real", header_style="bold")
    t.add_column("check")
    t.add_column("value", justify="right")
    for k, v in verdict.items():
        if k != "passed_when":
            t.add_row(k, _fmt(v))
    out_console.print(t)
    out_console.print(f"passed ({verdict['passed']}) when: {verdict['passed_when']}", highlight=False)
    out_console.print(f"report: {target}/validation.md", highlight=False)
    if not verdict["passed"]:
        raise typer.Exit(1)


def calibrate(out: Path = typer.Option(Path("calibration.yaml"), "--out", "-o",
                                       help="Where to write the scenario fragment."),
              reps: int = typer.Option(200, "--reps", min=10, help="Calls per measurement.")):
    """Measure this host's real TCPStore and agent start-up; write a fragment scenarios include."""
    import platform
    import time as _time
    import yaml
    try:
        from .calibrate import fragment, measure
    except ImportError as e:
        _fail([f"calibrate needs the real backend and torch (pip install 'rdzv-sim[real]'): {e}"], 1)
    m = measure(reps)
    frag = fragment(m)
    header = (f"# rdzv-sim calibration of {platform.node()} ({platform.machine()}), "
              f"{_time.strftime('%Y-%m-%d')}.\n"
              f"# TCPStore round trip over loopback: {m['fixed_s'] * 1e6:.0f} us + "
              f"{m['per_byte_s'] * 1e9:.2f} ns/byte (link gets a quarter of the fixed part, the\n"
              f"# server half, by convention); agent start-up {m['process_start_s']:.2f} s;\n"
              f"# torch's c10d state encoded or decoded: {m['client_per_byte_s'] * 1e9:.0f} ns/byte.\n"
              f"# Use it from a scenario: `include: [{out.name}]`.\n")
    out.write_text(header + yaml.safe_dump(frag, sort_keys=False))
    t = Table(title="TCPStore on this host (median round trip)", header_style="bold")
    for c in ("op", "payload bytes", "round trip (us)"):
        t.add_column(c, justify="right")
    for op, size, sec in m["ops"]:
        t.add_row(op, str(size), f"{sec * 1e6:.0f}")
    out_console.print(t)
    out_console.print(f"calibration: {out}", highlight=False)
