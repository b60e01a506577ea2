"""ykterm from a remote session (issue 37).

A pcscd whose polkit policy refuses the session: pcscd built with polkit takes a connection from a user polkit does not allow and closes it at once; pcsc-lite's
client then reports SCARD_W_SECURITY_VIOLATION (0x8010006A). A stand-in socket that accepts and closes every
connection gives that answer here, with no polkit needed: the command line, `doctor` and the TUI must say that
pcscd refused the session (polkit), and give the rule that lets the user in, not that pcscd is not running.

`ykterm remote`: an sshd of the test's own on 127.0.0.1 (own config, host key and authorized key), in a mount
namespace whose /run is empty, so the "server" has no pcscd; ykterm there reaches the virtual key served to the
test's pcscd only through the socket `ykterm remote` forwards. Its codes are checked with pyotp, and the private
directories on both sides are gone afterwards."""

import json
import os
import select
import shlex
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pyotp
import pytest

from harness import YKTERM, clean_environ, run_ykterm, stop_pid
from test_tui import Tmux


class StandInPCSCD:
    """A UNIX socket where pcscd's would be, that hands each connection to `answer` (which may write something)
    and closes it. Its directory is removed by close()."""

    def __init__(self, answer=lambda conn: None):
        self.answer = answer
        self.dir = Path(tempfile.mkdtemp(prefix="ykterm-stand-in-"))
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
            with conn:
                self.answer(conn)

    def close(self):
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(timeout=5)
        self.path.unlink(missing_ok=True)
        self.dir.rmdir()


def close_unread(conn):
    """pcscd refusing a session: it closes the connection without reading the client's first message (the version
    exchange, 20 bytes, which the client may write in two parts), so the client's read fails with ECONNRESET,
    which pcsc-lite reports as SCARD_W_SECURITY_VIOLATION. Closed before the whole message came, the client's
    second write would fail instead, which pcsc-lite reports as no pcscd at all."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        select.select([conn], [], [], 0.05)
        try:
            if len(conn.recv(64, socket.MSG_PEEK | socket.MSG_DONTWAIT)) >= 20:
                return
        except BlockingIOError:
            pass
        except OSError:
            return


@pytest.fixture
def refusing(tmp_path):
    # As polkit-built pcscd does for a session polkit does not allow.
    daemon = StandInPCSCD(close_unread)
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


# --- ykterm remote --------------------------------------------------------------------------------------------

SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SSHServer:
    """sshd on 127.0.0.1 with a config, host key and authorized key of its own, in a mount namespace whose /run is
    a fresh tmpfs (no pcscd socket there). Sessions get TMPDIR and XDG_*_HOME in `remote` (SetEnv). Stopped by its
    PID."""

    def __init__(self, base):
        self.dir = base / "sshd"
        self.dir.mkdir(mode=0o700)
        self.remote = self.dir / "remote"
        for d in ("config", "state"):
            (self.remote / d).mkdir(parents=True, mode=0o700)
        # The server's TMPDIR, where the forwarded socket's directory goes: short, as a socket's path must be.
        self.tmp = Path(tempfile.mkdtemp(prefix="ykr-", dir="/tmp"))
        for name in ("host", "id"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ykterm-test", "-f",
                            str(self.dir / name)], check=True)
        shutil.copy(self.dir / "id.pub", self.dir / "authorized_keys")
        self.port = free_port()
        config = self.dir / "sshd_config"
        config.write_text("\n".join([
            "ListenAddress 127.0.0.1", f"Port {self.port}", f"HostKey {self.dir / 'host'}", "PidFile none",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}", "StrictModes no", "UsePAM no",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password", "AllowStreamLocalForwarding yes", "StreamLocalBindUnlink yes",
            "X11Forwarding no", "PrintMotd no",
            f"SetEnv TMPDIR={self.tmp} XDG_CONFIG_HOME={self.remote / 'config'} "
            f"XDG_STATE_HOME={self.remote / 'state'} LANG=C.UTF-8",
        ]) + "\n")
        self.log = open(self.dir / "sshd.log", "w")
        script = f"mount -t tmpfs -o mode=755 tmpfs /run && mkdir -m 755 /run/sshd && exec /usr/sbin/sshd -D -e -f {config}"
        self.proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    shutil.rmtree(self.tmp, ignore_errors=True)
                    raise RuntimeError("sshd did not start: " + (self.dir / "sshd.log").read_text())
                time.sleep(0.1)

    def options(self):
        return ["-F", "none", "-i", str(self.dir / "id"), "-o", "IdentitiesOnly=yes",
                "-o", f"UserKnownHostsFile={self.dir / 'known_hosts'}", "-o", "StrictHostKeyChecking=accept-new",
                "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-p", str(self.port)]

    def leftovers(self):
        return sorted(p.name for p in self.tmp.iterdir())

    def stop(self):
        stop_pid(self.proc)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def remote_unusable():
    if os.geteuid() != 0:
        return "sshd's privilege separation and the mount namespace need root"
    for tool in ("/usr/sbin/sshd", "ssh", "ssh-keygen", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (make test installs openssh-server)"
    return None


@pytest.fixture
def sshd(tmp_path):
    reason = remote_unusable()
    if reason:
        pytest.skip(reason)
    server = SSHServer(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def local_tmp():
    """This side's TMPDIR for `ykterm remote` (where its control socket's directory goes): short, in /tmp."""
    d = Path(tempfile.mkdtemp(prefix="ykl-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def remote(sshd, env, *command, remote_command=YKTERM, local_tmp=None):
    e = dict(env)
    if local_tmp is not None:
        e["TMPDIR"] = str(local_tmp)
    return subprocess.run([str(YKTERM), "remote", "--remote-command", str(remote_command), *sshd.options(),
                           "127.0.0.1", "--", *command], env=e, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_oath_code_on_the_server_gives_the_codes_of_the_key_here(key, env, sshd, local_tmp):
    run_ykterm("oath", "add", "--issuer", "Remote", "--name", "alice", "--secret", "-", env=env,
               input=SECRET + "\n")
    # The server has no pcscd of its own: without the forward, its ykterm finds none.
    direct = subprocess.run(["ssh", *sshd.options(), "127.0.0.1", f"{YKTERM} oath code"], capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert direct.returncode == 3 and "pcscd" in direct.stderr, direct
    r = remote(sshd, env, "oath", "code", "--json", local_tmp=local_tmp)
    assert r.returncode == 0, r
    codes = {c["issuer"] + ":" + c["name"]: c for c in json.loads(r.stdout)}
    alice = codes["Remote:alice"]
    assert alice["code"] == pyotp.TOTP(SECRET).at(alice["valid_from"]), alice
    assert "FIDO2 stays on this machine" in r.stderr and "127.0.0.1" in r.stderr, r.stderr
    # The server's directory for the socket, and this side's for the SSH connection, are gone.
    assert sshd.leftovers() == [], sshd.leftovers()
    assert list(local_tmp.iterdir()) == [], list(local_tmp.iterdir())


def ssh_whose_master_exits_late(directory):
    """A directory with an ssh that returns from -O exit with the control socket's name still there. ssh -O exit
    returns once the control master has agreed to exit, and the master removes its socket as it exits, which under
    load comes after the caller has gone on: this ssh answers that way every time."""
    directory.mkdir()
    (directory / "ssh").write_text(f"""#!/bin/sh
{shlex.quote(shutil.which("ssh"))} "$@"
status=$?
case " $* " in
*" -O exit "*)
    for word in "$@"; do
        case $word in ControlPath=*) path=${{word#ControlPath=}}; [ -e "$path" ] || : > "$path" ;; esac
    done ;;
esac
exit $status
""")
    (directory / "ssh").chmod(0o755)
    return directory


@pytest.mark.parametrize("master", ["exits at once", "exits late"])
def test_a_server_without_ykterm_is_named_and_nothing_is_left(key, env, sshd, local_tmp, tmp_path, master):
    if master == "exits late":
        env = dict(env, PATH=f"{ssh_whose_master_exits_late(tmp_path / 'bin')}:{env['PATH']}")
    r = remote(sshd, env, "oath", "code", remote_command="/nonexistent/ykterm", local_tmp=local_tmp)
    assert r.returncode == 1 and "has no /nonexistent/ykterm" in r.stderr and "--remote-command" in r.stderr, r
    assert sshd.leftovers() == [] and list(local_tmp.iterdir()) == []


def answer_as_protocol_5(conn):
    """The version exchange answered as a pcscd of protocol 5.0 that serves no older client."""
    data = b""
    while len(data) < 20:
        chunk = conn.recv(20 - len(data))
        if not chunk:
            return
        data += chunk
    if struct.unpack("=II", data[:8])[1] == 0x11:
        conn.sendall(struct.pack("=iiI", 5, 0, 0x8010001E))  # SCARD_E_SERVICE_STOPPED


def test_a_pcscd_here_that_does_not_serve_the_servers_client_is_named(sshd, tmp_path, local_tmp):
    daemon = StandInPCSCD(answer_as_protocol_5)
    try:
        env = clean_environ(tmp_path)
        env["PCSCLITE_CSOCK_NAME"] = str(daemon.path)
        r = remote(sshd, env, "oath", "code", local_tmp=local_tmp)
    finally:
        daemon.close()
    assert r.returncode == 1, r
    assert "speaks protocol 4." in r.stderr and "(protocol 5.0) does not serve" in r.stderr, r.stderr
    assert sshd.leftovers() == [] and list(local_tmp.iterdir()) == []


def test_the_tui_on_the_server_shows_the_key_here(key, env, sshd, local_tmp):
    run_ykterm("oath", "add", "--issuer", "Remote", "--name", "bob", "--secret", "-", env=env, input=SECRET + "\n")
    e = dict(env, TMPDIR=str(local_tmp))
    words = [str(YKTERM), "remote", "--remote-command", str(YKTERM), *sshd.options(), "127.0.0.1"]
    t = Tmux(" ".join(shlex.quote(w) for w in words), e)
    try:
        screen = t.wait_for(r"Remote +bob +\d{3} \d{3}", timeout=30)
        code = pyotp.TOTP(SECRET)
        now = time.time()
        shown = {code.at(now - 30), code.at(now), code.at(now + 30)}
        assert any(c[:3] + " " + c[3:] in screen or c in screen for c in shown), screen
        t.send("q")
        t.wait_for("EXITED=0", timeout=30)
    finally:
        t.close()
    assert sshd.leftovers() == [] and list(local_tmp.iterdir()) == []


# --- Touch alerts ---------------------------------------------------------------------------------------------

OSC777 = "\x1b]777;notify;ykterm: touch your key;Touch your key"


def piped(t, path):
    """What the pane's program writes from now on goes to `path` too, as written (escapes included)."""
    t.tmux("pipe-pane", "-O", "-t", "0", f"cat >> {shlex.quote(str(path))}")


def bell_flag(t):
    return t.tmux("display-message", "-p", "-t", "0", "#{window_bell_flag}").strip() == "1"


def wait_for_output(path, text, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_bytes().decode(errors="replace"):
            return path.read_bytes().decode(errors="replace")
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not written: {path.read_bytes() if path.exists() else b''!r}")


def test_the_tui_rings_and_notifies_when_a_touch_account_waits(tmp_path):
    env = clean_environ(tmp_path)
    t = Tmux(f"{shlex.quote(str(YKTERM))} --virtual", env)
    out = tmp_path / "pane.out"
    try:
        t.wait_for("GitHub")
        piped(t, out)
        assert not bell_flag(t)
        t.send("/")
        t.type("Google")
        t.send("Enter")
        t.send("Enter")
        # The status line says which key and what for; the bell rings and the notification goes out once.
        # (Shown while the virtual key waits its half second for the touch.)
        t.glimpse(r"Touch your key YubiKey 5 NFC 28123456: OATH code for Google:alice@example\.com")
        written = wait_for_output(out, OSC777 + " YubiKey 5 NFC 28123456: OATH code for Google")
        assert "\x07" in written and "\x1b]9;Touch your key YubiKey 5 NFC 28123456" in written, written
        assert bell_flag(t)
        # Touched (the virtual key's touch comes by itself): the line goes.
        t.wait_for("Copied the code of Google")
        t.send("q")
        t.wait_for("EXITED=0")
        assert out.read_text(errors="replace").count("]777;") == 1
    finally:
        t.close()


def test_the_command_line_rings_and_notifies_on_a_terminal_and_config_can_turn_it_off(tmp_path):
    env = clean_environ(tmp_path)
    # ykterm starts once the pane's output is piped (`ready`), so that the file has all it wrote.
    ready = tmp_path / "piped"
    command = (f"while [ ! -e {shlex.quote(str(ready))} ]; do sleep 0.05; done; "
               f"{shlex.quote(str(YKTERM))} oath code Google --virtual")
    t = Tmux(command, env)
    out = tmp_path / "pane.out"
    try:
        piped(t, out)
        ready.touch()
        written = wait_for_output(out, OSC777 + " Virtual Key: ykterm oath code")
        assert "\x07" in written and "\x1b]9;Touch your key Virtual Key: ykterm oath code\x1b\\" in written, written
        t.wait_for("EXITED=0")
        assert bell_flag(t)
    finally:
        t.close()
    # [notify] touch = "none": the words stay, the bell and the notification go.
    config = tmp_path / ".config" / "ykterm"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[notify]\ntouch = "none"\n')
    ready.unlink()
    t = Tmux(command, env)
    quiet = tmp_path / "quiet.out"
    try:
        piped(t, quiet)
        ready.touch()
        t.wait_for("EXITED=0")
        written = wait_for_output(quiet, "Touch your key Virtual Key: ykterm oath code")
        assert "\x07" not in written and "]777;" not in written and "]9;" not in written, written
        assert not bell_flag(t)
    finally:
        t.close()
