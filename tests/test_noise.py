"""Noise controls (`runner.noise`) and the cost of a step in context (`runner.cost`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner import noise
from runner.cost import Peak, cpu_peak, p10_step_flop, step_mflop
from runner.model.case import P10Params


def test_controls_parse_and_print():
    assert noise.Controls() == noise.Controls(malloc=True, pin=False), "the default: what helped"
    assert noise.Controls.parse("all") == noise.Controls(malloc=True, pin=True)
    assert noise.Controls.parse("none") == noise.Controls(malloc=False, pin=False)
    assert noise.Controls.parse("pin") == noise.Controls(malloc=False, pin=True)
    assert noise.Controls.parse(" malloc , pin ") == noise.Controls(malloc=True, pin=True)
    assert str(noise.Controls()) == "malloc" and str(noise.Controls(False, False)) == "none"
    for bad in ("", "fast", "all,pin", "malloc,turbo"):
        with pytest.raises(ValueError, match="noise controls"):
            noise.Controls.parse(bad)


def test_worker_env_sets_threads_malloc_and_cpu():
    base = {"PATH": "/bin", "MALLOC_MMAP_THRESHOLD_": "1", noise.PIN_ENV: "9"}
    env = noise.worker_env(base, noise.Controls(pin=True), cpu=1)
    assert env["OMP_NUM_THREADS"] == env["RAYON_NUM_THREADS"] == "1"
    assert {k: env[k] for k in noise.FIXED_MALLOC} == noise.FIXED_MALLOC
    assert env[noise.PIN_ENV] == "1" and env["PATH"] == "/bin"
    off = noise.worker_env(base, noise.Controls(malloc=False, pin=False), cpu=1)
    assert not set(noise.FIXED_MALLOC) & set(off), "malloc off: glibc's own settings"
    assert noise.PIN_ENV not in off
    assert noise.PIN_ENV not in noise.worker_env(base, noise.Controls(pin=True), cpu=None)
    assert noise.PIN_ENV not in noise.worker_env(base, noise.Controls(), cpu=1), "not pinned by default"
    assert base[noise.PIN_ENV] == "9", "the base is not changed"


def test_pin_from_env_pins_or_says_why_not():
    assert noise.pin_from_env({}) is None
    assert noise.pin_from_env({noise.PIN_ENV: "not a cpu"}) is None
    assert noise.pin_from_env({noise.PIN_ENV: "100000"}) is None  # no such CPU: refused, not raised
    if not hasattr(os, "sched_setaffinity"):
        return
    before = os.sched_getaffinity(0)
    try:
        cpu = min(before)
        assert noise.pin_from_env({noise.PIN_ENV: str(cpu)}) == cpu
        assert os.sched_getaffinity(0) == {cpu}
    finally:
        os.sched_setaffinity(0, before)


def test_load_and_frequency_are_read_where_present(tmp_path: Path):
    load = noise.load_average()
    assert load is None or load >= 0
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("processor\t: 0\ncpu MHz\t\t: 2000.0\nprocessor\t: 1\ncpu MHz\t\t: 3000.0\n")
    assert noise.cpu_mhz(tmp_path) == 2500.0
    freq = tmp_path / "sys/devices/system/cpu/cpu0/cpufreq"
    freq.mkdir(parents=True)
    (freq / "scaling_cur_freq").write_text("3500000\n")
    assert noise.cpu_mhz(tmp_path) == 3500.0, "cpufreq's current frequency first"
    assert noise.cpu_mhz(tmp_path / "nowhere") is None


def test_p10_step_flop_counts_the_matrix_products_and_the_rest():
    params = P10Params().model_dump()
    detach = p10_step_flop(params, "detach")
    products = 4 * 64 * 512 * 512  # forward and dW
    assert products == 67_108_864
    assert detach == pytest.approx(68.6e6, rel=1e-3)
    assert p10_step_flop(params, "without") == detach
    assert p10_step_flop(params, "target") == pytest.approx(detach + 2 * 64 * 512 * 512 + 64 * 512)
    assert p10_step_flop(params, "ema-only") == 3 * 512 * 512
    assert p10_step_flop(params, "log") == detach - 512 * 512
    assert step_mflop("p10", params, "detach") == pytest.approx(68.617216)
    assert step_mflop("program", params, "main") is None
    assert step_mflop("p10", {}, "detach") is None


CPUINFO = "processor\t: 0\nmodel name\t: Some CPU\ncpu MHz\t\t: 2596.120\nflags\t\t: fpu sse avx avx2 fma {extra}\n"


@pytest.mark.parametrize(
    "extra, lanes, isa", [("avx512f avx512bw", 16, "avx512f"), ("", 8, "avx2")], ids=["avx512", "avx2"]
)
def test_cpu_peak_from_flags_and_frequency(tmp_path: Path, extra: str, lanes: int, isa: str):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text(CPUINFO.format(extra=extra))
    peak = cpu_peak(tmp_path)
    assert peak == Peak(mhz=2596.12, lanes=lanes, isa=isa, fma=True)
    assert peak.gflops == pytest.approx(2.59612 * lanes * 2 * 2)
    assert f"{lanes} float32 lanes ({isa})" in peak.basis()


def test_cpu_peak_prefers_the_highest_frequency_and_knows_its_limits(tmp_path: Path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("cpu MHz\t: 1000\nflags\t: sse\n")
    freq = tmp_path / "sys/devices/system/cpu/cpu0/cpufreq"
    freq.mkdir(parents=True)
    (freq / "cpuinfo_max_freq").write_text("3000000\n")
    peak = cpu_peak(tmp_path)
    assert peak is not None and (peak.mhz, peak.lanes, peak.fma) == (3000.0, 4, False)
    assert peak.gflops == pytest.approx(3.0 * 4 * 1 * 2)
    (tmp_path / "proc/cpuinfo").write_text("cpu MHz\t: 1000\nflags\t: fpu\n")
    assert cpu_peak(tmp_path) is None
    assert cpu_peak(tmp_path / "nowhere") is None


def test_gflops_and_the_machine_state_reach_the_terminal_and_markdown():
    from report_fixtures import SAMPLE_1

    from runner.report import markdown
    from runner.report.command import build
    from runner.report.history import History
    from runner.results import load_results
    from runner.terminal import summary

    doc = load_results(SAMPLE_1)[0]
    assert "GFLOP/s" in summary(doc) and "Measured:" not in summary(doc), "older files: no measurement line"
    provenance = doc.provenance.model_copy(
        update={
            "load_start": 3.5,
            "load_end": 2.25,
            "noise_controls": "malloc",
            "repeat": 5,
            "peak_gflops": 166.2,
            "peak_basis": "2596 MHz x 16 float32 lanes (avx512f) x 2 (FMA) x 2 pipes",
        }
    )
    run = doc.runs[0]
    metrics = run.metrics.model_copy(update={"step_mflop": 68.6, "gflops": 83.1})
    doc = doc.model_copy(
        update={"provenance": provenance, "runs": [run.model_copy(update={"metrics": metrics}), *doc.runs[1:]]}
    )
    text = summary(doc)
    assert "83.1 (50%)" in text
    assert "load average 3.50 at the start, 2.25 at the end" in text and "5 repeats" in text
    assert "166 GFLOP/s (2596 MHz x 16 float32 lanes" in text
    md = markdown.render(build([(doc, "test")], History(Path("/nonexistent-history"))))
    assert "| GFLOP/s (of peak) |" in md and "83.1 (50%)" in md and "load average 3.50" in md
