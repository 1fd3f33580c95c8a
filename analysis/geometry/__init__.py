"""Tape geometry: where a copy physically sits on a serpentine tape, what a locate between two
places costs, and the read order on one mounted tape that minimises the total time (RAO).

`media` holds the figures per media generation, `place` turns positions and byte offsets into
estimated physical places, `locate` prices the move between two places (vectorised), `rao` orders
the reads. Everything is pure: arrays and frozen dataclasses in, arrays and numbers out.
"""

from tapelens.analysis.geometry.locate import gap_s
from tapelens.analysis.geometry.media import GEOMETRIES, Geometry, geometry
from tapelens.analysis.geometry.place import Places, accuracy, places, start_bytes_from_sizes
from tapelens.analysis.geometry.rao import (
    Ordered,
    order,
    order_reads,
    plan_order,
    position_order_cost,
)

__all__ = [
    "GEOMETRIES",
    "Geometry",
    "Ordered",
    "Places",
    "accuracy",
    "gap_s",
    "geometry",
    "order",
    "order_reads",
    "places",
    "plan_order",
    "position_order_cost",
    "start_bytes_from_sizes",
]
