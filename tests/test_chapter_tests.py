"""`bash scripts/test.sh --chapter NAME` selects the chapter's tests by name, not by a list.

The selection is checked on the repository's own chapters: what each must run (its exercise,
wrong-answer and error tests, its notebooks and blocks) and what it must leave to other chapters.
"""

import os
import subprocess
from pathlib import Path

import pytest

from tools import chapter_tests

ROOT = Path(__file__).resolve().parents[1]


def test_a_chapter_runs_its_own_tests_notebooks_blocks_and_the_meta_tests():
    arguments = chapter_tests.pytest_arguments("vmap")
    for path in (
        "tests/test_vmap_exercises.py",
        "tests/test_vmap_wrong_answers.py",  # which the old hand-written list left out
        "tests/test_vmap_errors.py",
        "tests/test_workshop.py",  # vmap has a workshop block
        "notebooks/vmap.ipynb",
        "notebooks/student/vmap.ipynb",
        "notebooks/blocks/vmap.ipynb",
        "notebooks/blocks/student/vmap.ipynb",
        *chapter_tests.META_TESTS,
    ):
        assert path in arguments, path
    assert not any("jit" in argument or "sharding" in argument for argument in arguments)
    # The crash test runs for this chapter's checkers only.
    crash = arguments.index(chapter_tests.CRASH_TEST)
    assert arguments[crash + 1 :] == ["-k", "not test_checkers_never_crash or vmap.check_"]


def test_every_selected_path_exists():
    for chapter in chapter_tests.chapters():
        for argument in chapter_tests.pytest_arguments(chapter):
            if argument.startswith(("tests/", "notebooks/")):
                assert (ROOT / argument).is_file(), (chapter, argument)


def test_a_chapter_leaves_out_the_tests_of_a_chapter_with_a_longer_name():
    sharding = chapter_tests.own_test_files("sharding")
    assert "tests/test_sharding_exercises.py" in sharding
    assert not [path for path in sharding if "sharding_models" in path], sharding
    assert "tests/test_sharding_models_exercises.py" in chapter_tests.own_test_files(
        "sharding-models"
    )


def test_a_chapter_gets_the_exercise_tests_of_the_checker_module_it_imports():
    # pln-model's checkers live in jaxcourse.exercises.pln, not in a module named after it.
    own = chapter_tests.own_test_files("pln-model")
    assert {"tests/test_pln_exercises.py", "tests/test_pln_wrong_answers.py"} <= set(own)
    assert not [path for path in own if "levels" in path or "benchmark" in path], own


def test_a_chapter_without_a_workshop_block_leaves_the_workshop_test_out():
    assert chapter_tests.workshop_blocks("profiling") == []
    assert chapter_tests.WORKSHOP_TEST not in chapter_tests.pytest_arguments("profiling")


def test_an_unknown_chapter_names_the_chapters():
    with pytest.raises(ValueError, match="vmap"):
        chapter_tests.pytest_arguments("vmapp")


def test_the_script_lists_the_same_selection():
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "test.sh"), "--chapter", "vmap", "--list"],
        env={**os.environ, "JAXCOURSE_SKIP_SETUP": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    listed = result.stdout.splitlines()
    assert listed[listed.index(chapter_tests.pytest_arguments("vmap")[0]) :] == (
        chapter_tests.pytest_arguments("vmap")
    )
