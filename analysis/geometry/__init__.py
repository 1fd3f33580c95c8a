"""Tape geometry: where a copy physically sits on a serpentine tape, what a locate between two
places costs, and the read order on one mounted tape that minimises the total time (RAO).

`media` holds the figures per media generation, `place` turns positions and byte offsets into
estimated physical places, `locate` prices the move between two places (vectorised), `rao` orders
the reads. Everything is pure: arrays and frozen dataclasses in, arrays and numbers out.
"""
