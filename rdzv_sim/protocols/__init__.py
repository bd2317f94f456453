"""Rendezvous protocols, written once as sans-IO generators, and the registry that names them."""
from .base import (NodeInfo, Protocol, RendezvousClosed, RendezvousFailed, RendezvousTimeout,
                   RoundResult, Watch)
from .kit import Capabilities, Kit
from .registry import ProtocolError, ProtocolSpec, get, register_kit, specs
from .settings import ProtocolSettings

__all__ = ["Capabilities", "Kit", "NodeInfo", "Protocol", "ProtocolSettings", "ProtocolError", "ProtocolSpec",
           "RendezvousClosed", "RendezvousFailed", "RendezvousTimeout", "RoundResult", "Watch",
           "get", "register_kit", "specs"]
