"""Read order on one mounted tape (RAO) against position order, replayed in the world's physics.

Run: .venv/bin/python bench/bench_rao.py [--object-mb 300] [--seed 1]. The engine plans with its
own estimate (tapelens.analysis.geometry: places from the sizes before each file, its locate
costs); each order is then timed in the synthetic world's independent serpentine physics
(tapelens.world.physics.time_read_order, no noise), from the loaded tape to the rewound tape.
Prints four tables:

1. scattered reads: k files at random on one full LTO-8 / LTO-9 tape, world time under RAO and
   under position order (target: >= ~50% less at k = 100-1,000, CTA's reported reduction);
2. the time to compute the order (target: <= 2 s for k = 10,000), and for a larger set;
3. whole-dataset recalls (k consecutive files): RAO never slower than position order;
4. predicted (the engine's geometry, with the per-file overhead and streaming rate a calibration
   recovers from the world's logs) against world time for scattered recalls (target: within 15%);
5. how far any order could go, by the engine's own costs: a lower bound on the positioning time
   (every read is reached once, at no less than its cheapest way in, from another read or from
   the load point), against RAO's positioning and position order's.

Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import replace

import numpy as np

from tapelens.analysis.geometry.media import geometry
from tapelens.analysis.geometry.place import places
from tapelens.analysis.geometry.rao import cost_matrix, path_s, plan_order, position_order
from tapelens.media import BY_NAME
from tapelens.world.physics import PhysicsParams, default_physics, time_read_order

MB = 1_000_000
MEDIA = ("LTO-8", "LTO-9")
SCATTERED_K = (10, 100, 1_000, 10_000)
REPEATS = {10: 20, 100: 10, 1_000: 3, 10_000: 1}
CONTIGUOUS_K = (10, 100, 1_000, 10_000)
FILL = 0.97  # share of the tape's capacity the files take


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def full_tape(media: str, object_mb: float, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """(position, start bytes, size bytes) of the files of one full tape: log-normal sizes
    (sigma 1) of mean `object_mb`, written one after the other from position 1."""
    capacity = BY_NAME[media].capacity_bytes
    n = int(FILL * capacity / (object_mb * MB))
    sizes = rng.lognormal(0.0, 1.0, n)
    sizes = np.maximum((sizes * FILL * capacity / sizes.sum()).astype(np.int64), 1)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    return np.arange(1, n + 1, dtype=np.int64), starts, sizes


def world_s(world: PhysicsParams, pos: np.ndarray, start: np.ndarray, size: np.ndarray,
            order: np.ndarray) -> float:  # fmt: skip
    return time_read_order(world, pos, start, size, order).total_s


def plan(media: str, start: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, float, str]:
    """The engine's order (indices), its compute time and the method that won."""
    g = geometry(media)
    t0 = time.perf_counter()
    result = plan_order(places(start, size, g), g)
    return result.order, time.perf_counter() - t0, result.method


def predicted_s(media: str, world: PhysicsParams, start: np.ndarray, size: np.ndarray,
                order: np.ndarray) -> float:  # fmt: skip
    """The engine's estimate of an order: its locate costs, with the streaming rate and the
    per-file overhead set to the world's effective values (what calibration recovers)."""
    g = replace(geometry(media), rate_mb_s=world.rate_mb_s)
    return path_s(places(start, size, g), order, g) + len(order) * world.overhead_s


def scattered(object_mb: float, seed: int) -> list[tuple[str, int, float, float, float, float]]:
    print("\n1. Scattered reads, world time (s, loaded to rewound), mean over repeats")
    print(f"{'media':<7}{'k':>7}{'repeats':>8}{'position':>12}{'RAO':>12}{'reduction':>11}"
          f"{'locate red.':>12}  method")  # fmt: skip
    rows = []
    for media in MEDIA:
        world = default_physics(BY_NAME[media])
        rng = np.random.default_rng(seed)
        pos, start, size = full_tape(media, object_mb, rng)
        for k in SCATTERED_K:
            pos_t, rao_t, pos_loc, rao_loc, pred_pos, pred_rao = [], [], [], [], [], []
            methods = set()
            for _ in range(REPEATS[k]):
                pick = np.sort(rng.choice(len(pos), size=k, replace=False))
                p, s, z = pos[pick], start[pick], size[pick]
                say(f"{media} k={k}")
                order, _, method = plan(media, s, z)
                methods.add(method)
                by_pos = position_order(places(s, z, geometry(media)))
                a = time_read_order(world, p, s, z, by_pos)
                b = time_read_order(world, p, s, z, order)
                pos_t.append(a.total_s)
                rao_t.append(b.total_s)
                pos_loc.append(a.positioning_s)
                rao_loc.append(b.positioning_s)
                pred_pos.append(predicted_s(media, world, s, z, by_pos))
                pred_rao.append(predicted_s(media, world, s, z, order))
            mp, mr = float(np.mean(pos_t)), float(np.mean(rao_t))
            loc = 1 - np.mean(rao_loc) / np.mean(pos_loc)
            print(f"{media:<7}{k:>7,}{REPEATS[k]:>8}{mp:>12,.0f}{mr:>12,.0f}{1 - mr / mp:>11.1%}"
                  f"{loc:>12.1%}  {'/'.join(sorted(methods))}")  # fmt: skip
            err_pos = float(np.mean(np.abs(np.array(pred_pos) / np.array(pos_t) - 1)))
            err_rao = float(np.mean(np.abs(np.array(pred_rao) / np.array(rao_t) - 1)))
            rows.append((media, k, mp, mr, err_pos, err_rao))
    return [(m, k, mp, mr, ep, er) for m, k, mp, mr, ep, er in rows]


def compute_time(object_mb: float, seed: int) -> None:
    print("\n2. Time to compute the order (wall s, default budget 1.5 s)")
    print(f"{'media':<7}{'k':>8}{'seconds':>9}  method")
    for media in MEDIA:
        rng = np.random.default_rng(seed + 1)
        pos, start, size = full_tape(media, object_mb, rng)
        for k in (10_000, min(40_000, len(pos))):
            pick = np.sort(rng.choice(len(pos), size=k, replace=False))
            say(f"{media} order k={k}")
            _, seconds, method = plan(media, start[pick], size[pick])
            print(f"{media:<7}{k:>8,}{seconds:>9.2f}  {method}")


def contiguous(object_mb: float, seed: int) -> None:
    print("\n3. Whole-dataset recalls (k consecutive files), world time (s)")
    print(f"{'media':<7}{'k':>7}{'position':>12}{'RAO':>12}{'RAO - position':>16}  method")
    for media in MEDIA:
        world = default_physics(BY_NAME[media])
        rng = np.random.default_rng(seed + 2)
        pos, start, size = full_tape(media, object_mb, rng)
        for k in CONTIGUOUS_K:
            first = int(rng.integers(0, len(pos) - k))
            pick = np.arange(first, first + k)
            p, s, z = pos[pick], start[pick], size[pick]
            say(f"{media} contiguous k={k}")
            order, _, method = plan(media, s, z)
            by_pos = position_order(places(s, z, geometry(media)))
            a, b = world_s(world, p, s, z, by_pos), world_s(world, p, s, z, order)
            print(f"{media:<7}{k:>7,}{a:>12,.0f}{b:>12,.0f}{b - a:>16,.1f}  {method}")


BOUND_K = (10, 100, 1_000)


def bound(object_mb: float, seed: int) -> None:
    """Positioning (seconds, the engine's costs, no rewind): position order, RAO, and the
    assignment bound no order can beat; the largest reduction any order could reach."""
    print("\n5. Positioning by the engine's costs: position order, RAO, a bound no order beats")
    print(f"{'media':<7}{'k':>7}{'position':>11}{'RAO':>9}{'bound':>9}"
          f"{'RAO red.':>10}{'best possible':>15}")  # fmt: skip
    for media in MEDIA:
        g = geometry(media)
        rng = np.random.default_rng(seed)
        pos, start, size = full_tape(media, object_mb, rng)
        for k in BOUND_K:
            totals = np.zeros(3)
            for _ in range(REPEATS[k]):
                pick = np.sort(rng.choice(len(pos), size=k, replace=False))
                where = places(start[pick], size[pick], g)
                streaming = float((size[pick] / (g.rate_mb_s * MB)).sum())
                result = plan_order(where, g, rewind=False)
                costs = cost_matrix(where, g, rewind=False)  # node k: the load point
                np.fill_diagonal(costs, np.inf)
                lowest = float(costs[:, :k].min(axis=0).sum())
                totals += (result.position_s - streaming, result.total_s - streaming, lowest)
            p, r, b = totals / REPEATS[k]
            print(f"{media:<7}{k:>7,}{p:>11,.0f}{r:>9,.0f}{b:>9,.0f}{1 - r / p:>10.1%}"
                  f"{1 - b / p:>15.1%}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--object-mb", type=float, default=300.0, help="mean file size")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    cpus = os.cpu_count()
    print(f"machine: {platform.processor() or platform.machine()}, {cpus} cores, "
          f"Python {platform.python_version()}; files of mean {args.object_mb:g} MB")  # fmt: skip
    rows = scattered(args.object_mb, args.seed)
    compute_time(args.object_mb, args.seed)
    contiguous(args.object_mb, args.seed)
    print("\n4. Predicted (engine geometry) against world time, scattered reads: mean |error|")
    print(f"{'media':<7}{'k':>7}{'position order':>16}{'RAO order':>11}")
    for media, k, _, _, err_pos, err_rao in rows:
        print(f"{media:<7}{k:>7,}{err_pos:>16.1%}{err_rao:>11.1%}")
    bound(args.object_mb, args.seed)


if __name__ == "__main__":
    main()
