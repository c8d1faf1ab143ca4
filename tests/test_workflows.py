"""The GitHub Actions workflows: what runs when, with which command, on which Python and actions.

The workflows are parsed as YAML, and where a step is a shell script it is checked with `bash -n` and,
for the steps whose logic matters (the CUDA install, the GPU check, the issue report), run here with
stand-ins for the tools they call.
"""

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
NAMES = ["ci.yml", "publish.yml", "gpu-render.yml", "latest-jax.yml"]
PYTHON = "3.13"  # Colab's Python; every job that runs Python uses it

# The first major version of each action that runs on Node 24 (GitHub forces Node 20 actions onto
# Node 24 and removes Node 20 from runners). Composite actions have no Node runtime of their own, but
# the actions they call count. Evidence:
NODE24_MAJOR = {
    # v5.0.0: runs.using node24 (actions/checkout#2226, README note in #2248).
    "actions/checkout": 5,
    # v6.0.0, breaking change "Upgrade to node 24" (actions/setup-python#1164); v5.x stays on node20.
    "actions/setup-python": 6,
    # v6.0.0: runs.using node24 (actions/upload-artifact#745); v5 only "supported" Node 24, on node20.
    "actions/upload-artifact": 6,
    # Composite; v5.0.0 calls actions/upload-artifact@v7 (v3 and v4 call upload-artifact@v4, node20).
    "actions/upload-pages-artifact": 5,
    # v5.0.0: "Update Node.js version to 24.x" (actions/deploy-pages#404, released per #410).
    "actions/deploy-pages": 5,
    # Composite, bash steps only (setup/action.yml: runs.using composite): no Node runtime at all.
    "quarto-dev/quarto-actions/setup": 2,
}


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


def all_steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def uses(step: dict, action: str) -> bool:
    return step.get("uses", "").split("@")[0] == action


def only_step(job: dict, action: str) -> dict:
    (step,) = [step for step in job["steps"] if uses(step, action)]
    return step


def python_version(job: dict) -> str:
    """The python-version given to actions/setup-python in this job."""
    return str(only_step(job, "actions/setup-python")["with"]["python-version"])


def index(job: dict, predicate) -> int:
    """The position of the one step of `job` for which predicate(step) holds."""
    (position,) = [i for i, step in enumerate(job["steps"]) if predicate(step)]
    return position


def runs(pattern: str):
    """A predicate: the step's run script matches the regular expression (`^` and `$` match at
    each line of it)."""
    return lambda step: re.search(pattern, step.get("run", ""), re.M) is not None


def job_running(workflow: dict, command: str) -> dict:
    """The one job with a step whose whole run script is `command`."""
    (job,) = [
        job
        for job in workflow["jobs"].values()
        if any(step.get("run", "").strip() == command for step in job.get("steps", []))
    ]
    return job


def run_script(script: str, tmp_path: Path, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    """Run a step's script as Actions does for `shell: bash` (bash --noprofile --norc -eo pipefail)."""
    path = tmp_path / "step.sh"
    path.write_text(script)
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def fake_tool(directory: Path, name: str, body: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / name
    tool.write_text("#!/usr/bin/env bash\n" + body)
    tool.chmod(0o755)


def pin(name: str) -> str:
    """The version requirements.txt pins for `name`."""
    (version,) = re.findall(
        rf"^{re.escape(name)}==(\S+)", (ROOT / "requirements.txt").read_text(), re.M
    )
    return version


RUN_STEPS = [
    pytest.param(step["run"], id=f"{name}:{step.get('name', step.get('id', 'run'))}")
    for name in NAMES
    for step in all_steps(load(name))
    if "run" in step
]


# --- every workflow ---------------------------------------------------------------------------


def test_every_workflow_is_listed_here():
    assert sorted(p.name for p in WORKFLOWS.glob("*.y*ml")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_workflow_has_triggers_and_jobs_with_runners_and_time_limits(name):
    workflow = load(name)
    assert triggers(workflow), f"{name}: no 'on'"
    for job in workflow["jobs"].values():
        assert job["runs-on"]
        assert "steps" not in job or job["timeout-minutes"] <= 120


@pytest.mark.parametrize("name", NAMES)
def test_every_job_that_runs_python_is_on_python_313(name):
    for job_name, job in load(name)["jobs"].items():
        if any("run" in step for step in job["steps"]):
            assert python_version(job) == PYTHON, f"{name}: job {job_name}"


@pytest.mark.parametrize("name", NAMES)
def test_every_action_is_at_a_major_that_runs_on_node24(name):
    for step in all_steps(load(name)):
        if "uses" not in step:
            continue
        action, ref = step["uses"].split("@")
        assert action in NODE24_MAJOR, f"{action}: find its first Node 24 major and add it above"
        match = re.fullmatch(r"v(\d+)(\.\d+){0,2}", ref)
        assert match, f"{step['uses']}: expected a version tag"
        assert int(match[1]) >= NODE24_MAJOR[action], f"{step['uses']} runs on Node 20"


@pytest.mark.parametrize("script", RUN_STEPS)
def test_run_step_is_valid_bash(script, tmp_path):
    path = tmp_path / "step.sh"
    path.write_text(script)
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("script", RUN_STEPS)
def test_run_step_takes_expressions_through_env_not_inline(script):
    # ${{ }} pasted into a script is a script-injection risk and hides values from `bash -n`.
    assert "${{" not in script


@pytest.mark.parametrize("name", NAMES)
def test_shell_is_bash_with_pipefail(name):
    assert load(name)["defaults"]["run"]["shell"] == "bash"


@pytest.mark.parametrize("name", NAMES)
def test_the_venv_is_built_with_the_setup_python_interpreter(name):
    """scripts/setup.sh (also behind test.sh and .ci/run) gets setup-python's 3.13 explicitly."""
    for job in load(name)["jobs"].values():
        for step in job["steps"]:
            if re.search(r"scripts/(setup|test)\.sh|\.ci/run", step.get("run", "")):
                python_id = only_step(job, "actions/setup-python")["id"]
                assert (
                    step["env"]["JAXCOURSE_PYTHON"]
                    == f"${{{{ steps.{python_id}.outputs.python-path }}}}"
                )


@pytest.mark.parametrize("name", NAMES)
def test_no_jax_version_is_typed_into_a_workflow(name):
    text = (WORKFLOWS / name).read_text()
    assert pin("jax") not in text and pin("jaxlib") not in text
    assert not re.search(r"\bjax(lib)?(\[[^\]]*\])?==\d", text)


@pytest.mark.parametrize("name", NAMES)
def test_torch_comes_from_the_cpu_index_on_github_runners(name):
    for job in load(name)["jobs"].values():
        if "ubuntu" in str(job["runs-on"]) and any("run" in step for step in job["steps"]):
            assert job["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"


def test_quarto_is_pinned_to_one_exact_version():
    versions = {
        str(step["with"]["version"])
        for name in NAMES
        for step in all_steps(load(name))
        if uses(step, "quarto-dev/quarto-actions/setup")
    }
    assert len(versions) == 1
    assert re.fullmatch(r"\d+\.\d+\.\d+", versions.pop())


def test_quarto_executes_every_chapter_at_render_time():
    config = yaml.safe_load((ROOT / "_quarto.yml").read_text())
    assert config["execute"]["freeze"] is False


# --- ci.yml -----------------------------------------------------------------------------------


def test_ci_runs_on_every_push_and_pull_request_under_the_name_publish_waits_for():
    workflow = load("ci.yml")
    assert set(triggers(workflow)) == {"push", "pull_request"}
    assert triggers(load("publish.yml"))["workflow_run"]["workflows"] == [workflow["name"]]


def test_ci_runs_the_ci_entry_point_on_the_pinned_set_on_python_313():
    job = job_running(load("ci.yml"), "bash .ci/run")
    assert job["runs-on"] == "ubuntu-latest"
    assert python_version(job) == PYTHON


def test_ci_runs_the_colab_reproduction_on_python_313():
    job = job_running(load("ci.yml"), "bash scripts/test.sh tests/test_colab_runtime.py")
    assert job["runs-on"] == "ubuntu-latest"
    assert python_version(job) == PYTHON


# --- publish.yml ------------------------------------------------------------------------------


def test_publish_runs_only_after_ci_completed_on_main():
    on = triggers(load("publish.yml"))
    assert set(on) == {"workflow_run"}
    assert on["workflow_run"]["types"] == ["completed"]
    assert on["workflow_run"]["branches"] == ["main"]


def test_publish_builds_only_for_a_successful_ci_run_on_a_push_here():
    build = load("publish.yml")["jobs"]["build"]
    condition = build["if"]
    assert "||" not in condition  # every clause below must hold
    clauses = {clause.strip() for clause in condition.split("&&")}
    assert clauses == {
        "github.event.workflow_run.conclusion == 'success'",
        "github.event.workflow_run.event == 'push'",
        "github.event.workflow_run.head_repository.full_name == github.repository",
    }


def test_publish_checks_out_the_commit_ci_tested():
    build = load("publish.yml")["jobs"]["build"]
    checkout = only_step(build, "actions/checkout")
    assert checkout["with"]["ref"] == "${{ github.event.workflow_run.head_sha }}"


def test_publish_checks_then_renders_then_deploys_to_pages():
    workflow = load("publish.yml")
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    order = [
        index(build, runs(r"^bash scripts/setup\.sh")),
        index(build, lambda step: uses(step, "quarto-dev/quarto-actions/setup")),
        index(build, runs(r"^python -m tools\.notebooks --check$")),
        index(build, runs(r"^python -m tools\.quarto_check$")),
        index(build, runs(r"^quarto render$")),
        index(build, lambda step: uses(step, "actions/upload-pages-artifact")),
    ]
    assert order == sorted(order)
    assert only_step(build, "actions/upload-pages-artifact")["with"]["path"] == "_book"
    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert only_step(deploy, "actions/deploy-pages")["id"] == "deployment"
    assert workflow["permissions"] == {"contents": "read"}


# --- gpu-render.yml ---------------------------------------------------------------------------


def gpu_job() -> dict:
    return load("gpu-render.yml")["jobs"]["gpu"]


@pytest.mark.parametrize("name", NAMES)
def test_a_job_that_runs_pytest_sets_up_the_developers_install_first(name):
    """pytest, nbmake and ruff are in requirements-dev.txt, not in a learner's install: a job that
    runs them directly sets up with `scripts/setup.sh --dev` before (scripts/test.sh does itself)."""
    for job in load(name)["jobs"].values():
        steps = job.get("steps", [])
        direct = [i for i, step in enumerate(steps) if runs(r"\bpytest\b")(step)]
        if not direct:
            continue
        dev = [i for i, step in enumerate(steps) if runs(r"^bash scripts/setup\.sh --dev$")(step)]
        assert dev and dev[0] < direct[0], (name, steps[direct[0]]["run"])


def test_gpu_render_is_manual_on_a_self_hosted_gpu_runner_documented_at_the_top():
    assert set(triggers(load("gpu-render.yml"))) == {"workflow_dispatch"}
    labels = gpu_job()["runs-on"]
    assert {"self-hosted", "linux", "gpu"} <= set(labels)
    # The labels an admin must give at registration (the others every self-hosted Linux runner gets).
    header = (WORKFLOWS / "gpu-render.yml").read_text().split("\nname:")[0]
    (given,) = re.findall(r"config\.sh .*--labels (\S+)", header)
    assert set(given.split(",")) == set(labels) - {"self-hosted", "linux"}
    assert "NVIDIA driver" in header
    assert gpu_job()["env"]["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"


def test_gpu_render_installs_cuda_jax_at_the_version_read_from_requirements(tmp_path):
    job = gpu_job()
    step = job["steps"][index(job, runs(r"jax\[cuda12\]"))]
    # Run the step with a stand-in for .venv/bin/python that records what it was asked to install.
    work = tmp_path / "checkout"
    (work / ".venv" / "bin").mkdir(parents=True)
    (work / "requirements.txt").write_text((ROOT / "requirements.txt").read_text())
    fake_tool(work / ".venv" / "bin", "python", f'echo "$@" >> {tmp_path / "calls"}\n')
    result = run_script(step["run"], tmp_path, {"GITHUB_PATH": str(tmp_path / "path")}, work)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "calls").read_text().splitlines() == [
        f"-m pip install jax[cuda12]=={pin('jax')}"
    ]
    assert (tmp_path / "path").read_text().strip() == str(work / ".venv" / "bin")


def gpu_check() -> str:
    job = gpu_job()
    return job["steps"][index(job, runs(r"default_backend\(\)"))]["run"]


@pytest.mark.parametrize("backend, code", [("gpu", 0), ("cpu", 1)])
def test_gpu_check_fails_unless_the_backend_is_the_gpu(backend, code, tmp_path):
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "jax.py").write_text(
        f"__version__ = '0'\ndef devices(): return ['{backend.upper()}Device(id=0)']\n"
        f"def default_backend(): return '{backend}'\n"
    )
    bin_dir = tmp_path / "bin"
    fake_tool(
        bin_dir, "python", f'exec {sys.executable} "$@"\n'
    )  # this venv's python, first on PATH
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(fake)}
    result = run_script(gpu_check(), tmp_path, env, ROOT)
    assert result.returncode == code
    assert f"devices: ['{backend.upper()}Device(id=0)']" in result.stdout
    if code:
        assert "expected the GPU backend, got 'cpu'" in result.stderr


def test_gpu_check_fails_with_the_real_cpu_jax(tmp_path):
    bin_dir = tmp_path / "bin"
    fake_tool(
        bin_dir, "python", f'exec {sys.executable} "$@"\n'
    )  # this venv's python, first on PATH
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "JAX_PLATFORMS": "cpu"}
    result = run_script(gpu_check(), tmp_path, env, ROOT)
    assert result.returncode != 0 and "CpuDevice" in result.stdout


def test_gpu_render_checks_the_gpu_then_runs_notebooks_with_verdicts_enforced_then_renders():
    job = gpu_job()
    install = index(job, runs(r"jax\[cuda12\]"))
    check = index(job, runs(r"default_backend\(\)"))
    notebooks = index(job, runs(r"--nbmake"))
    render = index(job, runs(r"^quarto render$"))
    upload = index(job, lambda step: uses(step, "actions/upload-artifact"))
    assert install < check < notebooks < render < upload
    nbmake = job["steps"][notebooks]
    assert nbmake["env"]["JAXCOURSE_ENFORCE_VERDICTS"] == "1"
    assert shlex.split(nbmake["run"])[-1] == "notebooks"
    assert job["steps"][upload]["with"]["path"] == "_book"


# --- latest-jax.yml ---------------------------------------------------------------------------


def latest_job() -> dict:
    return load("latest-jax.yml")["jobs"]["latest"]


def test_latest_jax_runs_weekly_and_on_demand():
    on = triggers(load("latest-jax.yml"))
    assert set(on) == {"schedule", "workflow_dispatch"}
    (schedule,) = on["schedule"]
    assert len(schedule["cron"].split()) == 5


def test_latest_jax_upgrades_checks_it_got_the_newest_then_tests():
    job = latest_job()
    setup = index(job, runs(r"^bash scripts/setup\.sh --dev$"))  # the tests need the dev install
    upgrade = index(job, runs(r"^\.venv/bin/python -m pip install --upgrade jax jaxlib optax$"))
    newest = index(job, runs(r"check_newest_jax\.py"))
    tests = index(job, runs(r"pytest"))
    assert setup < upgrade < newest < tests
    assert shlex.split(job["steps"][newest]["run"]) == [
        ".venv/bin/python",
        "scripts/check_newest_jax.py",
        "jax",
        "jaxlib",
    ]
    command = shlex.split(job["steps"][tests]["run"])
    assert command[:5] == [".venv/bin/python", "-m", "pytest", "-n", "2"] and command[-1] == "tests"
    # The tests still run when only the version check failed.
    assert job["steps"][tests]["if"] == "${{ !cancelled() && steps.upgrade.outcome == 'success' }}"
    assert job["steps"][upgrade]["id"] == "upgrade"


def report_step() -> dict:
    job = latest_job()
    return job["steps"][index(job, runs(r"gh issue"))]


def test_latest_jax_reports_failures_with_permission_to_write_issues():
    step = report_step()
    assert step["if"] == "${{ failure() }}"
    assert step["env"]["GH_TOKEN"] == "${{ github.token }}"
    assert load("latest-jax.yml")["permissions"]["issues"] == "write"
    assert latest_job()["steps"][-1] is not None and report_step() == latest_job()["steps"][-1]


@pytest.mark.parametrize("open_issue", ["", "42"])
def test_latest_jax_report_comments_on_the_open_issue_or_opens_one(open_issue, tmp_path):
    calls = tmp_path / "gh-calls"
    fake_tool(
        tmp_path / "bin",
        "gh",
        f'printf "%s\\n" "$*" >> {calls}\n'
        'if [ "$1 $2" = "issue list" ]; then [ -n "$OPEN_ISSUE" ] && echo "$OPEN_ISSUE"; fi\n'
        "exit 0\n",
    )
    env = {
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "OPEN_ISSUE": open_issue,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "owner/course",
        "GITHUB_RUN_ID": "123",
    }
    result = run_script(report_step()["run"], tmp_path, env, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = calls.read_text().splitlines()
    assert lines[0].startswith("issue list --label latest-jax --state open")
    run_url = "https://github.com/owner/course/actions/runs/123"
    if open_issue:
        assert (
            len(lines) == 2
            and lines[1].startswith("issue comment 42 --body ")
            and run_url in lines[1]
        )
    else:
        assert lines[1].startswith("label create latest-jax")
        assert len(lines) == 3 and lines[2].startswith("issue create ")
        assert "--label latest-jax" in lines[2] and run_url in lines[2]


# --- scripts/check_newest_jax.py --------------------------------------------------------------


@pytest.fixture(scope="module")
def newest_check():
    spec = importlib.util.spec_from_file_location(
        "check_newest_jax", ROOT / "scripts" / "check_newest_jax.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def versions(table: dict):
    return lambda name: table[name]


@pytest.mark.parametrize(
    "installed, newest, code",
    [
        ("0.12.0.1", "0.12.0.1", 0),
        ("0.12.0.1", "0.12.1", 1),  # a newer release pip did not pick
        ("0.12.0.1", "0.13.0", 1),
        ("0.12.0", "0.12.0.1", 1),  # a post-style fourth number counts
        ("0.12.0.1", "0.12.0", 0),
    ],
)
def test_newest_check_exits_non_zero_when_the_installed_jax_is_older(
    newest_check, installed, newest, code, capsys
):
    have = {"jax": installed, "jaxlib": "0.12.0.1"}
    latest = {"jax": newest, "jaxlib": "0.12.0.1"}
    assert newest_check.main([], versions(have), versions(latest)) == code
    error = capsys.readouterr().err
    assert (f"jax {installed} is installed but {newest} is the newest" in error) == bool(code)


def test_newest_check_looks_at_jaxlib_too(newest_check, capsys):
    have = {"jax": "0.13.0", "jaxlib": "0.12.0.1"}
    latest = {"jax": "0.13.0", "jaxlib": "0.13.0"}
    assert newest_check.main([], versions(have), versions(latest)) == 1
    assert "jaxlib 0.12.0.1 is installed but 0.13.0" in capsys.readouterr().err
    assert newest_check.PACKAGES == ("jax", "jaxlib")


def test_newest_check_reads_the_installed_version_from_the_environment(newest_check):
    from importlib.metadata import version

    assert newest_check.main(["jax"], newest=lambda name: version(name)) == 0
