"""Superset in a virtualenv of its own: install, serve, and its REST API."""
