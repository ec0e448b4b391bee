"""The source syntax of programs: `parse` (text -> `ParsedProgram`) and `unparse` (back to text).

The source is a restricted subset of Python read with `ast` and never
executed. Nested expressions are flattened into IR statements whose results go
to temporaries `_t1`, `_t2`, ... (numbered in the order they are computed);
every statement made from one source statement has that statement's line.
`unparse` nests the temporaries back, and pads with blank lines so that every
statement lands on its line again: `parse(unparse(p)) == p` for every parsed
program `p`.

Every mistake, including hostile input (a huge source, deep nesting), is a
`BadInput` naming `where`, the line and what is valid.
"""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Sequence
from typing import Literal, NoReturn

from pydantic import ValidationError

from ..contract.limits import FLOAT32_MAX, MAX_DEPTH, MAX_ELEMENTS, MAX_RANK, MAX_STATEMENTS, MAX_TOTAL_ELEMENTS
from ..contract.ops import (
    ARG_NAME,
    DECLARATIONS,
    DTYPE_INITS,
    DTYPES,
    INITS,
    MODULE_SOURCES,
    MODULES,
    OMITTED,
    OPS,
    REQUIRED,
    RESERVED_NAMES,
    AttrSpec,
    AttrValue,
    ModuleSpec,
)
from ..contract.ops.spec import _Marker
from ..errors import BadInput
from .ir import (
    TEMP_NAME,
    USER_NAME,
    ModuleDecl,
    ParsedProgram,
    Program,
    ProgramIssue,
    Stmt,
    TensorDecl,
    TensorSpec,
    check_body,
    normalize_attrs,
)

MAX_SOURCE_CHARS = 200_000
MAX_DECLARATIONS = 500
"""Tensors and modules declared by one program (a module's tensors count with it)."""
MAX_EXPR_DEPTH = 40
"""Operations nested in one expression."""

Context = Literal["operand", "assign", "statement"]

_CALLABLE_OPS = tuple(name for name, spec in OPS.items() if spec.result != "block")
_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
_SYMBOLS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.MatMult: "@",
    ast.Pow: "**",
    ast.Mod: "%",
    ast.FloorDiv: "//",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
}
_VALID_STATEMENTS = (
    "valid statements: `NAME = operation`, an operation call such as `backward(loss)`, "
    "`for NAME in range(N):` and `with no_grad():`"
)


def parse(source: str, *, where: str) -> ParsedProgram:
    """The program in `source`; `BadInput` naming `where`, the line and the problem."""
    if not isinstance(source, str):
        raise BadInput(f"{where}: the program must be text, not {type(source).__name__}")
    if len(source) > MAX_SOURCE_CHARS:
        raise BadInput(f"{where}: the program has {len(source)} characters; at most {MAX_SOURCE_CHARS} are allowed")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename=where, mode="exec")
    except SyntaxError as e:
        line = f"line {e.lineno}: " if e.lineno else ""
        raise BadInput(f"{where}: {line}not valid program syntax: {e.msg}") from None
    except (RecursionError, MemoryError, ValueError, OverflowError):
        raise BadInput(
            f"{where}: the program is nested too deeply or too large to parse "
            f"(at most {MAX_EXPR_DEPTH} operations in one expression)"
        ) from None
    try:
        return _Parser(where).program(tree)
    except (RecursionError, MemoryError):
        raise BadInput(f"{where}: the program is nested too deeply or too large to parse") from None


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    msg = str(err.get("msg", e))
    return msg.removeprefix("Value error, ")


def _number(node: ast.expr) -> float | None:
    """The value of a number literal (`2`, `0.5`, `-1e-3`), or None when the node is not one."""
    negative = False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        negative, node = True, node.operand
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
        return None
    if not isinstance(node.value, (int, float)):
        return None
    try:
        value = float(node.value)
    except OverflowError:
        return math.inf
    return -value if negative else value


def _int_literal(node: ast.expr) -> int | None:
    negative = False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        negative, node = True, node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return -node.value if negative else node.value
    return None


def _show(node: ast.AST, limit: int = 60) -> str:
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError):  # pragma: no cover - unparse of a parsed tree
        return type(node).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Parser:
    def __init__(self, where: str) -> None:
        self.where = where
        self.tensors: list[TensorSpec] = []
        self.modules: list[ModuleDecl] = []
        self.declared: set[str] = set()
        self.module_names: set[str] = set()
        self.first_op_line: int | None = None
        self.index = 0
        self.temps = 0
        self.total_elements = 0
        self.last_line = 0

    def fail(self, line: int, message: str) -> NoReturn:
        raise BadInput(f"{self.where}: line {line}: {message}")

    # ---- statements -----------------------------------------------------------------------------

    def program(self, tree: ast.Module) -> ParsedProgram:
        body = self.block(tree.body, depth=0)
        try:
            check_body([(t.name, t.role, t.dtype) for t in self.tensors], self.modules, body)
        except ProgramIssue as e:
            raise BadInput(f"{self.where}: {e}") from None
        try:
            return ParsedProgram(tensors=self.tensors, modules=self.modules, body=body)
        except ValidationError as e:
            raise BadInput(f"{self.where}: {_first_error(e)}") from None

    def block(self, nodes: Sequence[ast.stmt], depth: int) -> list[Stmt]:
        out: list[Stmt] = []
        for node in nodes:
            line = node.lineno
            if line <= self.last_line:
                self.fail(line, "one statement per line (a block's body goes on the lines below its header)")
            self.last_line = node.end_lineno or line
            if isinstance(node, (ast.For, ast.With)):
                self.last_line = line  # its body follows
            if isinstance(node, ast.Assign):
                out.extend(self.assign(node, depth))
            elif isinstance(node, ast.Expr):
                self.note_operation(line)
                value = node.value
                if isinstance(value, (ast.Name, ast.Attribute, ast.Constant)):
                    self.fail(line, f"`{_show(value)}` alone does nothing; {_VALID_STATEMENTS}")
                self.expression(value, line, out, None, "statement", 0)
            elif isinstance(node, ast.For):
                self.note_operation(line)
                out.append(self.for_loop(node, depth))
            elif isinstance(node, ast.With):
                self.note_operation(line)
                out.append(self.with_block(node, depth))
            elif isinstance(node, ast.AugAssign):
                self.fail(line, "augmented assignment (`a += b`) is not part of the syntax; write `a = a + b`")
            else:
                self.fail(line, f"a `{type(node).__name__}` statement is not part of the syntax; {_VALID_STATEMENTS}")
            if self.index > MAX_STATEMENTS:
                self.fail(line, f"more than {MAX_STATEMENTS} operations")
        return out

    def note_operation(self, line: int) -> None:
        if self.first_op_line is None:
            self.first_op_line = line

    def assign(self, node: ast.Assign, depth: int) -> list[Stmt]:
        line = node.lineno
        if len(node.targets) != 1:
            self.fail(line, "assign to one name at a time (`a = b = ...` is not part of the syntax)")
        target = node.targets[0]
        if isinstance(target, ast.Attribute):
            self.fail(line, f"cannot assign to `{_show(target)}`: a module's params cannot be reassigned")
        if not isinstance(target, ast.Name):
            self.fail(line, f"assign to one name, as in `y = relu(x)`; not to `{_show(target)}`")
        name, value = target.id, node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in DECLARATIONS:
            if depth > 0:
                self.fail(line, f"declarations (`{value.func.id}(...)`) are only allowed at the top level")
            if self.first_op_line is not None:
                self.fail(
                    line,
                    f"declarations come before the first operation (line {self.first_op_line}); "
                    f"move `{name} = {value.func.id}(...)` up",
                )
            self.declare(name, value, line)
            return []
        self.note_operation(line)
        self.check_new_name(name, line, "a result")
        if isinstance(value, (ast.Name, ast.Attribute)):
            self.fail(
                line,
                f"`{name} = {_show(value)}` only binds another name; names are bound by operations "
                f"(use clone({_show(value)}) or detach({_show(value)}))",
            )
        if isinstance(value, ast.Constant):
            self.fail(line, f"names hold tensors, optimizers or modules; `{_show(value)}` cannot be assigned")
        out: list[Stmt] = []
        self.expression(value, line, out, name, "assign", 0)
        return out

    def check_new_name(self, name: str, line: int, what: str) -> None:
        if name.startswith("_"):
            self.fail(line, f"`{name}`: names starting with `_` are reserved (temporaries are `_t1`, `_t2`, ...)")
        if name in RESERVED_NAMES:
            self.fail(line, f"`{name}` is an operation or keyword of the syntax; choose another name for {what}")
        if not USER_NAME.fullmatch(name):
            self.fail(line, f"`{name}`: a name is a letter then letters, digits or _ (at most 64 characters)")

    def for_loop(self, node: ast.For, depth: int) -> Stmt:
        line = node.lineno
        if node.orelse:
            self.fail(line, "`for ... else` is not part of the syntax")
        if depth + 1 > MAX_DEPTH:
            self.fail(line, f"blocks are nested more than {MAX_DEPTH} deep")
        if not isinstance(node.target, ast.Name):
            self.fail(
                line, f"the loop variable must be one name, as in `for i in range(10):`; not `{_show(node.target)}`"
            )
        var = node.target.id
        if var != "_" and not USER_NAME.fullmatch(var):
            self.fail(line, f"loop variable `{var}`: `_` or a letter then letters, digits or _")
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
            self.fail(line, f"a loop is `for {var} in range(N):` with N a positive integer; not `in {_show(it)}`")
        count = _int_literal(it.args[0]) if len(it.args) == 1 and not it.keywords else None
        spec = OPS["repeat"].attr("count")
        assert spec is not None and spec.maximum is not None
        if count is None or count < 1 or count > spec.maximum:
            self.fail(
                line,
                f"the loop count must be a positive integer literal (at most {int(spec.maximum)}), as in "
                f"`range(100)`; not `{_show(it)}`",
            )
        index = self.next_index()
        body = self.block(node.body, depth + 1)
        return self.make(line, index, "repeat", [], None, {"count": count, "var": var}, body)

    def with_block(self, node: ast.With, depth: int) -> Stmt:
        line = node.lineno
        if depth + 1 > MAX_DEPTH:
            self.fail(line, f"blocks are nested more than {MAX_DEPTH} deep")
        ok = len(node.items) == 1
        if ok:
            item = node.items[0]
            expr = item.context_expr
            ok = (
                item.optional_vars is None
                and isinstance(expr, ast.Call)
                and isinstance(expr.func, ast.Name)
                and expr.func.id == "no_grad"
                and not expr.args
                and not expr.keywords
            )
        if not ok:
            self.fail(line, "the only `with` block is `with no_grad():`")
        index = self.next_index()
        body = self.block(node.body, depth + 1)
        return self.make(line, index, "no_grad", [], None, {}, body)

    # ---- declarations ---------------------------------------------------------------------------

    def declare(self, name: str, call: ast.Call, line: int) -> None:
        assert isinstance(call.func, ast.Name)
        kind = call.func.id
        self.check_new_name(name, line, "a declaration")
        if name in self.declared:
            self.fail(line, f"`{name}` is already declared")
        if len(self.declared) >= MAX_DECLARATIONS:
            self.fail(line, f"more than {MAX_DECLARATIONS} declarations")
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            self.fail(line, f"{kind}(...): `*` and `**` arguments are not part of the syntax")
        module = MODULE_SOURCES.get(kind)
        if module is not None:
            self.declare_module(name, module, call, line)
        else:
            self.declare_tensor(name, kind, call, line)
        self.declared.add(name)

    def dims(self, nodes: Sequence[ast.expr], line: int, what: str) -> list[int]:
        dims = []
        for node in nodes:
            d = _int_literal(node)
            if d is None or d < 1:
                self.fail(line, f"{what}: dimensions are positive integer literals; not `{_show(node)}`")
            dims.append(d)
        n = 1
        for d in dims:
            n *= d
        if n > MAX_ELEMENTS:
            self.fail(line, f"{what}: {n} elements; at most {MAX_ELEMENTS} are allowed")
        self.count_elements(n, line)
        return dims

    def count_elements(self, n: int, line: int) -> None:
        self.total_elements += n
        if self.total_elements > MAX_TOTAL_ELEMENTS:
            self.fail(line, f"the tensors have more than {MAX_TOTAL_ELEMENTS} elements together")

    def declare_tensor(self, name: str, kind: str, call: ast.Call, line: int) -> None:
        what = f"{kind}(...)"
        if not 1 <= len(call.args) <= MAX_RANK:
            self.fail(line, f"{what} takes 1 to {MAX_RANK} dimensions, as in `{kind}(4, 3)`; got {len(call.args)}")
        shape = self.dims(call.args, line, what)
        given: dict[str, ast.expr] = {}
        for kw in call.keywords:
            assert kw.arg is not None
            if kw.arg not in ("init", "values", "dtype", "high"):
                self.fail(line, f"{what}: unknown keyword `{kw.arg}`; valid: init, values, dtype, high")
            given[kw.arg] = kw.value
        dtype = "float"
        if "dtype" in given:
            node = given["dtype"]
            if not (isinstance(node, ast.Constant) and node.value in DTYPES):
                self.fail(line, f"{what}: dtype must be one of {', '.join(map(repr, DTYPES))}; not `{_show(node)}`")
            dtype = str(node.value)
        if dtype != "float" and kind == "param":
            self.fail(line, f"{what}: a param is a float tensor (it requires grad); an {dtype} tensor is an input")
        inits = INITS if dtype == "float" else DTYPE_INITS[dtype]
        init = {"float": "normal", "int": "randint", "bool": "bernoulli"}[dtype]
        if "init" in given:
            node = given["init"]
            if not (isinstance(node, ast.Constant) and node.value in inits):
                self.fail(line, f"{what}: init must be one of {', '.join(repr(i) for i in inits)}; not `{_show(node)}`")
            init = str(node.value)
        high: int | None = None
        if "high" in given:
            high = _int_literal(given["high"])
            if dtype != "int" or high is None or high < 1:
                self.fail(line, f"{what}: high goes with dtype='int': a positive integer literal (values in [0, high))")
        values: list[float] | None = None
        if "values" in given:
            if "init" in given:
                self.fail(line, f"{what}: give `init` or `values`, not both")
            values = self.values(given["values"], shape, line, f"{what}: values")
            init = "values"
        if init == "randint" and high is None:
            self.fail(line, f"{what}: an int tensor made by init 'randint' needs `high` (values in [0, high))")
        if init != "randint":
            high = None
        role = "param" if kind == "param" else "input"
        self.tensors.append(
            self.spec(line, name=name, role=role, shape=shape, init=init, values=values, dtype=dtype, high=high)
        )

    def declare_module(self, name: str, module: ModuleSpec, call: ast.Call, line: int) -> None:
        """`conv = Conv2d(3, 8, 3, padding=1)`: the positional attributes in table order, the others
        by keyword, and `TENSOR_values=[...]` to give a param or buffer its values."""
        what = f"{module.source}(...)"
        positional = [a for a in module.attrs if a.positional]
        if len(call.args) > len(positional):
            self.fail(
                line,
                f"{what} takes at most {len(positional)} positional arguments "
                f"({', '.join(a.name for a in positional)}); got {len(call.args)}",
            )
        attrs: dict[str, AttrValue] = {}
        for aspec, node in zip(positional, call.args):
            attrs[aspec.name] = self.literal(node, aspec, module.source, line)
        value_nodes: dict[str, ast.expr] = {}
        tensor_names = {p.name for p in module.params}
        for kw in call.keywords:
            assert kw.arg is not None
            if kw.arg.endswith("_values") and kw.arg.removesuffix("_values") in tensor_names:
                value_nodes[kw.arg.removesuffix("_values")] = kw.value
                continue
            keyword_spec = module.attr(kw.arg)
            if keyword_spec is None:
                valid = [*module.attr_names, *(f"{p}_values" for p in sorted(tensor_names))]
                self.fail(line, f"{module.source}: unknown keyword `{kw.arg}`; valid: {', '.join(valid)}")
            if kw.arg in attrs:
                self.fail(line, f"{module.source}: `{kw.arg}` is given twice")
            attrs[kw.arg] = self.literal(kw.value, keyword_spec, module.source, line)
        try:
            decl = ModuleDecl.model_validate({"name": name, "kind": module.kind, "attrs": attrs})
        except ValidationError as e:
            self.fail(line, f"{module.source}: {_first_error(e)}")
        self.modules.append(decl)
        self.module_names.add(name)
        owned = {p.name for p in module.tensors(decl.attrs)}
        for given_name in value_nodes:
            if given_name not in owned:
                self.fail(line, f"{module.source}: {given_name}_values is given, but this {module.source} has none")
        values: dict[str, list[float]] = {}
        for pname, (shape, _role) in decl.tensor_shapes().items():
            short = pname.split(".", 1)[1]
            self.count_elements(math.prod(shape), line)
            if short in value_nodes:
                values[short] = self.values(value_nodes[short], shape, line, f"{module.source}: {short}_values")
        try:
            self.tensors += decl.tensor_specs(values)
        except ValidationError as e:
            self.fail(line, f"{module.source}: {_first_error(e)}")

    def spec(self, line: int, **fields: object) -> TensorSpec:
        try:
            return TensorSpec.model_validate(fields)
        except ValidationError as e:
            self.fail(line, _first_error(e))

    def values(self, node: ast.expr, shape: list[int], line: int, what: str) -> list[float]:
        """Flat or nested (matching the shape) number literals."""
        flat: list[float] = []

        def visit(n: ast.expr, depth: int) -> list[int]:
            if depth > MAX_RANK:
                self.fail(line, f"{what}: nested more than {MAX_RANK} deep")
            if isinstance(n, (ast.List, ast.Tuple)):
                if len(flat) + len(n.elts) > MAX_ELEMENTS:
                    self.fail(line, f"{what}: more than {MAX_ELEMENTS} values")
                inner: list[int] | None = None
                for e in n.elts:
                    sub = visit(e, depth + 1)
                    if inner is not None and sub != inner:
                        self.fail(line, f"{what}: nested lists of different lengths")
                    inner = sub
                return [len(n.elts), *(inner or [])]
            v = _number(n)
            if v is None:
                self.fail(line, f"{what}: number literals only; not `{_show(n)}`")
            if not -FLOAT32_MAX <= v <= FLOAT32_MAX:
                self.fail(line, f"{what}: {_show(n)} is not a finite float32")
            flat.append(v)
            return []

        if not isinstance(node, (ast.List, ast.Tuple)):
            self.fail(line, f"{what}: a list of numbers, as in `[1.0, 2.0]`; not `{_show(node)}`")
        structure = visit(node, 0)
        n = 1
        for d in shape:
            n *= d
        if len(structure) > 1 and structure != shape:
            self.fail(line, f"{what}: nested lists of shape {structure}; the tensor's shape is {shape}")
        if len(flat) != n:
            self.fail(line, f"{what}: {len(flat)} values; shape {shape} needs {n}")
        return flat

    # ---- expressions ----------------------------------------------------------------------------

    def next_index(self) -> int:
        index = self.index
        self.index += 1
        return index

    def make(
        self,
        line: int,
        index: int,
        op: str,
        args: list[str],
        out: str | None,
        attrs: dict[str, AttrValue],
        body: list[Stmt] | None = None,
    ) -> Stmt:
        try:
            return Stmt(index=index, line=line, op=op, args=args, out=out, attrs=attrs, body=body)
        except ValidationError as e:
            self.fail(line, _first_error(e))

    def emit(
        self,
        stmts: list[Stmt],
        line: int,
        op: str,
        args: list[str],
        attrs: dict[str, AttrValue],
        out: str | None,
        context: Context,
    ) -> str | None:
        if out is None and context == "operand":
            self.temps += 1
            out = f"_t{self.temps}"
        stmts.append(self.make(line, self.next_index(), op, args, out, attrs))
        return out

    def operand(self, node: ast.expr, line: int, stmts: list[Stmt], depth: int) -> str:
        """The name of a tensor: a name, `module.weight`, or a temporary holding an operation's result."""
        if isinstance(node, ast.Name):
            if node.id in RESERVED_NAMES:
                self.fail(line, f"`{node.id}` is an operation, not a value; call it, as in `{node.id}(x)`")
            return node.id
        if isinstance(node, ast.Attribute):
            return self.param_attribute(node, line)
        if _number(node) is not None:
            self.fail(
                line,
                f"the number `{_show(node)}` can only be an operand of + - * / next to a tensor, "
                "or an integer exponent of **",
            )
        name = self.expression(node, line, stmts, None, "operand", depth + 1)
        assert name is not None
        return name

    def param_attribute(self, node: ast.Attribute, line: int) -> str:
        if isinstance(node.value, ast.Name) and node.value.id in self.module_names:
            name = f"{node.value.id}.{node.attr}"
            if any(t.name == name for t in self.tensors):
                return name
            owned = [t.name.split(".", 1)[1] for t in self.tensors if t.module == node.value.id]
            self.fail(line, f"`{_show(node)}`: `{node.value.id}` has {', '.join(f'`.{o}`' for o in owned)}")
        self.fail(line, f"`{_show(node)}`: the only attributes are a module's params and buffers (`lin.weight`)")

    def expression(
        self, node: ast.expr, line: int, stmts: list[Stmt], out: str | None, context: Context, depth: int
    ) -> str | None:
        if depth > MAX_EXPR_DEPTH:
            self.fail(line, f"the expression is nested more than {MAX_EXPR_DEPTH} operations deep")
        if isinstance(node, ast.BinOp):
            return self.binary(node, line, stmts, out, context, depth)
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub):
                self.fail(line, f"`{_show(node)}`: the only unary operator is `-`")
            if _number(node) is not None:
                self.fail(line, f"the number `{_show(node)}` alone is not a tensor")
            arg = self.operand(node.operand, line, stmts, depth)
            return self.emit(stmts, line, "neg", [arg], {}, out, context)
        if isinstance(node, ast.Call):
            return self.call(node, line, stmts, out, context, depth)
        if isinstance(node, (ast.Name, ast.Attribute)):  # pragma: no cover - callers handle names
            return self.operand(node, line, stmts, depth)
        self.fail(line, f"`{_show(node)}` ({type(node).__name__}) is not part of the syntax")

    def binary(
        self, node: ast.BinOp, line: int, stmts: list[Stmt], out: str | None, context: Context, depth: int
    ) -> str | None:
        op_type = type(node.op)
        symbol = _SYMBOLS.get(op_type, "?")
        if op_type is ast.Pow:
            exponent = _int_literal(node.right)
            if exponent is None:
                self.fail(line, f"`{_show(node)}`: the exponent of ** must be an integer literal, as in `x ** 2`")
            base = self.operand(node.left, line, stmts, depth)
            return self.emit(
                stmts, line, "powi", [base], self.attrs("powi", {"exponent": exponent}, line), out, context
            )
        if op_type is ast.MatMult:
            a = self.operand(node.left, line, stmts, depth)
            b = self.operand(node.right, line, stmts, depth)
            return self.emit(stmts, line, "matmul", [a, b], {}, out, context)
        if op_type not in _BINARY:
            self.fail(line, f"the operator `{symbol}` is not part of the syntax; valid: + - * / @ ** and unary -")
        left, right = _number(node.left), _number(node.right)
        if left is not None and right is not None:
            self.fail(line, f"`{_show(node)}` works on two numbers; one operand must be a tensor")
        if left is None and right is None:
            a = self.operand(node.left, line, stmts, depth)
            b = self.operand(node.right, line, stmts, depth)
            return self.emit(stmts, line, _BINARY[op_type], [a, b], {}, out, context)
        if right is not None:
            tensor_node, s = node.left, right
            if op_type is ast.Sub:
                s = -s
            elif op_type is ast.Div:
                if s == 0:
                    self.fail(line, f"`{_show(node)}` divides by zero")
                s = 1.0 / s
        else:
            assert left is not None
            if op_type in (ast.Sub, ast.Div):
                self.fail(
                    line,
                    f"`{_show(node)}`: a number on the left works with + and * only "
                    "(write `-x + 2.0` for `2.0 - x`; there is no number / tensor)",
                )
            tensor_node, s = node.right, left
        if not math.isfinite(s):
            self.fail(line, f"`{_show(node)}`: the number is not finite")
        op = "add_scalar" if op_type in (ast.Add, ast.Sub) else "mul_scalar"
        t = self.operand(tensor_node, line, stmts, depth)
        return self.emit(stmts, line, op, [t], self.attrs(op, {"scalar": s}, line), out, context)

    def attrs(self, op: str, given: dict[str, AttrValue], line: int, args: Sequence[str] = ()) -> dict[str, AttrValue]:
        try:
            return normalize_attrs(op, given, args)
        except ValueError as e:
            self.fail(line, str(e))

    def call(
        self, node: ast.Call, line: int, stmts: list[Stmt], out: str | None, context: Context, depth: int
    ) -> str | None:
        func = node.func
        if isinstance(func, ast.Attribute):
            self.fail(
                line,
                f"`{_show(func)}(...)`: method calls are not part of the syntax; call an operation, as in `sum(x)`",
            )
        if not isinstance(func, ast.Name):
            self.fail(line, f"`{_show(node)}`: call an operation by its name")
        fname = func.id
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            self.fail(line, f"{fname}(...): `*` and `**` arguments are not part of the syntax")
        if fname in self.module_names:
            # `conv(x)`: the call of the module's kind, with the module as its first argument.
            kind = next(m.kind for m in self.modules if m.name == fname)
            call_op = MODULES[kind].call
            node = ast.Call(
                func=ast.Name(id=call_op, ctx=ast.Load()),
                args=[ast.Name(id=fname, ctx=ast.Load()), *node.args],
                keywords=node.keywords,
            )
            fname = call_op
        if fname in DECLARATIONS:
            self.fail(
                line,
                f"declarations are statements of their own: `NAME = {fname}(...)` at the top, before the first operation",
            )
        spec = OPS.get(fname)
        if spec is None or spec.result == "block":
            self.fail(line, f"unknown operation `{fname}`; valid: {', '.join(_CALLABLE_OPS)} and a Linear's name")
        if context == "operand" and spec.result != "tensor":
            self.fail(line, f"{fname} gives no tensor; it cannot be an operand")
        if context == "assign" and spec.result == "none":
            self.fail(line, f"{fname} gives no value; write it as a statement of its own, as in `{spec.signature()}`")
        if context == "statement" and spec.result in ("optimizer", "scheduler"):
            self.fail(
                line,
                f"{fname} makes {'an' if spec.result == 'optimizer' else 'a'} {spec.result}: assign it to a name, as in `x = {spec.signature()}`",
            )
        least, most = spec.arity()
        positional_attrs = spec.positional_attrs
        given = len(node.args)
        # A variadic op takes as many tensors as are given, up to its most; its attributes are keywords.
        n_args = min(given, most) if spec.max_args else least
        if not least <= n_args <= given <= n_args + len(positional_attrs):
            counted = (
                f"{least} argument{'s' if least != 1 else ''}" if least == most else f"{least} to {most} arguments"
            )
            if positional_attrs:
                counted += f" and {', '.join(a.name for a in positional_attrs)}"
            self.fail(line, f"{fname} takes {counted}: {spec.signature()}; got {given} positional arguments")
        arg_kinds = list(spec.args) + ([spec.args[-1]] * (n_args - len(spec.args)) if n_args > len(spec.args) else [])
        args: list[str] = []
        for kind, arg in zip(arg_kinds, node.args):
            if kind == "tensor":
                args.append(self.operand(arg, line, stmts, depth))
            elif isinstance(arg, ast.Name):
                args.append(arg.id)
            else:
                article = "an" if kind[0] in "aeiou" else "a"
                self.fail(line, f"{fname}: the argument must be the name of {article} {kind}; not `{_show(arg)}`")
        attrs: dict[str, AttrValue] = {}
        for aspec, arg in zip(positional_attrs, node.args[n_args:]):
            attrs[aspec.name] = self.literal(arg, aspec, fname, line)
        for kw in node.keywords:
            assert kw.arg is not None
            kw_spec = spec.attr(kw.arg)
            if kw_spec is None:
                valid = ", ".join(spec.attr_names) or "none"
                self.fail(line, f"{fname}: unknown attribute `{kw.arg}`; valid: {valid}")
            if kw.arg in attrs:
                self.fail(line, f"{fname}: `{kw.arg}` is given twice")
            attrs[kw.arg] = self.literal(kw.value, kw_spec, fname, line)
        return self.emit(stmts, line, fname, args, self.attrs(fname, attrs, line, args), out, context)

    def literal(self, node: ast.expr, spec: AttrSpec, op: str, line: int) -> AttrValue:
        if spec.type == "float":
            value = _number(node)
            if value is not None:
                return value
            expected = "a number literal"
        elif spec.type == "int":
            ivalue = _int_literal(node)
            if ivalue is not None:
                return ivalue
            expected = "an integer literal"
        elif spec.type == "bool":
            if isinstance(node, ast.Constant) and isinstance(node.value, bool):
                return node.value
            expected = "True or False"
        elif spec.type == "str":
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                return node.value
            expected = "a string literal"
        else:
            if isinstance(node, (ast.List, ast.Tuple)):
                items = [_int_literal(e) for e in node.elts]
                if all(i is not None for i in items):
                    return [i for i in items if i is not None]
            expected = "a list of integer literals, as in [2, 6]"
        self.fail(line, f"{op}: `{spec.name}` must be {expected}; not `{_show(node)}`")


# ---- unparse ------------------------------------------------------------------------------------

_ADD, _MUL, _UNARY, _POW, _ATOM = 1, 2, 3, 4, 5
_INFIX_PREC = {"add": _ADD, "sub": _ADD, "mul": _MUL, "div": _MUL, "matmul": _MUL}


def _num(value: float) -> str:
    return repr(float(value))


def _lit(value: AttrValue) -> str:
    if isinstance(value, (bool, str, list)):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    return _num(value)


def _wrap(text: str, prec: int, needed: int, strict: bool = False) -> str:
    return f"({text})" if prec < needed or (strict and prec == needed) else text


def _values(values: Sequence[float]) -> str:
    return "[" + ", ".join(_num(v) for v in values) + "]"


class _Unparser:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def put(self, line: int, depth: int, text: str) -> None:
        while len(self.lines) + 1 < line:
            self.lines.append("")
        self.lines.append("    " * depth + text)

    def declarations(self, program: ParsedProgram | Program) -> None:
        modules = {m.name: m for m in program.modules}
        tensors: Sequence[TensorSpec | TensorDecl] = program.tensors
        done: set[str] = set()
        for t in tensors:
            if t.module is not None:
                if t.module in done:
                    continue
                done.add(t.module)
                m = modules[t.module]
                spec = MODULES[m.kind]
                parts = []
                skipping = False
                for aspec in spec.attrs:
                    if aspec.name not in m.attrs or (
                        not isinstance(aspec.default, _Marker) and m.attrs[aspec.name] == aspec.default
                    ):
                        skipping = True
                        continue
                    value = _lit(m.attrs[aspec.name])
                    parts.append(value if aspec.positional and not skipping else f"{aspec.name}={value}")
                for decl in tensors:
                    if decl.module == m.name:
                        data = decl.data if isinstance(decl, TensorDecl) else decl.values
                        if data is not None:
                            parts.append(f"{decl.name.split('.', 1)[1]}_values={_values(data)}")
                self.lines.append(f"{m.name} = {spec.source}({', '.join(parts)})")
                continue
            parts = [str(d) for d in t.shape]
            if t.dtype != "float":
                parts.append(f"dtype={t.dtype!r}")
            if isinstance(t, TensorDecl):
                parts.append(f"values={_values(t.data)}")
            elif t.init == "values":
                assert t.values is not None
                parts.append(f"values={_values(t.values)}")
            elif t.init != {"float": "normal", "int": "randint", "bool": "bernoulli"}[t.dtype]:
                parts.append(f"init={t.init!r}")
            if isinstance(t, TensorSpec) and t.high is not None:
                parts.append(f"high={t.high}")
            self.lines.append(f"{t.name} = {t.role}({', '.join(parts)})")

    def block(self, stmts: Sequence[Stmt], depth: int) -> None:
        pending: dict[str, tuple[str, int, int]] = {}
        for st in stmts:
            if st.body is not None:
                if pending:
                    raise ValueError(f"cannot unparse: temporary {next(iter(pending))} is not used in its statement")
                if st.op == "repeat":
                    self.put(st.line, depth, f"for {st.attrs.get('var', '_')} in range({st.attrs['count']}):")
                else:
                    self.put(st.line, depth, "with no_grad():")
                self.block(st.body, depth + 1)
                continue
            text, prec = self.expr(st, pending)
            if st.out is not None and TEMP_NAME.fullmatch(st.out):
                if st.out in pending:
                    raise ValueError(f"cannot unparse: temporary {st.out} is assigned twice")
                pending[st.out] = (text, prec, st.line)
                continue
            if pending:
                raise ValueError(f"cannot unparse: temporary {next(iter(pending))} is not used in its statement")
            self.put(st.line, depth, f"{st.out} = {text}" if st.out is not None else text)
        if pending:
            raise ValueError(f"cannot unparse: temporary {next(iter(pending))} is never used")

    def expr(self, st: Stmt, pending: dict[str, tuple[str, int, int]]) -> tuple[str, int]:
        spec = OPS[st.op]
        args: list[tuple[str, int]] = []
        for a in st.args:
            if a in pending:
                text, prec, line = pending.pop(a)
                if line != st.line:
                    raise ValueError(f"cannot unparse: temporary {a} (line {line}) is used on line {st.line}")
                args.append((text, prec))
            elif TEMP_NAME.fullmatch(a):
                raise ValueError(f"cannot unparse: temporary {a} is used twice or before it is assigned")
            else:
                args.append((a, _ATOM))
        attrs = st.attrs
        if st.op in _INFIX_PREC:
            p = _INFIX_PREC[st.op]
            (a, pa), (b, pb) = args
            return f"{_wrap(a, pa, p)} {spec.infix} {_wrap(b, pb, p, strict=True)}", p
        if st.op == "neg":
            ((a, pa),) = args
            return f"-{_wrap(a, pa, _UNARY)}", _UNARY
        if st.op == "powi":
            ((a, pa),) = args
            return f"{_wrap(a, pa, _POW, strict=True)} ** {attrs['exponent']}", _POW
        if st.op == "add_scalar":
            ((a, pa),) = args
            s = attrs["scalar"]
            assert isinstance(s, float)
            sign = "-" if math.copysign(1.0, s) < 0 else "+"
            return f"{_wrap(a, pa, _ADD)} {sign} {_num(abs(s))}", _ADD
        if st.op == "mul_scalar":
            ((a, pa),) = args
            s = attrs["scalar"]
            assert isinstance(s, float)
            return f"{_wrap(a, pa, _MUL)} * {_num(s)}", _MUL
        if spec.module is not None:  # `conv(x)`: the module's call
            (m, _), *rest = args
            parts = [text for text, _ in rest]
            name = m
        else:
            parts = [text for text, _ in args]
            name = st.op
        skipping = False
        for aspec in spec.attrs:
            if aspec.name not in attrs:
                skipping = True
                continue
            value = attrs[aspec.name]
            default = aspec.default
            is_default = (default is ARG_NAME and bool(st.args) and value == st.args[0]) or (
                default is not REQUIRED
                and default is not OMITTED
                and default is not ARG_NAME
                and type(value) is type(default)
                and value == default
            )
            if is_default:
                skipping = True
                continue
            if aspec.positional and not skipping:
                parts.append(_lit(value))
            else:
                parts.append(f"{aspec.name}={_lit(value)}")
        return f"{name}({', '.join(parts)})", _ATOM


def unparse(program: ParsedProgram | Program) -> str:
    """The program in the source syntax. For a `ParsedProgram` from `parse`, parsing the text gives the
    same program; a `Program`'s initial data is written out as `values=[...]` (for big tensors the text
    can be past the parser's size cap, `MAX_SOURCE_CHARS`)."""
    u = _Unparser()
    u.declarations(program)
    u.block(program.body, 0)
    return "\n".join(u.lines) + "\n"
