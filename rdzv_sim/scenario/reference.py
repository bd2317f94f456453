"""The scenario reference, generated from the schema and the registered protocols' settings:
`rdzv-sim schema --markdown` (every registered protocol) or `python -m rdzv_sim.scenario.reference`
(the built-in ones: docs/scenarios.md)."""
from __future__ import annotations

import inspect
import re
import typing

from pydantic import BaseModel

from .faults import After

# the fields every fault kind has, said once (a kind's own comment, if any, says more)
SHARED = {
    "kind": "which fault this is (this table's kind)",
    "at": "when: seconds from the start, or an event of the run ({after, round, plus})",
    "node": "the host, by index (0-based; the hot spares follow cluster.nodes)",
    "nodes": "the hosts, by index (or give `rack`)",
    "rack": "every host of this rack, by index (cluster.topology.kind: racks; or give `nodes`)",
    "duration": "seconds it lasts, from `at`",
}
_COMMENT = re.compile(r"^\s+(\w+)\s*:[^#]*#\s*(.+)$")
_FIELD = re.compile(r"^\s+(\w+)\s*:\s*\S")


def _comments(cls) -> dict[str, str]:
    """A field's trailing `# comment` in its class's source (and its bases')."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not (isinstance(klass, type) and issubclass(klass, BaseModel)) or klass is BaseModel:
            continue
        try:
            src = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        above: list[str] = []                   # a comment block right above a field says it too
        for line in src.splitlines():
            m = _COMMENT.match(line)
            if m:
                out[m.group(1)] = m.group(2).strip()
            elif (f := _FIELD.match(line)) and above:
                out.setdefault(f.group(1), " ".join(above))
            stripped = line.strip()
            above = [*above, stripped[1:].strip()] if stripped.startswith("#") else []
    return out


def _type(t) -> str:
    """A field's type as a reader wants it: `int`, `one of a, b`, `section`, `list of faults`."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if t is After:
        return "an event: `{after, round, plus}`"
    if isinstance(t, type) and issubclass(t, BaseModel):
        return "section"
    if origin is typing.Annotated:
        return _type(args[0])
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        inner = [typing.get_args(a)[0] if typing.get_origin(a) is typing.Annotated else a for a in args]
        if all(isinstance(a, type) and issubclass(a, BaseModel) for a in inner):
            return "one of the kinds below"
        return " or ".join("null" if a is type(None) else _type(a) for a in args)
    if origin is list:
        return f"list of {_type(args[0])}" if args else "list"
    return getattr(t, "__name__", str(t))


def _constraints(field) -> str:
    bits = []
    for m in field.metadata:
        for k in ("gt", "ge", "lt", "le"):
            v = getattr(m, k, None)
            if v is not None:
                bits.append({"gt": ">", "ge": ">=", "lt": "<", "le": "<="}[k] + f" {v}")
    return ", ".join(bits)


def _default(field) -> str:
    if field.is_required():
        return "required"
    d = field.default
    if isinstance(d, BaseModel):
        return "(section)"
    return f"`{d!r}`" if not isinstance(d, str) else f"`{d}`"


def _table(cls, prefix: str) -> list[str]:
    notes = _comments(cls)
    rows = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for name, f in cls.model_fields.items():
        if name == "include":
            continue
        bound = _constraints(f)
        kind = _type(f.annotation) + (f" ({bound})" if bound else "")
        text = f.description or notes.get(name) or (SHARED.get(name, "") if not prefix else "")
        if not text and name == "name" and prefix == "protocol.":
            text = "the protocol whose settings these are"
        rows.append(f"| `{prefix}{name}` | {kind.replace('|', 'or')} | {_default(f)} | {text} |")
    return rows


def markdown(builtin_only: bool = False) -> str:
    """The reference; `builtin_only`: only the protocols that ship with rdzv-sim (docs/)."""
    from ..protocols.registry import specs
    from . import schema as S
    out = ["# Scenario reference", "",
           "Generated from the schema (`python -m rdzv_sim.scenario.reference > docs/scenarios.md`;",
           "`rdzv-sim schema --markdown` adds the protocols you registered); the JSON",
           "schema for editors is `rdzv-sim schema`. Times are seconds. Unknown keys are refused, and "
           "so is a key given twice in one mapping (both lines are named).", ""]
    out += ["## Top level", ""] + _table(S.Scenario, "") + [""]
    for name in ("cluster", "store", "agent", "shards", "training", "scheduler", "outputs"):
        f = S.Scenario.model_fields[name]
        cls = next(a for a in (typing.get_args(f.annotation) or (f.annotation,))
                   if isinstance(a, type) and issubclass(a, BaseModel))
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        out += [f"## `{name}`", ""] + ([doc, ""] if doc else []) + _table(cls, f"{name}.") + [""]
        for sub in ("topology", "cpu"):
            if sub in cls.model_fields:
                subcls = cls.model_fields[sub].annotation
                out += [f"### `{name}.{sub}`", ""] + _table(subcls, f"{name}.{sub}.") + [""]
    out += ["## `protocol`", "",
            "The settings of the protocol `protocol.name` names; each protocol declares its own.", ""]
    for name, spec in sorted(specs().items()):
        if builtin_only and not spec.module.startswith("rdzv_sim."):
            continue
        out += [f"### `protocol.name: {name}`", "", (spec.settings.__doc__ or "").strip(), ""]
        out += _table(spec.settings, "protocol.") + [""]
    out += ["## `faults`", "", "Scheduled faults, each with a `kind`. A fault's `at` is seconds from "
            "the start, or an event: `{after: round_complete, round: 0, plus: 2}` is 2 s after every "
            "member of round 0 got its rank (`workers_started`: started its workers; `pg_ready`, "
            "real runs only: brought its process group up); `{after: rendezvous_start, plus: 1}` is "
            "1 s after the first agent began a rendezvous (the job is up and calling its store, "
            "however long its start took). Both runtimes honour it: the simulator "
            "exactly, the real launcher by watching its nodes' traces. A fault whose event never "
            "comes never happens.", ""]
    for cls in typing.get_args(typing.get_args(S.Fault)[0]):
        kind = typing.get_args(cls.model_fields["kind"].annotation)[0]
        out += [f"### `{kind}`", "", (cls.__doc__ or "").strip(), ""] + _table(cls, "") + [""]
    out += ["## `random_faults`", ""]
    for cls in (S.NodeFailures, S.Interruptions, S.IncidentLog):
        kind = typing.get_args(cls.model_fields["kind"].annotation)[0]
        out += [f"### `{kind}`", "", (cls.__doc__ or "").strip(), ""] + _table(cls, "") + [""]
    return "\n".join(line.rstrip() for line in out).rstrip() + "\n"


if __name__ == "__main__":
    print(markdown(builtin_only=True), end="")
