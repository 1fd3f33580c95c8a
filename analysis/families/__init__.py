"""Tape families: which hint level to collocate written files on, and what it saves."""
