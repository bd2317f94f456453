"""Free TCP ports for the real runs' stores (the standard bind-to-0 way; racy afterwards, as
torch's own choice is)."""
from __future__ import annotations

import socket


def free_ports(n: int, addr: str = "127.0.0.1") -> list[int]:
    """`n` distinct TCP ports free on `addr` now: all bound at once, so no two are the same
    (a port picked as another's neighbour may be anyone's)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind((addr, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port(addr: str = "127.0.0.1") -> int:
    """One TCP port free on `addr` now."""
    return free_ports(1, addr)[0]
