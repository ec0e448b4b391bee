"""Import the user's file, find the class and build the module (`--args` as keyword arguments),
with the weights of `--weights` if given. Importing the file runs its code, as any Python import
does: the command's help and the README say so. Every mistake is `BadInput` naming the file, the
class or the argument."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..escape import quote
from ..inputs import check_path_argument

TARGET = re.compile(r"^(?P<file>.+\.py):(?P<cls>[A-Za-z_][A-Za-z0-9_]*)$")
MAX_ARGS_CHARS = 10_000


@dataclass
class Loaded:
    module: Any  # the torch.nn.Module instance
    file: Path  # the user's file, resolved
    class_name: str


def split_target(text: str) -> tuple[Path, str]:
    """`FILE.py:CLASS` -> (file, class name)."""
    check_path_argument(text, "FILE.py:CLASS")
    m = TARGET.match(text)
    if m is None:
        raise BadInput(f"FILE.py:CLASS: expected a Python file and a class name, as in model.py:Net; got {quote(text)}")
    return Path(m.group("file")), m.group("cls")


def parse_args(text: str | None) -> dict[str, Any]:
    """`--args` JSON: an object of keyword arguments for the class."""
    if text is None:
        return {}
    if len(text) > MAX_ARGS_CHARS:
        raise BadInput(f"--args: {len(text)} characters; at most {MAX_ARGS_CHARS}")
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise BadInput(f"--args: not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise BadInput(f"--args: a JSON object of keyword arguments, as in '{{\"hidden\": 64}}'; got {quote(text)}")
    return value


def _user_frame(file: Path, tb: Any) -> str:
    """`file:line` of the deepest frame of the traceback in the user's file (else the deepest)."""
    frames = traceback.extract_tb(tb)
    mine = [f for f in frames if Path(f.filename).resolve() == file]
    chosen = mine or list(frames)
    return f"{chosen[-1].filename}:{chosen[-1].lineno}" if chosen else str(file)


def load(target: str, args: str | None, weights: str | None, seed: int = 0) -> Loaded:
    import torch

    path, class_name = split_target(target)
    if not path.is_file():
        raise BadInput(f"FILE.py:CLASS: no such file {quote(str(path))}")
    file = path.resolve()
    kwargs = parse_args(args)
    name = f"_burn_torch_diff_port_{abs(hash(str(file)))}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise BadInput(f"{path}: cannot be imported as a Python module")
    pymod = importlib.util.module_from_spec(spec)
    sys.modules[name] = pymod
    # The file's own folder first, so that its sibling imports resolve as they do for its author.
    sys.path.insert(0, str(file.parent))
    try:
        spec.loader.exec_module(pymod)
    except Exception as err:
        raise BadInput(
            f"{path}: importing it raised {type(err).__name__}: {err} ({_user_frame(file, err.__traceback__)})"
        ) from None
    finally:
        sys.path.remove(str(file.parent))
    cls = getattr(pymod, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        found = sorted(
            n
            for n, v in vars(pymod).items()
            if isinstance(v, type) and issubclass(v, torch.nn.Module) and v.__module__ == name
        )
        raise BadInput(
            f"{path}: no torch.nn.Module class {quote(class_name)}; its module classes: {', '.join(found) or 'none'}"
        )
    # The module's own initialization, seeded: the same weights every time the command runs.
    torch.manual_seed(seed)
    try:
        module = cls(**kwargs)
    except Exception as err:
        raise BadInput(
            f"{path}: {class_name}(**{quote(kwargs)}) raised {type(err).__name__}: {err} "
            f"({_user_frame(file, err.__traceback__)})"
        ) from None
    if weights is not None:
        load_weights(module, weights)
    module.train()
    return Loaded(module, file, class_name)


def load_weights(module: Any, weights: str) -> None:
    """`--weights`: a state dict saved with `torch.save`, read with `torch.load(weights_only=True)`."""
    import torch

    check_path_argument(weights, "--weights")
    if not Path(weights).is_file():
        raise BadInput(f"--weights: no such file {quote(weights)}")
    try:
        state = torch.load(weights, map_location="cpu", weights_only=True)
    except Exception as err:
        raise BadInput(
            f"--weights {quote(weights)}: not a state dict torch.load(weights_only=True) reads: {err}"
        ) from None
    if not isinstance(state, dict):
        raise BadInput(f"--weights {quote(weights)}: a state dict (a dict of tensors), not {type(state).__name__}")
    try:
        module.load_state_dict(state)
    except Exception as err:
        raise BadInput(f"--weights {quote(weights)}: does not fit the module: {err}") from None
