"""Database side of recall planning, one module per concept.

The catalog read, byte addresses, causes of requests not found, copies for exports, saved plans
with plan against actual.
"""
