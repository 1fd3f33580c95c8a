"""The throughput model: what reading files from tape costs, its parameters, and its fit to a
site's own logs."""
