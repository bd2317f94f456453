"""Which aggregate job runs a protocol at `fidelity: aggregate` (a part of the protocol's kit)."""
from __future__ import annotations

from ..protocols.registry import part, register_part

KIND = "aggregate"


def register_aggregate_job(protocol: str, job: type, *, replace: bool = False) -> None:
    """`job(scenario)` runs `protocol` at the aggregate fidelity (a `Simulation` subclass: its
    `run(progress)`, `trace` and `runtime`). The protocol's class lists "aggregate" in its
    `fidelities`, so that a scenario asking for it passes the checks."""
    register_part(protocol, KIND, job, replace=replace)


def aggregate_job_of(protocol: str) -> type:
    job = part(protocol, KIND)
    if job is None:
        raise LookupError(f"protocol {protocol!r} declares fidelity aggregate but registered no "
                          "aggregate job (rdzv_sim.aggregate.register_aggregate_job)")
    return job
