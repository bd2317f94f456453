"""Runnable demos and checks over the real backend (not imported by the library)."""
