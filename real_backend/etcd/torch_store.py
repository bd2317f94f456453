"""An etcd store as a `torch.distributed.Store`, for what torch itself reads and writes (a
process group's bootstrap, torchrun's agent): torch calls these Python methods as it does
its own EtcdStore's (torch/distributed/elastic/rendezvous/etcd_store.py)."""
from __future__ import annotations

from datetime import timedelta

import torch.distributed as dist

from .store import EtcdStore


class TorchEtcdStore(dist.Store):
    def __init__(self, store: EtcdStore):
        super().__init__()
        self.store = store

    def set(self, key, value):
        self.store.set(key, value if isinstance(value, (bytes, str)) else bytes(value))

    def get(self, key) -> bytes:
        return self.store.get(key)

    def add(self, key, num: int) -> int:
        return self.store.add(key, num)

    def wait(self, keys, override_timeout: timedelta | None = None):
        self.store.wait(list(keys), override_timeout)

    def check(self, keys) -> bool:
        return self.store.check(list(keys))

    def compare_set(self, key, expected, desired) -> bytes:
        return self.store.compare_set(key, expected, desired)

    def delete_key(self, key) -> bool:
        return self.store.delete_key(key)

    def clone(self) -> "TorchEtcdStore":
        return TorchEtcdStore(self.store.clone())
