"""Duplicate copies: which to keep, which to retire, and what a recall gains."""
