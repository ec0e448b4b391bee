"""Hypothesis strategies for program tests: generated source programs and syntax-like text."""

from __future__ import annotations

from hypothesis import strategies as st

_UNARY = ["relu", "exp", "tanh", "sigmoid", "abs", "clone", "detach", "transpose", "neg"]
_TENSORS = ["x", "w", "lin.weight"]


@st.composite
def expressions(draw, names, depth=0):
    leaf = draw(st.sampled_from(names))
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        return leaf
    kind = draw(st.integers(0, 7))
    a = draw(expressions(names, depth + 1))
    number = draw(
        st.one_of(
            st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
            st.integers(-100, 100),
        )
    )
    if kind == 0:
        b = draw(expressions(names, depth + 1))
        return f"({a}) {draw(st.sampled_from(['+', '-', '*', '/', '@']))} ({b})"
    if kind == 1:
        return f"({a}) {draw(st.sampled_from(['+', '-', '*']))} {number!r}"
    if kind == 2:
        return f"{number!r} {draw(st.sampled_from(['+', '*']))} ({a})"
    if kind == 3:
        return f"({a}) ** {draw(st.integers(-3, 4))}"
    if kind == 4:
        op = draw(st.sampled_from(_UNARY))
        return f"-({a})" if op == "neg" else f"{op}({a})"
    if kind == 5:
        return f"sum_dim({a}, {draw(st.integers(0, 1))})"
    if kind == 6:
        divisor = draw(st.sampled_from([2.0, -4.0, 0.5, 3.0, 1e-3]))
        return f"({a}) / {divisor!r}"
    return f"lin({a})"


@st.composite
def programs(draw):
    lines = ["x = input(2, 2)", "w = param(2, 2, init='uniform')", "lin = Linear(2, 2)", "opt = sgd(lr=0.1)"]
    names = list(_TENSORS)
    fresh = iter(f"v{i}" for i in range(100))

    def body(depth, indent):
        for _ in range(draw(st.integers(1, 4))):
            choice = draw(st.integers(0, 9))
            if choice >= 8 and depth >= 2:
                choice = 7
            pad = "    " * indent
            if choice <= 4:
                target = draw(st.sampled_from([n for n in names if n.startswith("v")] + [next(fresh)]))
                value = draw(expressions(names))
                lines.append(f"{pad}{target} = {value if '(' in value else f'clone({value})'}")
                if target not in names:
                    names.append(target)
            elif choice == 5:
                lines.append(f"{pad}observe({draw(st.sampled_from(names))}, values={draw(st.booleans())})")
            elif choice == 6:
                lines.append(f"{pad}backward(sum({draw(expressions(names))}), retain_graph=True)")
            elif choice == 7:
                lines.append(f"{pad}step(opt)")
            elif choice == 8:
                lines.append(f"{pad}for i{depth} in range({draw(st.integers(1, 5))}):")
                body(depth + 1, indent + 1)
            else:
                lines.append(f"{pad}with no_grad():")
                body(depth + 1, indent + 1)
            if draw(st.integers(0, 4)) == 0:
                lines.append("")

    body(0, 0)
    return "\n".join(lines) + "\n"


TOKENS = list("xyw0123456789 .,()[]=+-*/@:_\n\t'\"#") + [
    "relu",
    "for ",
    " in ",
    "range",
    "input",
    "param",
    "Linear",
    "with ",
    "no_grad",
    "observe",
    "sum_dim",
    "backward",
    "sgd",
    "lr=",
    "    ",
    "**",
    "e9",
    "lin",
    "True",
    "-",
    "lambda",
    "import ",
]
SYNTAXY = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)
