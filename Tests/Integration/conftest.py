import os
import shutil

import pytest

from harness import YKTERM, PrivatePCSC, ServedKey, isolate_environ

_home = None


def pytest_configure(config):
    """Every program the tests start inherits one environment, whatever the user's shell holds: the variables
    ykterm reads cleared or fixed, and a private HOME (harness.clean_environ). A test that wants one of them
    sets it in the environment it passes."""
    global _home
    _home = isolate_environ()


def pytest_unconfigure(config):
    if _home is not None:
        shutil.rmtree(_home, ignore_errors=True)


def pytest_sessionstart(session):
    if not YKTERM.exists():
        raise pytest.UsageError(f"{YKTERM} is missing: run `swift build` (or `make test`) first")
    for tool in ("pcscd", "unshare"):
        if shutil.which(tool) is None:
            raise pytest.UsageError(f"{tool} is missing: run `make deps`")


@pytest.fixture(scope="session")
def pcsc():
    p = PrivatePCSC().start()
    yield p
    p.cleanup()


@pytest.fixture(autouse=True)
def _no_key_left_running():
    """Stops, by PID, any served key a test started and did not stop (a test that failed half-way)."""
    yield
    for k in list(ServedKey.running):
        k.stop(wait=False)


@pytest.fixture
def key(pcsc, tmp_path):
    """A fresh virtual key (state file in tmp_path) in the first vpcd reader."""
    k = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    yield k
    k.stop()


@pytest.fixture
def env(pcsc):
    return pcsc.env()
