"""scripts/setup.sh picks a Python that can run the pinned JAX (3.12 or newer), or says what it needs.

`--which-python` runs only the choice, so these tests start no install. Each runs the script with
a PATH of fake interpreters, so what the machine has installed does not matter.
"""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def fake_python(directory: Path, name: str, *, supported: bool) -> Path:
    """An interpreter stand-in: the real one (3.12+) if `supported`, else one that fails the check."""
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / name
    body = (
        f'exec {sys.executable} "$@"'
        if supported
        else "exit 1  # like Python 3.11: fails the >= 3.12 test"
    )
    tool.write_text(f"#!/bin/bash\n{body}\n")
    tool.chmod(0o755)
    return tool


def which_python(path: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["/bin/bash", str(ROOT / "scripts" / "setup.sh"), "--which-python"],
        env={"PATH": f"{path}:/usr/bin:/bin", "HOME": str(path), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_setup_runs_on_python_3_12_or_newer():
    assert sys.version_info >= (3, 12), "the suite itself must run on the Python the course needs"


def test_a_chosen_interpreter_comes_first(tmp_path):
    chosen = fake_python(tmp_path / "elsewhere", "my-python", supported=True)
    fake_python(tmp_path / "bin", "python3.13", supported=True)
    result = which_python(tmp_path / "bin", JAXCOURSE_PYTHON=str(chosen))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(chosen)


def test_python_3_13_is_preferred_to_an_old_default_python3(tmp_path):
    bin_dir = tmp_path / "bin"
    fake_python(bin_dir, "python3", supported=False)
    newest = fake_python(bin_dir, "python3.13", supported=True)
    result = which_python(bin_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(newest)


def test_an_old_chosen_interpreter_is_skipped(tmp_path):
    old = fake_python(tmp_path / "elsewhere", "python3.11", supported=False)
    fallback = fake_python(tmp_path / "bin", "python3.12", supported=True)
    result = which_python(tmp_path / "bin", JAXCOURSE_PYTHON=str(old))
    assert result.stdout.strip() == str(fallback)


def test_without_a_supported_python_it_stops_and_says_what_it_needs(tmp_path):
    bin_dir = tmp_path / "bin"
    fake_python(bin_dir, "python3", supported=False)
    (bin_dir / "pyenv").write_text("#!/bin/bash\nexit 0\n")  # pyenv with no versions installed
    (bin_dir / "pyenv").chmod(0o755)
    # Only the fakes and the tools the script uses on PATH: a real python3 (3.12 on some
    # runners) in /usr/bin must not count here.
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("dirname", "grep", "sort"):
        (tools / tool).symlink_to(shutil.which(tool))
    result = subprocess.run(
        ["/bin/bash", str(ROOT / "scripts" / "setup.sh"), "--which-python"],
        env={"PATH": f"{bin_dir}:{tools}", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "needs Python 3.13 or 3.12" in result.stderr
    assert "JAXCOURSE_PYTHON" in result.stderr


def test_ci_entry_point_runs_the_readme_test_command():
    """.ci/run is scripts/test.sh, which sets up with scripts/setup.sh before running pytest."""
    assert "exec bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    test_script = (ROOT / "scripts" / "test.sh").read_text()
    assert test_script.index("bash scripts/setup.sh") < test_script.index("pytest")
    assert "bash scripts/test.sh" in (ROOT / "README.md").read_text()
