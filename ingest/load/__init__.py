"""The loader: input files into the canonical tables, all or nothing.

A load runs in one transaction (runs.py) and carries a LoadContext (context.py) from step to step:

- runs.py: the runs, the transaction, the lock that serialises loads, the results and the
  failures kept;
- stream.py: a file's rows through one COPY, and the fall-backs when the server refuses it;
- pipeline.py: the parse and encode threads that feed the COPY;
- copy_text.py: COPY's text format, and the bisection that finds a refused row;
- rejects.py: the refused lines, kept with their reasons;
- first_load.py: a catalog source's first load, straight into the table without its indexes;
- catalog_diff.py: a newer dump matched against the stored copies (only changes are written);
- upserts.py: staged rows into the canonical tables, copies retired, unseen volumes registered;
- guard.py: the shrink guard.

Safety rules, each with its reason, are in docs/loading.md.
"""

from tapelens.ingest.load.catalog_diff import CATALOG_EXTRA
from tapelens.ingest.load.context import Progress
from tapelens.ingest.load.guard import ShrinkGuard, ShrinkRefused
from tapelens.ingest.load.runs import IngestResult, ingest_file, ingest_files, sha256_of

__all__ = [
    "CATALOG_EXTRA",
    "IngestResult",
    "Progress",
    "ShrinkGuard",
    "ShrinkRefused",
    "ingest_file",
    "ingest_files",
    "sha256_of",
]
