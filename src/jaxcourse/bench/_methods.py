"""The methods the PLN benchmark compares, each stated once in `METHODS`.

A method is a fit function and the options it is called with; everything else about it (its
optimizer, its settings, its description) is read from those objects, never typed by hand.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

import jax
import optax

from .. import optim
from ..pln import PLNData, level0, level1, level2, level3, level4, level5, level6
from ..pln import trace_pyplnmodels


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
    """

    name: str
    fit: Callable[..., Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    is_reference: bool = False
    eager: bool = False
    adapt: Callable[[PLNData], tuple[dict[str, Any], str]] | None = None

    def __post_init__(self):
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def settings(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every keyword setting of the call: `fit`'s defaults, then `options`, then `extra`."""
        parameters = inspect.signature(self.fit).parameters.values()
        defaults = {p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY and p.default is not p.empty}
        return {**defaults, **self.options, **(extra or {})}

    @property
    def optimizer(self) -> optax.GradientTransformation | None:
        """The optimizer the fit runs (None for the reference, whose optimizer is torch's)."""
        return self.settings().get("optimizer")

    def describe(self, extra: Mapping[str, Any] | None = None) -> str:
        """The call the benchmark makes, every setting spelled out from the objects themselves,
        e.g. `level5.fit(optimizer=optim.newton_momentum(...), tol=1e-09, monitor_every=1, ...)`."""
        module = self.fit.__module__.rsplit(".", 1)[-1].lstrip("_")
        settings = ", ".join(f"{name}={_render(value)}" for name, value in self.settings(extra).items())
        return f"{module}.{self.fit.__name__}({settings})"

    @property
    def description(self) -> str:
        return self.describe()


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
    return {"mesh": level6.sample_mesh(1)}, "one device: the samples do not split evenly over all of them"


_SHARED_ALGORITHM = (level0, level1, level2, level3, level4)

METHODS: tuple[Method, ...] = (
    # Levels 0-4 run pyPLNmodels' own algorithm (its Rprop settings, on the gradient of the
    # full ELBO): they differ from it only in how the computation is organised.
    *(
        Method(f"level {k}", module.fit, {"optimizer": optim.PYPLNMODELS_RPROP}, eager=module is level0)
        for k, module in enumerate(_SHARED_ALGORITHM)
    ),
    Method("level 5", level5.fit),
    Method("level 5 + Newton-Rprop", level5.fit, {"optimizer": level5.NEWTON_RPROP}),
    # Levels 5 and 6 run the plain call a user writes: their defaults are the fast path.
    Method("level 5 + Newton momentum", level5.fit, {"optimizer": level5.NEWTON_MOMENTUM}),
    Method("level 6", level6.fit, adapt=_one_device_if_uneven),
    Method("pyPLNmodels", trace_pyplnmodels, is_reference=True),
)
"""Every method the benchmark can run, in order: levels 0-6 and the reference, pyPLNmodels."""


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


