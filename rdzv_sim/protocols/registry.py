"""The protocols a scenario can name, each one kit (`Kit`): its class, its settings and its parts.

A protocol is a class (generators that yield `rdzv_sim.ops`) plus its settings model. Once its
kit is registered, the scenario schema, `rdzv-sim list`/`schema`, `--set`, sweeps, the property
strategies, the real runtime and `validate` all know it. Built-in protocols are found exactly
like plugins: through the `rdzv_sim.protocols` entry-point group (a module to import, or a
callable to call); `RDZV_SIM_PROTOCOLS=mod1,mod2` imports modules the same way uninstalled.

A kit's optional parts (`kit.KINDS`) stay with its spec (`ProtocolSpec.part`); the layer that
owns a kind asks the protocol's spec for it, which imports a part named by path on first use.
"""
from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import create_model

from ..errors import Error
from .kit import CLASS_DECLARATIONS, KINDS, Capabilities, Kit, missing, resolve
from .settings import ProtocolSettings

ENTRY_POINTS = "rdzv_sim.protocols"
ENV_VAR = "RDZV_SIM_PROTOCOLS"


class ProtocolError(Error, ValueError):
    """A protocol that cannot be registered or found."""


@dataclass(frozen=True)
class ProtocolSpec:
    name: str
    cls: type
    settings: type[ProtocolSettings]
    module: str                 # imported by a fresh process (the real launcher's nodes)
    caps: Capabilities = Capabilities()
    kit: Kit | None = None      # the kit it was registered from: its parts
    _resolved: dict = field(default_factory=dict, compare=False, repr=False)

    def part(self, kind: str, default: Any = None) -> Any:
        """The kit's part of `kind` (a part named by path imported on first use), or `default`."""
        parts = self.kit.parts if self.kit is not None else {}
        if kind not in parts:
            return default
        if kind not in self._resolved:
            p = parts[kind]
            self._resolved[kind] = resolve(p) if isinstance(p, str) else p
        return self._resolved[kind]

    @property
    def needs(self) -> frozenset:
        """Operations beyond the common set that the protocol yields (see `Protocol.needs`)."""
        return frozenset(self.cls.needs)

    def make(self, settings: ProtocolSettings):
        return self.cls(settings)


_SPECS: dict[str, ProtocolSpec] = {}
_state = {"version": 0, "plugins": False}
_LOADING = threading.RLock()      # one thread loads the plugins; the others wait for it


def version() -> int:
    """Grows with every registration (the scenario model is rebuilt when it changes)."""
    return _state["version"]


def register_kit(kit: Kit, *, replace: bool = False) -> ProtocolSpec:
    """Make `kit.protocol` with its settings known as `kit.name` everywhere (scenarios, the CLI,
    sweeps, the property strategies, the real runtime), and its parts to the layers that read
    them. Refused, with what to do: a name that is not a word, classes of the wrong kind, a part
    kind that is not one of `KINDS`, a part path that names nothing."""
    from .base import Protocol
    if not isinstance(kit, Kit):
        raise ProtocolError(f"register_kit takes a rdzv_sim.Kit, got {kit!r}")
    name, cls, settings = kit.name, kit.protocol, kit.settings
    if not isinstance(name, str) or not name.replace("-", "_").isidentifier():
        raise ProtocolError(f"Kit: name {name!r} must be a word (letters, digits, _ or -)")
    if not (isinstance(cls, type) and issubclass(cls, Protocol)):
        raise ProtocolError(f"Kit({name!r}): {cls!r} is not a subclass of rdzv_sim.protocols.Protocol")
    if not (isinstance(settings, type) and issubclass(settings, ProtocolSettings)):
        raise ProtocolError(f"Kit({name!r}): settings must subclass rdzv_sim.protocols.ProtocolSettings, "
                            f"got {settings!r}")
    old = [k for k in CLASS_DECLARATIONS if any(k in vars(c) for c in cls.__mro__[:-1] if c is not Protocol)]
    if old or hasattr(settings, "fixed_world") or "fixed_world" in settings.model_fields:
        raise ProtocolError(f"Kit({name!r}): {', '.join(old) or 'fixed_world'} is declared on the class; "
                            "a protocol says what it can do in its kit: Kit(..., capabilities=Capabilities(...)) "
                            "(whether it fails over: its settings' fails_over)")
    if "aggregate" in kit.capabilities.fidelities and "round_model" not in kit.parts:
        raise ProtocolError(f"Kit({name!r}): fidelity 'aggregate' needs a round_model part (docs/protocols.md)")
    for kind, p in kit.parts.items():
        if kind not in KINDS:
            raise ProtocolError(f"Kit({name!r}): no part of kind {kind!r}; the kinds are "
                                f"{', '.join(KINDS)}")
        if isinstance(p, str):
            try:
                why = missing(p)
            except ValueError as e:
                why = str(e)
            if why:
                raise ProtocolError(f"Kit({name!r}): its {kind} part {p!r} does not exist: {why}")
    if name in _SPECS and not replace and _SPECS[name].cls is not cls:
        raise ProtocolError(f"protocol {name!r} is registered already (by {_SPECS[name].module}); "
                            "pass replace=True to replace it")
    named = settings.model_fields["name"]
    if named.annotation != Literal[name]:
        settings = create_model(settings.__name__, __base__=settings, __module__=settings.__module__,
                                name=(Literal[name], name))
    spec = ProtocolSpec(name, cls, settings, cls.__module__, kit.capabilities, kit)
    _forget(name)
    _SPECS[name] = spec
    _state["version"] += 1
    return spec


def _forget(name: str) -> None:
    """Unregister `name` and its parts (tests that register a scratch kit clean up with it)."""
    _SPECS.pop(name, None)
    _state["version"] += 1



def _load_plugins() -> None:
    """Load the plugins once. Threads that ask meanwhile wait for the whole of it (a scenario
    loaded from several threads saw half the protocols); a plugin that asks while it loads, in
    the loading thread, sees what is registered so far."""
    if _state["plugins"] is True:
        return
    with _LOADING:
        if _state["plugins"]:                   # done, or being done by this very thread
            return
        _state["plugins"] = "loading"
        try:
            from importlib.metadata import entry_points
            for ep in entry_points(group=ENTRY_POINTS):
                try:
                    obj = ep.load()
                except Exception as e:  # noqa: BLE001 - any import error, said with the plugin's name
                    raise ProtocolError(f"protocol plugin {ep.name!r} ({ep.value}) failed to load: "
                                        f"{e}") from None
                if callable(obj) and not isinstance(obj, type):
                    obj()
            import_modules(m for m in os.environ.get(ENV_VAR, "").split(",") if m.strip())
        finally:
            _state["plugins"] = True


def import_modules(modules) -> None:
    """Import modules that register protocols (plugins named by entry point or variable)."""
    for m in modules:
        try:
            importlib.import_module(m.strip())
        except ImportError as e:
            raise ProtocolError(f"{ENV_VAR}: cannot import {m.strip()!r}: {e}") from None


def specs() -> dict[str, ProtocolSpec]:
    """Every registered protocol, by name (plugins loaded on first call)."""
    _load_plugins()
    return dict(_SPECS)


def get(name: str) -> ProtocolSpec:
    known = specs()
    try:
        return known[name]
    except KeyError:
        raise ProtocolError(f"unknown protocol {name!r}; registered: {', '.join(sorted(known))} "
                            f"(register yours with rdzv_sim.register_kit)") from None


def plugin_modules() -> list[str]:
    """Modules of protocols a fresh process must import to know them (those no entry point names)."""
    from importlib.metadata import entry_points
    found = {ep.value.split(":")[0] for ep in entry_points(group=ENTRY_POINTS)}
    return sorted({s.module for s in specs().values()} - found)
