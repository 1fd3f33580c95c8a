"""Per-dataset predictions: a dataset recall's cost now and with an ideal placement."""
