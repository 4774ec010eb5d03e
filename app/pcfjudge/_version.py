"""The package version: a leaf module (nothing of ours imported), so any layer may read it."""

__version__ = "0.1.0"
