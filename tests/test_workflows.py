"""The GitHub Actions workflows parse and do what the README and CI promise."""

from pathlib import Path

import pytest
import yaml

WORKFLOWS = Path(__file__).resolve().parents[1] / ".github" / "workflows"
NAMES = ["ci.yml", "publish.yml", "gpu-render.yml", "latest-jax.yml"]


def load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def triggers(workflow: dict) -> dict:
    """The `on:` mapping; YAML 1.1 reads the bare key `on` as the boolean True."""
    on = workflow.get("on", workflow.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return {event: None for event in on}
    return on or {}


def steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def runs(workflow: dict) -> str:
    return "\n".join(step.get("run", "") for step in steps(workflow))


def uses(workflow: dict) -> list[str]:
    return [step["uses"] for step in steps(workflow) if "uses" in step]


def test_every_workflow_is_listed_here():
    assert sorted(p.name for p in WORKFLOWS.glob("*.y*ml")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_workflow_parses_with_triggers_and_jobs(name):
    workflow = load(name)
    assert isinstance(workflow, dict)
    assert triggers(workflow), f"{name}: no 'on'"
    assert workflow["jobs"] and all("runs-on" in job for job in workflow["jobs"].values())


def test_ci_runs_the_ci_entry_point_on_python_311():
    workflow = load("ci.yml")
    assert {"push", "pull_request"} <= set(triggers(workflow))
    assert any(step.get("run", "").strip() == "bash .ci/run" for step in steps(workflow))
    (job,) = workflow["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    assert "download.pytorch.org/whl/cpu" in job["env"]["PIP_EXTRA_INDEX_URL"]
    python = [s for s in steps(workflow) if s.get("uses", "").startswith("actions/setup-python")]
    assert python and str(python[0]["with"]["python-version"]) == "3.11"


def test_publish_renders_with_quarto_and_deploys_to_pages():
    workflow = load("publish.yml")
    assert triggers(workflow)["push"]["branches"] == ["main"]
    assert workflow["permissions"]["pages"] == "write"
    assert workflow["permissions"]["id-token"] == "write"
    actions = uses(workflow)
    assert any(a.startswith("quarto-dev/quarto-actions/setup@") for a in actions)
    assert any(a.startswith("actions/upload-pages-artifact@") for a in actions)
    assert any(a.startswith("actions/deploy-pages@") for a in actions)
    commands = runs(workflow)
    assert "python -m jaxcourse.notebooks --check" in commands and "quarto render" in commands
    assert "-r requirements.txt" in commands and "-e ." in commands


def test_quarto_executes_every_chapter_at_render_time():
    config = yaml.safe_load((WORKFLOWS.parents[1] / "_quarto.yml").read_text())
    assert config["execute"]["freeze"] is False


def test_gpu_render_is_manual_on_a_gpu_runner():
    workflow = load("gpu-render.yml")
    assert set(triggers(workflow)) == {"workflow_dispatch"}
    (job,) = workflow["jobs"].values()
    labels = job["runs-on"] if isinstance(job["runs-on"], list) else [job["runs-on"]]
    assert "gpu" in labels and "self-hosted" in labels
    env = {**workflow.get("env", {}), **job.get("env", {})}
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    commands = runs(workflow)
    assert 'jax[cuda12]==0.10.1' in commands
    assert "pytest --nbmake" in commands and "quarto render" in commands
    assert any(a.startswith("actions/upload-artifact@") for a in uses(workflow))


def test_latest_jax_runs_weekly_on_the_newest_jax():
    workflow = load("latest-jax.yml")
    on = triggers(workflow)
    assert on["schedule"] and on["schedule"][0]["cron"] and "workflow_dispatch" in on
    commands = runs(workflow)
    assert "pip install --upgrade jax jaxlib optax" in commands
    assert "python -m pytest -n 2 tests" in commands
