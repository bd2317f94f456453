"""The real runtime: the rdzv_sim protocols over torch.distributed.TCPStore, real processes,
real faults (see launcher.run_real). The only package besides hrw's GPU path that imports torch."""


def run_real(scenario, workdir=None):
    from .launcher import run_real as _run
    return _run(scenario, workdir)


__all__ = ["run_real"]
