"""Every default of the c10d model is torch's own default, read from torch's handler.

The model's settings carry torchrun's `--rdzv-conf` names; a user who sets nothing must get what
torch's `create_handler` gives. A real handler is built on a HashStore (no network)."""
from datetime import timedelta

import pytest

torch = pytest.importorskip("torch")


def torch_handler(**conf):
    from torch.distributed import HashStore
    from torch.distributed.elastic.rendezvous import RendezvousParameters
    from torch.distributed.elastic.rendezvous.c10d_rendezvous_backend import C10dRendezvousBackend
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import create_handler
    store = HashStore()
    params = RendezvousParameters(backend="c10d", endpoint="127.0.0.1:0", run_id="job",
                                  min_nodes=1, max_nodes=2, **conf)
    return create_handler(store, C10dRendezvousBackend(store, "job"), params)


def model_defaults():
    from rdzv_sim.protocols.c10d.protocol import CLOSE_TIMEOUT, C10dSettings
    s = C10dSettings()
    return {"join": s.join_timeout, "last_call": s.last_call_timeout, "close": CLOSE_TIMEOUT,
            "keep_alive_interval": s.keep_alive_interval,
            "keep_alive_max_attempt": s.keep_alive_max_attempt}


def torch_defaults(**conf):
    h = torch_handler(**conf)
    t, s = h._settings.timeout, h._settings
    return {"join": t.join.total_seconds(), "last_call": t.last_call.total_seconds(),
            "close": t.close.total_seconds(),
            "keep_alive_interval": s.keep_alive_interval.total_seconds(),
            "keep_alive_max_attempt": s.keep_alive_max_attempt}


def test_every_model_default_is_torchs():
    assert model_defaults() == torch_defaults()


def test_the_check_sees_a_changed_default():
    """The near miss: a conf value one step off torch's default is told apart."""
    assert torch_defaults(last_call_timeout=29)["last_call"] == 29 != model_defaults()["last_call"]
    assert torch_defaults(keep_alive_max_attempt=4)["keep_alive_max_attempt"] == 4


def test_the_decision_tables_default_last_call_is_torchs():
    from rdzv_sim.protocols.c10d import decisions as D
    import dataclasses
    field = next(f for f in dataclasses.fields(D.Settings) if f.name == "last_call")
    assert field.default == torch_defaults()["last_call"]
    assert timedelta(seconds=field.default)
