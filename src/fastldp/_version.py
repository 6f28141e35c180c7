"""The package's version, in a module of its own so that any room can read it downward."""

__version__ = "0.1.0"
