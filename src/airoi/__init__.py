"""airoi: a read-only AI-ROI reporting service."""

__version__ = "0.1.0"
