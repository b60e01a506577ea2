"""ykterm from a remote session (issue 37): a pcscd whose polkit policy refuses the session.

pcscd built with polkit takes a connection from a user polkit does not allow and closes it at once; pcsc-lite's
client then reports SCARD_W_SECURITY_VIOLATION (0x8010006A). A stand-in socket that accepts and closes every
connection gives that answer here, with no polkit needed: the command line, `doctor` and the TUI must say that
pcscd refused the session (polkit), and give the rule that lets the user in, not that pcscd is not running."""

import json
import os
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from harness import YKTERM, clean_environ
from test_tui import Tmux


class RefusingPCSCD:
    """A UNIX socket that accepts every connection and closes it at once, as polkit-built pcscd does for a
    session polkit does not allow. Its directory is removed by close()."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="ykterm-refusing-"))
        self.path = self.dir / "pcscd.comm"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(self.path))
        self.listener.listen(64)
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self):
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(timeout=5)
        self.path.unlink(missing_ok=True)
        self.dir.rmdir()


@pytest.fixture
def refusing(tmp_path):
    daemon = RefusingPCSCD()
    env = clean_environ(tmp_path)
    env["PCSCLITE_CSOCK_NAME"] = str(daemon.path)
    yield daemon, env
    daemon.close()


def run(env, *args):
    return subprocess.run([str(YKTERM), *args], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def names_polkit_and_the_rule(text, user="root"):
    return ("polkit" in text and "org.debian.pcsc-lite.access_pcsc" in text
            and "org.debian.pcsc-lite.access_card" in text and f'subject.user == "{user}"' in text
            and "/etc/polkit-1/rules.d/" in text)


@pytest.mark.skipif(os.geteuid() != 0, reason="the rule is checked for root's name")
def test_the_command_line_says_pcscd_refused_the_session_and_gives_the_rule(refusing):
    daemon, env = refusing
    r = run(env, "oath", "code")
    assert r.returncode == 3, r
    assert names_polkit_and_the_rule(r.stderr), r.stderr
    assert "not running" not in r.stderr and "0x8010006A" not in r.stderr, r.stderr
    assert daemon.accepted >= 1


@pytest.mark.skipif(os.geteuid() != 0, reason="the rule is checked for root's name")
def test_doctor_says_pcscd_refused_the_session_and_gives_the_rule(refusing):
    _, env = refusing
    r = run(env, "doctor")
    assert r.returncode == 1, r
    assert r.stdout.startswith("fail  pcscd refused this session"), r.stdout
    assert names_polkit_and_the_rule(r.stdout), r.stdout
    assert "installed but not running" not in r.stdout, r.stdout


def test_monitor_reports_the_refusal_as_its_own_event(refusing):
    _, env = refusing
    p = subprocess.Popen([str(YKTERM), "monitor", "--json"], env=env, stdout=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL)
    try:
        first = json.loads(p.stdout.readline())
    finally:
        p.kill()
        p.wait(timeout=10)
        p.stdout.close()
    assert first == {"event": "pcscd-refused"}, first


def test_the_tui_says_pcscd_refuses_the_session(refusing):
    _, env = refusing
    t = Tmux(f"{YKTERM}", env)
    try:
        screen = t.wait_for(r"pcscd refuses this session \(polkit\)")
        assert "ykterm doctor" in screen and "not running" not in screen, screen
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()
