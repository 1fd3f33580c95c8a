"""Packages are found, not listed: tapelens and the top-level folders imported under its name.

pyproject.toml holds everything else; this file only says where the packages are.
"""

from pathlib import Path

from setuptools import setup

# Import name -> folder: ingest/, analysis/, dashboards/ and world/ sit at the top of the
# repository and are imported as tapelens.ingest, tapelens.analysis, tapelens.dashboards and
# tapelens.world.
ROOTS = {
    "tapelens": "tapelens",
    "tapelens.ingest": "ingest",
    "tapelens.analysis": "analysis",
    "tapelens.dashboards": "dashboards",
    "tapelens.world": "world",
}


def packages() -> list[str]:
    """Every folder under a root that holds an __init__.py, as a dotted import name."""
    found = []
    for name, folder in ROOTS.items():
        for init in sorted(Path(folder).rglob("__init__.py")):
            parts = init.parent.relative_to(folder).parts
            found.append(".".join([name, *parts]))
    return found


setup(package_dir=ROOTS, packages=packages())
