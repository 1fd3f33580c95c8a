"""The discrete-event library simulator around the recall policies."""
