"""scripts/setup.sh picks a Python that can run the pinned JAX (3.12 or newer), or says what it needs.

`--which-python` runs only the choice, so these tests start no install. Each runs the script with
a PATH of fake interpreters, so what the machine has installed does not matter.
"""

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest

from tools import install, wheelhouse

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow

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


def test_ci_entry_point_runs_the_contributing_test_command():
    """.ci/run is scripts/test.sh, which sets up the developers' install (the learner's full one
    and requirements-dev.txt) with scripts/setup.sh before running pytest."""
    assert "exec bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    test_script = (ROOT / "scripts" / "test.sh").read_text()
    commands = "\n".join(
        line for line in test_script.splitlines() if not line.lstrip().startswith("#")
    )
    assert commands.index("bash scripts/setup.sh --dev") < commands.index("pytest")
    assert "bash scripts/test.sh" in (ROOT / "CONTRIBUTING.md").read_text()


# --- What the set-up installs: Part I alone or everything, and where torch comes from ----------

ENTRY = (
    "scripts/setup.sh",
    "tools/__init__.py",
    "tools/install.py",
    "tools/wheelhouse.py",
    "requirements.txt",
    "requirements-dev.txt",
    "pyproject.toml",
)


def fake_uname(directory: Path, system: str, machine: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / "uname"
    tool.write_text(f'#!/bin/bash\n[ "$1" = -m ] && echo {machine} || echo {system}\n')
    tool.chmod(0o755)
    return directory


@pytest.mark.parametrize(
    ("system", "machine", "says"),
    [
        ("Darwin", "x86_64", "This is an Intel Mac: jaxlib 0.12.0.1 has no wheels for it"),
        ("MINGW64_NT-10.0-22631", "x86_64", "This is Windows outside WSL"),
        ("CYGWIN_NT-10.0", "x86_64", "This is Windows outside WSL"),
    ],
)
def test_platforms_without_jaxlib_wheels_are_sent_to_colab(tmp_path, system, machine, says):
    bin_dir = fake_uname(tmp_path / "bin", system, machine)
    result = which_python(bin_dir)
    assert result.returncode == 3, result
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(says), result.stderr
    assert "Use Colab" in lines[0] and "colab.research.google.com" in lines[0]


@pytest.mark.parametrize(
    ("system", "machine"), [("Linux", "x86_64"), ("Linux", "aarch64"), ("Darwin", "arm64")]
)
def test_supported_platforms_go_on(tmp_path, system, machine):
    bin_dir = fake_uname(tmp_path / "bin", system, machine)
    fake_python(bin_dir, "python3.13", supported=True)
    result = which_python(bin_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(bin_dir / "python3.13")


@pytest.mark.parametrize(("args", "env"), [(["--both"], {}), ([], {"JAXCOURSE_INSTALL": "part2"})])
def test_an_unknown_choice_stops_with_the_valid_ones(tmp_path, args, env):
    result = subprocess.run(
        ["/bin/bash", str(ROOT / "scripts" / "setup.sh"), *args],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "part1" in result.stderr and "full" in result.stderr


def dry_checkout(tmp_path: Path) -> Path:
    """The set-up's files in a fresh folder, with a .venv whose python runs everything but pip
    (logged to pip.log) and the final import check (logged too): the script runs in a second."""
    root = tmp_path / "course"
    for name in ENTRY:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, root / name)
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").write_text(
        "#!/bin/bash\n"
        'case "$1 $2" in\n'
        f'    "-m pip") echo "pip $*" >>{root}/pip.log; exit 0 ;;\n'
        f'    "-m tools.install") if [ "$3" = check ]; then echo "check $4" >>{root}/pip.log; exit 0; fi ;;\n'
        "esac\n"
        f'exec {sys.executable} "$@"\n'
    )
    (venv_bin / "python").chmod(0o755)
    return root


def run_setup(root: Path, *args: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["/bin/bash", str(root / "scripts" / "setup.sh"), *args],
        env={"PATH": "/usr/bin:/bin", "HOME": str(root), "JAXCOURSE_PYTHON": sys.executable, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_part1_install_leaves_out_torch_and_pyplnmodels_and_is_remembered(tmp_path):
    root = dry_checkout(tmp_path)
    result = run_setup(root, "--part1")
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("Set-up, Part I only") and "downloads about" in first
    log = (root / "pip.log").read_text()
    assert "-r .venv/requirements-part1.txt" in log and "-r requirements.txt" not in log
    assert "check part1" in log
    part1 = (root / ".venv" / "requirements-part1.txt").read_text()
    names = {install.requirement_name(line) for line in part1.splitlines()}
    assert "jax" in names and not names & {"torch", "pyplnmodels", "setuptools"}
    assert (root / ".venv" / "jaxcourse-install").read_text().strip() == "part1"
    # Run again with no option, as course.sh and check-setup.sh do: still Part I.
    again = run_setup(root)
    assert again.stdout.startswith("Set-up, Part I only"), again.stdout
    # --full changes the choice, and the next plain run keeps it.
    full = run_setup(root, "--full")
    assert full.stdout.startswith("Set-up, full"), full.stdout
    assert "-r requirements.txt" in (root / "pip.log").read_text()
    assert run_setup(root).stdout.startswith("Set-up, full")


def test_the_dev_install_adds_the_developers_file_and_is_remembered(tmp_path):
    """scripts/test.sh's install: requirements-dev.txt (which includes requirements.txt); a plain
    run afterwards, as check-setup.sh does, keeps it."""
    root = dry_checkout(tmp_path)
    result = run_setup(root, "--dev")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Set-up for developers"), result.stdout
    log = (root / "pip.log").read_text()
    assert "-r requirements-dev.txt" in log and "check dev" in log
    assert (root / ".venv" / "jaxcourse-install").read_text().strip() == "dev"
    assert run_setup(root, JAXCOURSE_FORCE_SETUP="1").stdout.startswith("Set-up for developers")
    # A learner's full install never gets the developers' file.
    full = dry_checkout(tmp_path / "learner")
    assert run_setup(full, "--full").returncode == 0
    assert "requirements-dev.txt" not in (full / "pip.log").read_text()


def test_the_first_set_up_is_full_and_its_first_line_says_what_it_downloads(tmp_path):
    root = dry_checkout(tmp_path)
    result = run_setup(root)
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("Set-up, full") and "downloads about" in first and "torch" in first
    assert (root / ".venv" / "jaxcourse-install").read_text().strip() == "full"
    assert "check full" in (root / "pip.log").read_text()


def test_a_second_set_up_with_nothing_changed_installs_nothing_and_says_so(tmp_path):
    """course.sh and test.sh run the set-up every time: unchanged, it only checks (offline)."""
    root = dry_checkout(tmp_path)
    assert run_setup(root, "--part1").returncode == 0
    log = root / "pip.log"
    log.write_text("")
    again = run_setup(root)
    assert again.returncode == 0, again.stderr
    assert "Nothing to install" in again.stdout
    assert log.read_text() == "check part1\n"  # no pip call, the import check still runs
    forced = run_setup(root, JAXCOURSE_FORCE_SETUP="1")
    assert "Nothing to install" not in forced.stdout
    assert "-r .venv/requirements-part1.txt" in log.read_text()


@pytest.mark.parametrize(
    "change", ["requirements.txt", "requirements-dev.txt", "pyproject.toml", "--full"]
)
def test_a_changed_input_or_mode_installs_again(tmp_path, change):
    root = dry_checkout(tmp_path)
    assert (
        run_setup(root, "--dev" if change == "requirements-dev.txt" else "--part1").returncode == 0
    )
    (root / "pip.log").write_text("")
    if change.startswith("--"):
        result = run_setup(root, change)
    else:
        with (root / change).open("a") as file:
            file.write("\n# changed\n")
        result = run_setup(root)
    assert result.returncode == 0, result.stderr
    assert "Nothing to install" not in result.stdout
    assert "pip " in (root / "pip.log").read_text()


# --- Where torch comes from: PyTorch's CPU wheel index when reachable, else PyPI ---------------

TORCH = install.pinned_version("torch")


@pytest.fixture
def stand_in_index(tmp_path):
    """A PEP 503 index served on loopback, like download.pytorch.org/whl/cpu: a torch/ page."""

    def serve(*wheels: str) -> str:
        page = tmp_path / "index" / "torch"
        page.mkdir(parents=True)
        links = "".join(f'<a href="{name}#sha256=0">{name}</a><br>' for name in wheels)
        (page / "index.html").write_text(f"<!DOCTYPE html><html><body>{links}</body></html>")
        handler = functools.partial(
            http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "index")
        )
        handler.log_message = lambda *args: None
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    servers = []
    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def closed_port() -> str:
    """A loopback address nothing listens on: connecting is refused at once."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/whl/cpu"


def test_torch_comes_from_the_cpu_index_when_it_lists_the_pinned_version(
    stand_in_index, monkeypatch
):
    index = stand_in_index(
        f"torch-{TORCH}%2Bcpu-cp313-cp313-manylinux_2_28_x86_64.whl".replace("%2B", "+"),
        "torch-2.0.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
    )
    monkeypatch.setenv("JAXCOURSE_TORCH_INDEX", index)
    args, message = install.torch_args(system="Linux")
    assert args == ["--index-url", index, f"torch=={TORCH}"]
    assert message is None


def test_an_index_without_the_pinned_version_falls_back_to_pypi(stand_in_index, monkeypatch):
    monkeypatch.setenv(
        "JAXCOURSE_TORCH_INDEX", stand_in_index("torch-2.0.0+cpu-cp311-cp311-linux_x86_64.whl")
    )
    args, message = install.torch_args(system="Linux")
    assert args == []
    assert f"lists no wheel of torch {TORCH}" in message and "PyPI" in message


def test_an_unreachable_index_falls_back_to_pypi_with_one_line_saying_why_and_how_large(tmp_path):
    """What this machine gets: download.pytorch.org cannot be reached from it."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "JAXCOURSE_TORCH_INDEX": closed_port(),
        "JAXCOURSE_PROBE_TIMEOUT": "3",
    }
    result = subprocess.run(
        [sys.executable, "-m", "tools.install", "torch-args"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""  # nothing for pip: it takes torch from PyPI with the rest
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "cannot be reached" in lines[0] and f"PyPI's torch {TORCH}" in lines[0]
    assert install.COMPARE_DOWNLOAD_CUDA in lines[0]


def test_the_cpu_index_answers_the_cli_with_pip_arguments(stand_in_index, tmp_path):
    index = stand_in_index(f"torch-{TORCH}+cpu-cp313-cp313-manylinux_2_28_x86_64.whl")
    result = subprocess.run(
        [sys.executable, "-m", "tools.install", "torch-args"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "JAXCOURSE_TORCH_INDEX": index},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.split() == ["--index-url", index, f"torch=={TORCH}"]


def test_cuda_asks_for_pypis_build_without_probing(monkeypatch):
    monkeypatch.setenv("JAXCOURSE_TORCH_INDEX", "http://192.0.2.1/never-asked")  # would time out
    args, message = install.torch_args(cuda=True, system="Linux")
    assert args == [] and "CUDA build as asked" in message


def test_macos_takes_pypis_cpu_wheels_without_probing(monkeypatch):
    monkeypatch.setenv("JAXCOURSE_TORCH_INDEX", "http://192.0.2.1/never-asked")
    assert install.torch_args(system="Darwin") == ([], None)
    args, message = install.torch_args(cuda=True, system="Darwin")
    assert args == [] and "no CUDA build for macOS" in message


def test_an_installed_torch_of_the_pinned_version_is_kept():
    """This .venv has it: no probe, nothing to install (the probe would cost seconds offline)."""
    assert install.torch_args(python=sys.executable, system="Linux") == ([], None)


# --- The optional extra --------------------------------------------------------------------------


def test_pyplnmodels_and_torch_are_an_optional_extra_not_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {install.requirement_name(spec) for spec in project["dependencies"]}
    compare = install.compare_extra(ROOT)
    assert {"pyplnmodels", "torch"} <= compare
    assert not compare & core
    assert {"jax", "jaxlib", "pandas"} <= core


def test_formulaic_is_an_optional_extra_pinned_for_the_full_install():
    """The `formula` extra is formulaic alone; requirements.txt pins it and what it needs, so the
    full install has it (and every requirement of it is pinned too)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {install.requirement_name(spec) for spec in project["dependencies"]}
    assert install.formula_extra(ROOT) == {"formulaic"} and "formulaic" not in core
    pinned = install.pinned_names(ROOT / "requirements.txt")
    assert install.pinned_version("formulaic") == "1.2.2"
    needs = dependency_closure({"formulaic"}) - {"formulaic"}
    assert {"interface-meta", "wrapt"} <= needs
    unpinned = needs - pinned - dependency_closure(pinned - {"formulaic"})
    assert unpinned == set(), f"pin what formulaic needs in requirements.txt: {unpinned}"


def test_part1_requirements_are_requirements_txt_without_the_extra():
    full, part1 = install.requirements("full"), install.requirements("part1")
    assert full == (ROOT / "requirements.txt").read_text()
    names = {install.requirement_name(line) for line in part1.splitlines()} - {None}
    every = {install.requirement_name(line) for line in full.splitlines()} - {None}
    assert names == every - install.compare_extra(ROOT) - install.formula_extra(ROOT)
    assert "formulaic" in every - names
    assert {"jax", "jaxlib", "jupyter"} <= names
    assert install.requirements("dev") == (ROOT / "requirements-dev.txt").read_text()


# --- A learner's install runs what a learner runs; the developers' tools come on top ------------


def dependency_closure(names: set[str]) -> set[str]:
    """`names` and every distribution they require, transitively, as installed here (the
    developers' .venv has them all), requirements behind an extra left out."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen, todo = set(), list(names)
    while todo:
        name = install.canonical(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        for spec in metadata.requires(name) or []:
            requirement = Requirement(spec)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return seen


def installed_by(mode: str) -> set[str]:
    """What `scripts/setup.sh --<mode>` installs: its requirements and their dependencies."""
    if mode == "part1":
        pinned = {
            install.requirement_name(line) for line in install.requirements("part1").splitlines()
        }
        return dependency_closure(pinned - {None})
    files = {"full": "requirements.txt", "dev": "requirements-dev.txt"}
    return dependency_closure(install.pinned_names(ROOT / files[mode]))


def third_party_imports(paths) -> dict[str, set[str]]:
    """{distribution: the files that import it} for every module the files import (at any depth)
    that is neither the standard library nor the repository's own (jaxcourse, tools, tests)."""
    import ast
    from importlib import metadata

    own = {"jaxcourse", "tools", "conftest"} | {path.stem for path in (ROOT / "tests").glob("*.py")}
    distributions = metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in (name.split(".")[0] for name in modules):
                if module in sys.stdlib_module_names or module in own:
                    continue
                for dist in distributions.get(module, [module]):
                    found.setdefault(install.canonical(dist), set()).add(path.name)
    return found


def test_requirements_dev_pins_exactly_the_dev_extra_on_top_of_requirements_txt():
    text = (ROOT / "requirements-dev.txt").read_text()
    assert "-r requirements.txt" in text.splitlines()
    own = {install.requirement_name(line) for line in text.splitlines()} - {None}
    tools = {"pytest", "pytest-xdist", "pytest-rerunfailures", "nbmake", "ruff", "mypy"}
    assert own == install.dev_extra(ROOT) == tools
    assert all(re.search(rf"^{name}==\S+$", text, re.M | re.I) for name in own), text
    assert not own & install.pinned_names(ROOT / "requirements.txt")


@pytest.mark.parametrize("mode", ["part1", "full"])
def test_a_learners_install_carries_no_test_or_lint_tool(mode):
    """Neither requirements.txt nor anything it pulls in is a developer's tool."""
    assert installed_by(mode) & install.dev_extra(ROOT) == set()
    assert installed_by(mode) & {"iniconfig", "pluggy", "execnet"} == set()  # pytest's own


def test_the_learners_commands_need_nothing_outside_the_part1_install():
    """check-setup.sh and course.sh run tools/ (the local book, the progress display, the kernels'
    check) and the package: Part I's install has every distribution they import."""
    tools = third_party_imports(sorted((ROOT / "tools").glob("*.py")))
    assert {"nbclient", "nbconvert", "jupytext", "rich", "pyyaml"} <= set(tools)
    missing = {dist: files for dist, files in tools.items() if dist not in installed_by("part1")}
    assert missing == {}, f"pin these in requirements.txt (tools/ imports them): {missing}"
    package = third_party_imports(sorted((ROOT / "src" / "jaxcourse").rglob("*.py")))
    missing = {dist: files for dist, files in package.items() if dist not in installed_by("full")}
    assert missing == {}, f"the package imports what requirements.txt does not install: {missing}"


def test_the_tests_need_nothing_outside_the_dev_install():
    tests = third_party_imports([*sorted((ROOT / "tests").rglob("*.py")), ROOT / "conftest.py"])
    assert "pytest" in tests
    missing = {dist: files for dist, files in tests.items() if dist not in installed_by("dev")}
    assert missing == {}, f"pin these in requirements-dev.txt (the tests import them): {missing}"


def test_the_set_up_check_imports_what_the_install_has_and_names_what_is_missing():
    """With torch and pyPLNmodels made unimportable: a Part I check passes without them, a full
    one says what to run."""
    code = (
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'pyPLNmodels'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "from tools import install\n"
        "print(install.check('part1'))\n"
        "try:\n"
        "    install.check('full')\n"
        "except SystemExit as stop:\n"
        "    print(stop)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    passed, refused = result.stdout.strip().splitlines()[-2:]
    assert passed.startswith("Set-up check (part1 install)") and "jax 0.12" in passed
    assert "torch" not in passed and "oaks loads, 116 x 114" in passed
    assert (
        refused.startswith("The full install lacks torch") and "scripts/setup.sh --full" in refused
    )


def test_code_that_needs_pyplnmodels_says_how_to_install_it(monkeypatch):
    import importlib.util

    from jaxcourse import optional

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    with pytest.raises(
        ImportError, match=r"torch is not installed.*scripts/setup.sh --full.*\.\[compare\]"
    ):
        optional.require_compare()


def test_scripts_keep_lf_line_endings_on_a_windows_checkout():
    result = subprocess.run(
        ["git", "check-attr", "eol", "text", "scripts/setup.sh", "scripts/test.sh", ".ci/run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    for path in ("scripts/setup.sh", "scripts/test.sh", ".ci/run"):
        assert f"{path}: eol: lf" in result.stdout, result.stdout


def test_the_oaks_data_are_package_data_so_a_non_editable_install_has_them():
    """Colab installs the package from git, not editable: the data must be in the wheel."""
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["jaxcourse"]
    package = ROOT / "src" / "jaxcourse"
    shipped = sorted((package / "data" / "oaks").iterdir())
    assert [path.name for path in shipped] == [
        "README.md",
        "counts.csv.gz",
        "covariates.csv.gz",
        "offsets.csv.gz",
    ]
    for path in shipped:
        relative = path.relative_to(package)
        assert any(relative.match(pattern) for pattern in package_data), relative


def test_a_chapter_cell_that_imports_pyplnmodels_on_a_part1_install_says_how_to_install_it():
    """Part II's cells import pyPLNmodels and torch themselves; after `start_chapter()`, the error
    a Part I install gets there ends with the command that installs them."""
    code = (
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'pyPLNmodels'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "shell.run_cell('from jaxcourse.page import start_chapter; start_chapter()')\n"
        "missing = shell.run_cell('from pyPLNmodels import load_oaks')\n"
        "print('error:', type(missing.error_in_exec).__name__)\n"
        "other = shell.run_cell('import not_a_course_module')\n"
        "print('other error:', type(other.error_in_exec).__name__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    out = result.stdout
    assert "error: ModuleNotFoundError" in out, out + result.stderr[-2000:]
    assert "pyPLNmodels is not installed, and this cell needs it" in out
    assert "bash scripts/setup.sh --full" in out and "pip install -e '.[compare]'" in out
    assert "other error: ModuleNotFoundError" in out
    assert out.count("scripts/setup.sh --full") == 1  # nothing added for other modules


def test_on_colab_the_missing_module_message_gives_a_pip_cell(monkeypatch):
    import types

    from jaxcourse import optional

    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    message = optional.missing_compare_message(["pyPLNmodels"], "this cell")
    assert "%pip install pyPLNmodels 'setuptools<81'" in message and "scripts/" not in message


# --- The README is a learner's ---------------------------------------------------------------


def test_the_readme_starts_with_a_learners_commands_and_says_which_install():
    """Its first command installs what Part I needs and says so; --full is named for Part II; it
    says how to open the notebooks (check-setup's last line), where progress is, and is short."""
    from tools.learner import OPEN_NOTEBOOKS

    readme = (ROOT / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)\n", readme)[1]
    assert first.startswith("bash scripts/check-setup.sh --part1") and "Part I" in first
    assert "bash scripts/check-setup.sh --full" in readme and "Part II" in readme
    assert OPEN_NOTEBOOKS in readme and "python -m jaxcourse.progress" in readme
    assert "colab.research.google.com" in readme and "jax-just-in-time.github.io" in readme
    assert len(readme.encode()) < 5 * 1024, "the README is a learner's first screen: keep it short"
    assert "## Architecture" not in readme and "git tag" not in readme  # CONTRIBUTING's


def test_the_readme_states_the_measured_sizes_that_tools_install_holds():
    readme = (ROOT / "README.md").read_text()
    part1 = next(line for line in readme.splitlines() if line.startswith("| `--part1`"))
    full = next(line for line in readme.splitlines() if line.startswith("| `--full`"))
    assert install.PART1_DOWNLOAD in part1 and install.PART1_INSTALLED in part1
    assert install.COMPARE_DOWNLOAD_CPU in full and install.COMPARE_DOWNLOAD_CUDA in full
    assert install.FULL_INSTALLED_CUDA in full


# --- A wheel folder: a Part I install with no network ------------------------------------------


def wheel_folder(folder: Path) -> Path:
    """A folder `setup.sh --wheelhouse` accepts: it holds what `wheelhouse` writes beside the wheels."""
    folder.mkdir(parents=True)
    (folder / "requirements-part1.txt").write_text(install.requirements("part1"))
    return folder


def test_setup_from_a_wheel_folder_gives_every_pip_call_no_index_and_the_folder(tmp_path):
    root = dry_checkout(tmp_path)
    folder = wheel_folder(tmp_path / "usb" / "wheels")
    result = run_setup(root, "--part1", "--wheelhouse", str(folder))
    assert result.returncode == 0, result.stderr
    assert f"From the wheel folder {folder}: pip asks no index" in result.stdout
    pip_calls = [line for line in (root / "pip.log").read_text().splitlines() if line[:4] == "pip "]
    assert len(pip_calls) == 2, pip_calls  # the requirements, then the course package
    for call in pip_calls:
        assert f"--no-index --find-links {folder} " in call, call
    # JAXCOURSE_WHEELHOUSE does the same, as check-setup.sh passes no option of its own.
    (root / "pip.log").write_text("")
    assert (
        run_setup(root, JAXCOURSE_FORCE_SETUP="1", JAXCOURSE_WHEELHOUSE=str(folder)).returncode == 0
    )
    assert all("--no-index" in call for call in (root / "pip.log").read_text().splitlines()[:-1])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--full"], "holds the Part I install only"),
        (["--part1"], "is not a wheel folder (no requirements-part1.txt)"),
    ],
)
def test_a_wheel_folder_for_a_full_install_or_without_its_requirements_stops(tmp_path, args, says):
    root = dry_checkout(tmp_path)
    folder = tmp_path / "wheels"
    folder.mkdir()
    if args == ["--full"]:
        wheel_folder(folder / "made")
        folder = folder / "made"
    result = run_setup(root, *args, "--wheelhouse", str(folder))
    assert result.returncode == 2 and says in result.stderr, result.stderr
    assert not (root / "pip.log").exists(), "nothing was installed"


def test_each_platform_of_a_wheel_folder_is_its_own_binary_download():
    """One `pip download` takes one wheel per package, so each system needs a download of its
    own; another system's wheels can only be binary ones (pip cannot build for it)."""
    folder = Path("/usb/wheels")
    native = wheelhouse.wheelhouse_commands(folder, root=ROOT)
    assert native == [
        ["download", "--disable-pip-version-check", "--dest", str(folder), "-r",
         str(folder / "requirements-part1.txt")],
        ["download", "--disable-pip-version-check", "--dest", str(folder),
         *wheelhouse.build_requirements(ROOT)],
    ]  # fmt: skip
    both = wheelhouse.wheelhouse_commands(
        folder, ["macos-arm64", "linux-aarch64"], "3.12", root=ROOT
    )
    assert len(both) == 4
    for command, name in zip(both, ["macos-arm64"] * 2 + ["linux-aarch64"] * 2, strict=True):
        platforms = [command[i + 1] for i, arg in enumerate(command) if arg == "--platform"]
        assert platforms == list(wheelhouse.PLATFORMS[name])
        assert (
            "--only-binary=:all:" in command
            and command[command.index("--python-version") + 1] == "3.12"
        )
    with pytest.raises(ValueError, match="unknown platform"):
        wheelhouse.wheelhouse_commands(folder, ["windows-amd64"], root=ROOT)
    with pytest.raises(ValueError, match="goes with --platform"):
        wheelhouse.wheelhouse_commands(folder, python_version="3.12", root=ROOT)


def tiny_course(folder: Path) -> Path:
    """A course of one small requirement (requirements.txt's pure-Python threadpoolctl, 18 kB)
    and a one-module package built with the real build back-end: the pair below downloads little."""
    for name in (
        "scripts/setup.sh",
        "tools/__init__.py",
        "tools/install.py",
        "tools/wheelhouse.py",
    ):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, folder / name)
    pin = f"threadpoolctl=={install.pinned_version('threadpoolctl')}"
    (folder / "requirements.txt").write_text(pin + "\n")
    (folder / "requirements-dev.txt").write_text("-r requirements.txt\n")
    backend = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    requires = ", ".join(f'"{spec}"' for spec in backend["requires"])
    (folder / "pyproject.toml").write_text(
        f'[build-system]\nrequires = [{requires}]\nbuild-backend = "{backend["build-backend"]}"\n\n'
        '[project]\nname = "tinycourse"\nversion = "0.1"\n\n'
        "[project.optional-dependencies]\ncompare = []\nformula = []\ndev = []\n"
    )
    (folder / "src" / "tinycourse").mkdir(parents=True)
    (folder / "src" / "tinycourse" / "__init__.py").write_text("ANSWER = 42\n")
    return folder


@pytest.mark.network
def test_a_wheel_folder_made_online_installs_with_no_index(tmp_path):
    """The pair for real, on a tiny course: `python -m tools.install wheelhouse` downloads its
    Part I requirements and the build back-end; setup.sh --part1 --wheelhouse then installs them,
    and the package in editable mode, into a fresh venv with every index out of reach (pip's
    configuration ignored, its index a closed port). The course's own 240 MB folder is checked by
    hand with the network cut (CONTRIBUTING.md, "How the course is built and set up").
    """
    course = tiny_course(tmp_path / "course")
    folder = tmp_path / "wheels"
    made = subprocess.run(
        [sys.executable, "-m", "tools.install", "wheelhouse", str(folder)],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    assert "Install from it with no network" in made.stdout
    assert (folder / "requirements-part1.txt").read_text() == (
        course / "requirements.txt"
    ).read_text()
    wheels = {path.name.split("-")[0].lower() for path in folder.glob("*.whl")}
    assert {"threadpoolctl", "setuptools"} <= wheels, wheels
    # Another system's wheels: pip accepts the platform options (pure-Python wheels fit any).
    other = subprocess.run(
        [sys.executable, "-m", "tools.install", "wheelhouse", str(tmp_path / "mac"),
         "--platform", "macos-arm64", "--python-version", "3.12"],
        cwd=course, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert other.returncode == 0, other.stderr
    assert {path.name.split("-")[0] for path in (tmp_path / "mac").glob("*.whl")} >= {
        "threadpoolctl"
    }

    # The install: a fresh venv, whose python setup.sh keeps; only the final import check of the
    # course's packages (jax, ...) is left out, as this tiny course has none of them.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_dir = course / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(
        "#!/bin/bash\n"
        'if [ "$1 $2 $3" = "-m tools.install check" ]; then echo "check $4"; exit 0; fi\n'
        f'exec {venv}/bin/python "$@"\n'
    )
    (bin_dir / "python").chmod(0o755)
    result = run_setup(
        course,
        "--part1",
        "--wheelhouse",
        str(folder),
        PIP_CONFIG_FILE=os.devnull,
        PIP_INDEX_URL=closed_port(),
    )
    assert result.returncode == 0, result.stderr
    assert "check part1" in result.stdout
    imported = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import threadpoolctl, tinycourse; print(tinycourse.__file__, tinycourse.ANSWER)"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.split() == [str(course / "src" / "tinycourse" / "__init__.py"), "42"]


@pytest.mark.parametrize("page", ["prepare.qmd", "instructors.qmd"])
def test_the_pages_wheel_folder_commands_are_the_tools(page):
    """Every `python -m tools.install wheelhouse ...` and `--wheelhouse` command a page shows
    parses as the tool's and the set-up's, with platforms the tool knows."""
    text = (ROOT / page).read_text()
    commands = re.findall(r"python -m tools\.install (wheelhouse [^`#\n]*)", text)
    assert commands, page
    for command in commands:
        args = install.build_parser().parse_args(command.split())
        assert set(args.platform) <= set(wheelhouse.PLATFORMS)
    for name in re.findall(r"--platform (\S+?)`?[ )`]", text):
        assert name in wheelhouse.PLATFORMS, name
    for line in re.findall(r"bash scripts/check-setup\.sh .*--wheelhouse.*", text):
        assert "--part1" in line, line
