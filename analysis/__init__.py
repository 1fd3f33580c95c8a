"""Analysis: media catalog, throughput model, recall planner, repack advisor, simulator."""
