"""The protocols a scenario can name, each one kit: its class, its settings and its parts.

A protocol is a class (generators that yield `rdzv_sim.ops`) plus its settings model. Once
registered, the scenario schema, `rdzv-sim list`/`schema`, `--set`, sweeps, the property
strategies, the real runtime and `validate` all know it. Built-in protocols are found exactly
like plugins: through the `rdzv_sim.protocols` entry-point group (a module to import, or a
callable to call); `RDZV_SIM_PROTOCOLS=mod1,mod2` imports modules the same way uninstalled.

A kit's optional *parts* (its aggregate round model, training model, settings strategy, invariants,
known behaviours, cost estimate, real-runtime needs) are registered by the layer that
owns each kind, through that layer's own `register_...` function, and kept here by
(protocol, kind), so a part may be registered before or after its protocol.
"""
from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import create_model

from ..errors import Error
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

    @property
    def needs(self) -> frozenset:
        """Operations beyond the common set that the protocol yields (see `Protocol.needs`)."""
        return frozenset(self.cls.needs)

    def make(self, settings: ProtocolSettings):
        return self.cls(settings)


_SPECS: dict[str, ProtocolSpec] = {}
_PARTS: dict[tuple[str, str], Any] = {}
_state = {"version": 0, "plugins": False}
_LOADING = threading.RLock()      # one thread loads the plugins; the others wait for it


def version() -> int:
    """Grows with every registration (the scenario model is rebuilt when it changes)."""
    return _state["version"]


def register_protocol(name: str, cls: type, settings: type[ProtocolSettings] | None = None,
                      *, replace: bool = False) -> ProtocolSpec:
    """Make protocol `cls` with settings model `settings` (default: the common fields only)
    known as `name` everywhere: scenarios, the CLI, sweeps, the property strategies, the real
    runtime. Its other parts are registered by the layers that own them (module doc)."""
    from .base import Protocol
    settings = ProtocolSettings if settings is None else settings
    if not isinstance(name, str) or not name.replace("-", "_").isidentifier():
        raise ProtocolError(f"register_protocol: name {name!r} must be a word (letters, digits, _ or -)")
    if not (isinstance(cls, type) and issubclass(cls, Protocol)):
        raise ProtocolError(f"register_protocol({name!r}): {cls!r} is not a subclass of "
                            "rdzv_sim.protocols.Protocol")
    if not (isinstance(settings, type) and issubclass(settings, ProtocolSettings)):
        raise ProtocolError(f"register_protocol({name!r}): settings must subclass "
                            f"rdzv_sim.protocols.ProtocolSettings, got {settings!r}")
    if name in _SPECS and not replace and _SPECS[name].cls is not cls:
        raise ProtocolError(f"protocol {name!r} is registered already (by {_SPECS[name].module}); "
                            "pass replace=True to replace it")
    field = settings.model_fields["name"]
    if field.annotation != Literal[name]:
        settings = create_model(settings.__name__, __base__=settings, __module__=settings.__module__,
                                name=(Literal[name], name))
    spec = ProtocolSpec(name, cls, settings, cls.__module__)
    _SPECS[name] = spec
    _state["version"] += 1
    return spec


def register_part(protocol: str, kind: str, part: Any, *, replace: bool = False) -> None:
    """Give protocol `protocol` its part of `kind`; the owning layer's `register_...` calls this
    (`rdzv_sim.aggregate.register_round_model`, `rdzv_sim.testing.register_invariant`, ...)."""
    if not isinstance(protocol, str) or not isinstance(kind, str):
        raise ProtocolError(f"register_part: protocol and kind are names, got {protocol!r}, {kind!r}")
    key = (protocol, kind)
    if key in _PARTS and not replace and _PARTS[key] is not part:
        raise ProtocolError(f"protocol {protocol!r} has its {kind} part already; pass replace=True "
                            "to replace it")
    _PARTS[key] = part


def part(protocol: str, kind: str, default: Any = None) -> Any:
    """Protocol `protocol`'s part of `kind`, or `default` (the owning layer's accessors read it)."""
    return _PARTS.get((protocol, kind), default)


def add_part(protocol: str, kind: str, item: Any) -> None:
    """Append `item` to protocol `protocol`'s list part of `kind` (invariants, known behaviours)."""
    _PARTS.setdefault((protocol, kind), []).append(item)


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
                            f"(register yours with rdzv_sim.register_protocol)") from None


def plugin_modules() -> list[str]:
    """Modules of protocols a fresh process must import to know them (those no entry point names)."""
    from importlib.metadata import entry_points
    found = {ep.value.split(":")[0] for ep in entry_points(group=ENTRY_POINTS)}
    return sorted({s.module for s in specs().values()} - found)
