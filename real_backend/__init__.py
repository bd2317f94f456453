"""The real runtime over torch.distributed.TCPStore (not built yet; see the open issue)."""
