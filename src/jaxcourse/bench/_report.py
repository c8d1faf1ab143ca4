"""Reporting a PLN benchmark: a summary line, a CSV of the curves, a table, a plot, a paragraph.

Each works on the JSON-ready dict `run_pln_benchmark` returns. The goals the course set for
P1-P3 are stated here, for display only (`GOALS`).
"""

from __future__ import annotations

import base64
import csv
import html
import io
import math
from typing import Any

import numpy as np

GOALS = {"P1": "<=0.2", "P2": "<=1.5", "P3": "<1", "first call": "<=0.06"}
"""The course's goals for the measures, shown next to them in `summary_line`."""

GAP_FLOOR_NATS = 1e-3
"""`plot_elbo_vs_time` draws gaps below this many nats at this value (a log scale needs > 0)."""


def _reference(results: dict[str, Any]) -> dict[str, Any] | None:
    return next((run for run in results["runs"] if run["is_reference"]), None)


def _possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


def _reference_owner(results: dict[str, Any]) -> str:
    """ "pyPLNmodels'": the reference's name, possessive."""
    reference = _reference(results)
    return "the reference's" if reference is None else _possessive(reference["name"])


def _number(value) -> str:
    return (
        "n/a"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{value:.3f}"
    )


def summary_line(results: dict[str, Any]) -> str:
    """One line with P1-P3, each next to its goal, the final-ELBO check and the plain first
    call over the reference's fit (without and with a persistent compilation cache)."""
    m, reference = results["metrics"], _reference(results)
    return (
        f"[{results['size']}] fastest={m['fastest']} P1={_number(m['P1'])} ({GOALS['P1']}) "
        f"P2={_number(m['P2'])} ({m['P2_level']}, {GOALS['P2']}) P3={_number(m['P3'])} ({GOALS['P3']}) "
        f"final>={reference['name'] if reference else 'reference'}: {m['fastest_final_at_least_reference']} "
        f"first call={_number(m.get('first_call_ratio'))} ({GOALS['first call']}) "
        f"cached={_number(m.get('first_call_ratio_cached'))}"
    )


def write_csv(results: dict[str, Any], path) -> None:
    """One row per method and iteration: name, iteration, time (s), ELBO exact and Stirling."""
    correction = results["stirling_correction"]
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["method", "iteration", "time_s", "elbo", "elbo_stirling"])
        for run in results["runs"]:
            for k, (t, e) in enumerate(zip(run["times_s"], run["elbo"])):
                writer.writerow([run["name"], k, f"{t:.6g}", f"{e:.10g}", f"{e + correction:.10g}"])


def spread(values) -> str:
    """`median [min, max]` of a few timings in seconds, e.g. `1.23 [1.20, 1.31]`; `n/a` if none."""
    values = [float(v) for v in values or ()]
    if not values:
        return "n/a"
    if len(values) == 1:
        return f"{values[0]:.3g} (once)"
    return f"{float(np.median(values)):.3g} [{min(values):.3g}, {max(values):.3g}]"


def runs_table(results: dict[str, Any]):
    """A pandas DataFrame: one row per method. Cold (a fresh process's first call) and warm
    fits side by side as `median [min, max]` in seconds; the final ELBO's gap to the
    reference's in nats, in total and per entry of Y."""
    import pandas as pd

    to_target = f"to {_reference_owner(results)} ELBO (s)"
    reference = _reference(results)
    entries = results["n_samples"] * results["n_species"]
    rows = []
    for run in results["runs"]:
        gap = None if reference is None else run["final_elbo"] - reference["final_elbo"]
        rows.append(
            {
                "method": run["name"],
                "iterations": run["n_steps"],
                "per iteration (ms)": 1e3 * run["per_iteration_s"],
                "compile (s)": run["compile_s"],
                "cold fit (s)": spread(run["cold_s"]),
                "warm fit (s)": spread(run["warm_s"]),
                to_target: run["time_to_target_s"],
                "final ELBO (Stirling)": run["final_elbo_stirling"],
                "gap to reference (nats)": gap,
                "gap per entry (nats)": None if gap is None else gap / entries,
                "note": run["note"],
            }
        )
    return pd.DataFrame(rows).set_index("method")


def methods_table(results: dict[str, Any]):
    """A pandas DataFrame: what each method of the registry computes, from `results["methods"]`:
    objective, gradient, optimizer and step, start, stopping rule and the device it ran on
    ("not run" for a method the benchmark did not run)."""
    import pandas as pd

    return pd.DataFrame(results["methods"]).set_index("method")


def plot_elbo_vs_time(results: dict[str, Any], ax=None):
    """ELBO-versus-wall-time curves of every run, as the gap below the best ELBO any run reached.

    The gap is never negative (it is measured from the best value), so a log scale is safe;
    gaps under `GAP_FLOOR_NATS` are drawn at it. The reference is the thick black curve.
    Returns the matplotlib Axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 4.5))
    best = max(max(run["elbo"]) for run in results["runs"])
    for run in results["runs"]:
        gap = np.maximum(best - np.asarray(run["elbo"]), GAP_FLOOR_NATS)
        style = {"color": "black", "linewidth": 2.5} if run["is_reference"] else {}
        ax.plot(run["times_s"], gap, label=run["name"], **style)
    if results["target_elbo"] is not None:
        target_gap = max(best - results["target_elbo"], GAP_FLOOR_NATS)
        ax.axhline(
            target_gap, color="grey", linestyle=":", label=f"{_reference_owner(results)} final ELBO"
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="wall time (s, compilation excluded)",
        ylabel="nats below the best ELBO",
    )
    ax.legend(fontsize=8, ncol=2)
    return ax


def _floor_sentence(results: dict[str, Any]) -> str:
    floor = results["floor"]
    return (
        f"The floor measured on this machine is {1e3 * floor['median_s']:.3g} ms "
        f"(the median of {floor['measurements']} measurements, around every fit)."
    )


def _p2_sentence(metrics: dict[str, Any], runs: dict[str, dict]) -> str:
    judged = runs[metrics["P2_level"]]
    sentence = (
        f"An iteration of {judged['name']} takes {1e3 * judged['per_iteration_s']:.3g} ms, "
        f"or {metrics['P2']:.2f} floors measured around that fit"
    )
    if metrics["P2_cheapest_level"] != judged["name"]:
        cheapest = runs[metrics["P2_cheapest_level"]]
        sentence += (
            f"; the cheapest iteration is {cheapest['name']}'s, "
            f"{1e3 * cheapest['per_iteration_s']:.3g} ms ({metrics['P2_cheapest']:.2f} floors)"
        )
    return sentence + "."


def _target_sentences(metrics: dict[str, Any], fastest: dict | None, reference: dict) -> list[str]:
    name, owner = reference["name"], _possessive(reference["name"])
    if fastest is None:
        return [f"No level reached {owner} final ELBO within its iteration budget."]
    verdict = "at least" if metrics["fastest_final_at_least_reference"] else "below"
    return [
        f"The fastest to reach {owner} final ELBO is {fastest['name']}, after "
        f"{fastest['time_to_target_s']:.3g} s, against {reference['time_to_target_s']:.3g} s for "
        f"{name} itself ({metrics['P1']:.3g} of its time; compilation, {fastest['compile_s']:.2g} s, apart).",
        f"Its final ELBO, {fastest['final_elbo_stirling']:.2f}, is {verdict} {owner} "
        f"{reference['final_elbo_stirling']:.2f} (Stirling convention, both re-evaluated in float64).",
    ]


def summary_markdown(results: dict[str, Any]) -> str:
    """A paragraph for a page: the floor, P1-P2 and the final-ELBO check, all from `results`."""
    metrics, env = results["metrics"], results["environment"]
    runs = {run["name"]: run for run in results["runs"]}
    parts = [_floor_sentence(results)]
    if metrics["P2_level"]:
        parts.append(_p2_sentence(metrics, runs))
    reference = _reference(results)
    if reference is not None:
        parts += _target_sentences(metrics, runs.get(metrics["fastest"]), reference)
    versions = ", ".join(
        f"{name} {version}" for name, version in results["versions"].items() if name != "jax"
    )
    parts.append(
        f"Measured on {env['device']} ({env['backend']}) with jax {env['jax']}, {versions}."
    )
    return " ".join(parts)


class FigureWithAlt:
    """A matplotlib figure shown as an image whose alt text and caption are computed by the
    page that draws it (HTML output: `<figure>` with `<img alt=...>` and `<figcaption>`).

    Quarto's `fig-alt` is fixed when the page is written; a description of measured curves
    has to be written after they are measured.
    """

    def __init__(self, figure, alt: str, caption: str = ""):
        import matplotlib.pyplot as plt

        if not alt.strip():
            raise ValueError("a figure needs alt text.")
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
        plt.close(figure)  # shown once, by this object, not again by the inline backend
        self.png, self.alt, self.caption = buffer.getvalue(), alt, caption

    def _repr_html_(self) -> str:
        image = base64.b64encode(self.png).decode("ascii")
        caption = f"<figcaption>{html.escape(self.caption)}</figcaption>" if self.caption else ""
        return f'<figure><img src="data:image/png;base64,{image}" alt="{html.escape(self.alt, quote=True)}"/>{caption}</figure>'


def curves_alt_text(results: dict[str, Any]) -> str:
    """Alt text for `plot_elbo_vs_time`, written from the run: what is plotted, where the
    reference's line lies, which curves cross it and when, which never do."""
    reference = _reference(results)
    best = max(max(run["elbo"]) for run in results["runs"])
    text = (
        f"Log-log plot of nats below the best ELBO (y) against wall time in seconds (x), one curve "
        f"for each of {len(results['runs'])} methods."
    )
    if reference is None or results["target_elbo"] is None:
        return text
    owner = _possessive(reference["name"])
    crossed = sorted(
        (r for r in results["runs"] if r["time_to_target_s"] is not None),
        key=lambda r: r["time_to_target_s"],
    )
    never = [r["name"] for r in results["runs"] if r["time_to_target_s"] is None]
    text += f" A dotted line marks {owner} final ELBO, {best - results['target_elbo']:.3g} nats below the best."
    if crossed:
        text += (
            " Curves reaching it, in order: "
            + "; ".join(f"{r['name']} at {r['time_to_target_s']:.3g} s" for r in crossed)
            + "."
        )
    if never:
        text += " Never reaching it: " + ", ".join(never) + "."
    return text
