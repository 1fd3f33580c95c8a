"""Recall planning: the engine (engine.py, `recall`) and its parts, a folder each.

The parts: requests, copy choice (copies), the schedule, baselines, the plan, per-dataset
predictions (datasets), exports to staging systems, and the database side (store).
"""
