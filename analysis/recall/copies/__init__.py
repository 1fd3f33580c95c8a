"""Copy choice: which copy of each requested file a recall reads."""
