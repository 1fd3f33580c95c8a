"""The synthetic site: realistic tape catalogs and logs with their ground truth.

from tapelens.world import generate

from tapelens.world import site_params
site = generate(Path("/tmp/site"), site_params("bnl", files=200_000, seed=7))
"""

from tapelens.world.generate import GeneratedSite, generate
from tapelens.world.params import PROFILES, SiteParams, site_params

__all__ = ["PROFILES", "GeneratedSite", "SiteParams", "generate", "site_params"]
