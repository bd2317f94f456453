"""What a protocol needs from the real side beyond the generic launcher (a part of its kit)."""
from __future__ import annotations

from typing import Callable

from rdzv_sim.protocols.registry import part, register_part

VALIDATOR = "real/validate"


def register_validator(protocol: str, validate: Callable, *, replace: bool = False) -> None:
    """`validate(scenario, out) -> verdict dict` is `rdzv-sim validate` for `protocol`, when its
    real side is not the generic launcher (the per-step quorum's is torchft's Lighthouse)."""
    register_part(protocol, VALIDATOR, validate, replace=replace)


def validator_of(protocol: str) -> Callable | None:
    return part(protocol, VALIDATOR)
