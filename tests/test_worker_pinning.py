"""The root conftest gives each pytest-xdist worker its own cores (see its docstring for why)."""

import importlib.util
import os
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "root_conftest", Path(__file__).parents[1] / "conftest.py"
)
conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conftest)


@pytest.fixture
def recorded_affinity(monkeypatch):
    calls = []
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(
        os, "sched_setaffinity", lambda pid, cores: calls.append(list(cores)), raising=False
    )
    return calls


@pytest.mark.parametrize(("worker", "expected"), [("gw0", [0, 2]), ("gw1", [1, 3])])
def test_each_of_two_workers_gets_alternate_cores(monkeypatch, recorded_affinity, worker, expected):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    conftest.pin_worker_to_its_own_cores()
    assert recorded_affinity == [expected]


@pytest.mark.parametrize(("worker", "count"), [("", "0"), ("gw0", "1"), ("gw0", "8")])
def test_no_pinning_without_workers_or_with_more_workers_than_cores(
    monkeypatch, recorded_affinity, worker, count
):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", count)
    conftest.pin_worker_to_its_own_cores()
    assert recorded_affinity == []
