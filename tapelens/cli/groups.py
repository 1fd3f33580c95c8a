"""Command groups of the command surface whose commands live in their own modules."""

from __future__ import annotations

import click


def _group(name: str, help_text: str) -> click.Group:
    return click.Group(name=name, help=help_text)


GROUPS: list[click.Group] = [
    _group("ingest", "Load catalogs, transfer logs, mount logs and tape inventories."),
    _group("models", "Build the dbt models (gaps, duplicates, occupancy, rates)."),
    _group("report", "Gap, duplicate, tape, occupancy and rate reports."),
    _group("model", "The throughput model: calibrate, show, validate."),
    _group("predict", "Predicted recall time and rate per dataset."),
    _group("plan", "Recall plans: plan a recall, compare a saved plan with what happened."),
    _group("dashboards", "Superset dashboards: serve, deploy, export."),
    _group("demo", "A synthetic site end to end."),
]
BY_NAME = {g.name: g for g in GROUPS}
