"""Loading scenarios: bundled names or paths, `--set` overrides, errors with YAML paths and lines."""
from __future__ import annotations

import copy
from pathlib import Path

import yaml
from pydantic import ValidationError

from .checks import problems
from ..errors import Error
from . import schema as S
from .faults import AT_TAGS
from .schema import Scenario, model

BUNDLED = Path(__file__).with_name("bundled")


class ScenarioError(Error):
    """A scenario that cannot run; `messages` has one line per problem."""

    def __init__(self, messages: list[str]):
        super().__init__("\n".join(messages))
        self.messages = messages


def bundled() -> dict[str, Path]:
    return {p.stem: p for p in sorted(BUNDLED.glob("*.yaml"))}


def format_path(path) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<top level>"


def _line_of(root, path) -> int | None:
    """1-based line of the YAML node at `path` (or of its nearest existing parent)."""
    node, line = root, (root.start_mark.line + 1 if root is not None else None)
    for part in path:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if k.value == str(part)), None)
            if nxt is None:
                key = next((k for k, v in node.value if k.value == str(part)), None)
                return key.start_mark.line + 1 if key is not None else line
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            return line
        line = node.start_mark.line + 1
    return line


def _parse(text: str, label: str, echo: bool = True):
    """(node tree, data) of YAML text; a key given twice in one mapping is refused by its path,
    naming both lines (YAML says keys are unique; PyYAML would keep the last one silently).
    `echo=False`: a syntax error's message says nothing of the text (an include's)."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as e:
        if not echo:
            raise ScenarioError([f"{label}: not valid YAML"]) from None
        mark = getattr(e, "problem_mark", None)
        where = f"{label}:{mark.line + 1}" if mark else label
        raise ScenarioError([f"{where}: not valid YAML: {getattr(e, 'problem', e)}"]) from None
    _refuse_duplicates(root, (), label)
    return root, yaml.safe_load(text)


def _refuse_duplicates(node, path: tuple, label: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else None
            if key is not None and key in seen:
                raise ScenarioError([f"{label}:{k.start_mark.line + 1}: {format_path((*path, key))}: "
                                     f"given twice, at lines {seen[key]} and {k.start_mark.line + 1}; "
                                     "keep one"])
            if key is not None:
                seen[key] = k.start_mark.line + 1
            _refuse_duplicates(v, (*path, key), label)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _refuse_duplicates(item, (*path, i), label)


def _set(data: dict, dotted: str, raw: str) -> None:
    """Apply one `--set a.b.0.c=value` (the value is parsed as YAML: numbers, lists, null)."""
    keys = [int(k) if k.isdigit() else k for k in dotted.split(".")]
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        value = raw
    cur = data
    for i, k in enumerate(keys[:-1]):
        if isinstance(cur, list):
            if not isinstance(k, int) or k >= len(cur):
                raise ScenarioError([f"--set {dotted}: {format_path(keys[:i + 1])} does not exist"])
            cur = cur[k]
        else:
            if not isinstance(cur, dict):
                raise ScenarioError([f"--set {dotted}: {format_path(keys[:i])} is not a mapping"])
            if cur.get(k) is None:                   # a section left out (or null): make it
                cur[k] = {}
            cur = cur[k]
    last = keys[-1]
    if isinstance(cur, list):
        if not isinstance(last, int) or last >= len(cur):
            raise ScenarioError([f"--set {dotted}: {format_path(keys)} does not exist"])
    elif not isinstance(cur, dict):
        raise ScenarioError([f"--set {dotted}: {format_path(keys[:-1])} is not a mapping"])
    cur[last] = value


MAX_BYTES = 1 << 20            # a scenario file (or an included one) is at most 1 MiB


def load(source, overrides: list[str] | tuple = (), seed: int | None = None, *,
         trust_includes: bool = False) -> Scenario:
    """A validated Scenario from a bundled name, a YAML path, YAML text or a dict.

    `include:` in a file or in YAML text names files below the scenario's folder (text: the
    working directory); a dict is built by the calling program, so its includes are its own
    choice, as they are with `trust_includes`."""
    root = None
    label = "<scenario>"
    if isinstance(source, Scenario):
        data = source.model_dump(mode="json")
        trust_includes = True                 # loaded once already: its paths were checked then
    elif isinstance(source, dict):
        data = copy.deepcopy(source)
        trust_includes = True
    else:
        text, label = _read(source)
        root, data = _parse(text, label)
        if not isinstance(data, dict):
            raise ScenarioError([f"{label}: a scenario is a YAML mapping (name:, duration:, cluster:, ...)"])
    data = _with_includes(data, label, trust_includes)
    _resolve_logs(data, label, trust_includes)
    switched = False
    given: dict[tuple, str] = {}                # an override's path -> the --set that gave it
    for item in overrides:
        if "=" not in item:
            raise ScenarioError([f"--set {item!r}: expected key.path=value"])
        k, v = item.split("=", 1)
        _set(data, k.strip(), v)
        given[tuple(k.strip().split("."))] = item
        switched |= k.strip() == "protocol.name"
    if switched:
        _fit_protocol(data)
    if overrides:                                # the description predates them: say so
        before = data.get("overridden") if isinstance(data.get("overridden"), list) else []
        data["overridden"] = list(dict.fromkeys([*before, *(o.strip() for o in overrides)]))
    if seed is not None:
        data["seed"] = seed
    try:
        sc = model().model_validate(data)
    except ValidationError as e:
        raise ScenarioError([_message(label, root, *_unknown_protocol(err), given=given)
                             for err in e.errors()]) from None
    found = problems(sc) + _log_problems(sc)
    if found:
        raise ScenarioError([_message(label, root, path, msg, given=given) for path, msg in found])
    return sc


def _unknown_protocol(err) -> tuple:
    """(loc, msg) of a validation error; an unknown protocol is named at protocol.name."""
    if err["type"] != "unknown_protocol":
        return err["loc"], err["msg"]
    got = err["input"].get("name") if isinstance(err["input"], dict) else err["input"]
    return (*err["loc"], "name"), f"unknown protocol {got!r}; registered: {err['ctx']['registered']}"


def _fit_protocol(data: dict) -> None:
    """`--set protocol.name=X` (and `-p`, sweeps): drop the settings that belong to other
    protocols and that X does not use, so one scenario runs under each; typos still fail."""
    from ..protocols.registry import specs
    proto, known = data.get("protocol"), specs()
    if not isinstance(proto, dict) or proto.get("name") not in known:
        return
    mine = set(known[proto["name"]].settings.model_fields)
    others = set().union(*(s.settings.model_fields for s in known.values()))
    for k in [k for k in proto if k not in mine and k in others]:
        del proto[k]


def _merge(base: dict, top: dict) -> dict:
    out = dict(base)
    for k, v in top.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _with_includes(data: dict, label: str, trusted: bool = False) -> dict:
    """Merge the files named by `include:` underneath the scenario (the scenario wins). An
    include is read only from below the including file's folder (unless `trusted`), and its
    content is never echoed: a shared scenario must not make rdzv-sim read and print any file."""
    from .schema import Scenario
    inc = data.get("include") or []
    if isinstance(inc, str):
        inc = [inc]
    if not isinstance(inc, list) or not all(isinstance(x, str) for x in inc):
        raise ScenarioError([f"{label}: include: a file name or a list of them"])
    here = _folder(label)
    merged: dict = {}
    for i, name in enumerate(inc):
        where = f"{label}: include[{i}]: {name}"
        path = _bundled_fragment(name, where) if name.startswith(FRAGMENT) else _beside(here, name, where, trusted)
        try:
            if path.stat().st_size > MAX_BYTES:
                raise ScenarioError([f"{where}: larger than {MAX_BYTES // 1024} KiB"])
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise ScenarioError([f"{where}: cannot read it ({type(e).__name__})"]) from None
        part = _parse(text, where, echo=False)[1]
        if not isinstance(part, dict) or not set(map(str, part)) <= set(Scenario.model_fields):
            raise ScenarioError([f"{where}: not a scenario fragment (a YAML mapping of "
                                 "scenario sections)"])
        merged = _merge(merged, part)
    out = _merge(merged, {k: v for k, v in data.items() if k != "include"})
    out["include"] = []                      # merged now: a reload must not merge again
    return out


FRAGMENT = "bundled:"        # include: [bundled:rates/llama3.yaml]: a fragment rdzv-sim ships


def fragments() -> list[str]:
    """The fragments a scenario may include by name (`bundled:` and this)."""
    return sorted(str(p.relative_to(BUNDLED)) for p in BUNDLED.glob("*/*.yaml"))


def _bundled_fragment(name: str, where: str) -> Path:
    rel = name[len(FRAGMENT):]
    if rel not in fragments():
        raise ScenarioError([f"{where}: no such bundled fragment; there are: {', '.join(fragments())}"])
    return BUNDLED / rel


def _folder(label: str) -> Path:
    """The folder a scenario's file names are read from: its file's, the bundled folder for a
    bundled scenario (its neighbours), the working directory for YAML text."""
    is_file = label not in ("<scenario>",) and not label.endswith("(bundled)") and Path(label).exists()
    return (Path(label).parent if is_file else BUNDLED if label.endswith("(bundled)") else Path(".")).resolve()


def _beside(here: Path, name: str, where: str, trusted: bool) -> Path:
    """A file a scenario names, read only from below its folder unless `trusted`."""
    path = Path(name) if Path(name).is_absolute() else here / name
    if not trusted:
        if Path(name).is_absolute():
            raise ScenarioError([f"{where}: an absolute path is refused; name a file beside "
                                 "the scenario (or pass --trust-includes)"])
        if not path.resolve().is_relative_to(here):
            raise ScenarioError([f"{where}: outside the scenario's folder {here}; refused "
                                 "(pass --trust-includes to allow it)"])
    return path


def _resolve_logs(data: dict, label: str, trusted: bool) -> None:
    """An `incident_log`'s file as an absolute path, found beside the scenario like an include
    (a dict's relative paths: from the working directory), so its runs read it from anywhere."""
    faults = data.get("random_faults")
    if not isinstance(faults, list):
        return
    here = _folder(label)
    for i, rf in enumerate(faults):
        if isinstance(rf, dict) and rf.get("kind") == "incident_log" and isinstance(rf.get("log"), str) \
                and rf["log"]:
            where = f"{label}: random_faults[{i}].log: {rf['log']}"
            rf["log"] = str(_beside(here, rf["log"], where, trusted).resolve())


def _log_problems(sc: Scenario) -> list[tuple[tuple, str]]:
    """Each replayed log read and checked now, before anything runs (the message names its file,
    line and column)."""
    from ..incidents import LogError, logged
    out = []
    for i, rf in enumerate(sc.random_faults):
        if rf.kind != "incident_log":
            continue
        try:
            log = logged(rf.log)
        except LogError as e:
            out.append((("random_faults", i, "log"), str(e)))
            continue
        if (log["scope"] == "rack").any() and sc.cluster.topology.kind != "racks":
            out.append((("random_faults", i, "log"), f"{rf.log} has rack incidents: they need "
                        "cluster.topology.kind: racks"))
    return out


def _message(label, root, loc, msg, given: dict | None = None) -> str:
    # pydantic puts the union tag in the location (faults.0.crash.at): drop it
    path = [p for i, p in enumerate(loc)
            if not (i > 0 and isinstance(loc[i - 1], int) and isinstance(p, str)
                    and p in _UNION_TAGS.get(loc[0], ()))
            and not (i == 1 and loc[0] == "protocol" and isinstance(p, str) and p in _protocols())
            and not (i > 0 and loc[i - 1] == "at" and p in AT_TAGS)]
    named = tuple(str(p) for p in path)
    for key, item in (given or {}).items():      # a value --set gave: name the --set, not a line
        if named[:len(key)] == key:
            return f"--set {item}: {format_path(path)}: {msg}"
    line = _line_of(root, path) if root is not None else None
    where = f"{label}:{line}" if line else label
    return f"{where}: {format_path(path)}: {msg}"


def _protocols() -> set[str]:
    from ..protocols.registry import specs
    return set(specs())


def _kinds(union) -> set[str]:
    """The `kind` tags of a union of fault models (pydantic puts them in error paths)."""
    import typing
    models = typing.get_args(typing.get_args(union)[0])
    models = [typing.get_args(m)[0] if typing.get_origin(m) is typing.Annotated else m for m in models]
    return {typing.get_args(m.model_fields["kind"].annotation)[0] for m in models}


_UNION_TAGS = {"faults": _kinds(S.Fault), "random_faults": _kinds(S.RandomFault)}


def _read(source) -> tuple[str, str]:
    s = str(source)
    if "\n" not in s and len(s) > 4096:
        raise ScenarioError(["the scenario given is neither a bundled name, a file path nor YAML text"])
    if "\n" in s:
        if len(s) > MAX_BYTES:
            raise ScenarioError([f"<scenario>: larger than {MAX_BYTES // 1024} KiB"])
        return s, "<scenario>"
    named = bundled()
    if s in named:
        return named[s].read_text(), f"{s} (bundled)"
    p = Path(s)
    if not p.exists():
        raise ScenarioError([f"{s}: no such file, and no bundled scenario of that name "
                             f"(bundled: {', '.join(named)})"])
    try:
        if p.is_file() and p.stat().st_size > MAX_BYTES:
            raise ScenarioError([f"{s}: larger than {MAX_BYTES // 1024} KiB, the most a scenario may be"])
        return p.read_text(), str(p)
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError([f"{s}: cannot read: {e}"]) from None
