"""Refused lines of one file, spooled to disk and kept in ingest_rejects with their reasons."""

from __future__ import annotations

import csv
import tempfile

import psycopg
from psycopg import sql

from tapelens.ingest.formats.base import (
    Reject,
)
from tapelens.ingest.load.copy_text import ident


class Rejects:
    """Refused lines spooled to a temporary file (lenient loads of bad files stay bounded)."""

    def __init__(self) -> None:
        self.count = 0
        self.first: Reject | None = None
        self._buf = tempfile.SpooledTemporaryFile(max_size=8 << 20, mode="w+", newline="")  # noqa: SIM115
        self._writer = csv.writer(self._buf)

    def reset(self) -> None:
        self.close()
        self.__init__()  # type: ignore[misc]

    def add(self, rejects: list[Reject]) -> None:
        for r in rejects:
            if self.first is None or r.line_no < self.first.line_no:
                self.first = r
            self._writer.writerow([r.line_no, r.raw, r.reason])
        self.count += len(rejects)

    def copy_into(self, cur: psycopg.Cursor, run_id: int) -> None:
        if not self.count:
            return
        self._buf.seek(0)
        stmt = sql.SQL("copy {} (line_no, raw, reason) from stdin (format csv)").format(
            ident("_tapelens_rejects")
        )
        cur.execute("drop table if exists _tapelens_rejects")  # an earlier file of the dump
        cur.execute(
            "create temp table _tapelens_rejects (line_no bigint, raw text, reason text)"
            " on commit drop"
        )
        with cur.copy(stmt) as copy:
            while chunk := self._buf.read(1 << 20):
                copy.write(chunk)
        # A line refused twice (two reasons) keeps its first reason.
        cur.execute(
            "insert into tapelens.ingest_rejects (run_id, line_no, raw, reason)"
            " select distinct on (line_no) %s, line_no, raw, reason from _tapelens_rejects"
            " order by line_no",
            [run_id],
        )

    def close(self) -> None:
        self._buf.close()
