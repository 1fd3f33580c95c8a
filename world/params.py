"""Every knob of the synthetic site, with defaults, and the per-site presets (profiles).

A profile names the mass-storage system whose native formats the site is written in and the
shape of that site (experiments, media generations, libraries, drives). The defaults describe
the bnl profile; `site_params(profile, ...)` applies a profile's preset and any overrides.
Figures are rounded from the published measurements summarised in docs/domain.md; the model that
turns them into placements lives in site.py, writepath.py and tapes.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np

from tapelens.errors import ConfigError
from tapelens.media import BY_NAME as MEDIA

PROFILES: tuple[str, ...] = ("bnl", "gridka", "cern", "fnal")

GB = 1_000_000_000
MB = 1_000_000
TB = 1_000_000_000_000


@dataclass(frozen=True)
class SizeModel:
    """File sizes of one dataset type: a lognormal body plus a share of small files."""

    median_bytes: float
    sigma: float
    small_share: float = 0.0
    small_median_bytes: float = 50 * MB
    small_sigma: float = 1.0


# Typical ATLAS-style sizes per type: RAW and AOD multi-GB, derived and generator files smaller,
# logs tiny. A share of every type is well under 1 GB (end-of-run and merge remainders).
DEFAULT_SIZES: tuple[tuple[str, SizeModel], ...] = (
    ("RAW", SizeModel(3.8 * GB, 0.25, 0.02, 150 * MB)),
    ("AOD", SizeModel(2.6 * GB, 0.45, 0.12, 120 * MB)),
    ("DAOD", SizeModel(0.9 * GB, 0.8, 0.15, 50 * MB)),
    ("EVNT", SizeModel(0.5 * GB, 0.6, 0.10, 40 * MB)),
    ("HITS", SizeModel(1.8 * GB, 0.4, 0.06, 100 * MB)),
    ("LOG", SizeModel(3 * MB, 1.0)),
)

# Share of files per dataset type, and the relative median number of files per dataset.
DEFAULT_TYPES: tuple[tuple[str, float, float], ...] = (
    ("RAW", 0.20, 2.0),
    ("AOD", 0.24, 1.0),
    ("DAOD", 0.20, 0.6),
    ("EVNT", 0.10, 1.0),
    ("HITS", 0.16, 1.0),
    ("LOG", 0.10, 1.0),
)

LTO_SCHEDULE: tuple[tuple[str, date], ...] = (
    ("LTO-6", date(2000, 1, 1)),
    ("LTO-7", date(2017, 4, 1)),
    ("LTO-8", date(2019, 4, 1)),
    ("LTO-9", date(2022, 4, 1)),
)
IBM_3592_SCHEDULE: tuple[tuple[str, date], ...] = (
    ("3592-JD", date(2000, 1, 1)),
    ("3592-JE", date(2020, 6, 1)),
    ("3592-JF", date(2023, 6, 1)),
)


@dataclass(frozen=True)
class SiteParams:
    """All knobs of the synthetic site. Defaults: the bnl profile at 50k files."""

    profile: str = "bnl"
    files: int = 50_000
    seed: int = 0
    start: date = date(2016, 1, 1)
    end: date = date(2024, 12, 31)  # inclusive: the last day files arrive
    gzip: bool = False

    # Site model
    experiments: tuple[tuple[str, float], ...] = (
        ("atlas", 0.80),
        ("star", 0.12),
        ("sphenix", 0.08),
    )
    types: tuple[tuple[str, float, float], ...] = DEFAULT_TYPES
    sizes: tuple[tuple[str, SizeModel], ...] = DEFAULT_SIZES
    dataset_files_median: float = 60.0
    dataset_files_sigma: float = 1.7
    dataset_files_max: int = 50_000
    growth_per_year: float = 0.35  # yearly growth of the volume written
    zero_length_share: float = 0.0  # files that exist in the namespace with no tape copy

    # Write path
    production_streams: int = 3  # producers per pool, each writing one dataset at a time
    stream_busy: float = 0.6  # share of the time a stream is writing
    rate_sigma: float = 0.5  # spread of per-dataset arrival rates (lognormal)
    late_share: float = 0.03  # files that arrive after their dataset's window
    late_delay_days: float = 14.0  # median delay of a late file after its window (lognormal)
    migration_batch_bytes: int = 4 * TB  # unmigrated cache volume that triggers a migration
    migration_max_age_days: float = 90.0  # ... or the age of the oldest unmigrated file
    cutover: date = date(2020, 10, 1)  # migrations from this day sort by directory
    policy_after: str = "sorted"  # "sorted" or "fifo" after the cutover
    write_drives: int = 6  # write drives of the site, shared out between pools
    migration_drive_bytes: int = 1 * TB  # a migration starts one drive per this volume
    write_overhead_s: float = 2.0  # per tape object: sync, tape mark
    aggregate: bool = True  # small files go into aggregates (HPSS, TSM)
    aggregate_max_file_bytes: int = 256 * MB
    aggregate_max_bytes: int = 16 * GB
    aggregate_max_members: int = 2_000

    # Media and tapes
    media_schedule: tuple[tuple[str, date], ...] = LTO_SCHEDULE
    libraries: tuple[str, ...] = ("SL8500-1", "SL8500-2", "TS4500-1")
    scratch_tapes_per_pool: int = 2
    readonly_share: float = 0.02
    disabled_share: float = 0.01
    repack_at: date | None = date(2023, 3, 1)
    repack_share: float = 0.3  # of the tapes two or more generations older than the current

    # Duplicates (lost-acknowledgement retries)
    duplicate_share: float = 0.005  # files written again at least once
    retry_more_p: float = 0.25  # chance that a retried file is retried once more
    retry_delay_cycles: float = 1.5  # mean migrations before a retry is flushed (at least 1)
    retry_timeout_s: float = 3_600.0  # the front end's acknowledgement timeout
    pathological_copies: int = 96  # copies of the one file stuck in a retry loop (0: none)
    pathological_cycles: int = 6  # migration cycles the retry loop lasts

    # Injected anomalies with truth labels (tapelens.world.anomalies); 0 injects nothing
    scattered_datasets: int = 0  # datasets whose files trickle in instead of in one window
    scattered_spread_days: float = 365.0  # ... each file at a uniform time over this span
    scattered_min_files: int = 100  # chosen among datasets with at least this many files
    ack_outages: int = 0  # front-end outages that lose the acknowledgements of pending writes
    ack_outage_hours: float = 24.0  # how long each outage lasts
    ack_outage_loss: float = 1.0  # share of the pending writes whose acknowledgement is lost

    # Archive metadata (tapelens.world.hints): the written files' WLCG collocation hints, and
    # the hint level whose groups the recall campaigns ask for together
    hints: bool = False
    hint_recall_level: int = 3

    # Operations history (tapelens.world.operations); `operations` is its params object
    history: bool = True
    history_max_copies: int = 500_000  # campaigns draw from at most this many copies
    operations: Any = field(default=None, compare=False)

    # Output
    chunk_rows: int = 200_000  # rows per written chunk: bounds the memory of the text

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def source(self) -> str:
        """The catalog identity stored in `source` for this site's copies."""
        return SOURCES[self.profile]

    def public(self) -> dict[str, Any]:
        """The knobs as JSON-friendly values, for the manifest."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "operations":
                continue
            out[f.name] = _plain(getattr(self, f.name))
        return out


SOURCES = {"bnl": "bnl-hpss", "gridka": "gridka-tsm", "cern": "cern-cta", "fnal": "fnal-enstore"}

PRESETS: dict[str, dict[str, Any]] = {
    "bnl": {"zero_length_share": 0.0005},
    "gridka": {
        "experiments": (
            ("atlas", 0.45),
            ("cms", 0.25),
            ("lhcb", 0.15),
            ("alice", 0.10),
            ("belle", 0.05),
        ),
        "libraries": ("TS4500-A", "TS4500-B"),
        "write_drives": 12,
    },
    "cern": {
        "experiments": (("atlas", 0.35), ("cms", 0.35), ("lhcb", 0.15), ("alice", 0.15)),
        "media_schedule": IBM_3592_SCHEDULE,
        "libraries": ("IBM-LIB1", "IBM-LIB2", "SPECTRA-LIB3"),
        "write_drives": 12,
        "aggregate": False,
    },
    "fnal": {
        "experiments": (("cms", 0.50), ("dune", 0.25), ("nova", 0.15), ("minos", 0.10)),
        "libraries": ("TFINITY-1", "TFINITY-2"),
        "write_drives": 8,
        "aggregate": False,
    },
}


def site_params(profile: str = "bnl", **overrides: Any) -> SiteParams:
    """The preset of a profile with any knob overridden."""
    if profile not in PRESETS:
        raise ConfigError(
            "profile", "the synthetic site parameters", f"one of {', '.join(PROFILES)}"
        )
    values = dict(PRESETS[profile])
    values.update(overrides)
    return SiteParams(profile=profile, **values)


def _plain(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, SizeModel):
        return dataclasses.asdict(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _validate(p: SiteParams) -> None:
    def bad(setting: str, reason: str) -> ConfigError:
        return ConfigError(setting, "the synthetic site parameters", reason)

    if p.profile not in PROFILES:
        raise bad("profile", f"one of {', '.join(PROFILES)}, not {p.profile!r}")
    if p.files < 1:
        raise bad("files", "must be at least 1")
    if p.end <= p.start:
        raise bad("end", f"must be after start ({p.start.isoformat()})")
    if not p.experiments or any(s <= 0 for _, s in p.experiments):
        raise bad("experiments", "needs at least one experiment with a positive share")
    size_types = {t for t, _ in p.sizes}
    for name, share, scale in p.types:
        if name not in size_types:
            raise bad("types", f"type {name} has no size model")
        if share < 0 or scale <= 0:
            raise bad("types", f"type {name} needs share >= 0 and a positive scale")
    for media, _ in p.media_schedule:
        if media not in MEDIA:
            raise bad("media_schedule", f"unknown media type {media!r}")
    if not p.media_schedule or not p.libraries:
        raise bad("media_schedule", "needs at least one media generation and one library")
    if p.policy_after not in ("sorted", "fifo"):
        raise bad("policy_after", "sorted or fifo")
    if p.write_drives < len(p.experiments):
        raise bad("write_drives", "needs at least one write drive per experiment")
    if min(p.migration_batch_bytes, p.migration_drive_bytes, p.aggregate_max_bytes) <= 0:
        raise bad("migration_batch_bytes", "must be positive")
    if p.production_streams < 1:
        raise bad("production_streams", "must be at least 1")
    if not 0 < p.stream_busy <= 1:
        raise bad("stream_busy", "must be in (0, 1]")
    for name in ("late_share", "duplicate_share", "readonly_share", "disabled_share"):
        if not 0 <= getattr(p, name) < 1:
            raise bad(name, "must be in [0, 1)")
    if not 2 <= p.aggregate_max_members <= 30_000:
        raise bad("aggregate_max_members", "must be in [2, 30000]")
    if p.migration_max_age_days <= 0:
        raise bad("migration_max_age_days", "must be positive")
    for name in ("scattered_datasets", "ack_outages"):
        if getattr(p, name) < 0:
            raise bad(name, "must be 0 or more")
    if p.scattered_min_files < 1:
        raise bad("scattered_min_files", "must be at least 1")
    for name in ("scattered_spread_days", "ack_outage_hours"):
        if not getattr(p, name) > 0:
            raise bad(name, "must be positive")
    if not 0 < p.ack_outage_loss <= 1:
        raise bad("ack_outage_loss", "must be in (0, 1]")
    if not 0 <= p.hint_recall_level <= 3:
        raise bad("hint_recall_level", "must be a hint level, 0 to 3")
    if p.chunk_rows < 1_000:
        raise bad("chunk_rows", "must be at least 1000")


def drives_per_pool(p: SiteParams) -> np.ndarray:
    """Write drives of each pool: one each, the rest in proportion to the pool's share."""
    shares = np.array([s for _, s in p.experiments], dtype=float)
    n = len(shares)
    extra = p.write_drives - n
    exact = extra * shares / shares.sum()
    out = np.floor(exact).astype(np.int64)
    rest = extra - int(out.sum())
    if rest:
        out[np.argsort(-(exact - out), kind="stable")[:rest]] += 1
    return out + 1
