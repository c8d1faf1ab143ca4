"""The PLN benchmark: its method registry, the measures as numbers, and the harness and CLI on
a tiny problem (no timing thresholds)."""

import json
import math
from types import SimpleNamespace

import numpy as np
import optax
import pytest

from jaxcourse import bench, optim
from jaxcourse.bench.__main__ import main
from jaxcourse.bench._run import EAGER_MAX_ITER_LARGE, LARGE_N_SAMPLES, iteration_budget
from jaxcourse.pln import level5, level6
from jaxcourse.pln.constants import BEST_KNOWN_ELBO_OAKS, PYPLNMODELS_MAXITER

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_results():
    return bench.run_pln_benchmark(
        "tiny",
        n_iter=8,
        repeat=2,
        methods=["level 1", "level 5", "level 6", "pyPLNmodels"],
        cold_methods=["level 5"],
        reference_repeat=1,
        torch_threads=1,
    )


# The registry


def test_method_names_are_unique_and_in_registry_order():
    """Every method is found by its name, and no two share one."""
    names = bench.method_names()
    assert len(set(names)) == len(names) == len(bench.METHODS)
    assert bench.select_methods(names[::-1]) == bench.METHODS[::-1]


def test_exactly_one_reference_and_it_is_pyplnmodels():
    """The reference is a flag on one registry entry, not a name special-cased elsewhere."""
    (reference,) = [method for method in bench.METHODS if method.is_reference]
    assert reference.name == "pyPLNmodels"
    assert reference.settings()["maxiter"] == PYPLNMODELS_MAXITER
    assert f"maxiter={PYPLNMODELS_MAXITER}" in reference.description


@pytest.mark.parametrize(
    "method", [m for m in bench.METHODS if not m.is_reference], ids=lambda m: m.name
)
def test_every_level_is_described_by_its_own_optimizer(method):
    """A level's description is the call it makes, with the optimizer as `optim.describe`
    reads it from the object: recorded settings, never a hand-typed string."""
    described = optim.describe(method.optimizer)
    assert "not recorded" not in described
    assert method.description.startswith(method.fit.__module__.rsplit(".", 1)[-1] + ".fit(")
    assert f"optimizer={described}" in method.description


def test_a_description_follows_the_settings_it_describes():
    """Change a setting, and the description changes with it."""
    method = bench.Method(
        "trial", level5.fit, {"optimizer": optim.rprop(0.3, step_sizes=(1e-9, 7.0)), "tol": 0.0}
    )
    assert (
        "optim.rprop(learning_rate=0.3, etas=(0.5, 1.2), step_sizes=(1e-09, 7.0))"
        in method.description
    )
    assert "tol=0.0" in method.description and "monitor_every=" in method.description


def test_levels_5_and_6_run_the_plain_call():
    """The benchmark times what a user writes: no level-5 or level-6 entry passes anything but
    its optimizer, so their defaults must be the fast path (level 6's mesh adapts to the data)."""
    for method in bench.METHODS:
        if method.fit in (level5.fit, level6.fit):
            assert set(method.options) <= {"optimizer"}, method.name


def test_describe_rejects_what_is_not_an_optimizer():
    """`optim.describe` says so for an optax optimizer it did not build, and refuses a non-optimizer."""
    assert optim.describe(optax.adam(0.1)).endswith("(settings not recorded)")
    with pytest.raises(TypeError, match="optax transformation"):
        optim.describe("rprop")


def test_unknown_method_and_size_are_rejected():
    """Typos in method or size names fail before any work is done."""
    with pytest.raises(ValueError, match="unknown methods"):
        bench.run_pln_benchmark("tiny", methods=["level 9"])
    with pytest.raises(TypeError, match="list of names"):
        bench.select_methods("level 5")
    with pytest.raises(ValueError, match="size must be one of"):
        bench.load_size("huge")


def test_sizes_use_the_case_study_constants():
    """oaks x 100 is `OAKS100_COPIES` copies, and its best known ELBO is oaks' times that."""
    assert bench.best_known_elbo("oaks") == BEST_KNOWN_ELBO_OAKS
    assert bench.best_known_elbo("oaks100") == pytest.approx(
        BEST_KNOWN_ELBO_OAKS * bench.SIZES["oaks100"]
    )
    assert bench.best_known_elbo("tiny") is None


def test_an_eager_method_gets_fewer_iterations_on_large_data():
    """Level 0 (eager) is capped on large data, or at `eager_max_iter`; compiled levels never."""
    level0, level1 = bench.select_methods(["level 0", "level 1"])
    large, small = SimpleNamespace(n_samples=LARGE_N_SAMPLES + 1), SimpleNamespace(n_samples=10)
    budget, note = iteration_budget(level0, large, 600, None)
    assert budget == EAGER_MAX_ITER_LARGE and str(budget) in note
    assert iteration_budget(level0, small, 600, None) == (600, "")
    assert iteration_budget(level0, small, 600, 50)[0] == 50
    assert iteration_budget(level1, large, 600, None) == (600, "")


# The measures, from hand-built runs


def _run(name, per_iteration_s, time_to_target_s, *, is_reference=False, final_elbo=0.0, elbo=None):
    times = per_iteration_s * np.arange(1, 4)
    elbo = np.zeros(3) if elbo is None else np.asarray(elbo, dtype=float)
    return bench.MethodRun(
        name=name,
        description="",
        n_iter=3,
        n_steps=3,
        compile_s=0.0,
        run_s=float(times[-1]),
        per_iteration_s=per_iteration_s,
        times_s=times,
        elbo=elbo,
        final_elbo=final_elbo,
        time_to_target_s=time_to_target_s,
        is_reference=is_reference,
    )


def test_p1_p2_judge_the_fastest_level_not_the_cheapest_iteration():
    """P1 and P2 are those of the level that reaches the target first; the cheapest iteration
    is reported apart. The reference is found by its flag, whatever its name."""
    runs = [
        _run("quick steps", 0.001, 0.5),
        _run("few steps", 0.004, 0.1),
        _run("torch", 0.01, 2.0, is_reference=True),
    ]
    metrics = bench.compute_metrics(runs, 0.002)
    assert metrics.fastest == metrics.P2_level == "few steps"
    assert metrics.P1 == pytest.approx(0.05)
    assert metrics.P2 == pytest.approx(2.0)
    assert (metrics.P2_cheapest_level, metrics.P2_cheapest) == ("quick steps", pytest.approx(0.5))


def test_p2_uses_the_floor_measured_around_the_judged_fit():
    """When a run carries the floor measured around it, P2 divides by that one, not by the
    run-wide floor: both sides of the ratio then see the machine in the same state."""
    runs = [
        _run("few steps", 0.004, 0.1)._replace(floor_s=0.0025),
        _run("torch", 0.01, 2.0, is_reference=True),
    ]
    assert bench.compute_metrics(runs, 0.002).P2 == pytest.approx(1.6)


def test_p3_and_the_final_elbo_check_are_numbers():
    """P3 compares the first times within 0.5 nats of the best known ELBO; the final-ELBO check
    compares the float64 final ELBOs. All are plain numbers, with no goal attached."""
    ours = _run(
        "ours", 0.1, 0.1, elbo=[-12.0, -10.4, -10.0], final_elbo=-10.0
    )  # within 0.5 at 0.2 s
    theirs = _run(
        "theirs", 0.2, 0.6, elbo=[-13.0, -11.0, -10.2], final_elbo=-10.2, is_reference=True
    )  # at 0.6 s
    metrics = bench.compute_metrics([ours, theirs], 0.05, best_known_elbo=-10.0)
    assert metrics.P3 == pytest.approx(0.2 / 0.6)
    assert (metrics.final_elbo_fastest, metrics.final_elbo_reference) == (-10.0, -10.2)
    assert metrics.fastest_final_at_least_reference is True
    assert bench.compute_metrics([ours, theirs], 0.05).P3 is None  # no best known ELBO, no P3
    assert all(
        not isinstance(value, str)
        for key, value in metrics._asdict().items()
        if key[0] == "P" and "level" not in key
    )


def test_without_a_reference_only_p2_is_defined():
    """No reference run: no target, no P1, P3 or final-ELBO check; P2 judges the cheapest level."""
    metrics = bench.compute_metrics([_run("a", 0.003, None), _run("b", 0.001, None)], 0.001)
    assert (metrics.fastest, metrics.P1, metrics.P3, metrics.fastest_final_at_least_reference) == (
        None,
    ) * 4
    assert (metrics.P2_level, metrics.P2) == ("b", pytest.approx(1.0))


def test_time_to_target_is_the_first_crossing():
    """first_time_at_least picks the first time the trace reaches the target, None if never."""
    elbo, times = np.array([-5.0, -3.0, -4.0, -1.0]), np.array([0.1, 0.2, 0.3, 0.4])
    assert bench.first_time_at_least(elbo, times, -3.5) == 0.2
    assert bench.first_time_at_least(elbo, times, 0.0) is None


def test_summary_line_shows_the_goals_next_to_the_numbers(tiny_results):
    """The goals live in the reporting layer: the line shows each measure and its goal."""
    line = bench.summary_line(tiny_results)
    for name, goal in bench.GOALS.items():
        assert f"{name}=" in line and f"{goal})" in line
    assert "final>=pyPLNmodels" in line


# The harness on a tiny problem


def test_harness_returns_every_requested_run(tiny_results):
    """One run per method, each with as many times as ELBOs, increasing times, and finite values."""
    names = [run["name"] for run in tiny_results["runs"]]
    assert names == ["level 1", "level 5", "level 6", "pyPLNmodels"]
    for run in tiny_results["runs"]:
        # Levels 5 and 6 compute the ELBO every `monitor_every` iterations only (NaN elsewhere,
        # left out of the curve): at most one ELBO per step, and the returned point's.
        assert 1 <= len(run["times_s"]) == len(run["elbo"]) <= run["n_steps"] + 1
        assert np.all(np.diff(run["times_s"]) >= 0)
        assert np.all(np.isfinite(run["elbo"]))
        assert math.isfinite(run["final_elbo"])
        assert run["per_iteration_s"] > 0
        assert run["final_elbo_stirling"] == pytest.approx(
            run["final_elbo"] + tiny_results["stirling_correction"]
        )
    assert [run["is_reference"] for run in tiny_results["runs"]] == [False, False, False, True]
    assert "Rprop" in tiny_results["runs"][-1]["description"]


def test_harness_records_floor_environment_and_metrics(tiny_results):
    """The floor, the device and versions, the target ELBO and the measures are all present."""
    assert tiny_results["floor"]["median_s"] > 0
    assert tiny_results["environment"]["backend"] == "cpu"
    assert {"jax", "optax", "torch", "pyPLNmodels"} <= set(tiny_results["versions"])
    assert tiny_results["target_elbo"] == pytest.approx(tiny_results["runs"][-1]["final_elbo"])
    assert set(tiny_results["metrics"]) == set(bench.Metrics._fields)
    assert tiny_results["metrics"]["P3"] is None  # P3 is defined on oaks only
    json.dumps(
        {key: value for key, value in tiny_results.items() if key != "fits"}
    )  # JSON-ready but the arrays
    for variational in tiny_results["fits"].values():
        assert [np.shape(a) for a in variational] == [
            (tiny_results["n_samples"], tiny_results["n_species"])
        ] * 2


def test_every_level_run_records_its_adjacent_floor(tiny_results):
    """Each JAX run has a positive floor_s; the reference has none; the run-wide floor is the
    median over all measurements (one at the start, two around every JAX fit)."""
    for run in tiny_results["runs"]:
        assert (run["floor_s"] is None) if run["is_reference"] else (run["floor_s"] > 0)
    assert tiny_results["floor"]["measurements"] == 1 + 2 * 3
    assert "around every fit" in bench.summary_markdown(tiny_results)


def test_sparsely_monitored_run_keeps_only_computed_elbos():
    """A fit that computes its ELBO every 5 iterations (`monitor_every=5`) gives a curve with a
    point at each of those and at the last, all finite, at the times they were reached."""
    every, n_iter = 5, 22
    method = bench.Method(
        "sparse",
        level5.fit,
        {"optimizer": level5.NEWTON_MOMENTUM, "tol": 0.0, "monitor_every": every},
    )
    run = bench.run_method(method, bench.load_size("tiny"), n_iter)
    monitored = np.union1d(np.arange(0, n_iter, every), [n_iter - 1])  # and the last iterate
    assert run.n_steps == n_iter and len(run.elbo) == len(monitored)
    assert np.all(np.isfinite(run.elbo))
    np.testing.assert_allclose(run.times_s, run.run_s / n_iter * (monitored + 1))
    assert f"monitor_every={every}" in run.description


def test_compile_time_is_measured_even_after_an_earlier_compilation():
    """A fit compiled before the benchmark must not show up as a zero compile time."""
    data = bench.load_size("tiny")
    level5.fit(data, 8)  # compiles level 5 with the benchmark's settings
    # No fresh processes (cold fits, the persistent cache's first calls): only this one's clock.
    results = bench.run_pln_benchmark(
        "tiny", n_iter=8, methods=["level 5"], cold_methods=[], first_call_cache=False
    )
    assert results["runs"][0]["compile_s"] > 0


def test_cli_writes_valid_json_and_csv(tmp_path, capsys):
    """`python -m jaxcourse.bench pln --size tiny ...` writes JSON and CSV and prints a summary."""
    out = tmp_path / "results.json"
    code = main(
        [
            "pln",
            "--size",
            "tiny",
            "--repeat",
            "1",
            "--n-iter",
            "5",
            "--methods",
            "level 2,level 5",  # pyPLNmodels' run and its trace: tiny_results above
            "--cold-repeat",
            "0",
            "--reference-repeat",
            "1",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    results = json.loads(out.read_text())
    assert [run["name"] for run in results["runs"]] == ["level 2", "level 5"]
    rows = (tmp_path / "results.csv").read_text().splitlines()
    assert rows[0] == "method,iteration,time_s,elbo,elbo_stirling"
    assert len(rows) == 1 + sum(len(run["elbo"]) for run in results["runs"])
    captured = capsys.readouterr()
    assert "P1=" in captured.out and "floor" in captured.out
    assert "level 5 ..." in captured.err  # progress goes to stderr


# Cold and warm, each library in its own process


def test_cold_runs_come_from_fresh_processes_and_warm_repeats_give_a_spread(tiny_results):
    """The method timed cold has one first call per fresh process; every JAX run keeps all its
    warm repeats; the reference has its cold fit and its warm ones; the table shows the spread."""
    runs = {run["name"]: run for run in tiny_results["runs"]}
    assert len(runs["level 5"]["cold_s"]) == 1 and runs["level 1"]["cold_s"] == []
    assert all(len(run["warm_s"]) == 2 for run in tiny_results["runs"] if not run["is_reference"])
    assert len(runs["pyPLNmodels"]["cold_s"]) == len(runs["pyPLNmodels"]["warm_s"]) == 1
    assert runs["pyPLNmodels"]["run_s"] == pytest.approx(np.median(runs["pyPLNmodels"]["warm_s"]))
    table = bench.runs_table(tiny_results)
    assert (
        "[" in table.loc["level 1", "warm fit (s)"]
        and "(once)" in table.loc["level 5", "cold fit (s)"]
    )
    assert table.loc["pyPLNmodels", "gap to reference (nats)"] == 0.0


def test_the_reference_runs_with_the_torch_threads_asked_for(tiny_results):
    """pyPLNmodels ran in its own process, on torch's CPU device, with the one thread the fixture
    asked for (the default, `default_torch_threads`, is the cores this process may use)."""
    from jaxcourse.bench._fresh import default_torch_threads

    reference = tiny_results["runs"][-1]
    assert reference["device"] == "torch cpu, 1 thread(s)" and "own process" in reference["note"]
    assert reference["import_s"] > 0 and reference["n_steps"] == len(reference["elbo"])
    assert tiny_results["runs"][0]["device"].startswith("jax cpu") and default_torch_threads() >= 1


def test_run_fresh_rejects_bad_requests():
    tiny = bench.load_size("tiny")
    with pytest.raises(ValueError, match="kind must be"):
        bench.run_fresh("torch", [tiny], n_iter=3)
    with pytest.raises(ValueError, match="name of a method"):
        bench.run_fresh("jax", [tiny], n_iter=3)
    with pytest.raises(ValueError, match="repeat must be"):
        bench.run_fresh("reference", [tiny], n_iter=3, repeat=0)
    with pytest.raises(TypeError, match="list of PLNData"):
        bench.run_fresh("reference", [tiny.counts], n_iter=3)
    with pytest.raises(TypeError, match="xla_flags must be a str"):
        bench.run_fresh("jax", [tiny], n_iter=3, method="level 5", xla_flags=["--xla_cpu_ftz"])


def test_run_fresh_hands_its_xla_flags_to_the_new_process(monkeypatch):
    """XLA reads `XLA_FLAGS` when its backend starts: the flags go to the new process, after
    any this one has, and the process reports what it ran with."""
    from jaxcourse.hlo import CPU_MULTI_OUTPUT_FUSION

    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_min_max=false")
    tiny = bench.load_size("tiny")
    run = bench.run_fresh(
        "jax", [tiny], n_iter=3, method="level 5", xla_flags=CPU_MULTI_OUTPUT_FUSION
    )
    assert run.xla_flags == f"--xla_cpu_enable_fast_min_max=false {CPU_MULTI_OUTPUT_FUSION}"
    assert run.fits[0].n_steps <= 3 and len(run.fits[0].times_s) == 1


def test_methods_table_has_every_method_and_what_it_computes(tiny_results):
    """One row per method of the registry, with objective, gradient, optimizer, start, stopping
    rule and device ("not run" for those not run); the reference's stopping rule says when its
    criterion can first stop it."""
    table = bench.methods_table(tiny_results)
    assert list(table.index) == bench.method_names()
    run_names = {run["name"] for run in tiny_results["runs"]}
    assert [name for name in table.index if table.loc[name, "device"] != "not run"] == [
        n for n in bench.method_names() if n in run_names
    ]
    assert {
        "objective",
        "gradient",
        "optimizer and step",
        "start",
        "stopping rule",
        "device",
    } <= set(table.columns)
    assert (
        table.loc["level 1", "gradient"].startswith("autodiff")
        and "envelope" in table.loc["level 5", "gradient"]
    )
    defaults = bench.pyplnmodels_defaults()
    assert (
        f"iteration {bench.earliest_stop(defaults.tol, defaults.criterion_beta)}"
        in table.loc["pyPLNmodels", "stopping rule"]
    )
    assert (
        "offsets not used" in table.loc["pyPLNmodels", "start"]
        and "- O" in table.loc["level 5", "start"]
    )


def test_first_call_ratio_divides_the_medians_of_the_cold_calls():
    """The plain first call over the reference's first fit, both medians over fresh processes."""
    results = {
        "runs": [
            {"name": bench.PLAIN_CALL, "is_reference": False, "cold_s": [1.0, 3.0, 2.0]},
            {"name": "pyPLNmodels", "is_reference": True, "cold_s": [20.0, 40.0]},
        ],
        "first_call_cached_s": {"fill_s": 2.5, "hit_s": 0.6},
    }
    ratios = bench._benchmark.first_call_ratios(results)
    assert ratios == {
        "first_call_ratio": pytest.approx(2.0 / 30.0),
        "first_call_ratio_cached": pytest.approx(0.02),
    }
    results["runs"][0]["cold_s"] = []
    assert bench._benchmark.first_call_ratios(results)["first_call_ratio"] is None


def test_spread_is_median_and_range():
    assert bench.spread([3.0, 1.0, 2.0]) == "2 [1, 3]"
    assert bench.spread([0.5]) == "0.5 (once)" and bench.spread([]) == "n/a"


def test_alt_text_is_written_from_the_run(tiny_results):
    """The alt text names the methods that reach the target, in order, and those that never do;
    change the run and the text changes with it."""
    text = bench.curves_alt_text(tiny_results)
    assert f"each of {len(tiny_results['runs'])} methods" in text
    reached = [run["name"] for run in tiny_results["runs"] if run["time_to_target_s"] is not None]
    assert all(name in text for name in reached)
    never = {
        **tiny_results,
        "runs": [{**run, "time_to_target_s": None} for run in tiny_results["runs"]],
    }
    assert "Never reaching it: " + ", ".join(
        run["name"] for run in tiny_results["runs"]
    ) in bench.curves_alt_text(never)


def test_figure_with_alt_puts_the_text_in_the_image_tag():
    import matplotlib.pyplot as plt

    figure, _ = plt.subplots()
    shown = bench.FigureWithAlt(figure, alt='curves "a" < b', caption="A caption")
    html = shown._repr_html_()
    assert (
        'alt="curves &quot;a&quot; &lt; b"' in html and "<figcaption>A caption</figcaption>" in html
    )
    with pytest.raises(ValueError, match="alt text"):
        bench.FigureWithAlt(plt.subplots()[0], alt=" ")


# Parameters and sizes


def test_compare_params_finds_the_species_that_moved():
    """Perturb M for one species: B differs there and nowhere else, and its fraction of zeros is
    reported; identical fits differ by nothing."""
    data = bench.load_size("tiny")
    mean, sqrt_var = (np.asarray(a) for a in level5.fit(data, 50).variational)
    moved = mean.copy()
    moved[:, 2] += 0.3
    table = bench.compare_params(
        data,
        {"same": (mean, sqrt_var), "moved": (moved, sqrt_var), "base": (mean, sqrt_var)},
        "base",
    )
    assert table.loc["same", "max |dB|"] == 0.0
    assert table.loc["moved", "at species"] == 2 and table.loc[
        "moved", "max |dB|"
    ] == pytest.approx(0.3)
    assert table.loc["moved", "its zeros"] == pytest.approx(bench.zero_fractions(data)[2])
    with pytest.raises(ValueError, match="against must name"):
        bench.compare_params(data, {"a": (mean, sqrt_var)}, "b")


def test_sweep_needs_covariates_and_sizes():
    """The sweep simulates covariates beyond the intercept, at the sizes asked for."""
    import jax

    (data,) = bench.sweep_data([(20, 3)], n_covariates=3, key=jax.random.key(0))
    assert data.counts.shape == (20, 3) and data.n_covariates == 3
    with pytest.raises(ValueError, match="n_covariates must be at least 2"):
        bench.run_sweep([(20, 3)], n_covariates=1, key=jax.random.key(0))
    with pytest.raises(ValueError, match="at least one"):
        bench.run_sweep([], key=jax.random.key(0))


def test_the_sweep_gives_the_reference_process_the_torch_threads_asked_for(monkeypatch):
    """`run_sweep(torch_threads=...)` reaches the fresh process pyPLNmodels runs in (the page
    gives torch one thread on a CPU); None leaves `run_fresh` its default."""
    import jax

    from jaxcourse.bench import _sweep

    asked = []

    def stop_at_the_reference(kind, datasets, **options):
        asked.append((kind, options["torch_threads"]))
        raise RuntimeError("stopped before fitting")

    monkeypatch.setattr(_sweep, "run_fresh", stop_at_the_reference)
    for threads in (1, None):
        with pytest.raises(RuntimeError, match="stopped before fitting"):
            bench.run_sweep([(20, 3)], key=jax.random.key(0), torch_threads=threads)
    assert asked == [("reference", 1), ("reference", None)]
