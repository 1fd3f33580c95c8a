"""Per-dataset predictions: what a dataset recall costs with today's placement, and with an ideal
one."""
