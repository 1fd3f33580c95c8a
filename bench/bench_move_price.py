"""One price of a move: plans priced by it, replayed in the world's independent physics.

Run: .venv/bin/python bench/bench_move_price.py [--seed 1]. For each media type, one tape of
20,000 files (500 MB each; on LTO-7, as many as fill 90% of it) or of 1,000 aggregates of 20
members. The product's parameters are what calibration recovers from the world's logs: the
effective rate, per-file overhead and read-through threshold of the world
(tapelens.world.physics), and the locate terms and scale fitted by the product's own
calibration (analysis/throughput/locate.py: fit_locate_terms, fit_locate_scale) on 3,000 to
5,000 located reads of the world, with its noise, from requests of several densities read in
position order. Each plan is ordered by the engine (read_order.in_read_order) and timed by it
(throughput.file_times and tape_times: the one price of a move, the final rewind priced from
where the last read ends); the same order is replayed in the world (time_read_order, no noise)
from the loaded tape to the rewound tape. tests/analysis/recall/test_move_price_world.py holds
the same comparison to its targets with these functions. Prints:

1. predicted against world time, position order and RAO, for scattered (1,000 of 20,000),
   contiguous (1,000 consecutive) and aggregate-heavy requests (every member of 50 aggregates
   of 20), on LTO-7, LTO-8, LTO-9 and 3592-JE (target: within 10%);
2. RAO's gain by the one price on the scattered request (target: >= 25% less whole time on
   LTO-8) and on the contiguous one (never slower).

Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import polars as pl

from tapelens.analysis.recall.schedule.read_order import OrderCache, in_read_order
from tapelens.analysis.throughput.locate import fit_locate_scale, fit_locate_terms
from tapelens.analysis.throughput.model import ModelParams, file_times, tape_times
from tapelens.analysis.throughput.moves import TERM_FACTORS
from tapelens.media import BY_NAME
from tapelens.world.physics import (
    PhysicsParams,
    default_physics,
    lognormal_multiplier,
    read_timeline,
    time_read_order,
)

MB = 1_000_000
MEDIA = ("LTO-7", "LTO-8", "LTO-9", "3592-JE")
FILES = 20_000
FILE_BYTES = 500 * MB
MEMBERS = 20
K = 1_000


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def tape_of(media: str, aggregates: bool) -> pl.DataFrame:
    """One full-enough tape: position, offset_bytes, size_bytes, start_bytes (object start)."""
    capacity = BY_NAME[media].capacity_bytes
    n = min(FILES, int(0.9 * capacity / FILE_BYTES))
    if not aggregates:
        pos = np.arange(1, n + 1)
        return pl.DataFrame(
            {
                "position": pos,
                "offset_bytes": pl.Series([None] * n, dtype=pl.Int64),
                "size_bytes": np.full(n, FILE_BYTES),
                "start_bytes": (pos - 1) * FILE_BYTES,
            }
        )
    objects = n // MEMBERS
    member = FILE_BYTES // MEMBERS
    pos = np.repeat(np.arange(1, objects + 1), MEMBERS)
    offset = np.tile(np.arange(MEMBERS) * member, objects)
    return pl.DataFrame(
        {
            "position": pos,
            "offset_bytes": offset,
            "size_bytes": np.full(len(pos), member),
            "start_bytes": (pos - 1) * FILE_BYTES,
        }
    )


def calibrated(media: str, world: PhysicsParams, rng: np.random.Generator) -> ModelParams:
    """The product's parameters as calibration recovers them from the world's logs (the
    rewind is a move: the fitted locate terms price it from the last read's place)."""
    params = ModelParams.from_media(
        BY_NAME[media],
        rate_mb_s=world.rate_mb_s,
        overhead_s=world.overhead_s,
        read_through_max_gap=world.read_through_max_gap,
    )
    whole = tape_of(media, aggregates=False)
    n = whole.height
    frames = []
    for k in (20, 50, 200, 1_000, 3_000):
        for _ in range(3):
            pick = np.sort(rng.choice(n, min(k, n), replace=False))
            t = whole[pick]
            pos = t["position"].to_numpy()
            start = t["start_bytes"].to_numpy()
            size = t["size_bytes"].to_numpy()
            noise_r = lognormal_multiplier(world.rate_noise, rng.standard_normal(len(pos)))
            noise_l = lognormal_multiplier(world.locate_noise, rng.standard_normal(len(pos)))
            line = read_timeline(world, pos, start, start, size, noise_r, noise_l)
            prev_end = np.concatenate(([np.nan], (start + size)[:-1]))
            frames.append(
                pl.DataFrame(
                    {
                        "gap": np.concatenate(([np.nan], np.diff(pos))),
                        "position": pos,
                        "start_bytes": start,
                        "gap_bytes": start - prev_end,
                        "size_bytes": size,
                        "observed_s": line.duration_s,
                    }
                ).with_columns(
                    pl.col("gap").fill_nan(None).cast(pl.Int64),
                    pl.col("gap_bytes").fill_nan(None).cast(pl.Int64),
                )
            )
    logs = pl.concat(frames)
    params, _ = fit_locate_terms(logs, params, FILE_BYTES)
    params, _ = fit_locate_scale(logs, params, FILE_BYTES)
    return params


def request(tape: pl.DataFrame, kind: str, rng: np.random.Generator) -> pl.DataFrame:
    """The files of one request on `tape`: scattered, contiguous or aggregate (K files)."""
    if kind == "scattered":
        pick = np.sort(rng.choice(tape.height, K, replace=False))
    elif kind == "contiguous":
        first = int(rng.integers(0, tape.height - K))
        pick = np.arange(first, first + K)
    else:  # aggregate-heavy: every member of 50 aggregates, 1,000 members
        objects = tape.height // MEMBERS
        chosen = np.sort(rng.choice(objects, K // MEMBERS, replace=False))
        pick = (chosen[:, None] * MEMBERS + np.arange(MEMBERS)[None, :]).ravel()
    return tape[pick]


def timed(
    wanted: pl.DataFrame, media: str, params: ModelParams, order: str, world: PhysicsParams
) -> tuple[float, float]:
    """(predicted, world) seconds from the loaded tape to the rewound tape."""
    lean = wanted.with_columns(
        pl.lit(1, pl.Int64).alias("vid"),
        pl.lit(media).alias("media_type"),
        pl.lit(float(FILE_BYTES)).alias("avg_object_bytes"),
    )
    ordered = in_read_order(lean, order, {media: params}, cache=OrderCache())
    times = file_times(ordered, {media: params}, key=("vid",))
    mount = tape_times(ordered, {media: params}, key=("vid",), per_file=times).row(0, named=True)
    # From the loaded tape to the rewound tape, as the world's time_read_order counts it: the
    # reads and the final rewind, priced from where the last read ends.
    predicted = float(mount["total_s"] - mount["mount_s"] - mount["unload_s"])
    offset = times["offset_bytes"].fill_null(0).to_numpy()
    obj = times["start_bytes"].to_numpy()
    world_s = time_read_order(
        world,
        times["position"].to_numpy(),
        obj,
        times["size_bytes"].to_numpy(),
        address_bytes=obj + offset,
    ).total_s
    return predicted, world_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print("\n1. Predicted (one price of a move, calibrated) against world time, s")
    print(
        f"{'media':<9}{'request':<12}{'factors (base travel wrap band dir back) x scale':<50}"
        f"{'position':>10}{'world':>10}{'error':>8}{'RAO':>10}{'world':>10}{'error':>8}"
    )
    gains = []
    for media in MEDIA:
        rng = np.random.default_rng(args.seed)
        world = default_physics(BY_NAME[media])
        say(f"{media}: calibrating")
        params = calibrated(media, world, rng)
        factors = " ".join(f"{getattr(params, f):.2f}" for f in TERM_FACTORS)
        for kind in ("scattered", "contiguous", "aggregate"):
            tape = tape_of(media, aggregates=kind == "aggregate")
            wanted = request(tape, kind, rng)
            say(f"{media} {kind}")
            pos_p, pos_w = timed(wanted, media, params, "position", world)
            rao_p, rao_w = timed(wanted, media, params, "rao", world)
            print(
                f"{media:<9}{kind:<12}{factors + f' x {params.locate_scale:.2f}':<50}"
                f"{pos_p:>10,.0f}{pos_w:>10,.0f}{pos_p / pos_w - 1:>+8.1%}"
                f"{rao_p:>10,.0f}{rao_w:>10,.0f}{rao_p / rao_w - 1:>+8.1%}"
            )
            gains.append((media, kind, pos_p, rao_p, pos_w, rao_w))
    print("\n2. RAO against position order, whole time from the loaded tape to the rewound tape")
    print(f"{'media':<9}{'request':<12}{'by the price':>14}{'in the world':>14}")
    for media, kind, pos_p, rao_p, pos_w, rao_w in gains:
        print(f"{media:<9}{kind:<12}{1 - rao_p / pos_p:>14.1%}{1 - rao_w / pos_w:>14.1%}")


if __name__ == "__main__":
    main()
