"""One vocabulary: the same option name for the same thing in every command; the former
spellings still work but are not listed."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from tapelens.analysis.recall.schedule.drives import parse_drives
from tapelens.cli import cli
from tapelens.cli.common import aliased, assume_media_option, dataset_type_option, hidden_alias
from tapelens.errors import InputError

COMMANDS = [
    ["report", "gaps"],
    ["predict", "datasets"],
    ["plan", "dedup"],
    ["whatif", "placement"],
]


@pytest.mark.parametrize("command", COMMANDS)
def test_dataset_type_is_spelled_one_way(command: list[str]) -> None:
    shown = CliRunner().invoke(cli, [*command, "--help"]).output
    assert "--dataset-type" in shown and "--type " not in shown


def test_limits_and_assumed_media_are_spelled_one_way() -> None:
    repack = CliRunner().invoke(cli, ["plan", "repack", "--help"]).output
    assert "--limit" in repack and "--top" not in repack
    for command in (["simulate"], ["predict", "datasets"]):
        shown = CliRunner().invoke(cli, [*command, "--help"]).output
        assert "--assume-media" in shown and "--media " not in shown


@click.command()
@dataset_type_option
@assume_media_option
@hidden_alias("--top", "limit", type=int)
@click.option("--limit", type=int, default=20, callback=aliased("limit"))
def probe(dataset_type: str | None, assume_media: str | None, limit: int) -> None:
    click.echo(f"{dataset_type} {assume_media} {limit}")


@pytest.mark.parametrize(
    "argv,printed",
    [
        ([], "None None 20"),
        (["--type", "AOD", "--top", "5", "--media", "lto8"], "AOD LTO-8 5"),
        (["--dataset-type", "RAW", "--limit", "7", "--assume-media", "LTO-9"], "RAW LTO-9 7"),
        (["--limit", "3", "--type", "RAW"], "RAW None 3"),
    ],
)
def test_former_spellings_reach_the_same_option(argv: list[str], printed: str) -> None:
    result = CliRunner().invoke(probe, argv)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == printed


def test_an_unknown_media_type_is_refused_with_the_known_ones() -> None:
    result = CliRunner().invoke(probe, ["--assume-media", "LTO-99"])
    assert result.exit_code != 0 and "unknown media type 'LTO-99'" in result.output
    assert "LTO-8" in result.output


@pytest.mark.parametrize("spec,bad", [("LTO9:4,LT07:2", "LT07"), ("LTO10:2", "LTO10")])
def test_a_drive_type_the_media_catalog_does_not_know_is_refused(spec: str, bad: str) -> None:
    """A typo must not plan on drives that read nothing (every file 'unavailable', exit 0)."""
    with pytest.raises(InputError, match=f"unknown drive type '{bad}'") as raised:
        parse_drives(spec)
    assert "LTO-7" in str(raised.value) and "TS1160" in str(raised.value)
    assert parse_drives("lto9:4,LTO-7:2,TS1160=1") == {"LTO-9": 4, "LTO-7": 2, "TS1160": 1}


def test_exports_go_to_a_folder_in_every_plan() -> None:
    for command in (["plan", "recall"], ["plan", "repack"]):
        shown = CliRunner().invoke(cli, [*command, "--help"]).output
        assert "--export-dir" in shown and "--export-file" not in shown


# --- every command, walked --------------------------------------------------------------------

# Spellings of one idea: at most one of each set may be listed by any command (the others stay
# as hidden aliases).
ONE_IDEA = [
    {"--limit", "--top", "--max-rows", "--head"},
    {"--dataset-type", "--type"},
    {"--assume-media", "--default-media"},
    {"--media", "--media-type"},  # a filter on media type (throughput)
    {"--export-dir", "--export-file"},
    {"--min-files", "--min-n"},
    {"--sort", "--sort-by", "--order-by"},
    {"--drives", "--drive", "--drive-spec"},
    {"--desc", "--descending", "--reverse"},
]
RANKINGS = [["report", name] for name in ("gaps", "duplicates", "tapes", "occupancy", "rates")] + [
    ["predict", "datasets"],
    ["plan", "dedup"],
]


def commands() -> list[tuple[str, click.Command]]:
    """Every command of the command line, by its full name, its modules loaded."""
    found: list[tuple[str, click.Command]] = []

    def walk(group: click.Group, ctx: click.Context, path: str) -> None:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None, f"{path} {name}"
            full = f"{path} {name}".strip()
            if isinstance(command, click.Group):
                walk(command, click.Context(command, parent=ctx, info_name=name), full)
            if not isinstance(command, click.Group) or command.invoke_without_command:
                found.append((full, command))

    walk(cli, click.Context(cli, info_name="tapelens"), "")
    return found


def listed(command: click.Command) -> dict[str, click.Option]:
    """The options a command's --help lists, by each of their spellings."""
    return {
        name: param
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden
        for name in param.opts
    }


ALL = commands()


def test_the_walk_sees_every_command() -> None:
    names = {name for name, _ in ALL}
    assert {"plan recall", "plan dedup", "simulate", "whatif placement", "report gaps"} <= names
    assert len(names) >= 30


def test_no_command_lists_a_second_spelling_of_one_idea() -> None:
    seen: dict[str, set[str]] = {}
    for name, command in ALL:
        options = listed(command)
        for idea in ONE_IDEA:
            for spelling in idea & set(options):
                seen.setdefault(min(idea), set()).add(spelling)
                others = (idea - {spelling}) & set(options)
                assert not others, f"{name}: {spelling} and {others}"
    twice = {idea: spellings for idea, spellings in seen.items() if len(spellings) > 1}
    assert not twice, twice


def test_one_option_name_means_one_thing_everywhere() -> None:
    """--since/--until take the same time forms; --drives the same SPEC; --format and --by
    choose in one set of words (no `datasets` beside `dataset`); the sharing policy defaults
    as plan recall's does."""
    from tapelens.analysis.recall.schedule.policies import DEFAULT_POLICY, POLICIES

    forms: set[tuple[str, ...]] = set()
    by_words: set[str] = set()
    for name, command in ALL:
        options = listed(command)
        for flag in ("--since", "--until"):
            if flag in options:
                kind = options[flag].type
                assert isinstance(kind, click.DateTime), (name, flag)
                forms.add(tuple(kind.formats))
        if "--drives" in options:
            assert options["--drives"].metavar == "SPEC", name
        if "--by" in options:
            by_words |= set(options["--by"].type.choices)  # type: ignore[attr-defined]
        policy = options.get("--policy")
        choices = set(getattr(policy.type, "choices", ())) if policy is not None else set()
        if policy is not None and choices and choices <= set(POLICIES) and not policy.multiple:
            assert policy.default == DEFAULT_POLICY, name
    assert len(forms) == 1, forms
    plural = {w for w in by_words if w.endswith("s") and w[:-1] in by_words}
    assert not plural, plural


@pytest.mark.parametrize("command", RANKINGS, ids=" ".join)
def test_every_ranking_sorts_and_limits(command: list[str]) -> None:
    found = dict(ALL)[" ".join(command)]
    assert {"--sort", "--desc", "--limit"} <= set(listed(found))


# Options the CLI's shared decorators declare (tapelens/cli/common.py): every command that lists
# one lists it with the same type, default and help, so that no command declares its own copy.
SHARED = ("--sort-window", "--batch-bytes", "--write-drives", "--export-dir", "--sort", "--desc")


@pytest.mark.parametrize("flag", SHARED)
def test_a_shared_option_reads_the_same_in_every_command(flag: str) -> None:
    shapes: dict[tuple[str, str, str], list[str]] = {}
    for name, command in ALL:
        option = listed(command).get(flag)
        if option is not None:
            shape = (repr(option.type.to_info_dict()), repr(option.default), option.help or "")
            shapes.setdefault(shape, []).append(name)
    assert len(shapes) == 1, shapes


def test_plan_families_takes_the_write_stream_options_of_whatif_placement() -> None:
    families = listed(dict(ALL)["plan families"])
    placement = listed(dict(ALL)["whatif placement"])
    for flag in ("--sort-window", "--batch-bytes", "--write-drives", "--since", "--until"):
        assert flag in families and flag in placement, flag
        assert families[flag].help == placement[flag].help, flag
        assert families[flag].default == placement[flag].default, flag
