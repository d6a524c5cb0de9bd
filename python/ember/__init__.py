"""Ember's Python front end: export PyTensor graphs to Ember's graph format,
run them on the native engine, use it as a PyTensor mode ("EMBER") and as a
nutpie backend (ember.nutpie)."""

from .fallback import FallbackWarning
from .export import (
    UnsupportedGraphError,
    dumps,
    export,
    export_graph,
    loads,
    supported_ops,
)

__all__ = ["FallbackWarning", "UnsupportedGraphError", "dumps", "export", "export_graph", "loads", "supported_ops",
           "Program", "load", "compile_function", "CallError", "LoadError", "Mode", "EmberLinker"]

# Registers the PyTensor linker "ember" and mode "EMBER" (the native module
# itself loads only when a function is compiled).
from .linker import EMBER, EmberLinker, Mode  # noqa: E402


def __getattr__(name):
    # The native engine loads on first use, so the exporter works without _core.
    if name in ("Program", "load", "compile_function", "CallError", "LoadError", "native"):
        import importlib

        native = importlib.import_module(f"{__name__}.native")
        return native if name == "native" else getattr(native, name)
    raise AttributeError(f"module 'ember' has no attribute {name!r}")
