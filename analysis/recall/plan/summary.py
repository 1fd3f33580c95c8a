"""A recall plan's summary for a person: what is read, how long it takes, what bounds it, what
the usual ways cost. Every duration as h:mm:ss, as every table prints one; every figure named
for what it counts (files read, drive time of all mounts, the copy choice's estimate)."""

from __future__ import annotations

from typing import Any

# What each part of a bound is (planner.schedule_bound, engine.candidate_bounds).
BOUND_NAMES = {
    "work_over_drives_s": "drive work over the drives",
    "longest_tape_s": "the longest tape",
    "drive_compatibility_s": "drive work over the drives that read it",
    "group_limit_s": "a group's work over the drives it may hold",
    "single_file_s": "the longest single file",
}
BASELINE_NAMES = {
    "fifo": "FIFO direct",
    "newest_copy": "newest copy",
    "position_order": "position order",
}


def duration(seconds: float) -> str:
    """h:mm:ss (days as `1d 2:03:04`), as every table prints a duration."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    clock = f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{days}d {clock}" if days else clock


def summary_text(summary: dict[str, Any]) -> str:
    """The summary JSON (planner.summarise) as the lines `plan recall` prints."""
    drives = ", ".join(f"{d}:{n}" for d, n in summary["drives"].items())
    choice = summary["copy_choice"]
    makespan = summary["makespan_s"]
    lines = [
        f"files      {summary['files']:,} read ({summary['bytes'] / 1e12:.3f} TB) on "
        f"{summary['tapes']:,} tapes, {summary['mounts']:,} mounts",
        f"drives     {drives}, policy {summary['policy']}",
        f"makespan   {duration(makespan)} ({makespan:,.0f} s), {summary['rate_mb_s']:,.1f} MB/s",
        *bound_lines(summary),
        f"drive time {duration(summary['drive_time_s'])} of mounts and reads, every drive's"
        f" busy time added ({summary['mounts']:,} mounts)",
        f"copies     {choice['method']}: the cheapest set, estimated at"
        f" {duration(choice['objective_s'])} of drive time (at least"
        f" {duration(choice['bound'])}, {choice['bound_kind']}); kept: {summary['copy_set']}",
        *placement_lines(summary),
        f"problems   {len(summary['not_found'])} requests not found, "
        f"{summary['unavailable']['files']:,} files unavailable",
    ]
    for name, base in summary["baselines"].items():
        speedup = summary["speedups"].get(name)
        label = BASELINE_NAMES.get(name, name)
        gain = f", planned is {speedup:.2f}x faster" if speedup else ""
        lines.append(
            f"baseline   {label}: {duration(base['makespan_s'])}, {base['mounts']:,} mounts{gain}"
        )
    for name, done in summary["requesters"].items():
        lines.append(
            f"requester  {name}: {done['files']:,} files, last read at "
            f"{duration(done['completion_s'])}"
        )
    return "\n".join(lines) + "\n"


def bound_lines(summary: dict[str, Any]) -> list[str]:
    """The bound that explains the makespan (over this plan's own mounts), named by the part
    that decides it and the plan's distance from it; then the one no plan of the requests can
    beat whatever copies it reads."""
    own = summary["schedule_bound_s"]
    own_by = BOUND_NAMES.get(summary["schedule_bound_by"], summary["schedule_bound_by"])
    any_by = BOUND_NAMES.get(summary["lower_bound_by"], summary["lower_bound_by"])
    return [
        f"bound      {duration(own)}, {own_by}, for this plan's mounts: makespan is"
        f" {summary['makespan_over_schedule_bound']:.3f} x it",
        f"           {duration(summary['lower_bound_s'])}, {any_by}, for any copies:"
        " no plan of these requests on these drives is faster",
    ]


def placement_lines(summary: dict[str, Any]) -> list[str]:
    """What the placement of the whole datasets asked for costs (stored by the marts build)."""
    placement = summary.get("placement")
    if not placement:
        return []
    n = placement["datasets"]
    return [
        f"placement  {n:,} whole dataset{'s' if n != 1 else ''}:"
        f" {duration(placement['placement_cost_s'])} of drive time beyond ideal placement"
        f" (placement_cost_s), of {duration(placement['drive_s'])} as placed"
    ]
