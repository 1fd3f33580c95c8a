"""Command groups of the command surface whose commands live in their own modules."""

from __future__ import annotations

import click


def _group(name: str, help_text: str) -> click.Group:
    return click.Group(name=name, help=help_text)


GROUPS: list[click.Group] = [
    _group("ingest", "Load catalogs, transfer logs, mount logs and tape inventories."),
    _group("marts", "Build the marts: the dbt models of gaps, duplicates, occupancy and rates."),
    _group("report", "Gap, duplicate, tape, occupancy and rate reports."),
    _group("throughput", "The throughput model: calibrate it on the site's logs, show, validate."),
    _group("predict", "Predicted recall time and rate per dataset."),
    _group("plan", "Recall plans: plan a recall, compare a saved plan with what happened."),
    _group("dashboards", "Superset dashboards: serve, deploy, export."),
    _group("demo", "A synthetic site end to end."),
]
BY_NAME = {g.name: g for g in GROUPS}
