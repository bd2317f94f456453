"""`advise`: the settings a team may change, searched with Optuna (TPE) for the best objective,
every candidate run on the same seeds (so candidates share their failure draws and are compared
pairwise), and the answer with its confidence: the best settings against the current ones,
how sure the ranking of the top few is, what each setting is worth alone, and theory beside it
where there is one (Young's and Daly's checkpoint interval)."""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .intervals import t_interval
from .report.caveats import CAVEATS
from .sweep import run_specs


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:,.0f} minutes" if seconds >= 90 else f"{seconds:,.0f} s"

OBJECTIVES = {
    "goodput": "goodput: the share of full-size training the run did",
    "goodput_per_host": "goodput x max_nodes / (max_nodes + hot_spares): what the hosts paid "
                        "for, spares included, delivered",
}


@dataclass(frozen=True)
class Knob:
    """One setting to search: a range (`low`..`high`, integer if both ends are, `log` for a
    log scale) or choices."""
    key: str
    low: float | None = None
    high: float | None = None
    integer: bool = False
    log: bool = False
    choices: tuple[str, ...] = ()

    def values_to_check(self) -> list:
        return list(self.choices) if self.choices else [self.low, self.high]

    def middle(self):
        """A value inside the range (its geometric middle on a log scale)."""
        m = math.sqrt(self.low * self.high) if self.log else (self.low + self.high) / 2
        return int(round(m)) if self.integer else m


def first_candidates(knobs: list[Knob], baseline: dict) -> list[dict]:
    """The candidates tried before TPE narrows: every value of every choice knob (the others at
    their current value where it is in the space, else the range's middle or first choice), so
    that each choice is measured at least once and compared on the same seeds."""
    def at_rest(k: Knob):
        v = baseline.get(k.key)
        if k.choices:
            return str(v) if v is not None and str(v) in k.choices else k.choices[0]
        return v if v is not None and k.low <= float(v) <= k.high else k.middle()
    rest = {k.key: at_rest(k) for k in knobs}
    out = []
    for k in knobs:
        for c in k.choices:
            p = {**rest, k.key: c}
            if p not in out:
                out.append(p)
    return out


_RANGE = re.compile(r"^\s*(-?[\d.eE+]+)\s*\.\.\s*(-?[\d.eE+]+)\s*(:log)?\s*$")


def parse_space(items: list[str]) -> list[Knob]:
    """["training.checkpoint_interval=300..7200:log", "scheduler.hot_spares=0..64",
    "protocol.name=hrw|c10d"] -> knobs. A bad item is a ValueError saying the forms."""
    knobs = []
    for item in items:
        key, _, spec = item.partition("=")
        key = key.strip()
        form = ("expected key.path=LOW..HIGH (a range; add :log for a log scale) or "
                "key.path=A|B|C (choices)")
        if not key or not spec:
            raise ValueError(f"--space {item!r}: {form}")
        m = _RANGE.match(spec)
        if m:
            try:
                lo, hi = float(m.group(1)), float(m.group(2))
            except ValueError:
                raise ValueError(f"--space {item!r}: {form}") from None
            if not lo < hi:
                raise ValueError(f"--space {item!r}: the range's low end must be below its high end")
            if m.group(3) and lo <= 0:
                raise ValueError(f"--space {item!r}: a log scale needs a positive low end")
            integer = all(re.fullmatch(r"-?\d+", g) for g in (m.group(1), m.group(2)))
            knobs.append(Knob(key, lo, hi, integer, bool(m.group(3))))
        elif "|" in spec:
            choices = tuple(c.strip() for c in spec.split("|") if c.strip())
            if len(choices) < 2:
                raise ValueError(f"--space {item!r}: give at least two choices")
            knobs.append(Knob(key, choices=choices))
        else:
            raise ValueError(f"--space {item!r}: {form}")
    if len({k.key for k in knobs}) != len(knobs):
        raise ValueError("--space: a key is given twice")
    return knobs


def current_value(data: dict, key: str):
    node = data
    for part in key.split("."):
        node = node[int(part)] if isinstance(node, list) else (node or {}).get(part)
    return node


def objective_of(row: dict, name: str, sc) -> float:
    """A run's objective from its summary row (with the candidate's params in it)."""
    g = float(row.get("goodput", math.nan))
    if name == "goodput":
        return g
    hosts = int(row.get("protocol.max_nodes", getattr(sc.protocol, "max_nodes", sc.cluster.nodes)))
    spares = int(row.get("scheduler.hot_spares", sc.scheduler.hot_spares))
    per = sc.spare_hosts // sc.scheduler.hot_spares if sc.scheduler.hot_spares else 1   # hosts a spare
    return g * hosts / (hosts + spares * per)


@dataclass
class Advice:
    trials: pd.DataFrame                 # one row per candidate: params, mean, sd, per-seed values
    best: dict                           # the best candidate's params
    baseline: dict                       # the scenario's own values of the knobs
    lines: list[str] = field(default_factory=list)   # the answer, in sentences
    recommended: dict | None = None      # the scenario with the best settings (a dict)
    given: dict | None = None            # the scenario as it was given
    young_daly: tuple | None = None      # Young's and Daly's checkpoint intervals, where they apply


def _check(knobs: list[Knob], trials: int, seeds: int, objective: str) -> None:
    if objective not in OBJECTIVES:
        raise ValueError(f"--objective {objective!r}: one of {', '.join(OBJECTIVES)}")
    if trials < 2 or seeds < 2:
        raise ValueError("advise needs at least 2 trials and 2 seeds (a confidence interval "
                         "needs two seeds)")
    choices = sum(len(k.choices) for k in knobs)
    if trials < choices:
        raise ValueError(f"--trials {trials}: the choices alone are {choices} candidates (each "
                         f"is tried once before the search narrows); give --trials {choices} or more")


def advise(scenario, knobs: list[Knob], trials: int = 20, seeds: int = 3,
           objective: str = "goodput", workers: int | None = None, dask_address: str | None = None,
           progress=None) -> Advice:
    """Search `knobs` for the best `objective` over `trials` candidates, each on `seeds` paired
    seeds; `progress(text)` between batches."""
    from .scenario.load import load
    _check(knobs, trials, seeds, objective)
    sc = load(scenario)
    for k in knobs:                           # a bad key or value: refused before anything runs
        for v in k.values_to_check():
            load(sc, [f"{k.key}={int(v) if k.integer else v}"])
    s = _Search(sc, knobs, seeds, objective, workers, dask_address, progress)
    s.announce(trials)
    baseline = {k.key: current_value(s.data, k.key) for k in knobs}
    (base_vals,), (base_good,), base_rows = s.runs([baseline])
    if not np.isfinite(base_vals).any():
        raise ValueError(f"{sc.name}: its runs give no {objective} (goodput needs a training "
                         "section: training.checkpoint_interval, ...)")
    s.measured(base_rows, base_vals, trials)
    table = s.search(trials, baseline, base_vals, base_good)
    per_seed = [f"seed_{x}" for x in s.seed_list]
    best = {k.key: table.iloc[0][k.key] for k in knobs}
    best = {k: (v.item() if hasattr(v, "item") else v) for k, v in best.items()}
    lines = _answer(table, knobs, best, baseline, np.array(base_vals), per_seed, objective)
    lines += s.alone(best, baseline, base_vals)
    lines.append(_theory(knobs, best, sc, base_rows))
    mode = best.get("agent.recovery", sc.agent.recovery)
    if mode != "in_job" and mode in CAVEATS:  # what the recommended recovery's model leaves out
        lines.append("Caveat: " + CAVEATS[mode])
    rec = load(sc, [f"{k}={v}" for k, v in best.items()]).model_dump(mode="json")
    got = theory_lines(sc, base_rows)
    return Advice(table, best, baseline, lines, rec, s.data, None if isinstance(got, str) else got)


class _Search:
    """One search's runs: every candidate on the same seeds, in batches as wide as the workers."""

    def __init__(self, sc, knobs, seeds, objective, workers, dask_address, progress):
        self.sc, self.knobs, self.objective = sc, knobs, objective
        self.data = sc.model_dump(mode="json")
        self.seed_list = [sc.seed + i for i in range(seeds)]
        self.workers, self.dask, self.progress = workers, dask_address, progress
        self.batch = max(1, workers or os.cpu_count() or 1)

    def announce(self, trials: int) -> None:
        if not self.progress:
            return
        from .estimate import estimate
        sc, seeds, knobs = self.sc, len(self.seed_list), self.knobs
        n = (trials + 1 + len(knobs)) * seeds         # the candidates, the current settings, each alone
        width = 1 if self.dask else self.batch
        self.progress(f"advise {sc.name}: {trials} candidates x {seeds} seeds = {trials * seeds} runs "
                      f"(+ {seeds} of the current settings, + up to {len(knobs) * seeds} of each setting "
                      f"alone); about {n * estimate(sc).seconds / width / 60:,.0f} minutes at the "
                      f"current settings' cost on "
                      f"{'the Dask cluster (one worker counted)' if self.dask else f'{width} workers'}")

    def measured(self, base_rows, base_vals, trials: int) -> None:
        """The time left, from the current settings' runs as measured."""
        if not self.progress:
            return
        wall = sorted(float(r.get("wall_s", 0.0)) for r in base_rows)
        per_run = wall[len(wall) // 2] if wall else 0.0
        left = (trials + len(self.knobs)) * len(self.seed_list) * per_run / (1 if self.dask else self.batch)
        self.progress(f"current settings: {self.objective} {np.mean(base_vals):.4f}; measured "
                      f"{per_run:,.1f} s a run: about {_minutes(left)} more")

    def runs(self, params_list: list[dict]) -> tuple[list[list[float]], list[list[float]], list[dict]]:
        """Each candidate's objective and goodput on every seed, and the runs' summary rows."""
        seeds = len(self.seed_list)
        specs = [{"overrides": [f"{k}={v}" for k, v in p.items()], "params": dict(p), "seed": s}
                 for p in params_list for s in self.seed_list]
        rows = run_specs(self.data, specs, self.workers, self.dask)
        chunks = [rows[i * seeds:(i + 1) * seeds] for i in range(len(params_list))]
        goodput = [[float(r.get("goodput", math.nan)) for r in c] for c in chunks]
        return [[objective_of(r, self.objective, self.sc) for r in c] for c in chunks], goodput, rows

    def _queue(self, study, baseline: dict) -> None:
        """The current settings (where they are in the space), then every choice, before TPE."""
        knobs = self.knobs
        inside = {k.key: baseline[k.key] for k in knobs
                  if (k.choices and str(baseline[k.key]) in k.choices)
                  or (not k.choices and baseline[k.key] is not None and k.low <= float(baseline[k.key]) <= k.high)}
        queued = []
        if len(inside) == len(knobs):
            queued.append({k.key: str(inside[k.key]) if k.choices else inside[k.key] for k in knobs})
        queued += [p for p in first_candidates(knobs, baseline) if p not in queued]
        for p in queued:
            study.enqueue_trial(p)

    def _suggest(self, tr) -> dict:
        p = {}
        for k in self.knobs:
            if k.choices:
                p[k.key] = tr.suggest_categorical(k.key, list(k.choices))
            elif k.integer:
                p[k.key] = tr.suggest_int(k.key, int(k.low), int(k.high), log=k.log)
            else:
                p[k.key] = tr.suggest_float(k.key, k.low, k.high, log=k.log)
        return p

    def search(self, trials: int, baseline: dict, base_vals, base_good) -> pd.DataFrame:
        """TPE over the knobs, a batch at a time: a row per candidate, best first."""
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=self.sc.seed))
        self._queue(study, baseline)
        rows_out, done = [], 0
        while done < trials:
            asked = [study.ask() for _ in range(min(self.batch, trials - done))]
            params = [self._suggest(tr) for tr in asked]
            fresh = [p for p in params if p != baseline]
            got = self.runs(fresh)[:2] if fresh else ([], [])
            fresh_vals, fresh_good = iter(got[0]), iter(got[1])
            for tr, p in zip(asked, params):
                v, g = (base_vals, base_good) if p == baseline else (next(fresh_vals), next(fresh_good))
                mean = float(np.mean(v))
                study.tell(tr, mean if math.isfinite(mean) else float("-inf"))
                rows_out.append({**p, "mean": mean, "sd": float(np.std(v, ddof=1)),
                                 "goodput": float(np.mean(g)),
                                 **{f"seed_{s}": x for s, x in zip(self.seed_list, v)}})
            done += len(asked)
            if self.progress:
                self.progress(f"{done}/{trials} candidates; best so far {max(r['mean'] for r in rows_out):.4f}")
        return pd.DataFrame(rows_out).sort_values("mean", ascending=False, kind="stable").reset_index(drop=True)

    def alone(self, best: dict, baseline: dict, base_vals) -> list[str]:
        """What each setting of the best is worth alone, the rest as they are (one knob: none)."""
        alone = [{**baseline, k.key: best[k.key]} for k in self.knobs if best[k.key] != baseline[k.key]]
        if len(self.knobs) <= 1 or not alone:
            return []
        vals, _, _ = self.runs(alone)
        lines = []
        for p, v in zip(alone, vals):
            key = next(k for k in p if p[k] != baseline[k])
            m, lo, hi = t_interval(np.array(v) - np.array(base_vals))
            lines.append(f"{key} = {show_value(best[key])} alone (the rest as they are): "
                         f"{m:+.4f} ({lo:+.4f} to {hi:+.4f}).")
        return lines


def show_value(v) -> str:
    """A setting or objective as a report prints it."""
    return f"{v:,.4g}" if isinstance(v, float) else str(v)


def _answer(table, knobs, best, baseline, base_vals, per_seed, objective) -> list[str]:
    from scipy import stats
    top = table.iloc[0]
    top_vals = top[per_seed].to_numpy(float)
    m, lo, hi = t_interval(top_vals)
    settings = ", ".join(f"{k} = {show_value(v)}" for k, v in best.items())
    now = ", ".join(f"{k} = {show_value(v)}" for k, v in baseline.items())
    d, dlo, dhi = t_interval(top_vals - base_vals)
    lines = [f"Best of {len(table)} candidates: {settings}, {objective} {m:.4f} "
             f"(95% interval over {len(per_seed)} seeds: {lo:.4f} to {hi:.4f}).",
             f"Against the current settings ({now}, {objective} {base_vals.mean():.4f}): "
             f"{d:+.4f} (95% interval of the paired difference: {dlo:+.4f} to {dhi:+.4f})."]
    for i in range(1, min(3, len(table))):
        other = table.iloc[i][per_seed].to_numpy(float)
        diff = top_vals - other
        wins = int((diff > 0).sum())
        p = float(stats.ttest_rel(top_vals, other).pvalue) if np.any(diff != diff[0]) else math.nan
        alt = ", ".join(f"{k.key} = {show_value(table.iloc[i][k.key])}" for k in knobs)
        lines.append(f"Ahead of number {i + 1} ({alt}) by {diff.mean():+.4f}, on {wins} of "
                     f"{len(diff)} seeds" + ("" if math.isnan(p) else f" (paired t-test p = {p:.2g})")
                     + ("." if math.isnan(p) or p < 0.05 else ": not a sure ranking."))
    return lines


def theory_lines(sc, base_rows) -> tuple[float, float] | str:
    """Young's sqrt(2 C M) and Daly's sqrt(2 C M) - C for the checkpoint interval, with M the
    current settings' mean time per interruption, or why they do not apply."""
    if sc.training is None:
        return "no training section: no checkpoint interval to set"
    if sc.training.checkpoint != "sync":
        return (f"checkpoints are {sc.training.checkpoint}: Young's and Daly's intervals price a "
                "synchronous checkpoint's stall")
    m = _mean_mtti(base_rows)
    c = sc.training.checkpoint_cost
    if not math.isfinite(m):
        return "the current settings' runs saw no interruption: no mean time between them to use"
    if c <= 0:
        return "a checkpoint costs nothing here: any interval does"
    from .training import young_daly
    return young_daly(c, m)


def _mean_mtti(rows) -> float:
    v = [float(r.get("mtti_s", math.nan)) for r in rows]
    v = [x for x in v if math.isfinite(x)]
    return float(np.mean(v)) if v else math.nan


def _theory(knobs, best, sc, base_rows) -> str:
    """The theory line: Young's and Daly's checkpoint interval beside the search's, or why not."""
    got = theory_lines(sc, base_rows)
    if isinstance(got, str):
        return f"Young's and Daly's checkpoint intervals do not apply: {got}."
    young, daly = got
    m = _mean_mtti(base_rows)
    text = (f"Theory for the checkpoint interval (C = {sc.training.checkpoint_cost:g} s a checkpoint, "
            f"one interruption every {m:,.0f} s): Young {young:,.0f} s, Daly {daly:,.0f} s")
    if "training.checkpoint_interval" in best:
        return text + f"; the search found {show_value(best['training.checkpoint_interval'])} s."
    return text + f"; the scenario checkpoints every {sc.training.checkpoint_interval:,.0f} s (not searched)."
