"""`tapelens demo`: a synthetic site end to end."""

from __future__ import annotations

import click

from tapelens.cli.common import App, pass_app
from tapelens.cli.groups import BY_NAME
from tapelens.db import connection
from tapelens.status import status

demo = BY_NAME["demo"]


@demo.command("run")
@pass_app
def run(app: App) -> None:
    """Run the demo: start the database and show what it holds.

    \b
    Example:
        tapelens demo run
    """
    dsn = app.dsn()
    with connection(dsn) as conn:
        st = status(conn)
    click.echo(f"timescaledb {st.timescaledb_version}, schema version {st.schema_version}")
    for table, count in st.row_counts.items():
        click.echo(f"  tapelens.{table:<16} {count if count is not None else 'missing':>12}")
