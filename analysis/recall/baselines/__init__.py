"""Baselines a plan is measured against: newest copies, and direct submission (FIFO)."""
