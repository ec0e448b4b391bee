"""The project's documents are its own: every file the README, the case files and the code cite
is in this repository, and every document in docs/ is listed in the README."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from runner.cases import load_case
from runner.paths import CASES_DIR, PROJECT_ROOT

DOCS = PROJECT_ROOT / "docs"


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, check=True)
    paths = [PROJECT_ROOT / n.decode() for n in listed.stdout.split(b"\0") if n]
    return [
        p
        for p in paths
        if p.suffix in {".md", ".toml", ".py", ".rs", ".pyi", ".sh", ".json"} or p.parent.name == "scripts"
    ]


def test_nothing_cites_a_document_outside_the_repository():
    # Recorded results (tests/data, JSON) included: a report rendered from them shows their sources.
    cited = [
        f"{path.relative_to(PROJECT_ROOT)}:{number}"
        for path in tracked_text_files()
        if path.is_file() and path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if re.search(r"shared/(docs|seeds)/|steering repo", line)
    ]
    assert cited == [], cited


def test_every_document_in_docs_is_listed_in_the_readme_and_every_cited_one_exists():
    readme = (PROJECT_ROOT / "README.md").read_text()
    for doc in DOCS.glob("*.md"):
        assert f"`docs/{doc.name}`" in readme, doc.name
    for cited in set(re.findall(r"`(docs/[\w.-]+\.md)`", readme)):
        assert (PROJECT_ROOT / cited).is_file(), cited


@pytest.mark.parametrize("path", sorted(CASES_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_a_case_source_in_this_repository_exists(path):
    case = load_case(path)
    sources = case.about.sources if case.about else []
    for source in sources:
        if not source.startswith(("docs/", "cases/")):
            continue  # an issue (tracel-ai/burn#N), a book chapter, a measurement
        file, _, anchor = source.partition(" ")
        assert (PROJECT_ROOT / file).is_file(), f"{path.name}: source {source!r}: no such file"
        if anchor:
            number = anchor.removeprefix("#")
            assert re.search(rf"^\| {re.escape(number)} \|", (PROJECT_ROOT / file).read_text(), re.M), (
                f"{path.name}: source {source!r}: {file} has no row {anchor}"
            )
