"""Recall planning: resolving requests, choosing copies, ordering tapes onto drives, baselines,
exports."""
