"""What every reader of the catalog table (tapelens.tape_files) shares, in SQL.

The catalog keeps a file id only where it is not the path (migration 020): a null file id means
the path is the file's identity. The dbt project says the same in its staging model
(stg_tape_files), which the marts read.
"""

from __future__ import annotations


def file_identity(alias: str = "") -> str:
    """SQL for a catalog row's file: its stored file id, or its path where none is stored."""
    at = f"{alias}." if alias else ""
    return f"coalesce({at}file_id, {at}path)"
