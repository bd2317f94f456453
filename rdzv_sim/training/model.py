"""Which training model reads a run: the stop-the-world one, or a protocol's own (registered)."""
from __future__ import annotations

from typing import Callable

from ..protocols.registry import part, register_part

KIND = "training"


def register_training_model(protocol: str, model: Callable, *, replace: bool = False) -> None:
    """`model(events, rounds, scenario, spans) -> TrainingResult` reads the runs of `protocol`
    instead of the stop-the-world model (`evaluate`), with or without a training section."""
    register_part(protocol, KIND, model, replace=replace)


def training_model_of(protocol: str) -> Callable | None:
    return part(protocol, KIND)
