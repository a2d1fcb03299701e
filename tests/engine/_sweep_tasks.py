"""Picklable tasks for tests/test_sweep.py (worker processes import them by module name)."""

import os
import time

from reduced_odes._sweep import run_sweep


def squares(n):
    return [{"x": x} for x in range(n)]


def square(setting):
    time.sleep(0.01)
    return {"y": setting["x"] ** 2, "pid": os.getpid()}


def slow_square(setting):
    time.sleep(0.1)
    return {"y": setting["x"] ** 2}


def fails_on_three(setting):
    if setting["x"] == 3:
        raise ValueError("x == 3 is not allowed")
    return {"y": setting["x"] ** 2}


def slow_sweep(path):
    """The sweep that the kill test runs in a subprocess (and then resumes in-process)."""
    return run_sweep(squares(30), slow_square, path, max_workers=2, progress=False)
