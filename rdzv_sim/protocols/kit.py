"""A protocol, declared: one frozen value naming its class, its settings and its parts.

    KIT = Kit("hrw", HrwProtocol, HrwSettings,
              Capabilities(fidelities=("per_operation", "aggregate"), deterministic=True),
              parts={"round_model": "rdzv_sim.aggregate.hrw_round:HrwRounds",
                     "invariants": "rdzv_sim.testing.invariants:HRW"})

What it can do (`Capabilities`) is read by the layers that act on it (the simulator's
fidelities, the real runtime's torchrun and torch handlers, the strategies' world); what
depends on its settings' values (whether it fails over) is the settings model's to say.

A part lives in the layer that uses it; the kit names it by "module:attribute", which that
layer imports when it first asks (a string is not an import, so the layers hold), or holds the
object itself (a user's file). `register_kit` refuses a kind it does not know and a named part
that does not exist, before anything runs.
"""
from __future__ import annotations

import ast
import difflib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from .recovery import Mode
from .settings import ProtocolSettings

FIDELITIES = ("per_operation", "aggregate")

# each kind of part: the layer that reads it, and what it is
KINDS = {
    "round_model": "rdzv_sim.aggregate: a RoundModel subclass, the protocol's rounds at fidelity aggregate",
    "training": "rdzv_sim.training: model(events, rounds, scenario, spans) -> TrainingResult, "
                "instead of the stop-the-world model",
    "settings_strategy": "rdzv_sim.testing: strategy(nodes), a Hypothesis strategy of its settings dicts",
    "invariants": "rdzv_sim.testing: a list of check(tables, scenario) -> list[Violation], its own promises",
    "known": "rdzv_sim.testing: a list of Known, violations the real system shares",
    "cost/per_operation": "rdzv_sim.estimate: a Cost, seconds of simulation a round per operation",
    "cost/aggregate": "rdzv_sim.estimate: a Cost, seconds of simulation a round at aggregate",
    "real/validate": "real_backend: validate(scenario, out) -> verdict, when its real side is not "
                     "the generic launcher",
}


@dataclass(frozen=True)
class Capabilities:
    """What a protocol can do, as the layers that act on it ask."""
    fidelities: tuple[str, ...] = ("per_operation",)   # simulator fidelities that model it;
                                                        # "aggregate" needs a round_model part
    deterministic: bool = False         # same members and ranks whatever the timing (validate
                                        # compares them exactly)
    fixed_world: bool = False           # every node, always (min = max = nodes)
    ranks_given: bool = False           # ranks are the nodes' own indexes (torchrun's --node-rank)
    torch_counterpart: str | None = None    # a torch handler that is this protocol in real runs
    torch_baseline: str | None = None       # a torch handler a real run may use instead
                                            # (validate --torch-static)
    torchrun: str | None = None         # None: it runs as a torchrun rendezvous handler; else why not
    recovery: tuple[str, ...] = ("in_job",)    # the agent's recovery modes it supports (recovery.Mode)
    lighthouse: bool = False            # a torchft Lighthouse forms its quorums (a lighthouse_crash hits it)

    def __post_init__(self):
        f = tuple(self.fidelities) if isinstance(self.fidelities, (tuple, list)) else None
        if not f or any(x not in FIDELITIES for x in f) or "per_operation" not in f:
            raise ValueError(f"Capabilities: fidelities {self.fidelities!r} must list 'per_operation' and "
                             f"may add 'aggregate' (with a round_model part)")
        object.__setattr__(self, "fidelities", f)
        r = tuple(self.recovery) if isinstance(self.recovery, (tuple, list)) else None
        modes = tuple(m.value for m in Mode)
        if not r or any(x not in modes for x in r) or "in_job" not in r:
            raise ValueError(f"Capabilities: recovery {self.recovery!r} must list 'in_job' and may add "
                             f"{', '.join(repr(m) for m in modes[1:])}")
        object.__setattr__(self, "recovery", r)
        for k in ("deterministic", "fixed_world", "ranks_given"):
            if not isinstance(getattr(self, k), bool):
                raise ValueError(f"Capabilities: {k} must be True or False, got {getattr(self, k)!r}")
        for k in ("torch_counterpart", "torch_baseline", "torchrun"):
            v = getattr(self, k)
            if v is not None and not (isinstance(v, str) and v):
                raise ValueError(f"Capabilities: {k} must be a non-empty string or None, got {v!r}")


# what a Protocol class once declared itself, now a kit's Capabilities
CLASS_DECLARATIONS = ("fidelities", "deterministic", "ranks_given", "torch_counterpart", "torch_baseline",
                      "torchrun", "torchrun_why", "fails_over")


@dataclass(frozen=True)
class Kit:
    """`protocol` (a Protocol subclass) with `settings` (a ProtocolSettings subclass), known as
    `name`; what it can do (`Capabilities`); and its `parts` by kind (`KINDS`):
    "module:attribute" paths or the objects."""
    name: str
    protocol: type
    settings: type = ProtocolSettings
    capabilities: Capabilities = Capabilities()
    parts: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.capabilities, Capabilities):
            raise ValueError(f"Kit({self.name!r}): capabilities must be a rdzv_sim.Capabilities, "
                             f"got {self.capabilities!r}")
        object.__setattr__(self, "parts", MappingProxyType(dict(self.parts)))


def where(path: str) -> tuple[str, str]:
    """("module", "attribute") of a part's path."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr.isidentifier():
        raise ValueError(f"{path!r} is not a part's path: write it 'package.module:attribute'")
    return module, attr


def missing(path: str) -> str | None:
    """Why part `path` does not exist, or None where its module defines the attribute at top
    level. Read from the source, not imported: a part's module may import its protocol."""
    module, attr = where(path)
    mod = sys.modules.get(module)
    if mod is not None:
        return None if hasattr(mod, attr) else f"module {module!r} defines no {attr!r}"
    file = _source(module)
    if file is None:
        return f"there is no module {module!r}"
    try:
        names = top_level_names(file.read_text())
    except SyntaxError as e:
        return f"module {module!r} does not parse: {e.msg} (line {e.lineno})"
    if attr not in names:
        near = difflib.get_close_matches(attr, sorted(names), n=1)
        return (f"module {module!r} defines no {attr!r} at top level"
                + (f" (did you mean {near[0]!r}?)" if near else ""))
    return None


def top_level_names(source: str) -> set[str]:
    """The names a module binds at top level, read from its syntax tree (not imported: a
    part's module may import its protocol): definitions, assignments (tuples too), imports
    (on as many lines as they take), and those under a top-level `if` or `try`."""
    out: set[str] = set()

    def bind(target) -> None:
        if isinstance(target, ast.Name):
            out.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                bind(t)
        elif isinstance(target, ast.Starred):
            bind(target.value)

    def walk(body) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    bind(t)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.target is not None:
                bind(node.target)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.If):
                walk(node.body)
                walk(node.orelse)
            elif isinstance(node, ast.Try):
                for part in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                    walk(part)
    walk(ast.parse(source).body)
    return out


def _source(module: str) -> Path | None:
    """The file of `module`, found without importing it."""
    top, *rest = module.split(".")
    spec = sys.modules[top].__spec__ if top in sys.modules else importlib.util.find_spec(top)
    if spec is None or spec.origin is None:
        return None
    if not rest:
        return Path(spec.origin)
    for base in spec.submodule_search_locations or ():
        f = Path(base).joinpath(*rest)
        for candidate in (f.with_suffix(".py"), f / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def resolve(path: str) -> Any:
    """Import the part's module and return the part."""
    module, attr = where(path)
    return getattr(importlib.import_module(module), attr)
