"""The package version, the one place it is written (pyproject.toml reads it; the run card and the eval cache key
name it)."""

__version__ = "0.1.0"
