"""Reports a person can open: HTML with embedded plots, and a Markdown twin."""
from .document import build, from_dir
from .figures import FIGURES

__all__ = ["build", "from_dir", "FIGURES"]
