"""Wrong answers to the profiling chapter's exercises, written from the exercise texts alone as a
hurried learner would (issue 27, point 4): each must fail, with a hint that names what the answer
did."""

import collections
import functools

import jax
import jax.numpy as jnp
import pytest

from jaxcourse.exercises.profiling import (
    check_donated_state,
    check_intensity,
    check_limited_by,
    check_low_memory_grad,
    check_most_expensive_op,
    wide_body,
)

# Exercise 1: intensity(fn, *args) = FLOPs / bytes of the compiled program ------------------------


def _compiled_analysis(fn, *args):
    return jax.jit(fn).lower(*args).compile().cost_analysis()


def lowered_costs(fn, *args):
    analysis = jax.jit(fn).lower(*args).cost_analysis()
    return analysis["flops"] / analysis["bytes accessed"]


def bytes_per_flop(fn, *args):
    analysis = _compiled_analysis(fn, *args)
    return analysis["bytes accessed"] / analysis["flops"]


def flops_only(fn, *args):
    return _compiled_analysis(fn, *args)["flops"]


def runs_the_function(fn, *args):
    """Calls fn to get the output's size: ShapeDtypeStructs cannot be computed with."""
    out = fn(*args)
    return _compiled_analysis(fn, *args)["flops"] / out.nbytes


def floor_division(fn, *args):
    analysis = _compiled_analysis(fn, *args)
    return analysis["flops"] // analysis["bytes accessed"]


def whole_analysis(fn, *args):
    return _compiled_analysis(fn, *args)


def every_bytes_entry(fn, *args):
    """Adds up all the "bytes accessed..." keys of the dict."""
    analysis = _compiled_analysis(fn, *args)
    moved = sum(value for key, value in analysis.items() if key.startswith("bytes accessed"))
    return analysis["flops"] / moved


def warm_up_first(fn, *args):
    """Runs the jitted function once 'to compile it' before reading the costs."""
    jitted = jax.jit(fn)
    jitted(*args)
    analysis = jitted.lower(*args).compile().cost_analysis()
    return analysis["flops"] / analysis["bytes accessed"]


_by_function = {}


def cached_by_function(fn, *args):
    """Compiling is slow: each function's intensity is kept for the next call."""
    if fn not in _by_function:
        analysis = _compiled_analysis(fn, *args)
        _by_function[fn] = analysis["flops"] / analysis["bytes accessed"]
    return _by_function[fn]


@functools.cache
def cached_on_the_arguments(fn, *args):
    """Keyed by the arguments too: ShapeDtypeStructs hash, arrays do not."""
    analysis = _compiled_analysis(fn, *args)
    return analysis["flops"] / analysis["bytes accessed"]


def bytes_from_the_shapes(fn, *args):
    """The bytes counted from the arguments' and the result's shapes, not read from XLA."""
    out = jax.eval_shape(fn, *args)
    moved = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves((args, out)))
    return _compiled_analysis(fn, *args)["flops"] / moved


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lowered_costs, "the intensity of the lowered program"),
        (bytes_per_flop, "you returned bytes per FLOP"),
        (flops_only, "the FLOPs: divide them by the bytes accessed"),
        (runs_the_function, "your code called fn on the arguments themselves"),
        (floor_division, "rounded down: divide with /, not //"),
        (whole_analysis, "the whole cost analysis: divide its 'flops'"),
        (every_bytes_entry, "the sum of every 'bytes accessed...' entry"),
        (warm_up_first, "ran a function on a jax.ShapeDtypeStruct"),
        (cached_by_function, "kept from one call to the next, keyed by fn alone"),
        (
            cached_on_the_arguments,
            "a cache keyed by them, such as functools.cache, fails on arrays",
        ),
        (bytes_from_the_shapes, "divided by the bytes of the arguments and the result"),
    ],
)
def test_intensity_wrong_answers_fail(wrong, hint):
    verdict = check_intensity(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


# Exercise 2: limited_by(fn, x, peak_flops, bandwidth) -> "memory" or "compute" -------------------


def _intensity(fn, x):
    analysis = _compiled_analysis(fn, x)
    return analysis["flops"] / analysis["bytes accessed"]


def ridge_inverted(fn, x, peak_flops, bandwidth):
    return "memory" if _intensity(fn, x) < bandwidth / peak_flops else "compute"


def labels_swapped(fn, x, peak_flops, bandwidth):
    return "compute" if _intensity(fn, x) < peak_flops / bandwidth else "memory"


def always_memory(fn, x, peak_flops, bandwidth):
    return "memory"


def ridge_as_a_product(fn, x, peak_flops, bandwidth):
    return "memory" if _intensity(fn, x) < peak_flops * bandwidth else "compute"


def capitalised(fn, x, peak_flops, bandwidth):
    return "Memory" if _intensity(fn, x) < peak_flops / bandwidth else "Compute"


def a_boolean(fn, x, peak_flops, bandwidth):
    """True for 'memory-bound'."""
    return bool(_intensity(fn, x) < peak_flops / bandwidth)


def a_fixed_ridge(fn, x, peak_flops, bandwidth):
    """The ridge of one laptop, 10 FLOPs per byte, whatever the machine."""
    return "memory" if _intensity(fn, x) < 10 else "compute"


def lowered_intensity(fn, x, peak_flops, bandwidth):
    analysis = jax.jit(fn).lower(x).cost_analysis()
    intensity = analysis["flops"] / analysis["bytes accessed"]
    return "memory" if intensity < peak_flops / bandwidth else "compute"


_intensity_of = {}


def intensity_kept_by_function(fn, x, peak_flops, bandwidth):
    """Compiles each function once, on its first x."""
    if fn not in _intensity_of:
        _intensity_of[fn] = _intensity(fn, x)
    return "memory" if _intensity_of[fn] < peak_flops / bandwidth else "compute"


def bytes_of_x(fn, x, peak_flops, bandwidth):
    """The bytes counted from x's shape: only what is read."""
    flops = _compiled_analysis(fn, x)["flops"]
    return "memory" if flops / (x.size * x.dtype.itemsize) < peak_flops / bandwidth else "compute"


def runs_fn_for_its_size(fn, x, peak_flops, bandwidth):
    """Runs fn to get the result's size, as an array would allow."""
    moved = x.nbytes + fn(x).nbytes
    flops = _compiled_analysis(fn, x)["flops"]
    return "memory" if flops / moved < peak_flops / bandwidth else "compute"


def intensity_from_the_rank(fn, x, peak_flops, bandwidth):
    """Never looks at fn: a matrix 'is' a matmul (n/4 FLOPs per byte), a vector elementwise."""
    intensity = x.shape[0] / 4 if x.ndim == 2 else 1 / 8
    return "memory" if intensity < peak_flops / bandwidth else "compute"


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (intensity_from_the_rank, "not on x's shape alone"),
        (ridge_inverted, "follow a ridge of bandwidth / peak_flops"),
        (labels_swapped, "every answer is the opposite of the right one"),
        (always_memory, "you answered 'memory' for every program on every machine"),
        (ridge_as_a_product, "you answered 'memory' for every program on every machine"),
        (capitalised, "got a str ('Memory')"),
        (a_boolean, "got a bool (a scalar) (True)"),
        (a_fixed_ridge, "your answer for each program is the same on every machine"),
        (lowered_intensity, "follow the intensity of the lowered program"),
        (intensity_kept_by_function, "is an intensity kept from one call to the next"),
        (bytes_of_x, "the FLOPs divided by the bytes of x alone"),
        (runs_fn_for_its_size, "read an attribute that a jax.ShapeDtypeStruct does not have"),
    ],
)
def test_limited_by_wrong_answers_fail(wrong, hint):
    verdict = check_limited_by(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


# Exercise 3: low_memory_grad(x0, ws) with jax.checkpoint -----------------------------------------


def _loss_with(body):
    def loss(x0, ws):
        x, _ = jax.lax.scan(body, x0, ws)
        return jnp.sum(x**2)

    return loss


def plain_grad(x0, ws):
    return jax.grad(_loss_with(wide_body), argnums=1)(x0, ws)


def checkpointed_loss(x0, ws):
    return jax.grad(jax.checkpoint(_loss_with(wide_body)), argnums=1)(x0, ws)


def everything_saveable(x0, ws):
    body = jax.checkpoint(wide_body, policy=jax.checkpoint_policies.everything_saveable)
    return jax.grad(_loss_with(body), argnums=1)(x0, ws)


def gradient_in_x0(x0, ws):
    body = jax.checkpoint(wide_body, policy=jax.checkpoint_policies.nothing_saveable)
    return jax.grad(_loss_with(body), argnums=0)(x0, ws)


def mean_instead_of_sum(x0, ws):
    body = jax.checkpoint(wide_body, policy=jax.checkpoint_policies.nothing_saveable)

    def loss(x0, ws):
        x, _ = jax.lax.scan(body, x0, ws)
        return jnp.mean(x**2)

    return jax.grad(loss, argnums=1)(x0, ws)


def checkpoint_made_but_not_used(x0, ws):
    """The checkpointed body is made, but the scan still runs wide_body."""
    body = jax.checkpoint(wide_body, policy=jax.checkpoint_policies.nothing_saveable)  # noqa: F841
    return jax.grad(_loss_with(wide_body), argnums=1)(x0, ws)


def both_gradients(x0, ws):
    body = jax.checkpoint(wide_body, policy=jax.checkpoint_policies.nothing_saveable)
    return jax.grad(_loss_with(body), argnums=(0, 1))(x0, ws)


def checkpointed_scan(x0, ws):
    """The checkpoint around the scan rather than its body."""
    scan = jax.checkpoint(
        lambda x0, ws: jax.lax.scan(wide_body, x0, ws)[0],
        policy=jax.checkpoint_policies.nothing_saveable,
    )
    return jax.grad(lambda x0, ws: jnp.sum(scan(x0, ws) ** 2), argnums=1)(x0, ws)


_first_x0 = []


def x0_kept_from_the_first_call(x0, ws):
    """The gradient function is built once, closing over the first call's x0."""
    if not _first_x0:
        _first_x0.append(x0)
    body = jax.checkpoint(wide_body, policy=jax.checkpoint_policies.nothing_saveable)
    return jax.grad(lambda ws: _loss_with(body)(_first_x0[0], ws))(ws)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (plain_grad, "your program does not use jax.checkpoint"),
        (checkpointed_loss, "you put jax.checkpoint around the whole loss"),
        (everything_saveable, "your checkpoint's policy, everything_saveable, saves"),
        (gradient_in_x0, "the shape of x0: the gradient in x0"),
        (mean_instead_of_sum, "a mean of x**2 instead of scan_loss's sum"),
        (checkpoint_made_but_not_used, "your program does not use jax.checkpoint"),
        (both_gradients, "the gradients in x0 and in ws"),
        (checkpointed_scan, "you put jax.checkpoint around the whole loss (or the whole scan)"),
        (x0_kept_from_the_first_call, "the x0 of the checker's earlier call"),
    ],
)
def test_low_memory_grad_wrong_answers_fail(wrong, hint):
    verdict = check_low_memory_grad(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


# Exercise 4: most_expensive_op(events) -> the name with the largest total, or None ---------------


def _contains(outer, inner, same_thread=True, strict=False):
    if strict:
        inside = outer.start_us < inner.start_us and inner.end_us < outer.end_us
    else:
        inside = outer.start_us <= inner.start_us and inner.end_us <= outer.end_us
    return outer is not inner and (outer.thread == inner.thread or not same_thread) and inside


def _totals(events, *, kinds=("thunk",), leaves_only=True, same_thread=True, strict=False):
    chosen = [event for event in events if event.kind in kinds]
    totals = {}
    for event in chosen:
        if leaves_only and any(_contains(event, other, same_thread, strict) for other in chosen):
            continue
        totals[event.name] = totals.get(event.name, 0.0) + event.duration_us
    return totals


def longest_single_event(events):
    thunks = [event for event in events if event.kind == "thunk"]
    return max(thunks, key=lambda event: event.duration_us).name if thunks else None


def containers_kept(events):
    totals = _totals(events, leaves_only=False)
    return max(totals, key=totals.get) if totals else None


def any_thread_contains(events):
    totals = _totals(events, same_thread=False)
    return max(totals, key=totals.get) if totals else None


def every_kind(events):
    totals = _totals(events, kinds=("thunk", "dispatch", "run"))
    return max(totals, key=totals.get) if totals else None


def empty_string_without_thunks(events):
    totals = _totals(events)
    return max(totals, key=totals.get) if totals else ""


def the_event_not_its_name(events):
    totals = _totals(events)
    if not totals:
        return None
    name = max(totals, key=totals.get)
    return next(event for event in events if event.name == name)


def strictly_inside(events):
    """< for <=: a thunk that starts with its loop is not seen inside it."""
    totals = _totals(events, strict=True)
    return max(totals, key=totals.get) if totals else None


def most_events(events):
    """Counts each name's events instead of adding up their durations."""
    counts = collections.Counter(
        event.name
        for event in events
        if event.kind == "thunk"
        and not any(_contains(event, other) for other in events if other.kind == "thunk")
    )
    return counts.most_common(1)[0][0] if counts else None


def the_largest_total(events):
    totals = _totals(events)
    return max(totals.values()) if totals else None


def totals_kept_between_calls(events, totals={}):  # noqa: B006
    """A default dict argument: it keeps the totals of every earlier call."""
    thunks = [event for event in events if event.kind == "thunk"]
    for event in thunks:
        if not any(_contains(event, other) for other in thunks):
            totals[event.name] = totals.get(event.name, 0.0) + event.duration_us
    return max(totals, key=totals.get) if totals else None


def the_first_thunk_without_thunks(events):
    """No thunk: the first event's name rather than None."""
    totals = _totals(events)
    if totals:
        return max(totals, key=totals.get)
    return events[0].name if events else None


def loop_thunks_left_out_by_name(events):
    """The chapter's old shortcut: a container is a thunk whose name starts with 'while'."""
    thunks = [e for e in events if e.kind == "thunk" and not e.name.startswith("while")]
    totals = {}
    for event in thunks:
        totals[event.name] = totals.get(event.name, 0.0) + event.duration_us
    return max(totals, key=totals.get) if totals else None


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (loop_thunks_left_out_by_name, "you left out the thunks whose names start with 'while'"),
        (longest_single_event, "you returned the longest single thunk"),
        (containers_kept, "you kept the thunks that contain other thunks on their thread"),
        (any_thread_contains, "runs at the same time on another thread"),
        (every_kind, "you counted events that are not thunks"),
        (empty_string_without_thunks, "you returned ''; return None"),
        (the_event_not_its_name, "returned a whole TraceEvent"),
        (strictly_inside, "compare with <= and >=, not < and >"),
        (most_events, "the name with the most events, not the most time"),
        (the_largest_total, "returned the number 60.0, a time perhaps"),
        (totals_kept_between_calls, "a name from a trace of an earlier call"),
        (the_first_thunk_without_thunks, "the name of an event that is not a thunk"),
    ],
)
def test_most_expensive_op_wrong_answers_fail(wrong, hint):
    verdict = check_most_expensive_op(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message


# Exercise 5: make_donating_step(step) -> step jitted with the state donated ----------------------


def no_donation(step):
    return jax.jit(step)


def state_and_batch(step):
    """Both arguments donated: more memory saved."""
    return jax.jit(step, donate_argnums=(0, 1))


def batch_only(step):
    """The batch is the big one, so it is the one donated."""
    return jax.jit(step, donate_argnums=1)


def not_jitted(step):
    return step


def by_one_steps_name(step):
    """Donated by sgd_step's name for its state."""
    return jax.jit(step, donate_argnames="params")


_made = []


def jitted_once(step):
    """Jitting is slow: the first jitted step is kept and returned again."""
    if not _made:
        _made.append(jax.jit(step, donate_argnums=0))
    return _made[0]


def a_copy_is_donated(step):
    """The state is copied before the call, so that the caller's state survives."""
    jitted = jax.jit(step, donate_argnums=0)
    return lambda state, batch: jitted(jax.tree.map(jnp.copy, state), batch)


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (no_donation, "without donating anything. Nothing is donated"),
        (state_and_batch, "you donated the batch (argument 1) as well as the state"),
        (batch_only, "you donated the batch (argument 1), not the state"),
        (not_jitted, "should return a jitted function"),
        (by_one_steps_name, "ema_step has no argument of that name"),
        (jitted_once, "kept from one call to the next"),
        (a_copy_is_donated, "a plain function that calls a jitted one"),
    ],
)
def test_donated_state_wrong_answers_fail(wrong, hint):
    verdict = check_donated_state(wrong)
    assert not verdict, f"{wrong.__name__} passed"
    assert hint in verdict.message, verdict.message
