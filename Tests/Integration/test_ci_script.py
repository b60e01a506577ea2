""".ci/run, with a command of the test's own in place of `make test` (YKTERM_CI_TEST_COMMAND) and its temporary
folder made in a folder of the test's own (YKTERM_CI_TMP_ROOT): it removes its folder pass or fail, keeps the
command's exit status, and reports what a run leaves behind (in the root, in tmux's socket folder, in the run's
TMPDIR)."""

import os
import shutil
import subprocess
import tempfile

import pytest

from harness import ROOT

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is missing: run `make deps`")

SCRIPT = ROOT / ".ci" / "run"


@pytest.fixture
def dirs():
    """The root the run's folder is made in, and the folder standing for the machine's TMUX_TMPDIR (other
    programs' tmux servers on this machine come and go in /tmp/tmux-UID). Short paths: a tmux socket's path
    must fit in 108 bytes."""
    root = tempfile.mkdtemp(prefix="ci-root-")
    machine_tmux = tempfile.mkdtemp(prefix="ci-tmux-")
    yield root, machine_tmux
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(machine_tmux, ignore_errors=True)


def ci(command, root, machine_tmux):
    env = dict(os.environ, YKTERM_CI_TEST_COMMAND=command, YKTERM_CI_TMP_ROOT=root, TMUX_TMPDIR=machine_tmux)
    r = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    return r, r.stdout + r.stderr


def tmux_socket_left(name):
    """Shell lines that start a tmux server named `name` and stop it: tmux leaves its socket behind."""
    return (f'tmux -L {name} -f /dev/null new-session -d "sleep 60" && tmux -L {name} kill-server\n')


def test_a_failing_run_stays_red_and_leaves_nothing_in_its_root(dirs):
    root, machine_tmux = dirs
    command = ('mkdir "$TMPDIR/sub" && echo x > "$TMPDIR/sub/file" && echo y > "$TMPDIR/top"\n'
               + tmux_socket_left("ci-test")
               + 'test -S "$TMUX_TMPDIR/tmux-$(id -u)/ci-test" || exit 9\n'
               + "exit 3\n")
    r, out = ci(command, root, machine_tmux)
    assert r.returncode == 3, out
    # Its folder is gone with everything the command put in it, and that was reported.
    assert os.listdir(root) == [], out
    assert os.listdir(machine_tmux) == [], out
    assert "left in the run's TMPDIR:" in out, out
    for left in ("sub/file", "top", f"tmux-{os.getuid()}/ci-test"):
        assert f"\n{left}\n" in out, out
    assert "the tests failed (exit 3)" in out, out


def test_a_passing_run_that_leaves_something_in_the_root_or_tmuxs_folder_fails(dirs):
    root, machine_tmux = dirs
    # A file straight in the root, and a tmux server that ignored the run's TMUX_TMPDIR.
    command = f"touch {root}/stray\n" + f"export TMUX_TMPDIR={machine_tmux}\n" + tmux_socket_left("stray-tmux")
    r, out = ci(command, root, machine_tmux)
    assert r.returncode == 1, out
    assert f"left in {root}:\nstray\n" in out, out
    assert f"left in {machine_tmux}/tmux-{os.getuid()}:\nstray-tmux\n" in out, out
    # The run's own folder is gone; what it did not make is not its to remove.
    assert os.listdir(root) == ["stray"], out


def test_a_clean_passing_run_passes_and_removes_its_folder(dirs):
    root, machine_tmux = dirs
    r, out = ci('echo x > "$TMPDIR/f" && rm "$TMPDIR/f"', root, machine_tmux)
    assert r.returncode == 0, out
    assert (f"leftovers: 0 new entries in {root}, 0 in {machine_tmux}/tmux-{os.getuid()}, 0 in the run's TMPDIR, "
            "0 test processes still running") in out, out
    assert os.listdir(root) == [], out
