"""A rendezvous store of its own: `python -m real_backend.tools.store [--host H] [--port P]`.

A `torch.distributed.TCPStore` server that outlives any agent, for clusters where the store
should not live on a training node (agents then take `--rdzv-conf=is_host=false`). It writes
the `epoch` key an agent-hosted store writes, prints where it listens, and serves until
SIGTERM or SIGINT, then exits 0. Nothing in it is pickled or read: it only stores.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from datetime import timedelta


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="0.0.0.0", help="address to listen on (default: all)")
    ap.add_argument("--port", type=int, default=29400, help="port (0: any free one)")
    a = ap.parse_args(argv)
    if not 0 <= a.port <= 65535:
        print(f"store: --port {a.port}: not a TCP port (0-65535)", file=sys.stderr)
        return 2
    import torch.distributed as dist
    try:
        server = dist.TCPStore(a.host, a.port, is_master=True, wait_for_workers=False,
                               multi_tenant=True, timeout=timedelta(seconds=60), use_libuv=True)
    except Exception as e:  # noqa: BLE001 - torch raises several kinds
        print(f"store: cannot listen on {a.host}:{a.port}: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    server.set("epoch", str(time.time()))
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    print(f"store listening on {a.host}:{server.port}", flush=True)
    done.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
