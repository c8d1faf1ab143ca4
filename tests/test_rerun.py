"""pyproject.toml's rerun policy: a notebook whose kernel did not start runs once more, and
nothing else is ever run twice.

Each case runs pytest in a new process on a small test file, with this repository's
pyproject.toml as its configuration, and reads the outcome pytest reports.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FIRST_TRY_FAILS = """
from pathlib import Path

def test_it():
    marker = Path(__file__).with_suffix(".tried")
    if not marker.exists():
        marker.write_text("once")
        raise {error}
"""


def outcome(tmp_path: Path, error: str) -> str:
    """pytest's summary line for a test that raises `error` on its first try only."""
    test_file = tmp_path / "test_case.py"
    test_file.write_text(FIRST_TRY_FAILS.format(error=error))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(ROOT / "pyproject.toml"),
            "-p",
            "no:cacheprovider",
            "-q",
            "--rootdir",
            str(tmp_path),
            str(test_file),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    return done.stdout.strip().splitlines()[-1]


def test_a_kernel_that_did_not_start_gets_a_second_try(tmp_path):
    """nbclient's error when a kernel never answers: the test runs again, and passes."""
    summary = outcome(tmp_path, 'RuntimeError("Kernel didn\'t respond in 60 seconds")')
    assert "1 passed" in summary and "1 rerun" in summary, summary


def test_any_other_failure_fails_at_once(tmp_path):
    """A failing assertion, even one whose message names a kernel, and another RuntimeError: no
    second try."""
    for k, error in enumerate(
        ('AssertionError("Kernel didn\'t respond")', "RuntimeError('a real bug')")
    ):
        folder = tmp_path / f"case{k}"
        folder.mkdir()
        summary = outcome(folder, error)
        assert "1 failed" in summary and "rerun" not in summary, summary
