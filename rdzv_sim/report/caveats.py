"""What each recovery mode's model leaves out, or what holds the mode back for real: said
beside any answer that recommends one (`compare`, `advise`); the sources: docs/recovery.md."""
from __future__ import annotations

CAVEATS = {
    "in_job": "in_job: every failure is a rendezvous and a checkpoint reload; the model prices "
              "both from the scenario's settings.",
    "in_process": "in_process: NVRx's in-process restart needs the workload wrapped "
                  "(inprocess.Wrapper) and a device left usable (a sticky CUDA error restarts in "
                  "job); hosts back from repair wait for the next in-job restart or a planned "
                  "re-form (agent.reform_every), so the world runs smaller meanwhile.",
    "shrink": "shrink: the model reloads nothing and has no catch-up cost for the lost ranks' "
              "work; gloo cannot shrink; NCCL >= 2.31's shrink and abort can hang "
              "(pytorch#194679); hosts back wait for a re-form, as in_process's.",
}
