"""The real runtime: protocol operations executed on a `torch.distributed.TCPStore` client.

Same generators as the simulator, real I/O. The runtime enforces its own deadlines, because a
paused store (SIGSTOP) or a silent partition makes TCPStore calls hang far past their timeout:
each call runs on a worker thread, and a call that outlives the deadline is abandoned together
with its connection (a fresh one replaces it) and raises StoreTimeout into the protocol. A dead
store raises StoreError. `FirstOf` store branches run on connections of their own (a blocking
get holds its connection). A branch waits in slices, each ending when the FirstOf's own timer
would or after `SLICE` at most: a branch whose sibling won ends by then and hands its
connection back. Each slice that times out makes TCPStore log a warning, so slices are as long
as they can be; but not longer than `SLICE`, because the interpreter waits for its threads at
exit (daemon threads blocked in TCPStore abort the process when they return during exit).
"""
from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from datetime import timedelta

import numpy as np

from rdzv_sim import ops as O

SLICE = 5.0          # the longest a FirstOf store branch waits before re-checking its cancel flag
# Making a TCPStore client can be slow now and then (torch looks up the peer's name; see
# docs/troubleshooting.md), and concurrent constructions queue behind a slow one. So
# connections are made one at a time and kept: FirstOf branches reuse spares, `prepare` makes
# them up front.
_CONNECT_LOCK = threading.Lock()


# values are text; bytes that are not UTF-8 (another machine's garbage) come back replaced, for
# the protocol to refuse as a bad value rather than as a lost store
# every operation `RealRuntime.execute` performs (a protocol's `needs` must be among them)
SUPPORTS = frozenset({*O.STORE_OPS, O.Now, O.WallClock, O.Emit, O.Sleep, O.Random, O.Work,
                      O.FirstOf, O.Local, O.StartWorkers, O.StopWorkers, O.StoreAddress, O.UseStore})


def missing_ops(spec) -> list[str]:
    """The operations protocol `spec` yields that this runtime does not give, by name."""
    return sorted(op.__name__ for op in spec.needs - SUPPORTS)


class Signals:
    """Local signals ("workers_failed", "peer_failed"), set from other threads."""

    def __init__(self):
        self._cv = threading.Condition()
        self._pending: set[str] = set()

    def signal(self, name: str) -> None:
        with self._cv:
            self._pending.add(name)
            self._cv.notify_all()

    def take(self, name: str) -> bool:
        with self._cv:
            if name in self._pending:
                self._pending.discard(name)
                return True
            return False

    def clear(self) -> None:
        with self._cv:
            self._pending.clear()


def _is_timeout(e: Exception) -> bool:
    return isinstance(e, TimeoutError) or "timeout" in str(e).lower() or "timed out" in str(e).lower()


class RealRuntime:
    def __init__(self, host: str, port: int, emit, *, op_timeout: float = 30.0, t0: float | None = None,
                 seed: int = 0, workers=None, clock_skew: float = 0.0, connect=None):
        self.host, self.port, self.emit = host, port, emit
        # makes one store connection (default: a TCPStore client of host:port); an etcd
        # cluster's is real_backend.etcd.EtcdStore, with TCPStore's calls
        self.connect = connect
        self.op_timeout = op_timeout
        self.t0 = time.monotonic() if t0 is None else t0
        self.rng = np.random.default_rng(seed)
        self.signals = Signals()
        self.workers = workers            # start/stop hooks (process group, training thread)
        self.clock_skew = clock_skew
        self.pool = cf.ThreadPoolExecutor(max_workers=32, thread_name_prefix="store")
        self.branches = cf.ThreadPoolExecutor(max_workers=64, thread_name_prefix="store-branch")
        self.store = None                 # connected on first use, so a failure reaches the protocol
        self._spare: list = []            # idle second connections for FirstOf branches
        self._spare_lock = threading.Lock()
        self.served = None                # the TCPStore a failover started in this process
        self.ops = 0                      # store operations issued (FirstOf branches included)
        self.in_round = False             # workers running (between StartWorkers and StopWorkers)

    def prepare(self, spares: int = 2) -> None:
        """Connect now (the main connection and `spares` for FirstOf branches), not mid-round."""
        if self.store is None:
            self.store = self._connect()
        with self._spare_lock:
            have = len(self._spare)
        for _ in range(max(0, spares - have)):
            conn = self._connect()
            with self._spare_lock:
                self._spare.append(conn)

    def close(self) -> None:
        """Drop the connections and let the worker threads end (a hung call is abandoned)."""
        self.store = self.served = None
        with self._spare_lock:
            self._spare.clear()
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.branches.shutdown(wait=False, cancel_futures=True)

    # --- connections -------------------------------------------------------------------
    def _connect(self):
        """A new client connection, within our own deadline (a paused store hangs the handshake)."""
        import torch.distributed as dist

        def make():
            # one at a time, but never behind a construction that hangs (a silent store): a
            # maker that waited its deadline for the lock goes ahead without it
            locked = _CONNECT_LOCK.acquire(timeout=self.op_timeout)
            try:
                if self.connect is not None:
                    return self.connect()
                return dist.TCPStore(self.host, self.port, is_master=False, wait_for_workers=False,
                                     timeout=timedelta(seconds=self.op_timeout), use_libuv=True)
            finally:
                if locked:
                    _CONNECT_LOCK.release()
        fut = self.pool.submit(make)
        try:
            return fut.result(timeout=self.op_timeout + 1.0)
        except cf.TimeoutError:
            if self.connect is None and self._refused():
                raise O.StoreError(f"the store at {self.host}:{self.port} refuses connections: "
                                   "it is not running") from None
            raise O.StoreTimeout(f"connecting to the store at {self.host}:{self.port} hung past "
                                 f"{self.op_timeout:g} s") from None
        except Exception as e:  # noqa: BLE001 - torch raises several kinds
            if _is_timeout(e) and (self.connect is not None or not self._refused()):
                raise O.StoreTimeout(f"cannot reach the store at {self.host}:{self.port}: {e}") from None
            raise O.StoreError(f"cannot connect to the store at {self.host}:{self.port}: {e}") from None

    def use_store(self, op: O.UseStore) -> None:
        """A failover: start the successor's TCPStore in this process (`serve`), then use the
        store at op.addr:op.port, waiting up to op.timeout for it to listen."""
        import socket

        import torch.distributed as dist
        if op.serve and self.served is None:
            try:
                self.served = dist.TCPStore(op.addr, op.port, is_master=True, wait_for_workers=False,
                                            multi_tenant=True, use_libuv=True,
                                            timeout=timedelta(seconds=self.op_timeout))
            except Exception as e:  # noqa: BLE001 - the port is taken (the old store lives)
                raise O.StoreError(f"cannot start a store at {op.addr}:{op.port}: {e}") from None
        self.host, self.port, self.store = op.addr, op.port, None
        with self._spare_lock:
            self._spare.clear()
        deadline = time.monotonic() + op.timeout
        while True:
            try:
                socket.create_connection((op.addr, op.port), timeout=1.0).close()
                break
            except OSError:
                if time.monotonic() >= deadline:
                    raise O.StoreError(f"no store at {op.addr}:{op.port} within {op.timeout:g} s") from None
                time.sleep(0.1)
        self.store = self._connect()

    def _refused(self) -> bool:
        """Whether nobody listens at the store's address now: a dead store, not a slow one.
        (torch's client retries a refused connection until its timeout and then says it timed
        out, as it does for a host that never answers.)"""
        import socket
        try:
            socket.create_connection((self.host, self.port), timeout=1.0).close()
        except ConnectionRefusedError:
            return True
        except OSError:
            return False
        return False

    def _call(self, fn, timeout: float | None = None):
        """Run fn(store) with our own deadline; a hung call loses its connection."""
        if self.store is None:
            self.store = self._connect()
        store = self.store
        fut = self.pool.submit(fn, store)
        try:
            return fut.result(timeout=(timeout if timeout is not None else self.op_timeout) + 1.0)
        except cf.TimeoutError:
            self.store = None                     # abandon the hung connection; reconnect next time
            raise O.StoreTimeout(f"store call hung past its {self.op_timeout:g} s deadline") from None
        except (O.StoreTimeout, O.StoreError):
            raise
        except Exception as e:  # noqa: BLE001
            if _is_timeout(e):
                raise O.StoreTimeout(str(e)) from None
            self.store = None                     # a broken connection is not reused
            raise O.StoreError(f"store call failed: {e}") from None

    # --- driving a generator -----------------------------------------------------------
    def drive(self, gen):
        value, exc = None, None
        while True:
            try:
                op = gen.throw(exc) if exc is not None else gen.send(value)
            except StopIteration as stop:
                return stop.value
            value, exc = None, None
            try:
                value = self.execute(op)
            except (O.StoreTimeout, O.StoreError) as e:
                exc = e

    def now(self) -> float:
        return time.monotonic() - self.t0

    def execute(self, op):
        t = type(op)
        if t is O.Now:
            return self.now()
        if t is O.WallClock:
            return time.time() + self.clock_skew
        if t is O.Emit:
            self.emit(self.now(), op)
            return None
        if t is O.Sleep:
            time.sleep(max(0.0, op.seconds))
            return None
        if t is O.Random:
            return float(self.rng.random())
        if t is O.Work:
            return None                       # real CPU is spent for real
        if t is O.FirstOf:
            return op.result(*self.first_of(op))
        if t is O.StartWorkers:
            self.signals.clear()
            self.in_round = True
            if self.workers is not None:
                self.workers.start(op, self)
            return None
        if t is O.StopWorkers:
            self.in_round = False
            if self.workers is not None:
                self.workers.stop()
            return None
        if t in O.STORE_OPS:
            return self.store_op(op)
        if t is O.StoreAddress:
            return (self.host, self.port)
        if t is O.UseStore:
            return self.use_store(op)
        raise NotImplementedError(
            f"{op!r} has no real-runtime implementation (c10d runs as torch's own handler for real)")

    def store_op(self, op, timeout: float | None = None):
        self.ops += 1
        t = type(op)
        if t is O.Set:
            return self._call(lambda s: s.set(op.key, op.value.encode()))
        if t is O.Get:
            wait = op.timeout if op.timeout is not None else self.op_timeout

            def get(s):
                s.wait([op.key], timedelta(seconds=wait))
                return s.get(op.key).decode("utf-8", "replace")
            return self._call(get, wait)
        if t is O.Add:
            return int(self._call(lambda s: s.add(op.key, op.amount)))
        if t is O.CompareSet:
            return self._call(lambda s: s.compare_set(op.key, op.expected.encode(),
                                                      op.desired.encode())).decode("utf-8", "replace")
        if t is O.Wait:
            wait = op.timeout if op.timeout is not None else self.op_timeout
            return self._call(lambda s: s.wait(list(op.keys), timedelta(seconds=wait)), wait)
        if t is O.Check:
            return bool(self._call(lambda s: s.check(list(op.keys))))
        if t is O.MultiGet:
            wait = op.timeout if op.timeout is not None else self.op_timeout

            def mget(s):
                s.wait(list(op.keys), timedelta(seconds=wait))
                return [b.decode("utf-8", "replace") for b in s.multi_get(list(op.keys))]
            return self._call(mget, wait)
        if t is O.MultiSet:
            keys = [k for k, _ in op.items]
            vals = [v.encode() for _, v in op.items]
            return self._call(lambda s: s.multi_set(keys, vals))
        if t is O.Delete:
            return bool(self._call(lambda s: s.delete_key(op.key)))
        raise TypeError(f"not a store operation: {op!r}")

    # --- FirstOf -------------------------------------------------------------------------
    def _branch(self, op, cancel: threading.Event, until: float | None = None):
        """A blocking read on a connection of its own, in slices (to `until`, the FirstOf's
        timer, when it has one), until done or cancelled."""
        store = None
        try:
            with self._spare_lock:
                store = self._spare.pop() if self._spare else None
            if store is None:
                store = self._connect()
            keys = [op.key] if isinstance(op, O.Get) else list(op.keys)
            limit = op.timeout if op.timeout is not None else self.op_timeout
            start = time.monotonic()
            while not cancel.is_set():
                now = time.monotonic()
                ends = [now + SLICE, start + limit + 0.01] + ([until] if until and until > now else [])
                try:
                    store.wait(keys, timedelta(seconds=max(0.01, min(ends) - now)))
                    break
                except Exception as e:  # noqa: BLE001
                    if not _is_timeout(e):
                        raise O.StoreError(f"store connection lost: {e}") from None
                    if time.monotonic() - start > limit:
                        raise O.StoreTimeout(f"wait for {keys[0]!r} timed out after {limit:g} s") from None
            if cancel.is_set():
                value = None
            elif isinstance(op, O.Get):
                value = store.get(op.key).decode("utf-8", "replace")
            elif isinstance(op, O.MultiGet):
                value = [b.decode("utf-8", "replace") for b in store.multi_get(keys)]
            else:
                value = None
            with self._spare_lock:              # healthy: keep the connection for the next branch
                self._spare.append(store)
            return value
        except (O.StoreTimeout, O.StoreError) as e:
            return e
        except Exception as e:  # noqa: BLE001
            return O.StoreError(str(e))

    def _start_branch(self, op, cancel: threading.Event, until: float | None) -> cf.Future:
        """A branch on the branch pool (its own: one whose sibling won may block to the end of
        its slice, and such must never starve the store calls)."""
        return self.branches.submit(self._branch, op, cancel, until)

    def first_of(self, op: O.FirstOf):
        cancel = threading.Event()
        futures, deadline, locals_ = {}, None, {}
        now = time.monotonic()
        for i, br in enumerate(op.branches):
            t = type(br)
            if t is O.Sleep:
                d = now + br.seconds
                deadline = d if deadline is None else min(deadline, d)
                locals_[i] = ("sleep", d)
            elif t is O.Local:
                locals_[i] = ("local", br.name)
            elif t not in (O.Get, O.Wait, O.MultiGet):
                raise TypeError(f"FirstOf cannot wait on {br!r} in the real runtime")
        for i, br in enumerate(op.branches):
            if type(br) in (O.Get, O.Wait, O.MultiGet):
                self.ops += 1
                futures[i] = self._start_branch(br, cancel, deadline)
        try:
            while True:
                for i in range(len(op.branches)):       # earliest branch wins a tie
                    if i in futures and futures[i].done():
                        return i, futures[i].result()
                    kind = locals_.get(i)
                    if kind and kind[0] == "local" and self.signals.take(kind[1]):
                        return i, None
                    if kind and kind[0] == "sleep" and time.monotonic() >= kind[1]:
                        return i, None
                wait = 0.05 if deadline is None else max(0.0, min(0.05, deadline - time.monotonic()))
                cf.wait(list(futures.values()), timeout=wait, return_when=cf.FIRST_COMPLETED)
        finally:
            cancel.set()
