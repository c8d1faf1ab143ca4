"""`python -m jaxcourse.progress`: one table of a participant's exercises, read from the verdicts
saved in their notebooks' outputs (no kernel, no execution: saved notebooks built here)."""

import json
import subprocess
import sys

from jaxcourse import checks, ladder, progress
from jaxcourse.exercises import jit as jit_exercises

AT = ladder.exercise_name(jit_exercises.check_apply_boundary)
SHRINK = ladder.exercise_name(jit_exercises.check_shrink_path)


def code(source, count=None, outputs=()):
    return {
        "cell_type": "code",
        "execution_count": count,
        "metadata": {},
        "outputs": list(outputs),
        "source": source,
    }


def result(text):
    return {"output_type": "execute_result", "execution_count": 1, "data": {"text/plain": text}}


def save(path, cells):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )


def jit_notebook(path):
    """Exercise 1 checked twice (NOT YET, then PASSED, its cell run last); Exercise 3 never run;
    jax's own check_grads is called too, and is no exercise."""
    save(
        path,
        [
            code(
                "from jaxcourse.exercises.jit import check_apply_boundary, check_shrink_path\n"
                "from jax.test_util import check_grads",
                1,
            ),
            code(
                "check_apply_boundary(apply_boundary)",
                5,
                [result(f"[PASSED] {AT}: correct, well done.")],
            ),
            code(
                "check_apply_boundary(apply_boundary)",
                3,
                [result(f"[NOT YET] {AT}: Hint: the end values are wrong.")],
            ),
            code("check_grads(f, (1.0,), order=1)", 4),
            code("check_shrink_path(shrink_path)"),
        ],
    )


def test_the_last_verdict_run_wins_and_unrun_exercises_are_listed(tmp_path):
    """Cells are read in the order they ran (execution counts), not in page order."""
    jit_notebook(tmp_path / "jit.ipynb")
    rows = progress.progress(tmp_path)
    assert [(r.exercise, r.verdict) for r in rows] == [
        (AT, progress.PASSED),
        (SHRINK, progress.NOT_TRIED),
    ]


def test_a_name_with_a_colon_and_an_attribute_call(tmp_path, monkeypatch):
    """`exercises.check_x(...)` counts, and an exercise name holding ': ' is read whole."""
    named = "Exercise 1 (a shared argument: in_axes=None)"  # as a heading could name it
    index = {
        "check_predict_all": {**ladder.all_solutions()["check_predict_all"], "exercise": named}
    }
    monkeypatch.setattr(ladder, "all_solutions", lambda: index)
    save(
        tmp_path / "blocks" / "vmap.ipynb",
        [
            code("from jaxcourse.exercises import vmap as exercises", 1),
            code(
                "exercises.check_predict_all(predict_all)",
                2,
                [
                    {
                        "output_type": "stream",
                        "name": "stdout",
                        "text": [f"[NOT YET] {named}: Hint: x"],
                    }
                ],
            ),
        ],
    )
    assert progress.progress(tmp_path) == [
        progress.Row("blocks/vmap.ipynb", named, progress.NOT_YET)
    ]


def test_copies_are_skipped_and_the_command_prints_one_table(tmp_path):
    jit_notebook(tmp_path / "jit.ipynb")
    jit_notebook(tmp_path / "saved-before-regeneration" / "jit-old.ipynb")
    (tmp_path / "broken.ipynb").write_text("{not json")
    out = subprocess.run(
        [sys.executable, "-m", "jaxcourse.progress", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "jit-old" not in out
    assert "broken.ipynb" in out
    lines = out.strip().split("\n")
    assert lines[0].split() == ["notebook", "exercise", "verdict"]
    assert any(line.startswith("jit.ipynb") and line.endswith("PASSED") for line in lines)
    assert lines[-1] == "1 of 3 exercises passed, 0 tried and not yet passed, 2 not tried."


def test_a_verdict_on_the_untouched_stub_is_not_tried_and_a_wrong_answer_is_not_yet(tmp_path):
    """Running a student notebook top to bottom checks every stub: that is not an attempt. The
    verdict texts are the checkers' own, so the reading follows any change to them."""
    stub = jit_exercises.check_apply_boundary(None)
    assert not stub.tried and stub.message.startswith(progress.NO_ANSWER)
    assert progress.NO_ANSWER == checks.NO_ANSWER
    wrong = jit_exercises.check_shrink_path(lambda *args: 0.0)
    assert wrong.tried and not wrong.passed
    save(
        tmp_path / "jit.ipynb",
        [
            code("from jaxcourse.exercises.jit import check_apply_boundary, check_shrink_path", 1),
            code("check_apply_boundary(apply_boundary)", 2, [result(str(stub))]),
            code("check_shrink_path(shrink_path)", 3, [result(str(wrong))]),
        ],
    )
    assert [(r.exercise, r.verdict) for r in progress.progress(tmp_path)] == [
        (AT, progress.NOT_TRIED),
        (SHRINK, progress.NOT_YET),
    ]


def test_a_missing_folder_says_so(tmp_path, capsys):
    assert progress.main([str(tmp_path / "nowhere")]) == 1
    assert "No folder" in capsys.readouterr().out
