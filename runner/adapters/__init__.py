"""One module per framework and case kind. Each exposes

    run(mode: str, params: dict, progress: Callable[[dict], None]) -> dict
    versions() -> dict

and returns the framework-neutral run record: ``outcome`` ("ok" or "panic"),
``panic``, ``step_ms``, ``checkpoints`` (each with ``step``, ``ms_per_step``,
``rss_delta_mib``, ``tracked`` and the framework's raw ``flags``). A worker
imports exactly one of them (see ``runner.frameworks``).
"""
