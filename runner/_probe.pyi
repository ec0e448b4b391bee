"""The burn side: the p10 loop and the program interpreter of ``rust_probe`` (burn 0.22.1, Flex + Autodiff), built by maturin.

What it returns is described once, by the Rust structs of ``rust_probe/src/record.rs``
(serialized into plain dicts and lists; NaN and infinities kept), and validated on
this side by ``runner.model.results`` (``RawRun`` for both, ``InterpreterResult`` for
programs); ``tests/test_contract.py`` holds the models to the structs' JSON Schema
(``record_schemas()``). The modes, limits and operation table are generated from
``runner/contract/`` (``CONTRACT_DIGEST`` names the contract this build was made from).
"""

from typing import Any, Callable, Literal, Sequence, TypedDict

MODES: list[str]
"""The p10 modes (``runner.contract.p10.MODES``)."""

BURN_VERSION: str

CONTRACT_DIGEST: str
"""``runner.contract.rust.digest()`` of the contract this build was generated from."""

class BuildInfo(TypedDict):
    burn: str
    rustc: str
    profile: Literal["release", "debug"]
    probe: str
    backend: str
    sources: str
    """A digest of the sources this build was made from (``runner.probe_build.sources_digest``)."""

def run_p10(
    mode: str,
    *,
    d_in: int = ...,
    d_out: int = ...,
    batch: int = ...,
    lr: float = ...,
    steps: int = ...,
    checkpoints: Sequence[int] | None = None,
    ema_decay: float = ...,
    seed: int = ...,
    rss_every: int = ...,
    busy_wait_us: int = ...,
    progress: Callable[[dict[str, Any]], object] | None = None,
) -> dict[str, Any]:
    """Run the p10 loop once; a ``P10Result`` record. Bad arguments raise ``ValueError`` naming the parameter.

    The defaults are ``runner.contract.p10.DEFAULTS``. A panic inside burn does not raise: it
    comes back as ``outcome == "panic"`` with ``panic`` filled in. ``progress`` is called with
    each checkpoint (a ``P10Checkpoint``) as it is recorded; an exception it raises stops the
    run and is re-raised.
    """

def build_info() -> BuildInfo:
    """What went into this build: burn version, rustc, cargo profile, a digest of the probe's sources."""

PROGRAM_IR_VERSION: int
"""The ``ir_version`` ``run_program`` reads."""

PROGRAM_OPS: dict[str, Literal["supported", "unsupported"]]
"""Every operation name of the IR, with burn 0.22.1's support (from the contract)."""

def run_program(
    ir_json: str,
    *,
    progress: Callable[[dict[str, Any]], object] | None = None,
) -> dict[str, Any]:
    """Run one program IR (JSON text) on burn; a ``ProgramResult`` record. Bad IR raises ``ValueError`` naming the field.

    A burn panic does not raise: it is ``outcome == "panic"`` with ``failure``.
    ``progress`` is called with each checkpoint of the timed loop; an exception
    it raises stops the run and is re-raised.
    """

def run_programs(ir_jsons: Sequence[str]) -> list[dict[str, Any]]:
    """Run a batch of program IRs, each isolated (a panic in one does not affect the next).

    Every IR is checked before any runs; bad IR raises ``ValueError`` naming ``ir_jsons[i]`` and the field.
    """

def burn_defaults() -> dict[str, Any]:
    """burn's own default of each omittable attribute, read from burn 0.22.1's configs
    (``Config::new()``): ``"sgd.dampening"`` (an operation's attribute) or ``"Conv2d.stride"`` (a module
    kind's) -> the value burn uses when a port leaves the ``with_*`` call out (``None``: a setting whose
    default is none, such as gradient clipping). An attribute burn has no setting for is absent."""

def record_schemas() -> dict[str, str]:
    """The JSON Schema (as JSON text) of each record the probe returns: ``P10Result``, ``ProgramResult``."""
