import os
import shutil

import pytest

from harness import YKTERM, PrivatePCSC, ServedKey


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
