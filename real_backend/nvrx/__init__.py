"""NVIDIA's resiliency extension (NVRx) for real: its in-process restart (`inprocess.Wrapper`)
run with real processes on gloo, where it runs without a GPU, to measure what the simulator's
`in_process` mode assumes (docs/recovery.md). Needs the `nvrx` extra."""
from __future__ import annotations


def available() -> str | None:
    """None when NVRx's in-process restart can be imported; else why not."""
    try:
        import nvidia_resiliency_ext.inprocess  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure means: not here
        return f"nvidia-resiliency-ext is not importable ({type(e).__name__}: {e}); pip install -e '.[nvrx]'"
    return None
