"""The repack advisor: which datasets and tapes to repack, what it gains and costs."""
