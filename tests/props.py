"""Property-test settings: derandomised in `make test`, randomised and longer in `make fuzz`.

`make test` loads the `ci` profile: hypothesis draws the same examples on every run, so CI is
deterministic. `make fuzz` sets HYPOTHESIS_PROFILE=fuzz: fresh random examples, each property
tried FUZZ_FACTOR times as often.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

FUZZ_FACTOR = 25
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")

# database=None: failing examples are printed, never stored in the working tree.
settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz",
    derandomize=False,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(PROFILE)


def examples(n: int) -> int:
    """How many examples a property gets: `n` in CI, FUZZ_FACTOR times more under `make fuzz`."""
    return n * FUZZ_FACTOR if PROFILE == "fuzz" else n
