"""Placement what-if: a recorded write stream replayed under another write policy."""
