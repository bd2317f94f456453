"""Which training model reads a run: the stop-the-world one, or a protocol's own (its kit's
`training` part)."""
from __future__ import annotations

from typing import Callable

from ..protocols.registry import get

KIND = "training"


def training_model_of(protocol: str) -> Callable | None:
    """`model(events, rounds, scenario, spans) -> TrainingResult`, which reads the runs of
    `protocol` instead of the stop-the-world model (`evaluate`), or None."""
    return get(protocol).part(KIND)
