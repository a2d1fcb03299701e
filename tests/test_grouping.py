"""The suite's tests that share a module-scoped fixture run on one worker (conftest.py's
``xdist_group`` marks under ``--dist loadgroup``), so the fixture is computed once: the
scheduler groups by the suffix pytest-xdist gives those tests' ids, which this checks."""

import os

import pytest


@pytest.fixture(scope="module")
def shared():
    return object()


@pytest.mark.skipif(os.environ.get("PYTEST_XDIST_WORKER") is None, reason="one process")
def test_a_test_sharing_a_module_fixture_is_grouped_by_its_module(shared, request):
    if not getattr(request.config.option, "loadgroup", False):  # set on workers by xdist
        pytest.skip("not distributed by groups")
    assert request.node.nodeid.endswith("@tests/test_grouping.py"), request.node.nodeid
