"""What `--rdzv-conf` (with `--rdzv-id` and `--nnodes`) says to the project's torchrun handler.

Three kinds of keys, each parsed by its own model so a bad value fails at handler creation with
`ValueError` naming the key:
- the protocol's own settings (its registered settings model: the names, bounds and defaults a
  scenario has, but torchrun's 30 s last call, and a probing protocol's probe set from torch's
  liveness keys, `keep_alive_interval` and `keep_alive_max_attempt`, or their defaults);
- the handler's (`HandlerSettings`: which protocol, the store, timeouts, the node's name);
- torchrun's and torch c10d's own keys that these protocols do not use (`TORCH_KEYS`): accepted,
  with one log line, so one `--rdzv-conf` serves c10d and the project's backends alike.
A key none of them knows is refused: a typo must not pass silently.
"""
from __future__ import annotations

import logging
from typing import Literal

from pydantic import (BaseModel, ConfigDict, Field, NonNegativeInt, PositiveFloat, PositiveInt,
                      ValidationError)

from rdzv_sim.protocols.registry import ProtocolError, get, specs

from .runtime import missing_ops

log = logging.getLogger("real_backend.torchrun_plugin")

# torch's keys (c10d's handler, its TCPStore backend, etcd-v2's, torchrun's own) that the
# project's protocols have no use for
TORCH_KEYS = {"keep_alive_interval", "keep_alive_max_attempt", "heartbeat", "use_libuv", "timeout",
              "store_type", "ssl_certfile", "protocol_version", "cacert", "cert", "key", "etcd_prefix",
              "last_call_timeout"}
# torchrun's own default where the scenarios' differs (torch's RendezvousTimeout: last call 30 s;
# the handler contract: shutdown closes the rendezvous for everyone)
TORCHRUN_DEFAULTS = {"last_call_timeout": 30.0, "close_on_shutdown": True}
PROBE = {"probe_interval", "probe_timeout"}             # a protocol that probes its members (hrw)


class Liveness(BaseModel):
    """torch c10d's liveness keys, with torch's defaults (`create_handler`): a node is dead once
    `keep_alive_interval x keep_alive_max_attempt` pass without its keep-alive."""
    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    keep_alive_interval: PositiveFloat = 5.0
    keep_alive_max_attempt: PositiveInt = 3

    def probe(self) -> dict[str, float]:
        """The same bound for a probing protocol: a waiter probes every interval, and a member
        silent for the remaining attempts is gone, so a dead member is found within
        interval x attempts of its death, as c10d finds it (at most)."""
        return {"probe_interval": self.keep_alive_interval,
                "probe_timeout": self.keep_alive_interval * max(1, self.keep_alive_max_attempt - 1)}
COMMON = {"name", "run_id", "min_nodes", "max_nodes"}   # from --rdzv-id and --nnodes


class HandlerSettings(BaseModel):
    """The handler's own `--rdzv-conf` keys (all but the protocol's settings)."""
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    protocol: str = Field("hrw", description="the registered protocol to run")
    store: Literal["tcpstore", "etcd"] = Field("tcpstore", description="a TCPStore at --rdzv-endpoint, "
                                               "or an etcd cluster whose members it lists")
    read_timeout: PositiveFloat = Field(60.0, description="seconds a store call may take")
    close_timeout: PositiveFloat | None = Field(None, description="torch's name for confirm_timeout")
    is_host: bool | None = Field(None, description="host the TCPStore (default: when the endpoint is this machine)")
    node_name: str | None = Field(None, max_length=256, description="the node's name (default: its address)")
    local_addr: str | None = None
    topology: str | None = Field(None, max_length=256, description="rank_order=topology's key for this node")
    trace_file: str | None = Field(None, description="write the rendezvous's events here as JSON lines")
    max_attempts: PositiveInt = Field(20, description="failed rounds in a row before the agent gives up")
    rank: NonNegativeInt | None = Field(None, description="the node's fixed rank (torchrun's --node-rank), "
                                        "for protocols whose ranks are the nodes' own (static)")


HANDLER_KEYS = set(HandlerSettings.model_fields)


def _unquoted(conf: dict) -> dict:
    """The conf with stray quotes around keys and values dropped: torch's launcher tests write
    `--rdzv-conf "'join_timeout=5,last_call_timeout=1'"`, and torch's parser keeps them."""
    out = {}
    for k, v in conf.items():
        key = str(k).strip().strip("'\"").strip()
        out[key] = v.strip().strip("'\"").strip() if isinstance(v, str) else v
    return out


def _value_error(e: ValidationError, conf: dict, prefix: str = "--rdzv-conf") -> ValueError:
    err = e.errors()[0]
    key = str(err["loc"][0]) if err["loc"] else "?"
    shown = f" {key}={conf[key]!r}" if key in conf else f" {key}"
    return ValueError(f"{prefix}{shown}: {err['msg']}")


def parse(params, backend: str, protocol: str | None = None):
    """(the protocol's spec, its settings, the handler's settings) from torchrun's parameters.
    `protocol`: the one the backend name fixes (`hrw`), else `protocol=` in the conf."""
    conf = _unquoted(dict(params.config))
    if protocol is not None and conf.get("protocol", protocol) != protocol:
        raise ValueError(f"--rdzv-conf protocol={conf['protocol']!r}: --rdzv-backend={backend} runs "
                         f"{protocol!r}; use --rdzv-backend=rdzv-sim for another protocol")
    name = protocol or conf.get("protocol") or "hrw"
    try:
        spec = get(name)
    except ProtocolError:
        raise ValueError(f"--rdzv-conf protocol={name!r}: not a registered protocol; served: "
                         f"{served()}") from None
    why = not_served(spec)
    if why:
        raise ValueError(f"--rdzv-conf protocol={name!r}: {why}")
    own = set(spec.settings.model_fields) - COMMON
    unknown = sorted(set(conf) - own - HANDLER_KEYS - TORCH_KEYS)
    if unknown:
        raise ValueError(f"--rdzv-conf: unknown key(s) {unknown} for protocol {name!r}; known: "
                         f"{sorted(own | HANDLER_KEYS)} (and torch's own: {sorted(TORCH_KEYS)})")
    probes = PROBE <= own
    ignored = sorted(set(conf) & TORCH_KEYS - own - (set(Liveness.model_fields) if probes else set()))
    if ignored:
        log.info("--rdzv-conf: %s are torch's own keys; protocol %r does not use them.",
                 ", ".join(ignored), name)
    if "rank" in conf and not spec.caps.ranks_given:
        raise ValueError(f"--rdzv-conf rank=...: protocol {name!r} gives ranks by the rendezvous; "
                         "a fixed rank is the static backend's (--rdzv-backend=static)")
    try:
        handler = HandlerSettings(**{k: v for k, v in conf.items() if k in HANDLER_KEYS})
    except ValidationError as e:
        raise _value_error(e, conf) from None
    if spec.caps.ranks_given and handler.rank is None:
        raise ValueError(f"protocol {name!r} needs each node's rank: torchrun --node-rank (or "
                         "--rdzv-conf rank=N)")
    given = {k: v for k, v in TORCHRUN_DEFAULTS.items() if k in own}
    if probes:                          # torch's liveness keys (or defaults) set the probe
        try:
            given.update(Liveness(**conf).probe())
        except ValidationError as e:
            raise _value_error(e, conf) from None
    given.update({k: conf[k] for k in own if conf.get(k) is not None})
    if "confirm_timeout" in own and "confirm_timeout" not in conf and handler.close_timeout is not None:
        given["confirm_timeout"] = handler.close_timeout
    try:
        settings = spec.settings(name=name, run_id=params.run_id, min_nodes=params.min_nodes,
                                 max_nodes=params.max_nodes, **given)
    except ValidationError as e:
        shown = {**conf, **({"confirm_timeout": handler.close_timeout}
                            if "confirm_timeout" not in conf and handler.close_timeout else {})}
        raise _value_error(e, shown) from None
    return spec, settings, handler


def not_served(spec) -> str | None:
    """Why the handler cannot run protocol `spec` for real (None: it can)."""
    if spec.caps.torch_counterpart:
        return f"torch's own --rdzv-backend={spec.caps.torch_counterpart} is that protocol"
    if spec.caps.torchrun:
        return f"protocol {spec.name!r} does not run under torchrun's agent ({spec.caps.torchrun})"
    missing = missing_ops(spec)
    if missing:
        return f"protocol {spec.name!r} needs {', '.join(missing)}, which the real runtime does not give"
    return None


def served() -> list[str]:
    """The registered protocols the handler can run."""
    return sorted(n for n, spec in specs().items() if not_served(spec) is None)
