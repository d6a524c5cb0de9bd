"""Ember's Python front end: export PyTensor graphs to Ember's graph format."""

from .export import (
    UnsupportedGraphError,
    dumps,
    export,
    export_graph,
    loads,
    supported_ops,
)

__all__ = ["UnsupportedGraphError", "dumps", "export", "export_graph", "loads", "supported_ops"]
