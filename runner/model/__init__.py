"""Typed models: case files (`case`), the results document (`results`), their
migration from older versions (`migrate`), and the strict base (`base`)."""
