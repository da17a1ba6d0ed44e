"""The kit's version (here, not in ``nmp/__init__``, so that the package never imports its root)."""

__version__ = "0.1.0"
