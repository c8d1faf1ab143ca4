"""The PLN benchmark harness and its CLI: well-formed data on a tiny problem (no timing thresholds)."""

import json
import math

import numpy as np
import pytest

from jaxcourse.bench import _pln
from jaxcourse.bench.__main__ import main


@pytest.fixture(scope="module")
def tiny_results():
    return _pln.run_pln_benchmark(
        "tiny", n_iter=8, methods=["level 1", "level 5", "level 6", "pyPLNmodels"]
    )


def test_harness_returns_every_requested_run(tiny_results):
    """One run per method, each with as many times as ELBOs, increasing times, and finite values."""
    names = [run["name"] for run in tiny_results["runs"]]
    assert names == ["level 1", "level 5", "level 6", "pyPLNmodels"]
    for run in tiny_results["runs"]:
        assert len(run["times_s"]) == len(run["elbo"]) == run["n_steps"] >= 1
        assert np.all(np.diff(run["times_s"]) >= 0)
        assert np.all(np.isfinite(run["elbo"]))
        assert math.isfinite(run["final_elbo"])
        assert run["per_iteration_s"] > 0
        assert run["final_elbo_stirling"] == pytest.approx(run["final_elbo"] + tiny_results["stirling_correction"])


def test_harness_records_floor_environment_and_ratios(tiny_results):
    """The floor, the device and versions, the target ELBO and the ratio keys are all present."""
    assert tiny_results["floor"]["median_s"] > 0
    assert tiny_results["environment"]["backend"] == "cpu"
    assert {"jax", "optax", "torch", "pyPLNmodels"} <= set(tiny_results["versions"])
    assert tiny_results["target_elbo"] == pytest.approx(tiny_results["runs"][-1]["final_elbo"])
    assert {"P1", "P2", "P3", "fastest"} <= set(tiny_results["ratios"])
    assert tiny_results["ratios"]["P3"] is None  # P3 is defined on oaks only
    json.dumps(tiny_results)  # JSON-ready as returned
    assert "P1=" in _pln.summary_line(tiny_results)


def test_sparsely_monitored_run_keeps_only_computed_elbos():
    """Newton momentum computes its ELBO every `MONITOR_EVERY` iterations: its curve
    has a point at each of those (and at the last), all finite, at the times they were reached."""
    every = _pln.MONITOR_EVERY
    results = _pln.run_pln_benchmark("tiny", n_iter=4 * every + 2, methods=["level 5 + Newton momentum"])
    (run,) = results["runs"]
    n_points = len(range(0, run["n_steps"] - 1, every)) + 1
    assert len(run["elbo"]) == len(run["times_s"]) == n_points < run["n_steps"]
    assert np.all(np.isfinite(run["elbo"])) and np.all(np.diff(run["times_s"]) > 0)
    assert run["times_s"][-1] == pytest.approx(run["per_iteration_s"] * run["n_steps"])
    assert f"every {every}" in run["optimizer"]


def test_time_to_target_is_the_first_crossing():
    """first_time_at_least picks the first time the trace reaches the target, None if never."""
    elbo, times = np.array([-5.0, -3.0, -4.0, -1.0]), np.array([0.1, 0.2, 0.3, 0.4])
    assert _pln.first_time_at_least(elbo, times, -3.5) == 0.2
    assert _pln.first_time_at_least(elbo, times, 0.0) is None


def test_unknown_method_and_size_are_rejected():
    """Typos in method or size names fail before any work is done."""
    with pytest.raises(ValueError, match="unknown methods"):
        _pln.run_pln_benchmark("tiny", methods=["level 9"])
    with pytest.raises(ValueError, match="size must be one of"):
        _pln.load_size("huge")


def test_cli_writes_valid_json_and_csv(tmp_path, capsys):
    """`python -m jaxcourse.bench pln --size tiny ...` writes JSON and CSV and prints a summary."""
    out = tmp_path / "results.json"
    code = main(["pln", "--size", "tiny", "--repeat", "1", "--n-iter", "5", "--methods", "level 2,level 5,pyPLNmodels", "--out", str(out)])
    assert code == 0
    results = json.loads(out.read_text())
    assert [run["name"] for run in results["runs"]] == ["level 2", "level 5", "pyPLNmodels"]
    rows = (tmp_path / "results.csv").read_text().splitlines()
    assert rows[0] == "method,iteration,time_s,elbo,elbo_stirling"
    assert len(rows) == 1 + sum(run["n_steps"] for run in results["runs"])
    captured = capsys.readouterr()
    assert "P1=" in captured.out and "floor" in captured.out
    assert "level 5 ..." in captured.err  # progress goes to stderr


def _run(name, per_iteration_s, time_to_target_s):
    times = per_iteration_s * np.arange(1, 4)
    return _pln.MethodRun(name, "", 3, 3, 0.0, times[-1], per_iteration_s, times, np.zeros(3), 0.0, time_to_target_s, "")


def test_p2_judges_the_fastest_level_not_the_cheapest_iteration():
    """P2 is the per-iteration time of the level that reaches the target first, over the floor;
    the cheapest iteration is reported apart."""
    runs = [_run("quick steps", 0.001, 0.5), _run("few steps", 0.004, 0.1), _run("pyPLNmodels", 0.01, 2.0)]
    ratios = _pln.compute_ratios(runs, {"median_s": 0.002}, size="oaks100", target=0.0)
    assert ratios["fastest"] == ratios["P2_level"] == "few steps"
    assert ratios["P1"] == pytest.approx(0.05)
    assert ratios["P2"] == pytest.approx(2.0)
    assert (ratios["P2_cheapest_level"], ratios["P2_cheapest"]) == ("quick steps", pytest.approx(0.5))


def test_p2_uses_the_floor_measured_around_the_judged_fit():
    """When a run carries the floor measured around it, P2 divides by that one, not by the
    run-wide floor: both sides of the ratio then see the machine in the same state."""
    runs = [_run("few steps", 0.004, 0.1)._replace(floor_s=0.0025), _run("pyPLNmodels", 0.01, 2.0)]
    ratios = _pln.compute_ratios(runs, {"median_s": 0.002}, size="oaks100", target=0.0)
    assert ratios["P2"] == pytest.approx(1.6)


def test_every_level_run_records_its_adjacent_floor(tiny_results):
    """Each JAX run has a positive floor_s; pyPLNmodels has none; the run-wide floor is the
    median over all measurements (one at the start, two around every JAX fit)."""
    for run in tiny_results["runs"]:
        if run["name"] == "pyPLNmodels":
            assert run["floor_s"] is None
        else:
            assert run["floor_s"] > 0
    assert tiny_results["floor"]["measurements"] == 1 + 2 * 3
    assert "around every fit" in _pln.summary_markdown(tiny_results)


def test_compile_time_is_measured_even_after_an_earlier_compilation():
    """A fit compiled before the benchmark must not show up as a zero compile time."""
    from jaxcourse.pln import level5

    data = _pln.load_size("tiny")
    level5.fit(data, 8)  # compiles level 5 with the benchmark's settings
    results = _pln.run_pln_benchmark("tiny", n_iter=8, methods=["level 5"])
    assert results["runs"][0]["compile_s"] > 0
