"""The profiling chapter's checkers accept the reference solutions and reject typical wrong answers
with the hint that names the mistake."""

import collections

import jax
import jax.numpy as jnp
import pytest
from wrong_answers import assert_fails_with

from jaxcourse.exercises import profiling as exercises


def stub(*args, **kwargs):
    raise NotImplementedError


# Exercise 1: arithmetic intensity ------------------------------------------------------------------


def intensity(fn, *args):
    analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
    return analysis["flops"] / analysis["bytes accessed"]


def test_intensity_reference_passes():
    verdict = exercises.check_intensity(intensity)
    assert verdict, verdict.message


def test_intensity_stub_is_not_yet():
    assert_fails_with(exercises.check_intensity(stub), "no answer yet")


def test_intensity_flops_only_fails():
    def flops(fn, *args):
        return jax.jit(fn).lower(*args).compile().cost_analysis()["flops"]

    assert_fails_with(
        exercises.check_intensity(flops), "the FLOPs: divide them by the bytes accessed"
    )


def test_intensity_inverted_fails():
    def bytes_per_flop(fn, *args):
        analysis = jax.jit(fn).lower(*args).compile().cost_analysis()
        return analysis["bytes accessed"] / analysis["flops"]

    assert_fails_with(exercises.check_intensity(bytes_per_flop), "bytes per FLOP")


def test_intensity_of_the_lowered_program_fails():
    """Before compiling, every unfused operation's bytes are counted: the fused chain differs."""

    def lowered(fn, *args):
        analysis = jax.jit(fn).lower(*args).cost_analysis()
        return analysis["flops"] / analysis["bytes accessed"]

    assert_fails_with(exercises.check_intensity(lowered), "the intensity of the lowered program")


def test_intensity_returning_the_dict_fails():
    assert_fails_with(
        exercises.check_intensity(
            lambda fn, *args: jax.jit(fn).lower(*args).compile().cost_analysis()
        ),
        "should be one number",
    )


# Exercise 2: memory- or compute-bound? -------------------------------------------------------------


def limited_by(fn, x, peak_flops, bandwidth):
    return "memory" if intensity(fn, x) < peak_flops / bandwidth else "compute"


def test_limited_by_reference_passes():
    verdict = exercises.check_limited_by(limited_by)
    assert verdict, verdict.message


def test_limited_by_stub_is_not_yet():
    assert_fails_with(exercises.check_limited_by(stub), "no answer yet")


def test_limited_by_always_memory_fails():
    assert_fails_with(
        exercises.check_limited_by(lambda fn, x, peak, bandwidth: "memory"),
        "for every program on every machine",
    )


def test_limited_by_inverted_ridge_fails():
    def inverted(fn, x, peak_flops, bandwidth):
        return "memory" if intensity(fn, x) < bandwidth / peak_flops else "compute"

    assert_fails_with(
        exercises.check_limited_by(inverted), "follow a ridge of bandwidth / peak_flops"
    )


def test_limited_by_comparing_flops_with_the_peak_fails():
    """Mixing units: FLOPs against FLOP/s says nothing about the bound."""

    def flops_vs_peak(fn, x, peak_flops, bandwidth):
        flops = jax.jit(fn).lower(x).compile().cost_analysis()["flops"]
        return "compute" if flops * 1e6 > peak_flops else "memory"

    assert_fails_with(exercises.check_limited_by(flops_vs_peak), "the ridge is")


def test_limited_by_returning_a_boolean_fails():
    def is_memory_bound(fn, x, peak_flops, bandwidth):
        return intensity(fn, x) < peak_flops / bandwidth

    assert_fails_with(
        exercises.check_limited_by(is_memory_bound), "the string 'memory' or 'compute'"
    )


# Exercise 3: a scan's gradient in less memory ---------------------------------------------------------


def checkpointed_grad(policy, where="body"):
    def low_memory_grad(x0, ws):
        body = (
            exercises.wide_body
            if where == "loss"
            else jax.checkpoint(exercises.wide_body, policy=policy)
        )

        def loss(x0, ws):
            x, _ = jax.lax.scan(body, x0, ws)
            return jnp.sum(x**2)

        if where == "loss":
            loss = jax.checkpoint(loss, policy=policy)
        return jax.grad(loss, argnums=1)(x0, ws)

    return low_memory_grad


@pytest.mark.slow
def test_low_memory_grad_reference_passes():
    verdict = exercises.check_low_memory_grad(
        checkpointed_grad(jax.checkpoint_policies.nothing_saveable)
    )
    assert verdict, verdict.message


def test_low_memory_grad_stub_is_not_yet():
    assert_fails_with(exercises.check_low_memory_grad(stub), "no answer yet")


@pytest.mark.slow
def test_low_memory_grad_plain_grad_fails():
    assert_fails_with(
        exercises.check_low_memory_grad(
            lambda x0, ws: jax.grad(exercises.scan_loss, argnums=1)(x0, ws)
        ),
        "Wrap the scan's body in jax.checkpoint",
    )


def test_low_memory_grad_checkpointing_the_whole_loss_fails():
    assert_fails_with(
        exercises.check_low_memory_grad(
            checkpointed_grad(jax.checkpoint_policies.nothing_saveable, where="loss")
        ),
        "jax.checkpoint around the whole loss",
    )


def test_low_memory_grad_saving_everything_fails():
    assert_fails_with(
        exercises.check_low_memory_grad(
            checkpointed_grad(jax.checkpoint_policies.everything_saveable)
        ),
        "everything_saveable",
    )


def test_low_memory_grad_gradient_in_x0_fails():
    """The gradient in the wrong argument has the wrong shape."""
    assert_fails_with(
        exercises.check_low_memory_grad(lambda x0, ws: jax.grad(exercises.scan_loss)(x0, ws)),
        "should be one array of shape (12, 16)",
    )


# Exercise 4: the most expensive operation in a trace ----------------------------------------------------


def contains(outer, inner):
    return (
        outer is not inner
        and outer.thread == inner.thread
        and outer.start_us <= inner.start_us
        and inner.end_us <= outer.end_us
    )


def most_expensive_op(events):
    thunks = [event for event in events if event.kind == "thunk"]
    totals = collections.Counter()
    for event in thunks:
        if not any(contains(event, other) for other in thunks):
            totals[event.name] += event.duration_us
    return max(totals, key=totals.get) if totals else None


@pytest.mark.slow
def test_most_expensive_op_reference_passes():
    verdict = exercises.check_most_expensive_op(most_expensive_op)
    assert verdict, verdict.message


def test_most_expensive_op_stub_is_not_yet():
    assert_fails_with(exercises.check_most_expensive_op(stub), "no answer yet")


def test_most_expensive_op_keeping_the_loop_fails():
    def with_containers(events):
        totals = collections.Counter()
        for event in events:
            if event.kind == "thunk":
                totals[event.name] += event.duration_us
        return max(totals, key=totals.get) if totals else None

    assert_fails_with(
        exercises.check_most_expensive_op(with_containers),
        "you kept the thunks that contain other thunks on their thread",
    )


def test_most_expensive_op_longest_single_event_fails():
    def longest(events):
        thunks = [
            e
            for e in events
            if e.kind == "thunk" and not any(contains(e, o) for o in events if o.kind == "thunk")
        ]
        return max(thunks, key=lambda e: e.duration_us).name if thunks else None

    assert_fails_with(
        exercises.check_most_expensive_op(longest), "add up the durations of each name's events"
    )


def test_most_expensive_op_every_kind_of_event_fails():
    def any_event(events):
        """Nesting handled, but a Python call or the executable's run counted as an operation."""
        totals = collections.Counter()
        for event in events:
            if not any(contains(event, other) for other in events):
                totals[event.name] += event.duration_us
        return max(totals, key=totals.get) if totals else None

    assert_fails_with(
        exercises.check_most_expensive_op(any_event), "you counted events that are not thunks"
    )


def test_most_expensive_op_ignoring_threads_fails():
    def across_threads(events):
        thunks = [e for e in events if e.kind == "thunk"]

        def inside(outer, inner):
            return (
                outer is not inner
                and outer.start_us <= inner.start_us
                and inner.end_us <= outer.end_us
            )

        totals = collections.Counter()
        for event in thunks:
            if not any(inside(event, other) for other in thunks):
                totals[event.name] += event.duration_us
        return max(totals, key=totals.get) if totals else None

    assert_fails_with(exercises.check_most_expensive_op(across_threads), "on another thread")


# Exercise 5: donate the state ---------------------------------------------------------------------------


def test_donating_step_reference_passes():
    verdict = exercises.check_donated_state(lambda step: jax.jit(step, donate_argnums=0))
    assert verdict, verdict.message


def test_donating_step_stub_is_not_yet():
    assert_fails_with(exercises.check_donated_state(stub), "no answer yet")


def test_donating_step_without_donation_fails():
    assert_fails_with(
        exercises.check_donated_state(lambda step: jax.jit(step)), "Nothing is donated"
    )


def test_donating_step_donating_the_batch_fails():
    """The lowered program records which arguments are donated: the batch, not the state."""
    assert_fails_with(
        exercises.check_donated_state(lambda step: jax.jit(step, donate_argnums=1)),
        "you donated the batch (argument 1), not the state",
    )


def test_donating_step_donating_everything_fails():
    """Read from the lowered program, on sgd_step already, whose batch no output could reuse."""
    assert_fails_with(
        exercises.check_donated_state(lambda step: jax.jit(step, donate_argnums=(0, 1))),
        "you donated the batch (argument 1) as well as the state",
    )


def test_donating_step_not_jitted_fails():
    assert_fails_with(
        exercises.check_donated_state(lambda step: step), "should return a jitted function"
    )


def test_donating_step_changing_the_step_fails():
    def doubled(step):
        return jax.jit(
            lambda state, batch: jax.tree.map(lambda x: 2 * x, step(state, batch)), donate_argnums=0
        )

    assert_fails_with(exercises.check_donated_state(doubled), "does not return step(state, batch)")
