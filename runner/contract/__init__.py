"""The one description of what both interpreters share (operations, module kinds, limits, p10 modes, the burn
dependency), from which the Rust side is generated (`python3 -m runner.contract`).

A regular package (this file) so that the import layers (`[tool.importlinter]`) see it."""
