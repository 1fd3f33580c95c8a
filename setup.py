"""Packages are found, not listed: every folder under tapelens/ that holds an __init__.py.

pyproject.toml holds everything else; this file only says where the packages are.
"""

import os

from setuptools import setup

# ingest/, analysis/, dashboards/ and world/ sit at the top of the repository and are imported as
# tapelens.ingest and so on through symlinks in tapelens/ (tapelens/ingest -> ../ingest). The
# symlinks, not a package-dir map, make the import names real on disk, so the type checker, the
# test runner and an editor resolve `tapelens.analysis` to analysis/ as Python does.


def packages() -> list[str]:
    """Every folder under tapelens/ (symlinks followed) with an __init__.py, as a dotted name."""
    found = []
    for folder, _dirs, files in os.walk("tapelens", followlinks=True):
        if "__init__.py" in files:
            found.append(folder.replace(os.sep, "."))
    return sorted(found)


setup(packages=packages())
