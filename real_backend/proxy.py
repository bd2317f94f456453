"""A small TCP fault proxy between each node and the store (loopback only), after Toxiproxy.

Each node gets a listening port of its own that forwards to the store; per node, the proxy can
add latency to every chunk in both directions, *cut* the link (a silent partition: bytes are
held, not delivered, so calls hang as they do when packets are dropped; a heal delivers them,
as TCP's retransmissions would) or *reset* it (close every connection: the peer sees a
connection error at once). Hostile stores too: *garble* replaces the store's replies with
seeded garbage of the same length, *truncate* delivers the first half of the next reply and
closes the connection; a heal ends both. A *lossy* link holds each chunk, with a seeded rate,
for the retransmission timeouts TCP would wait for it (doubling per loss in a row), and may
reset a connection at random (`set_loss(name, rate, rto, reset)`). Each link draws from a
stream of its own (`link_rng(seed, name)`), so its k-th chunk's fate does not depend on the
other links' traffic, and counts the chunks it held (`held`), the fault's own record. It runs
an asyncio loop on a thread of the launcher; the control methods are thread-safe.
"""
from __future__ import annotations

import asyncio
import random
import threading

from rdzv_sim.sim.network import resend_delay

CHUNK = 65536


def link_rng(seed: int, name: str) -> random.Random:
    """The draws of `name`'s link under a run's `seed` (the first decides its first chunk)."""
    return random.Random(f"{seed}:{name}")


class _Link:
    """One node's faults: a delay, a cut (an Event that is clear while cut), its connections."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.held = 0                           # chunks a loss held for a resend (its record)
        self.delay = 0.0
        self.reply_mode = "pass"                # or "garble", "truncate" (the store's replies)
        self.loss, self.rto, self.reset = 0.0, 0.2, 0.0   # a lossy link's rates (set_loss)
        self.open = asyncio.Event()
        self.open.set()
        self.writers: set[asyncio.StreamWriter] = set()


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int, listen_host: str = "127.0.0.1",
                 seed: int = 0):
        self.upstream = (upstream_host, upstream_port)
        self.seed = seed
        self.listen_host = listen_host
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="fault-proxy")
        self._thread.start()
        self.links: dict[str, _Link] = {}
        self.ports: dict[str, int] = {}
        self._servers = []

    def _run(self, coro, timeout: float = 10.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    # --- control (any thread) --------------------------------------------------------
    def add(self, name: str) -> int:
        """A listening port that forwards `name`'s connections to the store."""
        if name not in self.ports:
            self.ports[name] = self._run(self._listen(name))
        return self.ports[name]

    def set_delay(self, name: str, seconds: float) -> None:
        """From now on `name`'s chunks are held `seconds` each way (in force once this returns)."""
        link = self.links[name]

        async def go():
            link.delay = max(0.0, seconds)
        self._run(go())

    def set_loss(self, name: str, rate: float, rto: float = 0.2, reset: float = 0.0) -> None:
        """From now on each chunk on `name`'s link is lost with probability `rate` (and resent
        as `rdzv_sim.sim.network.resend_delay` says), and a chunk resets its
        connection with probability `reset`; 0, 0: a clean link again."""
        link = self.links[name]

        async def go():                         # in force once this returns
            if rate and not link.loss:          # a loss begins: its own count
                link.held = 0
            link.loss, link.rto, link.reset = rate, rto, reset
        self._run(go())

    def held(self, name: str) -> int:
        """How many of `name`'s chunks the latest loss on its link has held."""
        return self.links[name].held

    def cut(self, name: str) -> None:
        self.loop.call_soon_threadsafe(self.links[name].open.clear)

    def heal(self, name: str) -> None:
        """End a cut (delivering what it held) and any hostile reply mode."""
        self.loop.call_soon_threadsafe(setattr, self.links[name], "reply_mode", "pass")
        self.loop.call_soon_threadsafe(self.links[name].open.set)

    def garble(self, name: str) -> None:
        self.loop.call_soon_threadsafe(setattr, self.links[name], "reply_mode", "garble")

    def truncate(self, name: str) -> None:
        self.loop.call_soon_threadsafe(setattr, self.links[name], "reply_mode", "truncate")

    def reset(self, name: str) -> None:
        async def go():
            for w in list(self.links[name].writers):
                w.transport.abort()
        self._run(go())

    def close(self) -> None:
        async def go():
            for s in self._servers:
                s.close()
            for link in self.links.values():
                link.open.set()
                for w in list(link.writers):
                    w.transport.abort()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        try:
            self._run(go(), timeout=5.0)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5.0)

    # --- the loop ------------------------------------------------------------------------
    async def _listen(self, name: str) -> int:
        link = self.links[name] = _Link(link_rng(self.seed, name))
        server = await asyncio.start_server(lambda r, w: self._serve(link, r, w), self.listen_host, 0)
        self._servers.append(server)
        return server.sockets[0].getsockname()[1]

    async def _serve(self, link: _Link, reader, writer) -> None:
        link.writers.add(writer)
        up_writer = None
        try:
            await link.open.wait()                  # a cut link does not even reach the store
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            link.writers.add(up_writer)
            await asyncio.gather(self._pump(link, reader, up_writer),
                                 self._pump(link, up_reader, writer, reply=True))
        except (ConnectionError, OSError):
            pass
        finally:
            for w in (writer, up_writer):
                if w is not None:
                    link.writers.discard(w)
                    w.transport.abort()

    async def _pump(self, link: _Link, reader, writer, reply: bool = False) -> None:
        while True:
            data = await reader.read(CHUNK)
            if not data:
                writer.transport.abort()            # one side closed: close the other
                return
            if link.delay:
                await asyncio.sleep(link.delay)
            if link.loss or link.reset:
                if link.reset and link.rng.random() < link.reset:
                    writer.transport.abort()
                    return
                wait = resend_delay(link.loss, link.rto, link.rng.random)
                if wait:
                    link.held += 1
                    await asyncio.sleep(wait)
            await link.open.wait()                  # held while cut, delivered on heal
            if reply and link.reply_mode == "garble":
                data = bytes(link.rng.getrandbits(8) for _ in data)
            elif reply and link.reply_mode == "truncate":
                writer.write(data[:max(1, len(data) // 2)])
                await writer.drain()
                writer.transport.abort()
                return
            writer.write(data)
            await writer.drain()
