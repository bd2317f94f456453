"""Rendezvous protocols, written once as sans-IO generators. `get(name)` finds one."""
from .base import (NodeInfo, Protocol, ProtocolConfig, RendezvousFailed, RendezvousTimeout,
                   RoundResult)
from .c10d.protocol import C10dProtocol
from .hrw import HrwProtocol
from .static import StaticProtocol

PROTOCOLS: dict[str, type[Protocol]] = {"static": StaticProtocol, "hrw": HrwProtocol,
                                        "c10d": C10dProtocol}


def get(name: str) -> type[Protocol]:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r}; choose one of {sorted(PROTOCOLS)}") from None


__all__ = ["NodeInfo", "Protocol", "ProtocolConfig", "RendezvousFailed", "RendezvousTimeout",
           "RoundResult", "PROTOCOLS", "get"]
