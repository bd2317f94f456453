"""The `rdzv-sim` command line: run, sweep, report, list, schema (and plugins' commands)."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Simulate elastic rendezvous (torchrun-style) under faults.")
out_console = Console()
err_console = Console(stderr=True)


def _fail(messages: list[str], code: int = 2):
    for m in messages:
        err_console.print(f"[bold red]error:[/] {m}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _fmt(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        return f"{v:.4g}"
    return str(v)


def print_summary(summary, title: str) -> None:
    from .report.answer import unit
    t = Table(title=title, show_header=True, header_style="bold")
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_column("unit")
    row = summary.iloc[0]
    for k in summary.columns:
        if k in ("schema_version", "scenario", "seed"):
            continue
        t.add_row(k, _fmt(row[k].item() if hasattr(row[k], "item") else row[k]), unit(k))
    out_console.print(t)


@app.command()
def run(
    scenario: str = typer.Argument(..., help="A bundled scenario name (see `rdzv-sim list`) or a YAML file."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder (default: outputs.dir or runs/<name>)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Override the scenario's seed."),
    set_: List[str] = typer.Option([], "--set", help="Override a field: key.path=value (repeatable)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    protocol: List[str] = typer.Option([], "--protocol", "-p",
                                       help="Run with this protocol instead (repeat to compare side by side)."),
    report: bool = typer.Option(True, "--report/--no-report", help="Write report.html and report.md."),
    csv: bool = typer.Option(False, "--csv", help="Also write the tables as CSV (default: Parquet only)."),
    trust_includes: bool = typer.Option(False, "--trust-includes",
                                        help="Let `include:` name files outside the scenario's folder."),
    long: bool = typer.Option(False, "--long", help="Run even when the estimate says it takes long."),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="Replications: N seeds (the scenario's, +1, ...), "
                                        "or `auto`: until the 95% interval is within --ci of the mean."),
    ci: float = typer.Option(0.05, "--ci", help="With --seeds auto: the interval's half-width over the mean."),
    metric: Optional[str] = typer.Option(None, "--metric", help="The figure replications are for "
                                         "(default: ettr with a training model, else rounds_completed)."),
):
    """Simulate one scenario; write events/rounds/summary tables and print the summary.
    The output folder appears when the run is done, whole; an interrupted run writes nothing."""
    from .scenario.load import ScenarioError, load
    if seeds is not None:
        return _replications(scenario, out, seed, set_, trust_includes, seeds, ci, metric)
    if len(protocol) > 1:
        return _compare(scenario, out, seed, set_, protocol, report, trust_includes)
    try:
        sc = load(scenario, [*set_, *(f"protocol.name={p}" for p in protocol)], seed,
                  trust_includes=trust_includes)
    except ScenarioError as e:
        _fail(e.messages)
    from .estimate import LIMIT_S, estimate, stream_hint
    cost = estimate(sc)
    if cost.seconds > LIMIT_S and not long:
        _fail([cost.message()])
    hint = stream_hint(sc)
    if hint:
        err_console.print(hint, highlight=False)
    try:
        _run(sc, out, progress, report, csv)
    except KeyboardInterrupt:
        _fail(["interrupted: nothing was written"], 130)


def _run(sc, out, progress: bool, report: bool, csv: bool) -> None:
    from .api import run as run_api
    from .outputs import OutputError, atomic_folder, replaceable
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    target = out or Path(sc.outputs.dir or f"runs/{sc.name}")
    if not replaceable(target):                 # say so before the run, not after it
        _fail([f"{target} exists and is not a run's folder (no scenario.yaml): choose another "
               "--out, or remove it"])
    if progress and sys.stderr.isatty():
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                      TextColumn("{task.completed:,.0f}/{task.total:,.0f} simulated s"),
                      TimeElapsedColumn(), console=err_console) as bar:
            task = bar.add_task(sc.name, total=sc.duration)
            result = run_api(sc, progress=lambda t, rounds: bar.update(task, completed=t))
    elif progress:
        from .progress import ProgressLines
        lines = ProgressLines(sc.name, sc.duration)
        result = run_api(sc, progress=lines)
        lines.line("writing the tables" + (" and the report" if report else ""))
    else:
        result = run_api(sc)
    try:
        formats = list(dict.fromkeys([*sc.outputs.formats, *(["csv"] if csv else [])]))
        with atomic_folder(target) as tmp:
            written = result.save(tmp, formats)
            if report and result.events is None:
                err_console.print("no report: a streamed run's figures (outputs.stream) would read "
                                  "every host's events, which it does not hold; its tables are written")
            elif report:
                written.append(_report(result, tmp)["html"])
        written = [target / p.name for p in written]
    except OutputError as e:
        _fail([str(e)])
    except OSError as e:
        _fail([f"cannot write to {target}: {e}"], 1)
    out_console.print(f"[bold]{sc.name}[/] seed {sc.seed}, protocol {sc.protocol.name}: "
                      f"{sc.duration:,.0f} simulated s in {result.wall_s:.2f} s wall")
    print_summary(result.summary, "summary")
    from .report.answer import opening
    for line in opening(result.tables(), result.scenario.model_dump(mode="json")):
        out_console.print(line, highlight=False)
    out_console.print(f"tables: {target}/ ({', '.join(p.name for p in written)})", highlight=False)


def _replications(scenario, out, seed, set_, trust_includes, seeds: str, ci: float, metric) -> None:
    """Replications over seeds: one summary row a seed (replications.csv) and the figure's
    95% interval."""
    from .outputs import OutputError, atomic_folder
    from .replications import replicate
    from .scenario.load import ScenarioError, load
    try:
        sc = load(scenario, set_, seed, trust_includes=trust_includes)
    except ScenarioError as e:
        _fail(e.messages)
    if seeds != "auto" and not (seeds.isdigit() and int(seeds) >= 1):
        _fail([f"--seeds {seeds}: give a number of seeds (1 or more) or auto"])
    if seeds == "auto" and not ci > 0:
        _fail([f"--ci {ci}: the interval's half-width over the mean must be > 0 (0.05 is 5%)"])
    metric = metric or ("ettr" if sc.training is not None else "rounds_completed")
    done = lambda n: err_console.print(f"{sc.name}: {n} seeds done", highlight=False)   # noqa: E731
    try:
        reps = replicate(sc, None if seeds == "auto" else int(seeds), ci if seeds == "auto" else None,
                         metric, progress=done)
    except ValueError as e:
        _fail([str(e)])
    target = out or Path(sc.outputs.dir or f"runs/{sc.name}-seeds")
    try:
        with atomic_folder(target) as tmp:
            reps.summaries.to_csv(tmp / "replications.csv", index=False)
            (tmp / "scenario.yaml").write_text(yaml_dump(sc))
    except OutputError as e:
        _fail([str(e)])
    table = reps.summaries
    t = Table(title=f"{sc.name}: {len(table)} seeds from {sc.seed}", header_style="bold")
    for c in ("metric", "mean", "sd", "min", "max"):
        t.add_column(c, justify="right" if c != "metric" else "left")
    for c in table.columns:
        if c in ("schema_version", "scenario", "seed") or not pd_numeric(table[c]):
            continue
        v = table[c].astype(float)
        t.add_row(c, *(_fmt(x) for x in (v.mean(), v.std(ddof=1) if len(v) > 1 else float("nan"), v.min(), v.max())))
    out_console.print(t)
    out_console.print(reps.line(), highlight=False)
    out_console.print(f"tables: {target}/replications.csv (a summary row a seed)", highlight=False)


def pd_numeric(col) -> bool:
    import pandas as pd
    return pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)


def yaml_dump(sc) -> str:
    import yaml
    return yaml.safe_dump(sc.model_dump(mode="json"), sort_keys=False)


COMPARE = ["rounds_completed", "rdzv_latency_p50", "rdzv_latency_p99", "round_latency_p50",
           "store_ops", "store_bytes", "store_background_util_max", "running_fraction",
           "agents_exited", "all_rounds_consistent", "sim_events"]


def _report(result, target):
    from .report import build
    return build(result.tables(), result.scenario.model_dump(mode="json"), target)


def _compare(scenario, out, seed, set_, protocols, report=True, trust_includes=False):
    """The same scenario under several protocols, one table (written as compare.csv)."""
    import pandas as pd
    from .api import run as run_api
    from .outputs import OutputError, atomic_folder
    from .scenario.load import ScenarioError, load
    scs = {}
    for p in protocols:
        try:
            scs[p] = load(scenario, [*set_, f"protocol.name={p}"], seed, trust_includes=trust_includes)
        except ScenarioError as e:
            _fail([f"with --protocol {p}: {m}" for m in e.messages])
    rows = []
    base = out or Path(f"runs/{next(iter(scs.values())).name}")
    try:
        with atomic_folder(base) as tmp:
            for p, sc in scs.items():
                result = run_api(sc)
                result.save(tmp / p, sc.outputs.formats)
                if report and result.events is not None:
                    _report(result, tmp / p)
                rows.append(result.summary.iloc[0])
            table = pd.DataFrame(rows)
            table.to_csv(tmp / "compare.csv", index=False)
            (tmp / "scenario.yaml").write_text((tmp / protocols[0] / "scenario.yaml").read_text())
    except OutputError as e:
        _fail([str(e)])
    t = Table(title=f"{next(iter(scs.values())).name}: side by side", header_style="bold")
    t.add_column("metric")
    for p in protocols:
        t.add_column(p, justify="right")
    for k in COMPARE:
        t.add_row(k, *(_fmt(r[k].item() if hasattr(r[k], "item") else r[k]) for _, r in table.iterrows()))
    out_console.print(t)
    out_console.print(f"tables: {base}/<protocol>/ and {base}/compare.csv", highlight=False)


@app.command()
def sweep(
    scenario: str = typer.Argument(..., help="A bundled scenario name or a YAML file."),
    grid: List[str] = typer.Option([], "--grid", help="key.path=v1,v2,... (repeatable; the cartesian product runs)."),
    seeds: int = typer.Option(1, "--seeds", min=1, help="Seeds per grid point (scenario seed, +1, ...)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Default: runs/<name>-sweep."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Local processes (default: all cores)."),
    dask: Optional[str] = typer.Option(None, "--dask", help="Run on this Dask scheduler (tcp://host:8786)."),
):
    """Run a grid of parameters x seeds in parallel; one table with a row per run, and a report."""
    from .report.sweep_report import build_sweep
    from .scenario.load import ScenarioError, load
    from .sweep import parse_grid, sweep as do_sweep
    try:
        sc = load(scenario)
        g = parse_grid(grid)
    except ScenarioError as e:
        _fail(e.messages)
    except ValueError as e:
        _fail([str(e)])
    if not g:
        _fail(["give at least one --grid key.path=v1,v2,..."])
    target = out or Path(f"runs/{sc.name}-sweep")
    try:
        df = do_sweep(sc, g, seeds, workers, dask, progress=_runs_progress(f"{sc.name} sweep"))
    except ScenarioError as e:
        _fail([f"a grid value is invalid: {m}" for m in e.messages])
    target.mkdir(parents=True, exist_ok=True)
    df.to_parquet(target / "sweep.parquet", index=False)
    df.to_csv(target / "sweep.csv", index=False)
    from .report.sweep_report import checkpoint_advice
    from .sweep import best_point, points
    table = points(df, list(g))
    table.to_parquet(target / "points.parquet", index=False)
    best = best_point(table, list(g))
    advice = ([best] if best else []) + checkpoint_advice(df, list(g), sc)
    paths = build_sweep(df, list(g), target, f"{sc.name}: sweep", advice, table)
    for line in advice:                           # the answer first
        out_console.print(line, highlight=False)
    t = Table(title=f"{sc.name}: {len(table)} grid points x {seeds} seeds", header_style="bold")
    shown = [m for m in ("goodput", "ettr", "running_fraction", "rdzv_latency_p50") if m in table][:3]
    for c in [*g, *shown]:
        t.add_column(c.split(".")[-1], justify="right")
    for _, row in table.iterrows():
        t.add_row(*(str(row[k]) for k in g), *(_mean_ci(row, m) for m in shown))
    out_console.print(t)
    out_console.print(f"tables: {target}/points.parquet (a row per grid point), {target}/sweep.parquet "
                      f"(a row per run); report: {paths['html']}", highlight=False)


def _mean_ci(row, m: str) -> str:
    if math.isnan(row[f"{m}_lo"]):
        return _fmt(float(row[m]))
    return f"{row[m]:.4g} ± {(row[m + '_hi'] - row[m + '_lo']) / 2:.2g}"


def _scenario_and(scenario: str, set_: list[str], parse, empty: str):
    """The scenario with its --set overrides, and what `parse()` reads of the other options:
    either refused in one line each (exit 2), `empty` when it read nothing."""
    from .scenario.load import ScenarioError, load
    try:
        sc = load(scenario, set_)
        got = parse()
        if not got:
            raise ValueError(empty)
    except ScenarioError as e:
        _fail(e.messages)
    except ValueError as e:
        _fail([str(e)])
    return sc, got


def _runs_progress(name: str):
    """`progress(done, total)` for many runs: rich's bar on a terminal, else a line now and then."""
    if not sys.stderr.isatty():
        from .progress import RunsDone
        return RunsDone(name)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    bar = Progress(TextColumn(f"[bold]{name}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=err_console)
    task = bar.add_task("runs", total=None)

    def update(n: int, total: int) -> None:
        if n == 1:
            bar.start()
        bar.update(task, completed=n, total=total)
        if n >= total:
            bar.stop()
    return update


@app.command()
def compare(
    scenario: str = typer.Argument(..., help="A bundled scenario name or a YAML file."),
    vary: List[str] = typer.Option([], "--vary", help="key.path=v1,v2,... (repeatable; their product is compared)."),
    seeds: int = typer.Option(5, "--seeds", min=2, help="Seeds, the same for every variant (paired)."),
    set_: List[str] = typer.Option([], "--set", help="Override a field first: key.path=value (repeatable)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Default: runs/<name>-compare."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Local processes (default: all cores)."),
    dask: Optional[str] = typer.Option(None, "--dask", help="Run on this Dask scheduler (tcp://host:8786)."),
):
    """Which variant wins, by how much and why: every variant on the same seeds, with paired
    95% intervals, in-place recoveries and fallbacks, and the lost host- and GPU-hours by part
    and by cause (docs/simulating.md#comparing-variants)."""
    from .comparison import compare as do_compare, parse_vary
    from .outputs import OutputError, atomic_folder
    from .report.comparison import write
    from .scenario.load import ScenarioError
    sc, v = _scenario_and(scenario, set_, lambda: parse_vary(vary), "give at least one --vary key.path=v1,v2,...")
    target = out or Path(f"runs/{sc.name}-compare")
    try:
        result = do_compare(sc, v, seeds, (), workers, dask, progress=_runs_progress(f"{sc.name} compare"))
        with atomic_folder(target) as tmp:
            write(result, tmp, f"{sc.name}: compared")
    except ScenarioError as e:
        _fail([f"--vary: {m}" for m in e.messages])
    except (ValueError, OutputError) as e:
        _fail([str(e)])
    for line in result.lines:
        out_console.print(line, highlight=False)
    from .report.comparison import rows_to_print
    t = Table(title=f"{sc.name}: {len(result.runs)} runs, {seeds} paired seeds", header_style="bold")
    t.add_column("")
    for name in result.table["variant"]:
        t.add_column(str(name), justify="right")
    for label, cells in rows_to_print(result.table):
        t.add_row(label, *cells)
    out_console.print(t)
    out_console.print(f"tables: {target}/ (compare.parquet, runs.parquet), report: {target}/compare.md",
                      highlight=False)


@app.command("report")
def report_cmd(directory: Path = typer.Argument(..., help="A run's output folder (its saved tables)."),
               out: Optional[Path] = typer.Option(None, "--out", "-o", help="Where to write (default: the folder).")):
    """Rebuild report.html and report.md from saved tables, without re-running anything."""
    from .report import from_dir
    try:
        paths = from_dir(directory, out)
    except (FileNotFoundError, OSError, ValueError) as e:
        _fail([str(e)])
    out_console.print(f"report: {paths['html']} and {paths['md']}", highlight=False)


@app.command("list")
def list_():
    """The bundled scenarios, one line each (`rdzv-sim show NAME` for the rest), and the
    protocols a scenario can name."""
    from .protocols.registry import specs
    from .scenario.load import bundled
    rows = [(name, str(d["cluster"]["nodes"]), d.get("protocol", {}).get("name", "hrw"),
             first_sentence(d.get("description", "")))
            for name, d in ((n, _bundled_data(n)) for n in bundled())]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    print(f"{'scenario':<{w[0]}}  {'nodes':>{w[1]}}  {'protocol':<{w[2]}}  "
          "what it is (rdzv-sim show NAME for the rest)")
    for name, nodes, proto, what in rows:
        print(f"{name:<{w[0]}}  {nodes:>{w[1]}}  {proto:<{w[2]}}  {what}")
    print()
    p = Table(title="protocols", show_header=True, header_style="bold")
    for c in ("protocol", "from", "settings"):
        p.add_column(c)
    for name, spec in sorted(specs().items()):
        fields = [f for f in spec.settings.model_fields if f not in ("name",)]
        p.add_row(name, spec.module, ", ".join(fields))
    out_console.print(p)


@app.command()
def show(name: str = typer.Argument(..., help="A bundled scenario's name (`rdzv-sim list`).")):
    """One bundled scenario in full: its description, then its YAML as written."""
    from .scenario.load import bundled
    named = bundled()
    if name not in named:
        _fail([f"{name}: no bundled scenario of that name (bundled: {', '.join(named)})"])
    d = _bundled_data(name)
    out_console.print(f"[bold]{name}[/]: {d['cluster']['nodes']} nodes, protocol "
                      f"{d.get('protocol', {}).get('name', 'hrw')}", highlight=False)
    text = " ".join(str(d.get("description", "")).split())
    if text:
        out_console.print(text, highlight=False)
    out_console.print(f"\n# {named[name]}", highlight=False)
    print(named[name].read_text(), end="")


def _bundled_data(name: str) -> dict:
    """A bundled scenario's YAML with its includes merged (not validated: listing stays fast)."""
    import yaml
    from .scenario.load import _with_includes, bundled
    return _with_includes(yaml.safe_load(bundled()[name].read_text()), f"{name} (bundled)")


def first_sentence(text) -> str:
    """The first sentence of a description, on one line: up to the first '. ' (or the end)."""
    flat = " ".join(str(text or "").split())
    cut = flat.find(". ")
    return flat if cut < 0 else flat[:cut + 1]


@app.command()
def schema(out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write to a file instead of stdout."),
           markdown: bool = typer.Option(False, "--markdown", help="The reference as Markdown (docs/scenarios.md).")):
    """The scenario JSON schema (for editors and validators), every registered protocol's
    settings included."""
    from .scenario.schema import model
    if markdown:
        from .scenario.reference import markdown as reference
        text = reference().rstrip("\n")
    else:
        text = json.dumps(model().model_json_schema(), indent=2)
    if out:
        out.write_text(text + "\n")
    else:
        print(text)


@app.command()
def advise(
    scenario: str = typer.Argument(..., help="A bundled scenario name or a YAML file."),
    space: List[str] = typer.Option([], "--space", help="key.path=LOW..HIGH[:log] or key.path=A|B|C (repeatable)."),
    trials: int = typer.Option(20, "--trials", help="Candidates to try (the current settings among them)."),
    seeds: int = typer.Option(3, "--seeds", help="Seeds per candidate, the same for every candidate."),
    objective: str = typer.Option("goodput", "--objective", help="goodput or goodput_per_host (spares paid for)."),
    set_: List[str] = typer.Option([], "--set", help="Override a field first: key.path=value (repeatable)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Default: runs/<name>-advice."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Local processes (default: all cores)."),
    dask: Optional[str] = typer.Option(None, "--dask", help="Run on this Dask scheduler (tcp://host:8786)."),
):
    """Which settings to change: searched with Optuna over paired seeds, the best with its
    confidence, each setting's worth alone, theory beside it (docs/advise.md)."""
    import time
    from .advise import advise as do_advise, parse_space
    from .report.advice import write
    from .outputs import OutputError, atomic_folder
    from .scenario.load import ScenarioError
    sc, knobs = _scenario_and(scenario, set_, lambda: parse_space(space),
                              "give at least one --space key.path=LOW..HIGH or key.path=A|B|C")
    target = out or Path(f"runs/{sc.name}-advice")
    t0 = time.perf_counter()
    try:                          # advise checks the space and its arguments before any run
        result = do_advise(sc, knobs, trials, seeds, objective, workers, dask,
                           progress=lambda text: err_console.print(text, highlight=False))
        with atomic_folder(target) as tmp:
            write(result, tmp, f"{sc.name}: advice", objective, knobs, time.perf_counter() - t0)
    except ScenarioError as e:
        _fail([f"--space: {m}" if m.startswith("--set") else m for m in e.messages])
    except (ValueError, OutputError) as e:
        _fail([str(e)])
    for line in result.lines:
        out_console.print(line, highlight=False)
    out_console.print(f"advice: {target}/advice.html, the scenario: {target}/recommended.yaml",
                      highlight=False)


incidents = typer.Typer(no_args_is_help=True,
                        help="Incident logs: fit a team's own log to a scenario's random_faults "
                             "(or replay it: random_faults kind incident_log).")
app.add_typer(incidents, name="incidents")


def _write_whole(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.partial")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        _fail([f"cannot write {path}: {e}"], 1)


@incidents.command("fit")
def incidents_fit(log: Path = typer.Argument(..., help="A CSV or Parquet log: time, scope, cause[, repair_s, detection_s, host]."),
                  span: Optional[float] = typer.Option(None, "--span", help="Seconds the log covers (default: to its last incident)."),
                  out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the random_faults YAML here.")):
    """Each cause's rate with its 95% interval, a Weibull check of the Poisson assumption, and
    the scenario's `random_faults` that replay those rates (docs/incidents.md)."""
    import yaml
    from .incidents import LogError, fit, random_faults, read_log
    try:
        table = read_log(log)
        fits = fit(table, span)
    except (LogError, ValueError) as e:
        _fail([str(e)])
    t = Table(title=f"{log}: {len(table):,} incidents over {fits[0].span_s / 86400:,.1f} days",
              caption="Weibull k: the shape fitted to the times between incidents (1: Poisson); "
                      "KS p: Kolmogorov-Smirnov against the exponential (fitted: optimistic)",
              show_header=True, header_style="bold")
    t.add_column("cause", no_wrap=True, min_width=max(len(f.cause) for f in fits))
    for c in ("scope", "n", "per day", "95%", "MTBF h", "Weibull k", "KS p", "repair s", "detect s"):
        t.add_column(c, justify="left" if c == "scope" else "right")
    for f in fits:
        t.add_row(f.cause, f.scope, str(f.count), f"{f.rate_per_day:.3g}",
                  f"{f.rate_low_per_day:.2g}-{f.rate_high_per_day:.2g}", f"{f.mtbf_s / 3600:,.1f}",
                  "-" if f.weibull_shape is None else f"{f.weibull_shape:.2f}",
                  "-" if f.ks_p_exponential is None else f"{f.ks_p_exponential:.2f}",
                  "-" if f.repair_s is None else f"{f.repair_s:,.0f}",
                  "-" if f.detection_s is None else f"{f.detection_s:,.0f}")
    # piped or captured: as wide as the table needs (rich would cut it to 80 columns)
    (out_console if out_console.is_terminal else Console(width=160)).print(t)
    text = yaml.safe_dump({"random_faults": random_faults(fits)}, sort_keys=False)
    if out:
        _write_whole(out, text)
        out_console.print(f"random_faults: {out}", highlight=False)
    else:
        print(text, end="")


@incidents.command("sample")
def incidents_sample(out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the CSV here (default: stdout)."),
                     seed: int = typer.Option(0, "--seed", help="The draw of times and hosts.")):
    """A synthetic incident log, marked as such in its `source` column: the Llama 3 paper's
    causes and counts over 54 days at random times."""
    from .incidents import sample_log
    from .scenario.load import load
    text = sample_log(load("llama3-54d"), seed).to_csv(index=False)
    if out:
        _write_whole(out, text)
    else:
        print(text, end="")


def _plugin_commands() -> None:
    """Subcommands other packages add through the `rdzv_sim.commands` entry-point group: this is
    how `validate` and `calibrate` (in real_backend, which needs torch) reach this CLI without
    rdzv_sim importing real_backend."""
    from importlib.metadata import entry_points
    for ep in entry_points(group="rdzv_sim.commands"):
        try:
            app.command(ep.name)(ep.load())
        except Exception as e:  # noqa: BLE001 - a broken plugin must not break the CLI
            err_console.print(f"[yellow]warning:[/] command {ep.name!r} ({ep.value}) not loaded: {e}")


def main():
    _plugin_commands()
    app()


if __name__ == "__main__":
    main()
