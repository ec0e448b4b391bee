"""`burn-torch-diff port`: a user's module traced, converted, refused with every reason, run under
both frameworks, and written as a case, a PyTorch script and a burn crate.

The fast tests convert and refuse (torch only, no probe run); the ports of the six modules of
`tests/data/port/` run both frameworks (`slow`); the generated crates are built and run with
cargo and hold to the losses the probe recorded (`cargo`).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from runner import cases as case_files
from runner.cli import main
from runner.errors import BadInput
from runner.port import command, convert, load, trace, write
from runner.port.trace import InputSpec
from runner.program import render_torch, syntax
from runner.program.data import materialize, with_values
from runner.program.ir import Settings
from runner.program.rust.crate import render as render_crate
from runner.program.rust.crate import write_bundle
from runner.program.rust.forward import ForwardRegion

DATA = Path(__file__).parent / "data" / "port"
ROOT = Path(__file__).resolve().parents[1]


def _convert(target: str, inputs: list[InputSpec], loss: str, steps: int = 2) -> convert.Conversion:
    loaded = load.load(str(DATA / target), None, None)
    traced = trace.trace(loaded.module, inputs, loaded.file)
    assert traced.graph is not None, [r.text() for r in traced.refusals]
    return convert.convert(traced, inputs, loss=loss, classes=None, optimizer="adam(lr=0.001)", steps=steps)


def test_the_users_names_survive_as_module_names_and_in_the_line_map():
    conv = _convert("transformer.py:TextClassifier", [InputSpec((2, 5), "int", 50)], "cross_entropy")
    assert not conv.refusals
    assert conv.modules["encoder_layers_0_norm1"] == "encoder.layers.0.norm1"
    assert conv.modules["encoder_layers_0_self_attn"] == "encoder.layers.0.self_attn"
    users = {line.user for line in conv.lines.values()}
    assert {"embed", "encoder.layers.0.self_attn", "encoder.layers.0.linear1", "head"} <= users
    # every forward line points at the user's file, where the module is called
    assert all(line.where is not None and line.where.file.endswith("transformer.py") for line in conv.lines.values())
    # an argument equal to torch's default is omitted; one the encoder layer passes (0.1) is kept
    assert "encoder_layers_0_self_attn = MultiheadAttention(16, 4, dropout=0.1, batch_first=True)" in conv.source
    assert "encoder_layers_0_norm1 = LayerNorm(16)" in conv.source
    parsed = with_values(syntax.parse(conv.source, where="t"), conv.arrays, "t")
    weight = next(t for t in parsed.tensors if t.name == "encoder_layers_0_linear1.weight")
    assert weight.init == "values" and weight.shape == [32, 16]


def test_the_modules_own_weights_are_the_initial_values():
    loaded = load.load(str(DATA / "mlp.py:MLP"), '{"hidden": 8}', None)
    traced = trace.trace(loaded.module, [InputSpec((3, 20))], loaded.file)
    conv = convert.convert(
        traced, [InputSpec((3, 20))], loss="cross_entropy", classes=5, optimizer="sgd(lr=0.1)", steps=1
    )
    np.testing.assert_array_equal(conv.arrays["fc1.weight"], loaded.module.fc1.weight.detach().numpy())
    assert "fc1 = Linear(20, 8)" in conv.source
    assert 'target = input(3, dtype="int", high=5)' in conv.source


def test_a_frozen_target_copy_is_frozen_and_takes_the_online_values():
    inputs = [InputSpec((4, 8)), InputSpec((4,), "int", 4), InputSpec((4,)), InputSpec((4, 8))]
    conv = _convert("dqn.py:DQN", inputs, "output")
    assert not conv.refusals
    assert "freeze(target_net_0.weight)" in conv.source
    np.testing.assert_array_equal(conv.arrays["target_net_0.weight"], conv.arrays["q_net_0.weight"])
    assert "max_dim(" in conv.source and "gather(" in conv.source


def test_every_reason_is_refused_at_once_with_the_users_lines(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["port", f"{DATA}/unported.py:Unported", "--input", "2x5x8", "--loss", "mse_loss", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 2
    assert "unported.py:14: language lacks: torch.cumsum" in text
    assert "unported.py:15: language lacks: rnn: the module torch.nn.GRU" in text
    assert "unported.py:16: burn lacks" in text and "erfinv" in text
    assert "nothing was written" in text
    assert not out.exists()


def test_data_dependent_control_flow_is_refused_at_its_line(capsys):
    code = main(["port", f"{DATA}/unported.py:Branchy", "--input", "2x4", "--loss", "mse_loss"])
    text = capsys.readouterr().out
    assert code == 2
    assert "unported.py:26: control flow" in text


def test_a_no_grad_region_in_forward_is_refused(tmp_path, capsys):
    src = tmp_path / "ng.py"
    src.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(3, 3)\n\n    def forward(self, x):\n"
        "        with torch.no_grad():\n            y = self.fc(x)\n        return x * y\n"
    )
    assert main(["port", f"{src}:M", "--input", "2x3", "--loss", "mse_loss"]) == 2
    assert "ng.py:12: no_grad" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nofile.py:M", "--input", "2x3"], "no such file"),
        ([f"{DATA}/mlp.py:Nope", "--input", "2x3"], "no torch.nn.Module class 'Nope'"),
        ([f"{DATA}/mlp.py:MLP", "--input", "2x3", "--args", "[1]"], "--args: a JSON object"),
        ([f"{DATA}/mlp.py:MLP", "--input", "2x20", "--input", "2x3"], "forward takes 1 tensor arguments"),
        ([f"{DATA}/mlp.py:MLP", "--input", "2x7"], "raised RuntimeError"),
    ],
)
def test_bad_input_is_exit_2_naming_what(argv, message, capsys):
    assert main(["port", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_bad_shape_or_optimizer_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["port", f"{DATA}/mlp.py:MLP", "--input", "2xx3"])
    assert stop.value.code == 2
    with pytest.raises(SystemExit):
        main(["port", f"{DATA}/mlp.py:MLP", "--input", "2x20", "--optimizer", "__import__('os').system('x')"])
    assert "an optimizer call" in capsys.readouterr().err
    assert command.optimizer_text("adamw(lr=1e-3, eps=1e-8)") == "adamw(lr=0.001, eps=1e-08)"


def test_help_says_importing_runs_the_users_code(capsys):
    with pytest.raises(SystemExit):
        main(["port", "--help"])
    assert "runs its code" in " ".join(capsys.readouterr().out.split())


def test_hostile_module_names_become_identifiers_and_escaped_text(tmp_path):
    src = tmp_path / "hostile.py"
    src.write_text(
        "import torch.nn as nn\n\n\nclass H(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.add_module('fn\"); panic!(\"x', nn.Linear(3, 4))\n"
        "        self.add_module('`|\\n<script>', nn.Linear(4, 2))\n\n"
        "    def forward(self, x):\n        a = getattr(self, 'fn\"); panic!(\"x')(x)\n"
        "        return getattr(self, '`|\\n<script>')(a)\n"
    )
    loaded = load.load(f"{src}:H", None, None)
    traced = trace.trace(loaded.module, [InputSpec((2, 3))], loaded.file)
    conv = convert.convert(traced, [InputSpec((2, 3))], loss="mse_loss", classes=None, optimizer="sgd(lr=0.1)", steps=1)
    assert not conv.refusals
    assert set(conv.modules) == {"fn_panic_x", "script"}
    parsed = with_values(syntax.parse(conv.source, where="t"), conv.arrays, "t")
    program = materialize(parsed, 0, Settings(checkpoints=[1]))
    crate = render_crate(program, title="t")
    assert 'panic!("x' not in crate["src/main.rs"]
    compile(render_torch.render(program), "script.py", "exec")
    from runner.port.write import mapping

    table = mapping(conv)
    assert "\n<script>" not in table and "`|" not in table


def _program_of(conv: convert.Conversion):
    parsed = with_values(syntax.parse(conv.source, where="t"), conv.arrays, "t")
    return materialize(parsed, 0, Settings(checkpoints=[2]))


def test_the_crate_has_the_users_forward_as_a_method_that_main_calls():
    conv = _convert(
        "dqn.py:DQN", [InputSpec((4, 8)), InputSpec((4,), "int", 4), InputSpec((4,)), InputSpec((4, 8))], "output"
    )
    program = _program_of(conv)
    region = write.forward_region(conv, program, "`DQN.forward` of dqn.py.")
    assert region is not None and region.inputs == ("obs", "actions", "rewards", "next_obs")
    notes: list[str] = []
    main_rs = render_crate(program, title="t", forward=region, notes=notes)["src/main.rs"]
    assert not notes
    signature = (
        "    pub fn forward(&self, obs: Tensor<2>, actions: Tensor<1, Int>, rewards: Tensor<1>, next_obs: Tensor<2>) "
        "-> Tensor<1> {"
    )
    assert signature in main_rs
    method, rest = main_rs.split("fn main() {")
    assert "impl Model {" in method and "/// `DQN.forward` of dqn.py." in method
    # every statement converted from forward is in the method, none in main, which calls it
    for st in program.statements():
        tag = f"// [{st.index}] line {st.line}"
        assert (tag in method) == (st.index in region.statements), tag
    assert "self.q_net_0.forward(obs)" in method and "model." not in method
    assert (
        "let t_smooth_l1_loss = model.forward(obs.clone(), actions.clone(), rewards.clone(), next_obs.clone());" in rest
    )
    # without a region, the generic reproducer is what it was: no method
    plain = render_crate(program, title="t")["src/main.rs"]
    assert "impl Model" not in plain and "fn forward" not in plain
    assert "self.q_net_0" not in plain and "model.q_net_0.forward(obs.clone())" in plain


HOSTILE_SOURCE = (
    # a forward whose parameters are named like the generated code's own names and Rust keywords
    # (`self` is not its receiver), reading a buffer
    "import torch\nimport torch.nn as nn\n\n\nclass H(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.fc = nn.Linear(3, 4)\n"
    "        self.register_buffer('scale', torch.linspace(0.5, 2.0, 4))\n\n"
    "    def forward(this, self, fn, model, device):\n"
    "        return this.fc(self + fn) * this.scale + model * device\n"
)
HOSTILE_ARGV = ["--input", "2x3", "--input", "2x3", "--input", "2x4", "--input", "2x4", "--loss", "mse_loss"]


def test_hostile_forward_parameter_names_and_a_buffer_become_arguments(tmp_path):
    src = tmp_path / "h.py"
    src.write_text(HOSTILE_SOURCE)
    inputs = [InputSpec((2, 3)), InputSpec((2, 3)), InputSpec((2, 4)), InputSpec((2, 4))]
    loaded = load.load(f"{src}:H", None, None)
    traced = trace.trace(loaded.module, inputs, loaded.file)
    conv = convert.convert(traced, inputs, loss="mse_loss", classes=None, optimizer="sgd(lr=0.1)", steps=2)
    assert not conv.refusals
    program = _program_of(conv)
    region = write.forward_region(conv, program, 'H.forward"); panic!("x\n*/ fn evil() {}')
    main_rs = render_crate(program, title="t", forward=region)["src/main.rs"]
    assert (
        "pub fn forward(&self, self_: Tensor<2>, fn_: Tensor<2>, model_: Tensor<2>, device_: Tensor<2>, "
        "scale: Tensor<1>) -> Tensor<2> {"
    ) in main_rs
    assert "model.forward(self_.clone(), fn_.clone(), model_.clone(), device_.clone(), scale.clone())" in main_rs
    # the doc comment stays one comment line
    assert '    /// H.forward"); panic!("x */ fn evil() {}\n' in main_rs
    assert "\nfn evil" not in main_rs and "\n*/" not in main_rs


FALLBACK_SOURCE = """\
x = input(2, 3)
w = param(3, 3)
opt = sgd(lr=0.1)
for step in range(2):
    h = x @ w
    a = relu(h)
    y = sigmoid(a)
    loss = mean(y)
    zero_grad(opt)
    backward(loss)
    step(opt)
    observe(a)
"""


@pytest.mark.parametrize(
    ("statements", "output", "reason"),
    [
        ((2, 3, 5), "loss", "interleave with other statements"),  # h, a, loss without y
        ((2, 3, 4), "y", "statement [9] (line 12) reads `a`, made in the forward"),  # observe(a)
        ((2, 3, 4, 5, 6), "loss", "statement [6] (line 9, `zero_grad`) is no plain computation"),
        ((2, 3), "y", "`y` is not made by the forward's statements"),
    ],
)
def test_a_region_that_cannot_be_a_method_stays_inline_and_says_why(statements, output, reason):
    program = materialize(syntax.parse(FALLBACK_SOURCE, where="t"), 0, Settings(checkpoints=[2]))
    region = ForwardRegion(statements, ("x",), output)
    notes: list[str] = []
    main_rs = render_crate(program, title="t", forward=region, notes=notes)["src/main.rs"]
    assert len(notes) == 1 and reason in notes[0], notes
    assert "fn forward" not in main_rs and "impl Model" not in main_rs
    comment = next(line for line in main_rs.splitlines() if line.startswith("// The forward's statements are inline"))
    assert reason in comment
    # the rest of main.rs is the generic reproducer's
    assert main_rs.replace(comment + "\n", "") == render_crate(program, title="t")["src/main.rs"]


def test_a_region_that_is_a_method_reads_the_param_from_self():
    program = materialize(syntax.parse(FALLBACK_SOURCE, where="t"), 0, Settings(checkpoints=[2]))
    main_rs = render_crate(program, title="t", forward=ForwardRegion(range(2, 4), ("x",), "a"))["src/main.rs"]
    assert "pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {" in main_rs
    assert "let h = x.matmul(self.w.val());" in main_rs and "activation::relu(h)  // [3] line 6" in main_rs
    # its output is read twice after it (by y and by the observation): cloned, then moved
    assert "let a = model.forward(x.clone());" in main_rs


def test_a_case_file_takes_initial_values_from_its_npz(tmp_path):
    case = tmp_path / "c.toml"
    body = (
        'name = "c"\nkind = "program"\n[program]\ndata = "c.npz"\nsource = """\nw = param(2, 2)\n'
        'y = w * 2.0\nobserve(y)\n"""\n[[runs]]\nframework = "torch"\nmode = "main"\n'
    )
    case.write_text(body)
    with pytest.raises(BadInput, match=r"c\.npz' does not exist"):
        case_files.load_case(case)
    np.savez(tmp_path / "c.npz", w=np.ones((3, 2), dtype=np.float32))
    with pytest.raises(BadInput, match=r"key 'w' has shape \[3, 2\]; the program declares \[2, 2\]"):
        case_files.load_case(case)
    np.savez(tmp_path / "c.npz", v=np.ones((2, 2), dtype=np.float32))
    with pytest.raises(BadInput, match="key 'v' names no declared tensor"):
        case_files.load_case(case)
    np.savez(tmp_path / "c.npz", w=np.array([[1, 2], [3, np.nan]], dtype=np.float32))
    with pytest.raises(BadInput, match="key 'w'"):
        case_files.load_case(case)
    np.savez(tmp_path / "c.npz", w=np.array([[1, 2], [3, 4]], dtype=np.float32))
    loaded = case_files.load_case(case)
    assert loaded.programs["main"].make().tensors[0].data == [1.0, 2.0, 3.0, 4.0]
    case.write_text(body.replace('"c.npz"', '"../c.npz"'))
    with pytest.raises(BadInput, match="data"):
        case_files.load_case(case)


def test_out_that_holds_something_is_refused_before_anything_runs(tmp_path, capsys):
    (tmp_path / "x").write_text("keep")
    assert main(["port", f"{DATA}/mlp.py:MLP", "--input", "2x20", "--out", str(tmp_path)]) == 2
    assert (tmp_path / "x").read_text() == "keep"
    assert "not an empty folder" in capsys.readouterr().err


# ---- the six modules, ported (both frameworks) --------------------------------------------------

PORTS = {
    "mlp": ["mlp.py:MLP", "--input", "8x20"],
    "cnn": ["cnn.py:ConvNet", "--input", "4x1x16x16", "--classes", "10"],
    "transformer": ["transformer.py:TextClassifier", "--input", "4x6:int:50"],
    "autoencoder": ["autoencoder.py:AutoEncoder", "--input", "8x24", "--loss", "mse_loss"],
    "dqn": [
        "dqn.py:DQN",
        "--input",
        "16x8",
        "--input",
        "16:int:4",
        "--input",
        "16",
        "--input",
        "16x8",
        "--loss",
        "output",
    ],
}


def _port(name: str, out: Path, *extra: str) -> tuple[int, dict]:
    argv = PORTS[name]
    code = main(["port", f"{DATA}/{argv[0]}", *argv[1:], "--steps", "5", "--out", str(out), *extra])
    return code, json.loads((out / "RESULT.json").read_text())


@pytest.mark.slow
def test_an_mlp_ported_with_adams_defaults_parts_at_the_first_step(tmp_path):
    code, result = _port("mlp", tmp_path / "out")
    assert code == 1
    assert result["forward"] == "agree" and result["gradients"] == "agree" and result["update"] == "differ"
    assert result["explained_by"] == ["optimizers_100_steps"]
    # with torch's eps given, the same port agrees
    code, fixed = _port("mlp", tmp_path / "fixed", "--optimizer", "adam(lr=0.001, eps=1e-8)")
    assert code == 0 and fixed["agree"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "REPORT.md",
        "RESULT.json",
        "port_mlp.npz",
        "port_mlp.toml",
        "port_mlp_burn",
        "port_mlp_torch.py",
    ]


@pytest.mark.slow
def test_a_transformer_encoder_parts_at_its_attention_by_the_users_name(tmp_path):
    code, result = _port("transformer", tmp_path / "out")
    assert code == 1
    assert result["forward"] == "differ"
    assert result["parting_module"] == "encoder.layers.0.self_attn"
    assert "mha_dropout_default" in result["explained_by"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cnn", "autoencoder", "dqn"])
def test_the_other_modules_agree_with_torchs_eps(tmp_path, name):
    code, result = _port(name, tmp_path / "out", "--optimizer", "adam(lr=0.001, eps=1e-8)")
    assert (code, result["forward"], result["gradients"], result["curve"]) == (0, "agree", "agree", "agree")


@pytest.mark.slow
def test_the_written_case_holds_under_check(tmp_path):
    code, _ = _port("autoencoder", tmp_path / "out")
    assert code == 1
    assert main(["check", "-q", str(tmp_path / "out" / "port_auto_encoder.toml")]) == 0


@pytest.mark.cargo
@pytest.mark.slow
def test_the_generated_crates_reproduce_the_burn_run(tmp_path):
    from tests.tools import require_tool

    cargo = require_tool("cargo", "builds the generated burn crates")
    crates = {}
    losses = {}
    calls = {
        "mlp": "let head_out = model.forward(x.clone());",
        "dqn": "let t_smooth_l1_loss = model.forward(obs.clone(), actions.clone(), rewards.clone(), next_obs.clone());",
        "hostile": "model.forward(self_.clone(), fn_.clone(), model_.clone(), device_.clone(), scale.clone());",
    }
    (tmp_path / "h.py").write_text(HOSTILE_SOURCE)
    for name in calls:
        out = tmp_path / name
        if name == "hostile":
            argv = [str(tmp_path / "h.py:H"), *HOSTILE_ARGV, "--steps", "5", "--out", str(out)]
            main(["port", *argv])
            result = json.loads((out / "RESULT.json").read_text())
        else:
            _, result = _port(name, out)
        crate = next(p for p in out.iterdir() if p.name.endswith("_burn"))
        main_rs = (crate / "src" / "main.rs").read_text()
        # the user's forward is a method of the model, which the training loop calls
        assert "impl Model {" in main_rs and "    pub fn forward(&self, " in main_rs
        assert calls[name] in main_rs.split("fn main() {")[1]
        crates[crate.name] = crate
        losses[crate.name] = result["losses"]["burn"]
    # the crates as the modules of one (burn's generic code compiled once for the three)
    names = write_bundle(tmp_path / "bundle", crates, name="repro-port", lockfile=ROOT / "Cargo.lock")
    env = dict(os.environ)
    env.setdefault("CARGO_TARGET_DIR", str(Path.home() / ".cache" / "burn-torch-diff" / "target"))
    built = subprocess.run(
        [cargo, "build", "--release"], cwd=tmp_path / "bundle", env=env, capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr[-4000:]
    assert "warning" not in built.stderr, built.stderr[-4000:]
    for key, name in zip(crates, names):
        ran = subprocess.run(
            [str(Path(env["CARGO_TARGET_DIR"]) / "release" / "repro-port"), name],
            capture_output=True,
            text=True,
            check=True,
        )
        printed = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
        values = next(o["values"] for o in printed if o.get("label") == "losses")
        np.testing.assert_allclose(values, losses[key], rtol=1e-6, atol=1e-7)
