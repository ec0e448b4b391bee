"""Which burn the probe is built against, read from `rust_probe/Cargo.toml`: the one
place the version and features are written. The reproducer crates and the upgrade
check's probe builds depend on the same burn, spelled the same way."""

from __future__ import annotations

import functools
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

PROBE_MANIFEST = Path(__file__).resolve().parents[2] / "rust_probe" / "Cargo.toml"


@dataclass(frozen=True)
class BurnDependency:
    requirement: str
    """`=0.22.1`: the probe pins an exact release."""
    default_features: bool
    features: tuple[str, ...]

    @property
    def version(self) -> str:
        return self.requirement.lstrip("=")

    def toml_line(self, version: str | None = None) -> str:
        """The `burn = { ... }` line of a Cargo.toml that depends on this burn (or on
        another release `version`, with the same features)."""
        requirement = f"={version}" if version is not None else self.requirement
        features = ", ".join(json.dumps(f) for f in self.features)
        default = "" if self.default_features else "default-features = false, "
        return f"burn = {{ version = {json.dumps(requirement)}, {default}features = [{features}] }}"


@functools.cache
def dependency() -> BurnDependency:
    """The probe's burn dependency (a `ValueError` naming the file if it cannot be read)."""
    try:
        manifest = tomllib.loads(PROBE_MANIFEST.read_text(encoding="utf-8"))
        burn = manifest["dependencies"]["burn"]
        return BurnDependency(
            requirement=str(burn["version"]),
            default_features=bool(burn.get("default-features", True)),
            features=tuple(str(f) for f in burn.get("features", ())),
        )
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{PROBE_MANIFEST}: cannot read the burn dependency ({err})") from None


def pinned_version() -> str:
    """The burn release the probe pins: `0.22.1`."""
    return dependency().version
