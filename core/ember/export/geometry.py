"""What an export handler reads of a layer: its geometry and weights."""

from __future__ import annotations


class Geometry:
    """A layer's geometry and weights seen as the float layer a handler reads: a weight-only
    layer's (no weight: the codes give it afterwards), a traced step's arguments.

    >>> Geometry(in_features=4, out_features=2).out_features, Geometry().weight
    (2, None)
    """

    weight = None

    def __init__(self, **fields):
        self.__dict__.update(fields)
