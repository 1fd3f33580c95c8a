"""Baselines a plan is measured against: the newest copies as tape clients choose them, and direct
submission to the tape system (FIFO)."""
