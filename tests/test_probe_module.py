"""The burn probe through Python: the same facts as `cargo test`, plus argument errors."""

import pytest

from runner import _probe

SMALL = dict(d_in=32, d_out=32, batch=8)


def test_build_is_release_against_burn_0_22_1():
    info = _probe.build_info()
    assert info["profile"] == "release"
    assert info["burn"] == "0.22.1"
    assert info["rustc"].startswith("rustc ")


def test_modes_are_the_six_p10_modes():
    assert _probe.MODES == ["detach", "target", "without", "target-without", "log", "ema-only"]


def test_detach_ema_is_tracked_and_without_is_not():
    detach = _probe.run_p10("detach", steps=30, **SMALL)
    without = _probe.run_p10("without", steps=30, **SMALL)
    assert detach["outcome"] == without["outcome"] == "ok"
    assert [c["tracked"] for c in detach["checkpoints"]] == [True, True]
    assert [c["tracked"] for c in without["checkpoints"]] == [False, False]
    assert not any(c["flags"]["is_autodiff"] for c in without["checkpoints"])


def test_target_panic_comes_back_as_data():
    result = _probe.run_p10("target", steps=30, **SMALL)
    assert result["outcome"] == "panic"
    panic = result["panic"]
    assert "graph tape has already been consumed" in panic["message"]
    assert panic["location"].endswith("src/runtime/server.rs:74:17")
    assert "burn-autodiff-0.22.1" in panic["file"]
    # burn 0.22.1 here: steps 1 and 2 complete, step 3's backward panics
    # (the seed says step 2; see the issue note).
    assert (panic["step"], panic["phase"]) == (3, "backward")
    assert len(result["step_ms"]) == 2


def test_interpreter_survives_a_panic_and_runs_again():
    assert _probe.run_p10("target", steps=5, **SMALL)["outcome"] == "panic"
    assert _probe.run_p10("target-without", steps=5, **SMALL)["outcome"] == "ok"


def test_log_and_ema_only_complete_with_every_step_timed():
    for mode in ("log", "ema-only"):
        result = _probe.run_p10(mode, steps=25, checkpoints=[1, 10, 25], **SMALL)
        assert result["outcome"] == "ok"
        assert len(result["step_ms"]) == 25
        assert [c["step"] for c in result["checkpoints"]] == [1, 10, 25]
        assert all(c["rss_delta_mib"] is not None for c in result["checkpoints"])


def test_progress_sees_every_checkpoint_and_can_stop_the_run():
    seen = []
    _probe.run_p10("without", steps=20, checkpoints=[5, 10, 20], progress=seen.append, **SMALL)
    assert [c["step"] for c in seen] == [5, 10, 20]

    def stop(checkpoint):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _probe.run_p10("detach", steps=10_000, checkpoints=[1, 10_000], progress=stop, **SMALL)


@pytest.mark.parametrize(
    "kwargs, parameter",
    [
        (dict(mode="detatch"), "mode"),
        (dict(mode=7), "mode"),
        (dict(mode="detach", d_in=0), "d_in"),
        (dict(mode="detach", d_out=-4), "d_out"),
        (dict(mode="detach", batch=10**6), "batch"),
        (dict(mode="detach", steps=0), "steps"),
        (dict(mode="detach", steps=-1), "steps"),
        (dict(mode="detach", steps=2**80), "steps"),
        (dict(mode="detach", steps=True), "steps"),
        (dict(mode="detach", steps=2.5), "steps"),
        (dict(mode="detach", lr=0.0), "lr"),
        (dict(mode="detach", lr="fast"), "lr"),
        (dict(mode="detach", ema_decay=1.01), "ema_decay"),
        (dict(mode="detach", steps=100, checkpoints=[10, 5]), "checkpoints"),
        (dict(mode="detach", steps=100, checkpoints=[10, 10]), "checkpoints"),
        (dict(mode="detach", steps=100, checkpoints=[50, 101]), "checkpoints"),
        (dict(mode="detach", steps=100, checkpoints=[0]), "checkpoints"),
        (dict(mode="detach", steps=100, checkpoints=[]), "checkpoints"),
        (dict(mode="detach", steps=100, checkpoints=5), "checkpoints"),
        (dict(mode="detach", seed=-1), "seed"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_parameter(kwargs, parameter):
    with pytest.raises(ValueError) as info:
        _probe.run_p10(**kwargs)
    assert str(info.value).startswith(f"{parameter}:"), str(info.value)


def test_unknown_mode_message_lists_the_valid_modes():
    with pytest.raises(ValueError) as info:
        _probe.run_p10("nope")
    for mode in _probe.MODES:
        assert mode in str(info.value)
