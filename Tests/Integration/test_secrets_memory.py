"""Secrets in memory (issue 22, section 5): ykterm is not dumpable and leaves no core file.

Every command may hold a PIN, password, PIN token or OATH key, so ykterm makes itself not dumpable and sets its
core size to 0 before anything else. The command here waits for an OATH secret on standard input. It runs as an
unprivileged user, for whom the kernel shows the difference: /proc/PID/mem of a process that is not dumpable
belongs to root, and a process that is not dumpable writes no core file when it crashes. A plain process of the
same user beside it shows what the machine would do otherwise.
"""

import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from harness import YKTERM, stop_pid, wait_for_input

NOBODY = 65534


def as_nobody(argv, cwd):
    def unlimited_core():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    return subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"] + argv,
                            cwd=cwd, env=dict(os.environ, HOME=str(cwd), XDG_CONFIG_HOME=str(cwd)), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=unlimited_core)


def owner_of_mem(pid, timeout=5.0):
    """The owner of /proc/PID/mem once the process has exec'd the program (setpriv runs first, and the exec
    makes a plain program dumpable again)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            exe = ""
        if not exe.endswith("setpriv"):
            return os.stat(f"/proc/{pid}/mem").st_uid
        time.sleep(0.02)
    pytest.fail("the program did not start")


def crash(proc):
    proc.send_signal(11)
    proc.wait(timeout=10)
    return proc.returncode


@pytest.fixture
def workdir():
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to run a command as an unprivileged user")
    # Under /tmp itself: the unprivileged user must reach it (a private TMPDIR's parents are root's alone).
    d = Path(tempfile.mkdtemp(prefix="ykterm-core-", dir="/tmp"))
    os.chown(d, NOBODY, NOBODY)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_ykterm_holding_a_secret_is_not_dumpable_and_leaves_no_core(workdir):
    core_pattern = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    # What this machine does with a plain process of the same user: dumpable, and (with a core pattern that
    # names a file) a core file on SIGSEGV.
    plain = as_nobody(["sleep", "30"], workdir)
    try:
        assert owner_of_mem(plain.pid) == NOBODY
        assert crash(plain) == -11
    finally:
        stop_pid(plain)
    plain_cores = list(workdir.glob("core*"))
    for c in plain_cores:
        c.unlink()

    key = as_nobody([str(YKTERM), "oath", "add", "--virtual", "--issuer", "Example", "--name", "held",
                     "--secret", "-"], workdir)
    try:
        wait_for_input(key)
        assert owner_of_mem(key.pid) == 0, "ykterm is dumpable while it waits for a secret"
        assert key.poll() is None, key.stderr.read().decode()
        assert crash(key) == -11
    finally:
        stop_pid(key)
    assert not list(workdir.glob("core*")), "ykterm left a core file"
    if core_pattern.startswith("|") or not plain_cores:
        pytest.skip(f"the kernel's core pattern ({core_pattern!r}) writes no core file here to compare with; "
                    "ykterm was checked not dumpable")
