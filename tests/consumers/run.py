"""Running the consumers' readers of tapelens' exports: ENDIT's hint-file lookup (Perl) and
dCache's tape-info reader (Java with Gson), each written for these tests from the consumer's
source (cited in endit_lookup.pl and TapeInfoRead.java). scripts/install-consumers installs
what they need."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

HERE = Path(__file__).parent
# The Gson version dCache's pom.xml pins, as scripts/install-consumers fetches it.
GSON_VERSION = "2.13.2"
GSON_JAR = (
    Path.home() / f".m2/repository/com/google/code/gson/gson/{GSON_VERSION}/gson-{GSON_VERSION}.jar"
)


def endit_lookup(
    hint_file: Path, pnfsids: list[str], request_dir: Path
) -> tuple[str, dict[str, str]]:
    """(what the retriever logs of the hint file, request -> the tape job it goes to) for
    request files named `pnfsids` in `request_dir`, as dCache's ENDIT provider writes them."""
    perl = shutil.which("perl")
    if perl is None:
        pytest.skip("perl is not installed (scripts/install-consumers)")
    request_dir.mkdir(parents=True, exist_ok=True)
    for pnfsid in pnfsids:
        (request_dir / pnfsid).write_text('{"file_size": 1}\n')
    done = subprocess.run(
        [perl, str(HERE / "endit_lookup.pl"), str(hint_file), str(request_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    first, *rest = done.stdout.splitlines()
    return first, dict(line.split("\t") for line in rest)


@cache
def _compiled(where: Path) -> Path:
    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("java is not installed (scripts/install-consumers installs a JDK)")
    assert GSON_JAR.is_file(), f"{GSON_JAR} is missing: run scripts/install-consumers"
    subprocess.run(
        [javac, "-cp", str(GSON_JAR), "-d", str(where), str(HERE / "TapeInfoRead.java")],
        check=True,
        capture_output=True,
    )
    return where


def dcache_reads(
    tapeinfo_dir: Path, fmt: str, surls: list[str], classes: Path
) -> tuple[dict[str, tuple[str, int] | None], dict[str, tuple[int, int] | None]]:
    """What dCache's tape-info reader finds for `surls`: (raw path -> (tape, size kB) or None,
    tape -> (capacity kB, filled kB) or None), the reader compiled into `classes`."""
    java = shutil.which("java")
    if java is None:
        pytest.skip("java is not installed (scripts/install-consumers installs a JDK)")
    where = _compiled(classes)
    done = subprocess.run(
        [java, "-cp", f"{where}:{GSON_JAR}", "TapeInfoRead", str(tapeinfo_dir), fmt],
        input="".join(s + "\n" for s in surls),
        capture_output=True,
        text=True,
        check=True,
    )
    files: dict[str, tuple[str, int] | None] = {}
    tapes: dict[str, tuple[int, int] | None] = {}
    for line in done.stdout.splitlines():
        kind, key, *rest = line.split("\t")
        if kind == "file":
            files[key] = None if rest == ["-"] else (rest[0], int(rest[1]))
        else:
            tapes[key] = None if rest == ["-"] else (int(rest[0]), int(rest[1]))
    return files, tapes
