"""The methods the PLN benchmark compares, each stated once in `METHODS`.

A method is a fit function and the options it is called with; everything else about it (its
optimizer, its settings, its description) is read from those objects, never typed by hand.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypedDict

import jax
import optax

from .. import optim
from ..pln import PLNData, level0, level1, level2, level3, level4, level5, level6, trace_pyplnmodels
from ..pln._reference import earliest_stop, pyplnmodels_defaults

OUR_START = "init_variational: M = log(Y + 1) - O, S = 1/2"
"""The start of every level (`pln.init_variational`)."""

REFERENCE_START = "M = log(Y + 1{Y = 0}), S = 1/2 (offsets not used)"
"""pyPLNmodels 1.0.10's start (`pln._reference.pyplnmodels_start` computes it with its own code)."""


@dataclass(frozen=True, eq=False)
class Method:
    """One method the benchmark can run.

    Attributes:
        name: its label in tables, plots and `--methods`.
        fit: for a level, `fit(data, n_iter, **options) -> pln.FitResult`; for the reference,
            `fit(data, **options) -> pln._reference.ReferenceTrace`.
        options: the keyword arguments `fit` is called with; the others keep `fit`'s defaults.
        is_reference: the library we compare with: its final ELBO is the target, and its
            times are its own (it is not JAX, so it is neither jitted nor floored).
        eager: runs JAX op by op; on large data it gets only a few iterations (`run_method`).
        adapt: options that depend on the data: `adapt(data) -> (options, note)`.
        objective: the function it maximises.
        gradient: how it gets that function's gradient.
        start: the (M, S) it starts from.
    """

    name: str
    fit: Callable[..., Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    is_reference: bool = False
    eager: bool = False
    adapt: Callable[[PLNData], tuple[dict[str, Any], str]] | None = None
    objective: str = ""
    gradient: str = ""
    start: str = OUR_START

    def __post_init__(self):
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def settings(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every keyword setting of the call: `fit`'s defaults, then `options`, then `extra`."""
        parameters = inspect.signature(self.fit).parameters.values()
        defaults = {
            p.name: p.default
            for p in parameters
            if p.kind is p.KEYWORD_ONLY and p.default is not p.empty
        }
        return {**defaults, **self.options, **(extra or {})}

    @property
    def optimizer(self) -> optax.GradientTransformation | None:
        """The optimizer the fit runs (None for the reference, whose optimizer is torch's)."""
        return self.settings().get("optimizer")

    def describe(self, extra: Mapping[str, Any] | None = None) -> str:
        """The call the benchmark makes, every setting spelled out from the objects themselves,
        e.g. `level5.fit(optimizer=optim.newton_momentum(...), tol=1e-09, monitor_every=1, ...)`."""
        module = self.fit.__module__.rsplit(".", 1)[-1].lstrip("_")
        settings = ", ".join(
            f"{name}={_render(value)}" for name, value in self.settings(extra).items()
        )
        return f"{module}.{self.fit.__name__}({settings})"

    @property
    def description(self) -> str:
        return self.describe()


def stopping_rule(method: Method) -> str:
    """When `method` stops, read from its settings (for the reference, from pyPLNmodels' code)."""
    if method.is_reference:
        defaults = pyplnmodels_defaults()
        earliest = earliest_stop(defaults.tol, defaults.criterion_beta)
        return (
            f"its criterion below tol={defaults.tol:g} (impossible before iteration {earliest}), "
            f"or maxiter={method.settings()['maxiter']}"
        )
    tol = method.settings().get("tol")
    if tol is None:
        return "all n_iter steps"
    return f"Newton decrement below tol x |ELBO| (tol={tol:g}), or n_iter"


def method_card(method: Method) -> dict[str, str]:
    """One row of the methods table: objective, gradient, optimizer and step, start, stopping rule
    (the device is recorded by the run)."""
    optimizer = method.optimizer
    if method.is_reference:
        defaults = pyplnmodels_defaults()
        step = f"torch.optim.Rprop(lr={defaults.lr}) (pyPLNmodels' default)"
    else:
        step = optim.describe(optimizer) if optimizer is not None else "none"
    return {
        "method": method.name,
        "objective": method.objective,
        "gradient": method.gradient,
        "optimizer and step": step,
        "start": method.start,
        "stopping rule": stopping_rule(method),
    }


def _render(value: Any) -> str:
    if isinstance(value, optax.GradientTransformation):
        return optim.describe(value)
    if isinstance(value, jax.sharding.Mesh):
        return f"<mesh of {value.size} device(s)>"
    if isinstance(value, type):
        return value.__name__
    return repr(value)


def _one_device_if_uneven(data: PLNData) -> tuple[dict[str, Any], str]:
    n_devices = jax.device_count()
    if data.n_samples % n_devices == 0:
        return {"mesh": level6.sample_mesh(n_devices)}, ""
    return {
        "mesh": level6.sample_mesh(1)
    }, "one device: the samples do not split evenly over all of them"


_SHARED_ALGORITHM = (level0, level1, level2, level3, level4)


class _Described(TypedDict):
    """A method's `objective` and `gradient`, shared by the levels that optimise alike."""

    objective: str
    gradient: str


_FULL: _Described = {
    "objective": "full ELBO (then B, Sigma in closed form)",
    "gradient": "autodiff (jax.grad)",
}
_PROFILED: _Described = {
    "objective": "profiled ELBO J(M, S)",
    "gradient": "closed form (envelope theorem)",
}

METHODS: tuple[Method, ...] = (
    # Levels 0-4 run pyPLNmodels' own algorithm (its Rprop settings, on the gradient of the
    # full ELBO): they differ from it only in how the computation is organised.
    *(
        Method(
            f"level {k}",
            module.fit,
            {"optimizer": optim.PYPLNMODELS_RPROP},
            eager=module is level0,
            **_FULL,
        )
        for k, module in enumerate(_SHARED_ALGORITHM)
    ),
    Method("level 5", level5.fit, **_PROFILED),
    Method("level 5 + Newton-Rprop", level5.fit, {"optimizer": level5.NEWTON_RPROP}, **_PROFILED),
    # Levels 5 and 6 run the plain call a user writes: their defaults are the fast path.
    Method(
        "level 5 + Newton momentum", level5.fit, {"optimizer": level5.NEWTON_MOMENTUM}, **_PROFILED
    ),
    Method("level 6", level6.fit, adapt=_one_device_if_uneven, **_PROFILED),
    Method(
        "pyPLNmodels",
        trace_pyplnmodels,
        is_reference=True,
        objective=_PROFILED["objective"],
        gradient="autodiff (torch backward)",
        start=REFERENCE_START,
    ),
)
"""Every method the benchmark can run, in order: levels 0-6 and the reference, pyPLNmodels."""


PLAIN_CALL = "level 5 + Newton momentum"
"""The method whose plain first call the benchmark judges: `level5.fit(data, n_iter,
optimizer=level5.NEWTON_MOMENTUM)` in a fresh process, compilation included."""


def method_names() -> list[str]:
    """The names of `METHODS`, in order."""
    return [method.name for method in METHODS]


def select_methods(names: list[str] | None = None) -> tuple[Method, ...]:
    """The methods called `names` (all of `METHODS` for None), in the order given."""
    if names is None:
        return METHODS
    if isinstance(names, str):
        raise TypeError(f"methods must be a list of names, got the string {names!r}.")
    by_name = {method.name: method for method in METHODS}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; choose from {method_names()}.")
    return tuple(by_name[name] for name in names)
