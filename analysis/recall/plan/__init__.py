"""A recall plan with its baselines and bounds, and plans side by side under several policies."""
