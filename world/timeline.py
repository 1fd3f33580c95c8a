"""Map progress (share of the site's files arrived) to UTC seconds, with a growing yearly volume.

The volume a site writes grows every year (more data, bigger detectors): with growth g per year
the arrival density is proportional to (1 + g) ** years, so progress u maps to time by the
inverse of its integral.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import numpy as np

YEAR_S = 365.25 * 86_400


def epoch_s(day: date) -> int:
    """Midnight UTC of a day, in seconds since the epoch."""
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


@dataclass(frozen=True)
class Timeline:
    start_s: int
    end_s: int  # exclusive
    growth_per_year: float

    @classmethod
    def between(cls, start: date, end_inclusive: date, growth_per_year: float) -> Timeline:
        return cls(epoch_s(start), epoch_s(end_inclusive + timedelta(days=1)), growth_per_year)

    @property
    def _rate(self) -> float:
        return float(np.log1p(self.growth_per_year)) / YEAR_S

    def seconds(self, u: np.ndarray | float) -> np.ndarray:
        """Progress -> seconds since the epoch (float)."""
        span = self.end_s - self.start_s
        k = self._rate
        uu = np.asarray(u, dtype=np.float64)
        if k * span < 1e-9:
            return self.start_s + uu * span
        return self.start_s + np.log1p(uu * np.expm1(k * span)) / k

    def progress(self, seconds: float) -> float:
        """Seconds since the epoch -> progress (clipped to [0, 1])."""
        span = self.end_s - self.start_s
        x = min(max(seconds - self.start_s, 0.0), float(span))
        k = self._rate
        if k * span < 1e-9:
            return x / span
        return float(np.expm1(k * x) / np.expm1(k * span))

    def progress_array(self, seconds: np.ndarray) -> np.ndarray:
        """Seconds since the epoch -> progress, element-wise (clipped to [0, 1])."""
        span = self.end_s - self.start_s
        x = np.clip(np.asarray(seconds, dtype=np.float64) - self.start_s, 0.0, float(span))
        k = self._rate
        if k * span < 1e-9:
            return x / span
        return np.expm1(k * x) / np.expm1(k * span)

    def year(self, u: np.ndarray) -> np.ndarray:
        """Calendar year of each progress value."""
        s = self.seconds(u).astype("int64").astype("datetime64[s]")
        return s.astype("datetime64[Y]").astype(np.int64) + 1970
