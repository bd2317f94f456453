"""A real replicated store: etcd, as torchrun's etcd backends use it.

`cluster.py` starts and stops a local cluster of etcd members (Debian's `etcd-server`);
`store.py` is a store client with TCPStore's calls over etcd's v3 API, so the real runtime and
every protocol run on it unchanged.
"""
