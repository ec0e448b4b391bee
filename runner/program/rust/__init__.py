"""A program as a standalone Rust program against burn 0.22.1 that reproduces the burn
interpreter's run outside the runner: the reproducer a user attaches to an upstream report.

`crate.render` gives the files of a cargo project (`Cargo.toml`, `src/main.rs`, and `src/data.rs`
for the larger initial tensors): straight-line burn code, one Rust statement per IR statement
(commented with its IR index and source line), every value a concrete `Tensor<D>`. Running it
(`cargo run --release`) prints one JSON line per observation, the fields of the torch script's
(`render_torch`), and, with `settings.track`, one line per checkpoint of the timed loop with
the tracked tensor's flags. A burn panic is printed by Rust's own panic handler (message and
location); nothing is caught.

What the code does is what the burn interpreter (`rust_probe/src/program/`) does, operation
for operation:

- params live in a `#[derive(Module)] struct Model` (a Linear's weight in burn's
  `[d_in, d_out]`, loaded from torch's `[d_out, d_in]` data as its `layout` says), so burn's own
  optimizers update them (`model = opt.step(lr, model, grads)`); a param read is `.val()`;
- a value derived from a Linear weight keeps burn's layout (the interpreter's *transposed*
  flag): `transpose` of it is no operation, an operation that needs torch's layout gets
  `.transpose()`, and observations transpose it on the host;
- a value is moved on its last use and cloned before (the interpreter's liveness), a result
  nobody reads is dropped at once (`let _ = ...`), and a value read by reference on its last use
  (`backward`, `grad`) is dropped right after when a later `backward` could see it: tensors
  hold graph nodes, so lifetimes decide what burn's graph cleanup frees;
- the gradients held between `backward` and `step` / `zero_grad` are a `Gradients` (`grads`),
  and with `backward(accumulate=True)` the params' sum in a `GradientsParams` (`grads_sum`)
  made with `GradientsAccumulator`;
- inside the timed loop observations are recorded at the checkpoints only, and the last
  iteration's are printed when it ends, their values read then (a panic before prints them
  without values), as the interpreter reads them outside the timed region;
- a loop whose values change type (rank, layout, gradients held, eval mode) between iterations
  has its first iterations written out before the `for`, so that every Rust variable has one type;
- the families' operations (`families`: one rendering function per operation, by family) do what
  `rust_probe/src/program/families/` does; a module kind other than Linear is a field of
  `struct Model` built from its config (a `with_*` only for the attributes the program gives)
  with the program's data loaded; `eval()` takes `let eval_model = model.valid()`, used by the
  module calls (not a Linear's: the interpreter's `Kind::Linear` uses the model) until
  `train()`; int and bool tensors are `Tensor<D, Int>` / `Tensor<D, Bool>`;
- an optimizer with a schedule steps with a learning rate variable (`opt_lr`, burn's
  `ModuleLearningRate`) that `sched_step` sets (`opt_lr = sched.step();`), as the interpreter's
  `Optim::lr`; the target-network statements change the training model's modules
  (`model.target = model.online.clone()`, a `ModuleMapper` for `soft_update`, `no_grad()`).

An operation burn lacks (`no_grad`, `retain_grad`, `backward(retain_graph=True)`, an operation
of two tensors of unequal ranks), a statement the interpreter stops at (a rank or dim it does not
take), a schedule whose optimizer name is bound to another optimizer before its `sched_step`,
and an operation or module kind without a rendering make `render` raise `ValueError` naming it.

The modules, in the order the code is made:

- `names`: every Rust identifier given to a program name (locals, `struct Model`'s fields, the
  statics of `data.rs`), distinct for distinct names and never one the code uses itself;
- `liveness`: the interpreter's liveness pass over names (moves, clones, what a loop carries);
- `state`: static types, the Rust variables, the state of the code at one point;
- `literals`: numbers, strings and nested arrays as Rust literals;
- `families`: the renderings of the table's family operations, module kinds, optimizers and
  machine-level statements (its docstring says how to add one);
- `forward`: a forward region (`ForwardRegion`, an optional input of `render`: what `port`
  converted from the user's `forward`), written as the method `impl Model { pub fn forward }`
  that `fn main` calls, or left inline with the reason (`ForwardUnfit`) in a comment;
- `generate`: the statement generator, in two passes (the first decides which variables are
  read and which are `mut`, the second writes);
- `support`: the Rust helper functions a reproducer includes (printing JSON lines, `soft_update`);
- `source`: `src/main.rs` and `src/data.rs` around the statements; `sketch` for report cards;
- `crate`: `render` (the files of a crate), `write_reproducer`, `write_bundle` (reproducers as the
  modules of one crate, for the tests), `package_name`;
- `output`: `read_run`, what a built reproducer printed.
"""
