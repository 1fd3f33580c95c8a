"""Serpentine geometry per media generation: tape length, wraps, bands, speeds, locate costs.

The figures and where each comes from are in docs/geometry.md ("Figures and sources"). In short:

- tape length: the LTO Consortium's generation table (846 m for LTO-5/6, 960 m for LTO-7/8 and
  LTO-7 type M, 1035 m for LTO-9);
- wraps: the LTO format's track counts divided by the tracks written at once, as IBM's LTO
  documentation tabulates them (80, 136, 112, 208, 280 wraps for LTO-5..9; 168 for LTO-7 type
  M), always in 4 data bands; docs/geometry.md says which of these were checked against text;
- the locate cost terms (a fixed cost, a wrap change, a band change, a change of direction, a
  step back behind the head): the coefficients of CTA's LTO cost heuristic, fitted by CERN on
  LTO-7 type M media (CTA's RAO documentation; CERN-IT-Note-2020-001);
- high-speed locate speed: derived from the catalog's average locate (tapelens/media.py, vendor
  datasheets): a locate from the load point to a uniformly random place travels to the middle of
  the data area on average and pays the heuristic's change terms as often as a random target
  needs them (a wrap change nearly always, a band change 3 times in 4, a change of direction and
  a step back each half the time), so speed = distance / (average locate - those terms);
- streaming speed along the tape: derived, the native rate over the bytes one metre of one wrap
  holds (capacity / wraps / data length).

3592 and T10000 cartridges: the sources found give capacities, rates and that TS1140 and later
drives write 32 tracks at once, but neither tape lengths nor wrap counts; their geometries here
are marked approximate (a nominal 1000 m and as many wraps as LTO-9) and only the locate speed
is derived from their own catalog figures.
"""

from __future__ import annotations

from dataclasses import dataclass

from tapelens.errors import InputError
from tapelens.media import BY_NAME, MediaType

MB = 1_000_000

# CTA's LTO cost heuristic, fitted on LTO-7 type M media: seconds added per locate and per kind
# of change between the end of one file and the start of the next (docs/geometry.md).
CTA_BASE_S = 4.29
CTA_WRAP_CHANGE_S = 6.69
CTA_BAND_CHANGE_S = 3.2
CTA_DIRECTION_CHANGE_S = 5.22
CTA_STEP_BACK_S = 11.32
# Reversing at the end of a wrap while streaming: the tape stops and starts again at streaming
# speed. Not published; taken as the order of a direction change without the locate's search.
TURNAROUND_S = 2.0
# Tape before the first data and after the last, at each end (leader, calibration, landing
# zone): the data area is the tape length less this share at each end. An assumption, stated in
# docs/geometry.md; orders depend on it very little (it shifts every place alike).
GUARD_SHARE = 0.015
DATA_BANDS = 4
# What a locate from the load point to a uniformly random place pays besides travel, on average.
_MEAN_TERMS_FROM_LOAD_S = (
    CTA_BASE_S
    + CTA_WRAP_CHANGE_S
    + 0.75 * CTA_BAND_CHANGE_S
    + 0.5 * CTA_DIRECTION_CHANGE_S
    + 0.5 * CTA_STEP_BACK_S
)
# The travel part of an average locate is taken as at least this (media whose catalog locate is
# short: the heuristic's LTO terms would leave nothing for travel).
MIN_SEARCH_S = 20.0


@dataclass(frozen=True)
class Geometry:
    """The physical layout of one media generation and its locate cost terms (metres, seconds)."""

    media_type: str
    capacity_bytes: int
    rate_mb_s: float  # native streaming rate
    tape_length_m: float
    wraps: int
    bands: int
    locate_speed_m_s: float  # high-speed locate (and rewind) along the tape
    locate_base_s: float  # any locate: stop, search, settle
    wrap_change_s: float
    band_change_s: float
    direction_change_s: float  # the target wrap runs the other way from the head's
    step_back_s: float  # the target lies behind the head in its own wrap's direction
    turnaround_s: float  # end-of-wrap reversal while streaming
    guard_share: float = GUARD_SHARE
    approximate: bool = False  # length and wraps not from a published source

    @property
    def wraps_per_band(self) -> int:
        return max(1, self.wraps // self.bands)

    @property
    def data_start_m(self) -> float:
        """Where the data area begins, from the load point (beginning of tape)."""
        return self.guard_share * self.tape_length_m

    @property
    def data_length_m(self) -> float:
        return self.tape_length_m * (1 - 2 * self.guard_share)

    @property
    def bytes_per_wrap(self) -> float:
        return self.capacity_bytes / self.wraps

    @property
    def bytes_per_m(self) -> float:
        """Bytes one metre of one wrap holds."""
        return self.bytes_per_wrap / self.data_length_m

    @property
    def stream_speed_m_s(self) -> float:
        """Tape speed while streaming at the native rate."""
        return self.rate_mb_s * MB / self.bytes_per_m

    @property
    def wrap_stream_s(self) -> float:
        """Time to stream one whole wrap."""
        return self.bytes_per_wrap / (self.rate_mb_s * MB)


# media type -> (tape length m, wraps, approximate)
_LAYOUT: dict[str, tuple[float, int, bool]] = {
    "LTO-5": (846.0, 80, False),
    "LTO-6": (846.0, 136, False),
    "LTO-7": (960.0, 112, False),
    "LTO-7M": (960.0, 168, False),
    "LTO-8": (960.0, 208, False),
    "LTO-9": (1035.0, 280, False),
    "3592-JD": (1000.0, 280, True),
    "3592-JE": (1000.0, 280, True),
    "3592-JF": (1000.0, 280, True),
    "T10000D": (1000.0, 280, True),
}


def from_media(media: MediaType, tape_length_m: float, wraps: int, approximate: bool) -> Geometry:
    """A geometry from the catalog's figures and a layout (length, wraps)."""
    data_length_m = tape_length_m * (1 - 2 * GUARD_SHARE)
    travel_m = GUARD_SHARE * tape_length_m + data_length_m / 2
    searching_s = max(media.locate_avg_s - _MEAN_TERMS_FROM_LOAD_S, MIN_SEARCH_S)
    return Geometry(
        media_type=media.media_type,
        capacity_bytes=int(media.capacity_bytes),
        rate_mb_s=float(media.native_rate_mb_s),
        tape_length_m=tape_length_m,
        wraps=wraps,
        bands=DATA_BANDS,
        locate_speed_m_s=round(travel_m / searching_s, 3),
        locate_base_s=CTA_BASE_S,
        wrap_change_s=CTA_WRAP_CHANGE_S,
        band_change_s=CTA_BAND_CHANGE_S,
        direction_change_s=CTA_DIRECTION_CHANGE_S,
        step_back_s=CTA_STEP_BACK_S,
        turnaround_s=TURNAROUND_S,
        approximate=approximate,
    )


GEOMETRIES: dict[str, Geometry] = {
    name: from_media(BY_NAME[name], *layout) for name, layout in _LAYOUT.items() if name in BY_NAME
}


def geometry(media: str | MediaType | Geometry) -> Geometry:
    """The geometry of a media type of the catalog (by name or MediaType; a Geometry is
    returned as it is)."""
    if isinstance(media, Geometry):
        return media
    name = media if isinstance(media, str) else media.media_type
    try:
        return GEOMETRIES[name]
    except KeyError:
        raise InputError(f"no tape geometry for media type {name!r}") from None


__all__ = ["GEOMETRIES", "Geometry", "from_media", "geometry"]
