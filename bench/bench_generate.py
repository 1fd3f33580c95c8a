"""Synthetic site generator benchmark: `tapelens demo generate` at 1 M and 10 M copies.

    .venv/bin/python bench/bench_generate.py                       # 1 M and 10 M files (bnl)
    .venv/bin/python bench/bench_generate.py --files 200000 --files 1000000 --profile gridka

Each size runs the real command in a child process and reports wall time, copies written per
second (live copies in the catalogs) and the child's peak RSS; the target is under ~2 GB at 10 M.
Sites are written under bench/out/generate/ and removed afterwards unless --keep.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import TAPELENS, machine, measure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def tree_bytes(root: Path) -> int:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--files", type=int, action="append", help="site size (repeatable)")
    ap.add_argument("--profile", default="bnl", choices=("bnl", "gridka", "cern", "fnal"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--no-history", action="store_true", help="catalogs and truth only")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "generate")
    ap.add_argument("--keep", action="store_true", help="keep the generated sites")
    args = ap.parse_args()
    sizes = args.files or [1_000_000, 10_000_000]

    print(f"machine: {machine()}")
    print("| files | copies | wall s | copies/s | peak RSS MB | output MB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        out = args.out / f"{args.profile}-{n}"
        if out.exists():
            shutil.rmtree(out)
        argv = [TAPELENS, "demo", "generate", str(out), "--files", str(n), "--seed", str(args.seed)]
        argv += ["--profile", args.profile]
        argv += ["--gzip"] if args.gzip else []
        argv += ["--no-history"] if args.no_history else []
        timed = measure(argv)
        found = re.search(r"^copies\s+([\d,]+)", timed.stdout, re.MULTILINE)
        copies = int(found.group(1).replace(",", "")) if found else 0
        size_mb = tree_bytes(out) / 1e6
        print(
            f"| {n:,} | {copies:,} | {timed.seconds:.1f} | {copies / timed.seconds:,.0f} "
            f"| {timed.peak_rss_mb:,.0f} | {size_mb:,.0f} |",
            flush=True,
        )
        if not args.keep:
            shutil.rmtree(out)


if __name__ == "__main__":
    main()
