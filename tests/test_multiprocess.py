"""The multi-process FSDP step: two Python processes on 127.0.0.1, joined by
jax.distributed.initialize with the gloo CPU collectives, bounded in time."""

import socket

import pytest

from jaxcourse import multiprocess

# More than a few seconds: left out of the fast tier (scripts/test.sh --fast).
pytestmark = pytest.mark.slow


def test_two_processes_train_like_one_device():
    """One global mesh of 2 x 2 devices across both processes; both see the single-device result."""
    reports = multiprocess.launch(2, devices_per_process=2, n_steps=2, timeout=120)
    assert [r["process_id"] for r in reports] == [0, 1]
    for report in reports:
        assert (report["process_count"], report["global_devices"], report["local_devices"]) == (
            2,
            4,
            2,
        )
        assert report["max_abs_difference"] < 1e-5
    assert reports[0]["losses"] == reports[1]["losses"]


def test_a_port_already_taken_is_refused_before_starting():
    with socket.socket() as taken:
        taken.bind((multiprocess.HOST, 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"port {port} on 127.0.0.1 is already in use"):
            multiprocess.launch(2, port=port)
    with pytest.raises(ValueError, match="port must be between 1 and 65535"):
        multiprocess.check_port_free(70000)


def test_a_process_that_never_arrives_ends_in_a_clear_timeout():
    """Only process 0 of 2 starts: it waits for process 1, and the launcher stops it in time."""
    with pytest.raises(TimeoutError, match=r"Process\(es\) \[1\] were never started"):
        multiprocess.launch(2, start=[0], timeout=4)
