"""The identifiers generated code gives a program's names: one function for every namespace of
both reproducers (`rust/names.py` for burn, `render_torch` for PyTorch).

A program name (`^[A-Za-z][A-Za-z0-9_]{0,63}$`, a parser temporary `_t1`, a module's `lin.weight`)
may be a keyword of the target language, a builtin, or a name the generated code uses for itself
(`model`, `print_pending`, `torch`, ...). A `Namespace` gives each name the identifier it is
spelled as (`spell`), or that spelling followed by as many `_` as make it free: not reserved and
not given to another name. Distinct names therefore always get distinct identifiers, and the
same name always the same one.

An identifier may stand for several spellings in the generated text (`forms`): a Rust variable
that nothing reads is written with a leading `_`, so the local namespace of the Rust reproducer
counts `x` and `_x` as taken once `x` is given, and a temporary `_t1` cannot meet an unread
variable named `t1`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


def _same(name: str) -> str:
    return name


def _alone(ident: str) -> tuple[str, ...]:
    return (ident,)


class Namespace:
    """The identifiers of one namespace of generated code (see the module docstring)."""

    def __init__(
        self,
        reserved: Iterable[str],
        *,
        spell: Callable[[str], str] = _same,
        forms: Callable[[str], tuple[str, ...]] = _alone,
    ) -> None:
        self.reserved = frozenset(reserved)
        self._spell = spell
        self._forms = forms
        self._given: dict[str, str] = {}
        self._occupied: set[str] = set()

    def __call__(self, name: str) -> str:
        """The identifier of `name` (given now if it has none yet)."""
        ident = self._given.get(name)
        if ident is None:
            ident = self._spell(name)
            while not self.free(ident):
                ident += "_"
            self._given[name] = ident
            self._occupied.update(self._forms(ident))
        return ident

    def free(self, ident: str) -> bool:
        """No spelling of `ident` is reserved or taken by a name given before."""
        return not any(f in self.reserved or f in self._occupied for f in self._forms(ident))

    def given(self) -> dict[str, str]:
        """Every name given so far -> its identifier, in the order they were given."""
        return dict(self._given)
