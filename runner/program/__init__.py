"""Program cases: small programs run by a torch and a burn interpreter from the same initial tensors.

`docs/program-ir.md` is the contract. The parts:

- `ops`: the one table of operations (`OPS`), and the Markdown tables made from it;
- `ir`: the IR (`Program`, ...) and the result of a run (`RunOutcome`), as pydantic models;
- `syntax`: `parse(source, where=...)` -> `ParsedProgram`, and `unparse(program)`;
- `data`: `materialize(parsed, seed)` -> `Program` (seeded float32 initial tensors);
- `torch_interp`: `run(program)` / `run_batch(programs)` with PyTorch;
- `render_torch`: `render(program)`, a standalone PyTorch script;
- `identifiers`: the identifiers generated code gives program names (one `Namespace` per namespace);
- `rust`: the same as a standalone cargo project on burn 0.22.1 (the reproducer for an upstream
  report): `rust.crate.render(program)`, `write_reproducer` / `write_bundle`,
  `rust.source.sketch(program)` for report cards, `rust.output.read_run`.
"""
