"""Ingest: parsers of every catalog, transfer and mount format, the loader, and the migrations."""
