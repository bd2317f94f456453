"""TCPStore's calls over etcd's v3 API, so the real runtime drives every protocol on etcd as on
a TCPStore: `set`, `get` and `wait` (block until the key exists: a watch from the revision the
read saw, so no write is missed), `add` and `compare_set` (transactions on one key, retried on
a lost race), `check`, `multi_get`, `multi_set` (one transaction) and `delete_key`.

The client is etcd3gw (the JSON gateway over HTTP, OpenStack's, no gRPC build). It talks to
one member and moves to the next when that one refuses or does not answer within
`request_timeout`: a killed or paused member costs a timeout, a dead leader an election (the
members forward to whoever leads). Values are bytes, as TCPStore's are; TCPStore's semantics
are kept where protocols rely on them (compare_set returns the value now stored; on a missing
key with a non-empty expected value it returns the expected value and stores nothing).
"""
from __future__ import annotations

import base64
import time
from datetime import timedelta

from etcd3gw import exceptions as ex
from etcd3gw.client import Etcd3Client


TXN_OPS = 128            # etcd's default --max-txn-ops


def _b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def _raw(text: str) -> bytes:
    return base64.b64decode(text)


class EtcdTimeout(TimeoutError):
    """No member answered in time, or a wait ran out (the runtime's StoreTimeout)."""


class EtcdStore:
    def __init__(self, endpoints: list[str], timeout: timedelta | float = 30.0,
                 request_timeout: float = 2.0, prefix: str = ""):
        if not endpoints:
            raise ValueError("an etcd store needs at least one endpoint (HOST:PORT)")
        self.endpoints = list(endpoints)
        self.timeout = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
        self.request_timeout = min(request_timeout, self.timeout)
        self.prefix = prefix
        self._at = 0
        self._client = self._make(0)

    # --- members ------------------------------------------------------------------------
    def _make(self, i: int) -> Etcd3Client:
        host, _, port = self.endpoints[i].rpartition(":")
        return Etcd3Client(host=host, port=int(port), timeout=self.request_timeout, api_path="/v3/")

    def _post(self, path: str, body: dict, deadline: float | None = None) -> dict:
        """One request, moved to the next member while this one refuses or hangs."""
        deadline = deadline or time.monotonic() + self.timeout
        last = None
        while True:
            try:
                return self._client.post(self._client.get_url(path), json=body)
            except (ex.ConnectionFailedError, ex.ConnectionTimeoutError, ex.InternalServerError) as e:
                last = e                  # down, paused, or without a leader for now
            if time.monotonic() >= deadline:
                raise EtcdTimeout(f"no etcd member answered within {self.timeout:g} s "
                                  f"(last: {type(last).__name__}: {last})")
            self._at = (self._at + 1) % len(self.endpoints)
            self._client = self._make(self._at)
            if self._at == 0:
                time.sleep(0.05)          # every member tried: an election may be on

    def _key(self, key: str) -> str:
        return _b64(self.prefix + key)

    def _range(self, key: str) -> tuple[dict | None, int]:
        r = self._post("/kv/range", {"key": self._key(key)})
        kvs = r.get("kvs") or []
        return (kvs[0] if kvs else None), int(r.get("header", {}).get("revision", 0))

    def clone(self) -> "EtcdStore":
        """Another connection to the same cluster (TCPStore.clone)."""
        return EtcdStore(self.endpoints[self._at:] + self.endpoints[:self._at], self.timeout,
                         self.request_timeout, self.prefix)

    # --- TCPStore's calls ----------------------------------------------------------------
    def set(self, key: str, value: bytes | str) -> None:
        self._post("/kv/put", {"key": self._key(key), "value": _b64(value)})

    def get(self, key: str) -> bytes:
        self.wait([key])
        kv, _ = self._range(key)
        if kv is None:                    # deleted between the wait and the read
            raise EtcdTimeout(f"key {key!r} vanished while being read")
        return _raw(kv.get("value", ""))

    def check(self, keys: list[str]) -> bool:
        return all(self._range(k)[0] is not None for k in keys)

    def wait(self, keys: list[str], timeout: timedelta | float | None = None) -> None:
        limit = self.timeout if timeout is None else (
            timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout))
        deadline = time.monotonic() + limit
        for key in keys:
            while True:
                kv, rev = self._range(key)
                if kv is not None:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise EtcdTimeout(f"wait for {key!r} timed out after {limit:g} s")
                try:                      # from the revision we read: a put since is seen
                    self._client.watch_once(self.prefix + key, timeout=min(left, self.timeout),
                                            start_revision=rev + 1)
                except ex.WatchTimedOut:
                    continue              # re-read: the member may have gone
                except (ex.ConnectionFailedError, ex.ConnectionTimeoutError):
                    continue

    def add(self, key: str, amount: int) -> int:
        while True:
            kv, _ = self._range(key)
            if kv is None:
                value, compare = amount, {"key": self._key(key), "target": "CREATE",
                                          "result": "EQUAL", "create_revision": "0"}
            else:
                value = int(_raw(kv.get("value", "")) or b"0") + amount
                compare = {"key": self._key(key), "target": "MOD", "result": "EQUAL",
                           "mod_revision": kv["mod_revision"]}
            r = self._post("/kv/txn", {"compare": [compare], "success": [
                {"request_put": {"key": self._key(key), "value": _b64(str(value))}}]})
            if r.get("succeeded"):
                return value              # else another writer won: read again

    def compare_set(self, key: str, expected: bytes | str, desired: bytes | str) -> bytes:
        expected = expected.encode() if isinstance(expected, str) else expected
        desired = desired.encode() if isinstance(desired, str) else desired
        k = self._key(key)
        compare = ({"key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0"}
                   if expected == b"" else
                   {"key": k, "target": "VALUE", "result": "EQUAL", "value": _b64(expected)})
        r = self._post("/kv/txn", {"compare": [compare],
                                   "success": [{"request_put": {"key": k, "value": _b64(desired)}}],
                                   "failure": [{"request_range": {"key": k}}]})
        if r.get("succeeded"):
            return desired
        kvs = (r.get("responses") or [{}])[0].get("response_range", {}).get("kvs") or []
        return _raw(kvs[0].get("value", "")) if kvs else expected

    def multi_get(self, keys: list[str]) -> list[bytes]:
        self.wait(keys)
        return [self.get(k) for k in keys]

    def multi_set(self, keys: list[str], values: list[bytes | str]) -> None:
        """One transaction per TXN_OPS keys (etcd's --max-txn-ops): atomic up to that many."""
        puts = [{"request_put": {"key": self._key(k), "value": _b64(v)}} for k, v in zip(keys, values)]
        for i in range(0, len(puts), TXN_OPS):
            self._post("/kv/txn", {"success": puts[i:i + TXN_OPS]})

    def delete_key(self, key: str) -> bool:
        r = self._post("/kv/deleterange", {"key": self._key(key)})
        return int(r.get("deleted", 0)) > 0
