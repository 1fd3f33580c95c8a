"""Recall requests: the lists users give, and what they name in the catalog."""
