"""The package's version: its single source (setuptools reads it for the
distribution's metadata, `webnn.__version__` re-exports it)."""
__version__ = "0.2.0"
