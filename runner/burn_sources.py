"""Which burn a probe is built against (a side of the upgrade check, `fuzz --burn`): a published version,
`latest` (the newest version the registry has, as `cargo info` reports it), or
a local checkout. Validated before anything reaches a manifest."""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import BadInput, Infrastructure
from .escape import quote
from .inputs import MAX_PATH_CHARS, check_path_argument
from .paths import PROBE_MANIFEST
from .versions import is_version


@dataclass(frozen=True)
class BurnSource:
    version: str | None = None  # a published version, or
    path: Path | None = None  # the folder of a local burn crate

    @property
    def label(self) -> str:
        return self.version if self.version else f"path:{self.path}"

    @property
    def slug(self) -> str:
        if self.version:
            return f"burn-{self.version}"
        return "burn-path-" + hashlib.sha256(str(self.path).encode()).hexdigest()[:12]


def pinned_version() -> str:
    """The burn version the project pins (rust_probe/Cargo.toml, `=X.Y.Z`)."""
    manifest = tomllib.loads(PROBE_MANIFEST.read_text())
    requirement: str = manifest["dependencies"]["burn"]["version"]
    return requirement.lstrip("=")


def _burn_crate_dir(folder: Path) -> Path | None:
    for candidate in (folder, folder / "crates" / "burn"):
        manifest = candidate / "Cargo.toml"
        if manifest.is_file():
            try:
                name = tomllib.loads(manifest.read_text()).get("package", {}).get("name")
            except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
                continue
            if name == "burn":
                return candidate.resolve()
    return None


def parse(argument: str, option: str) -> BurnSource | str:
    """A source from --from/--to; the string "latest" is returned as is."""
    if argument == "latest":
        return "latest"
    if not argument.strip():
        raise BadInput(f"{option}: empty; give a semantic version (e.g. 0.22.0), 'latest' or a folder")
    if len(argument) > MAX_PATH_CHARS:
        raise BadInput(
            f"{option}: {len(argument)} characters; not a version, and longer than any folder "
            f"path accepted ({MAX_PATH_CHARS})"
        )
    if is_version(argument):
        return BurnSource(version=argument)
    try:
        check_path_argument(argument, option)
    except BadInput as err:
        raise BadInput(f"{err}; and not a semantic version (e.g. 0.22.0) or 'latest'") from None
    try:
        argument.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8, as Python decodes them from argv
        raise BadInput(
            f"{option} {quote(argument)}: a path that is not UTF-8; cargo cannot name it in a Cargo.toml"
        ) from None
    folder = Path(argument)
    if folder.is_dir():
        crate = _burn_crate_dir(folder)
        if crate is None:
            raise BadInput(
                f"{option} {argument}: the folder holds no Cargo.toml of the burn crate "
                "(looked at ./Cargo.toml and ./crates/burn/Cargo.toml)"
            )
        return BurnSource(path=crate)
    raise BadInput(
        f"{option} {quote(argument)}: not a semantic version (e.g. 0.22.0 or 0.23.0-pre.1), "
        "'latest', or an existing folder holding burn's Cargo.toml"
    )


_VERSION_LINE = re.compile(r"^version:\s*(\S+)", re.MULTILINE)


def _cargo_info(spec: str) -> subprocess.CompletedProcess[str]:
    # Outside any workspace: inside this one, `cargo info burn` reports the
    # locked version instead of the registry's newest.
    try:
        with tempfile.TemporaryDirectory(prefix="burn-info-") as neutral:
            return subprocess.run(["cargo", "info", spec], capture_output=True, text=True, timeout=300, cwd=neutral)
    except FileNotFoundError:
        raise Infrastructure("cargo is not installed: install Rust (1.95 or newer)") from None
    except subprocess.TimeoutExpired:
        raise Infrastructure(f"`cargo info {spec}` did not answer within 300 s") from None


def resolve(source: BurnSource | str) -> BurnSource:
    """Ask the registry: `latest` becomes a version; a version must exist (exit 3 if not)."""
    if isinstance(source, str):  # "latest"
        out = _cargo_info("burn")
        match = _VERSION_LINE.search(out.stdout)
        if out.returncode != 0 or not match:
            raise Infrastructure(f"could not ask the registry for burn's newest version: {out.stderr.strip()[-500:]}")
        return BurnSource(version=match.group(1))
    if source.version:
        out = _cargo_info(f"burn@{source.version}")
        if out.returncode != 0:
            detail = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "no answer"
            raise Infrastructure(f"burn {source.version} is not available from the registry: {detail}")
    return source
