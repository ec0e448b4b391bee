"""The initial tensors of a program: seeded data for every declaration.

Each tensor has its own generator, seeded with `[seed, declaration index]`
(numpy's `SeedSequence` mixes the two), so adding a declaration after the
others leaves their data unchanged. Values are row-major, in torch layout (a
Linear's weight is `[d_out, d_in]`): float32 for float tensors, integers for
int tensors, 0/1 for bool tensors.
"""

from __future__ import annotations

import math
import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from ..errors import BadInput
from ..escape import quote
from .ir import ParsedProgram, Program, Settings, TensorDecl, TensorSpec, timed_loop

INIT_DOC = {
    "normal": "standard normal",
    "uniform": "uniform in [-1, 1)",
    "positive": "uniform in [0.5, 2) (for log, sqrt, a divisor)",
    "ones": "all 1",
    "zeros": "all 0",
    "arange": "0, 1, 2, ... row-major",
    "values": "the given values",
    "fan_in": "uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)) (torch's Linear and Conv init)",
    "randint": "integers uniform in [0, high)",
    "bernoulli": "each true with probability 1/2",
    "triu": "true above the diagonal of the last two dims (a causal attention mask)",
}


def make_data(spec: TensorSpec, seed: int, index: int) -> np.ndarray:
    """One tensor's values, flat (float32; integers and 0/1 exactly representable in it)."""
    n = math.prod(spec.shape)
    rng = np.random.default_rng([seed, index])
    init = spec.init
    if init == "normal":
        data = rng.standard_normal(n)
    elif init == "uniform":
        data = rng.uniform(-1.0, 1.0, n)
    elif init == "positive":
        data = rng.uniform(0.5, 2.0, n)
    elif init == "ones":
        data = np.ones(n)
    elif init == "zeros":
        data = np.zeros(n)
    elif init == "arange":
        data = np.arange(n, dtype=np.float64)
    elif init == "values":
        assert spec.values is not None
        data = np.asarray(spec.values, dtype=np.float64)
    elif init == "fan_in":
        assert spec.fan_in is not None
        bound = 1.0 / math.sqrt(spec.fan_in)
        data = rng.uniform(-bound, bound, n)
    elif init == "randint":
        assert spec.high is not None
        data = rng.integers(0, spec.high, n).astype(np.float64)
    elif init == "bernoulli":
        data = (rng.random(n) < 0.5).astype(np.float64)
    else:
        assert init == "triu"
        rows, cols = (spec.shape[-2], spec.shape[-1]) if len(spec.shape) >= 2 else (1, spec.shape[-1])
        upper = np.triu(np.ones((rows, cols)), k=1)
        data = np.broadcast_to(upper, (*spec.shape[:-2], rows, cols) if len(spec.shape) >= 2 else upper.shape)
        data = np.asarray(data, dtype=np.float64).reshape(-1)
    if spec.zero_row is not None:
        # torch's init zeroes this row (an Embedding's padding_idx): the shared data does too.
        data = np.array(data, dtype=np.float64).reshape(spec.shape[0], -1)
        data[spec.zero_row] = 0.0
        data = data.reshape(-1)
    return data.astype(np.float32)


def materialize(parsed: ParsedProgram, seed: int, settings: Settings | None = None) -> Program:
    """The program with its initial data made from `seed` (an integer >= 0).

    `settings` default: a checkpoint at the timed loop's last iteration (so observations inside it
    record values once), no RSS samples, no tracked tensor.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise BadInput(f"seed: an integer from 0 to 2**63 - 1, not {seed!r}")
    tensors = []
    for index, spec in enumerate(parsed.tensors):
        data = make_data(spec, seed, index)
        tensors.append(
            TensorDecl.model_construct(
                name=spec.name,
                role=spec.role,
                shape=list(spec.shape),
                data=data.tolist(),
                module=spec.module,
                dtype=spec.dtype,
            )
        )
    if settings is None:
        loop = timed_loop(parsed.body)
        count = loop.attrs["count"] if loop is not None else None
        settings = Settings(checkpoints=[count] if isinstance(count, int) else [])
    try:
        # The declarations and body were validated when `parsed` was made; the data is made here
        # (finite float32 by construction), so only the whole program's consistency is checked.
        return Program.model_validate(
            {"tensors": tensors, "modules": parsed.modules, "body": parsed.body, "settings": settings}
        )
    except ValidationError as e:
        raise BadInput(f"program: {e.errors()[0].get('msg', e)}") from None


@dataclass(frozen=True)
class Recipe:
    """A program before its data is made: what a loaded case keeps for each variant. Each run
    makes its own program (`make`) when it starts, so loading a case allocates no tensor data:
    memory at load is bounded by the source, whatever the variants declare (a run's own program
    is bounded by the IR's limits, checked when the source is parsed)."""

    parsed: ParsedProgram
    seed: int
    settings: Settings

    def make(self) -> Program:
        """The program with its data (`materialize`)."""
        return materialize(self.parsed, self.seed, self.settings)

    def dump(self) -> dict[str, Any]:
        """As JSON data (a few kilobytes: no tensor data but a data file's values), for another process."""
        return {
            "parsed": self.parsed.model_dump(mode="json"),
            "seed": self.seed,
            "settings": self.settings.model_dump(mode="json"),
        }

    @classmethod
    def load(cls, data: dict[str, Any]) -> Recipe:
        """The recipe `dump` gave; `pydantic.ValidationError` (a `ValueError`) if it is not one."""
        return cls(
            ParsedProgram.model_validate(data["parsed"]), int(data["seed"]), Settings.model_validate(data["settings"])
        )


# ---- initial values from a data file next to the case ------------------------------------------

MAX_DATA_FILE_BYTES = 512 << 20
"""A data file's size: far above what MAX_TOTAL_ELEMENTS float32 values take (64 MiB)."""


def read_values(path: Path, where: str) -> dict[str, np.ndarray]:
    """The arrays of a `.npz` file (numpy's own archive, read without pickle), by key; `BadInput`
    naming `where`, the file and what is wrong (missing, not a regular file, not an npz archive,
    an array of objects)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise BadInput(f"{where}: data file {quote(str(path))} does not exist") from None
    except OSError as err:
        raise BadInput(f"{where}: cannot read data file {quote(str(path))}: {err.strerror or err}") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{where}: data file {quote(str(path))} is not a regular file")
    if info.st_size > MAX_DATA_FILE_BYTES:
        raise BadInput(f"{where}: data file {quote(str(path))} has {info.st_size} bytes; at most {MAX_DATA_FILE_BYTES}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise BadInput(f"{where}: data file {quote(str(path))} is not an .npz archive (numpy.savez)")
            return {key: archive[key] for key in archive.files}
    except BadInput:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise BadInput(f"{where}: data file {quote(str(path))} is not a readable .npz archive: {err}") from None


def with_values(parsed: ParsedProgram, arrays: dict[str, np.ndarray], where: str) -> ParsedProgram:
    """`parsed` with the tensors named in `arrays` made from those values (init 'values'); every key
    must name a declared tensor of the same shape, with finite values (integers for an int tensor,
    0/1 for a bool one). `BadInput` naming `where` and the key."""
    by_name = {t.name: i for i, t in enumerate(parsed.tensors)}
    tensors = list(parsed.tensors)
    for key, array in arrays.items():
        index = by_name.get(key)
        if index is None:
            known = ", ".join(quote(t.name) for t in parsed.tensors[:12]) or "none"
            raise BadInput(f"{where}: key {quote(key)} names no declared tensor; declared: {known}")
        spec = tensors[index]
        if list(array.shape) != list(spec.shape):
            raise BadInput(
                f"{where}: key {quote(key)} has shape {list(array.shape)}; the program declares {list(spec.shape)}"
            )
        if array.dtype.kind not in "fiub":
            raise BadInput(f"{where}: key {quote(key)}: numbers expected, not dtype {array.dtype}")
        flat = np.asarray(array, dtype=np.float64).reshape(-1)
        try:
            tensors[index] = TensorSpec.model_validate(
                {
                    **spec.model_dump(exclude={"init", "values", "high", "fan_in", "zero_row"}),
                    "init": "values",
                    "values": flat.tolist(),
                }
            )
        except ValidationError as e:
            raise BadInput(f"{where}: key {quote(key)}: {e.errors()[0].get('msg', e)}") from None
    return ParsedProgram.model_construct(tensors=tensors, modules=parsed.modules, body=parsed.body)
