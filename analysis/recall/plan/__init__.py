"""A recall plan of a request list: the engine's schedule with its baselines and bounds, and the
same recall planned under several drive-sharing policies."""
