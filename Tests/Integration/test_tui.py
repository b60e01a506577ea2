# Over 500 lines on purpose: the tmux harness (used by the other test_tui_*.py) and the OATH flows it drives.
"""The TUI end to end in tmux: `ykterm --virtual`, and `ykterm` on the virtual key served through pcscd.

Codes on screen are checked against pyotp; changes made in the TUI are checked with ykman.
"""

import base64
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time

import pyotp
import pytest

from harness import (YKTERM, ServedKey, descendants, is_running, process_state, run_ykman, run_ykterm,
                     stop_tree, wait_until)

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is missing: run `make deps`")

# The demo accounts' secrets (Sources/VirtualKey/OATHState.swift).
GITHUB = bytes([0x09, 0x30, 0x2A, 0xAA, 0xB8, 0xFD, 0xA8, 0xB6, 0x56, 0xC7,
                0xD0, 0x3E, 0xD3, 0x8E, 0x07, 0x7D, 0xB1, 0xAC, 0x60, 0xD6])
FASTMAIL = bytes([0x29, 0x8D, 0xE7, 0x54, 0xCF, 0x21, 0xE3, 0x1D, 0x99, 0xD0,
                  0x5B, 0x02, 0x8E, 0x83, 0xA6, 0x89, 0x06, 0xC4, 0xD6, 0xC8])


def b32(secret):
    return base64.b32encode(secret).decode().rstrip("=")


def totp(secret, t, period=30, digits=6):
    return pyotp.TOTP(b32(secret), interval=period, digits=digits).at(int(t))


class Tmux:
    """One tmux server of our own, one window running a command; stopped by its server PID.

    Its socket is in a directory of its own (TMUX_TMPDIR, in TMPDIR), removed by close(): tmux leaves its
    socket behind when its server ends, and in /tmp/tmux-UID they would pile up."""

    def __init__(self, command, env, columns=100, rows=30):
        self.socket = "ykterm-test"
        self.dir = tempfile.mkdtemp(prefix="ykterm-tmux-")
        self.server_pid = None
        self.env = dict(env)
        self.env.pop("TMUX", None)
        self.env["TMUX_TMPDIR"] = self.dir
        self.env["TERM"] = "xterm-256color"
        self.env.setdefault("LANG", "C.UTF-8")
        self.env["LC_ALL"] = "C.UTF-8"
        # The shell line ends with a marker, so the tests see the exit status and that the terminal
        # settings were given back (echo and canonical mode on).
        shell = f"trap true INT; {command}; echo EXITED=$?; stty -a | tr ' ' '\\n' | grep -x -e echo -e icanon | tr '\\n' ' '; echo; sleep 60"
        try:
            subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-x", str(columns),
                            "-y", str(rows), "sh", "-c", shell], env=self.env, check=True)
            self.server_pid = int(self.tmux("display-message", "-p", "#{pid}").strip())
        except BaseException:
            self.close()
            raise

    def tmux(self, *args):
        return subprocess.run(["tmux", "-L", self.socket] + list(args), env=self.env, check=True,
                              capture_output=True, text=True).stdout

    def send(self, *keys):
        self.tmux("send-keys", "-t", "0", *keys)

    def type(self, text):
        self.tmux("send-keys", "-t", "0", "-l", text)

    def submit(self, *fields):
        """Types each field of a dialog and presses Enter after each (the last Enter confirms)."""
        for text in fields:
            self.type(text)
            self.send("Enter")

    def answer(self, key):
        """Answers a question on screen as a person does, a moment after it showed (ykterm takes no answer
        from the same input burst as the key that asked)."""
        time.sleep(0.2)  # the person's pause: part of the scenario
        self.send(key)

    def paste(self, text):
        """Pastes `text` as a terminal does (bracketed, when the program asked for it)."""
        self.tmux("set-buffer", "-b", "ykterm-test", "--", text)
        self.tmux("paste-buffer", "-p", "-d", "-b", "ykterm-test", "-t", "0")

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "0")

    def settled(self, accept, timeout, failure):
        """A screen `accept` takes that is also what the pane shows a moment later.

        tmux may show a frame while ykterm is still writing it (the header drawn, the body not yet), so
        one capture that matches is not enough: the same text must still be there on the next capture.
        A pane that never holds still (a countdown) gives the last accepted capture at the deadline."""
        deadline = time.monotonic() + timeout
        text, accepted = "", None
        while time.monotonic() < deadline:
            text = self.screen()
            if not accept(text):
                accepted = None
                time.sleep(0.1)
            elif text == accepted:
                return text
            else:
                accepted = text
                time.sleep(0.05)
        if accepted is not None:
            return accepted
        raise AssertionError(f"{failure} after {timeout} s:\n{text}")

    def wait_for(self, pattern, timeout=15):
        return self.settled(lambda text: re.search(pattern, text), timeout, f"{pattern!r} not on screen")

    def polled(self, accept, timeout, failure, interval):
        """The first capture `accept` takes, with no settling (see settled for when that matters)."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if accept(text):
                return text
            time.sleep(interval)
        raise AssertionError(f"{failure} after {timeout} s:\n{text}")

    def glimpse(self, pattern, timeout=15):
        """The first capture that shows `pattern`, for what shows only for a moment (a touch prompt, a status
        line that goes when the key answers): no settling, as it may be gone by the next capture."""
        return self.polled(lambda text: re.search(pattern, text), timeout, f"{pattern!r} never on screen", 0.02)

    def wait_until(self, check, timeout=15):
        """The first screen `check` accepts, drawn whole (see settled)."""
        return self.settled(check, timeout, "no screen as expected")

    def wait_gone(self, pattern, timeout=15):
        return self.polled(lambda text: not re.search(pattern, text), timeout, f"{pattern!r} still on screen", 0.1)

    def pid_of(self, executable, timeout=10):
        """The PID of a process below the tmux server running `executable` (its argv[0])."""
        def found():
            for pid in descendants(self.server_pid):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv = f.read().split(b"\0")
                except OSError:
                    continue
                if argv and argv[0] == str(executable).encode():
                    return pid
            return None
        return wait_until(found, timeout, f"{executable} running in the tmux pane")

    def close(self):
        # The server, and the shell, ykterm and sleep below it: all gone before the next test starts; then its
        # socket's directory.
        if self.server_pid is not None:
            stop_tree(self.server_pid)
        else:
            subprocess.run(["tmux", "-L", self.socket, "kill-server"], env=self.env, capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def code_of(screen, issuer):
    """The code shown in `issuer`'s row (digits without the group space) and its seconds left."""
    for line in screen.splitlines():
        m = re.match(rf"^..{re.escape(issuer)}\s.*?\s(\d{{3,4}}) (\d{{3,4}})\s.*?(\d+)s\s*$", line)
        if m:
            return m.group(1) + m.group(2), int(m.group(3))
    raise AssertionError(f"no code for {issuer} on screen:\n{screen}")


def stable_code(tmux, issuer, secret, period=30):
    """Reads `issuer`'s code away from a period boundary and checks it against pyotp."""
    while True:
        now = time.time()
        if 1.5 < period - now % period < period - 1.5:
            break
        time.sleep(0.5)  # until the clock is away from a period boundary
    screen = tmux.screen()
    code, left = code_of(screen, issuer)
    assert code == totp(secret, time.time(), period), screen
    return code, left


@pytest.fixture
def virtual_tui(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    t = Tmux(f"{shlex.quote(str(YKTERM))} --virtual", env)
    yield t
    t.close()


def test_virtual_key_codes_match_pyotp_and_count_down(virtual_tui):
    t = virtual_tui
    t.wait_for("GitHub")
    code, left = stable_code(t, "GitHub", GITHUB)
    stable_code(t, "Fastmail", FASTMAIL, period=60)

    def moved():
        try:
            seconds = code_of(t.screen(), "GitHub")[1]
        except AssertionError:  # a frame caught half drawn
            return None
        return (seconds,) if seconds != left else None
    (later,) = wait_until(moved, 5, "GitHub's countdown moving")
    assert later < left or later > 25, "the countdown did not move"
    # Across the next boundary the code changes by itself, to pyotp's next code: the test waits for the next
    # period to begin (and 1.5 s into it), a time on the clock, not an event.
    time.sleep(30 - time.time() % 30 + 1.5)
    new, _ = stable_code(t, "GitHub", GITHUB)
    assert new != code or totp(GITHUB, time.time()) == code
    # Touch and HOTP accounts wait for Enter.
    screen = t.screen()
    assert re.search(r"Google .*touch · Enter", screen), screen
    assert re.search(r"Example Bank .*HOTP · Enter", screen), screen


def test_filter_help_tabs_and_quit_restore_the_terminal(virtual_tui):
    t = virtual_tui
    t.wait_for("GitHub")
    t.send("/")
    t.type("fast")
    screen = t.wait_gone("GitHub")
    assert "Fastmail" in screen and "Filter: fast" in screen
    # In the filter, q and digits are text.
    t.type("q2")
    screen = t.wait_for("Filter: fastq2")
    assert "No account matches" in screen
    t.send("Escape")
    t.wait_for("GitHub")
    t.send("?")
    t.wait_for("any other key closes this help")
    t.send("x")
    t.wait_gone("any other key closes this help")
    t.send("3")
    t.wait_for("AAGUID")
    t.send("Tab")
    t.wait_for("APDU console")
    t.send("Tab")
    t.wait_for("PIV application")
    t.send("Tab")
    t.wait_for("SSH keys on the key")
    t.send("Tab")
    t.wait_for("OpenPGP application")
    t.send("Tab")
    t.wait_for("GitHub")
    t.send("q")
    t.wait_for("EXITED=0")
    screen = t.wait_for(r"(?m)^icanon echo", timeout=5)


def test_a_paste_never_acts_as_key_presses(virtual_tui):
    t = virtual_tui
    t.wait_for("GitHub")
    before = [line[:40] for line in t.screen().splitlines()[1:8]]
    # On the list, "study" as keys would delete the selected account (d opens the dialog, y confirms it).
    t.paste("study")
    t.wait_for("Paste ignored")
    # Nothing to wait for: a moment in which a key taken from the paste would have shown.
    time.sleep(0.5)
    screen = t.screen()
    assert "Delete" not in screen and "Add account" not in screen
    assert [line[:40] for line in screen.splitlines()[1:8]] == before
    # Not even typed in one burst: the y that came with the d answers nothing; Enter is No.
    t.type("dy")
    t.wait_for(r"Delete Corp VPN:alice\?")
    # A moment in which the y, had it been taken as the answer, would have shown.
    time.sleep(0.5)
    assert "Deleted" not in t.screen()
    t.answer("Enter")
    t.wait_gone(r"Delete Corp VPN")
    assert "Corp VPN" in t.screen()
    t.send("q")
    t.wait_for("EXITED=0")


def test_a_pasted_uri_opens_add_filled_in_and_one_enter_adds(virtual_tui):
    t = virtual_tui
    t.wait_for("GitHub")
    t.paste("otpauth://totp/ACME:bob@example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=ACME&digits=8&period=60\n")
    # The whole dialog, not a frame caught half drawn.
    screen = t.wait_for(r"Add account(.|\n)*Period \(s\)")
    assert re.search(r"Issuer\s+ACME", screen) and re.search(r"Name\s+bob@example.com", screen), screen
    assert re.search(r"Digits\s+< 8 >", screen) and re.search(r"Period \(s\)\s+60", screen), screen
    assert "★" not in screen  # nothing was pinned (p)
    t.answer("Enter")
    t.wait_for("Added 60/ACME:bob@example.com")
    screen = t.wait_for(r"ACME\s+bob@example.com\s+\d{4} \d{4}")
    code = re.search(r"ACME\s+bob@example.com\s+(\d{4}) (\d{4})", screen)
    now = time.time()
    expected = {pyotp.TOTP("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", interval=60, digits=8).at(int(t0)) for t0 in (now - 2, now)}
    assert code.group(1) + code.group(2) in expected
    t.send("q")
    t.wait_for("EXITED=0")


def test_help_fits_and_scrolls_on_a_small_terminal(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    t = Tmux(f"{shlex.quote(str(YKTERM))} --virtual", env, columns=60, rows=15)
    try:
        t.wait_for("GitHub")
        t.send("?")
        screen = t.wait_for("OATH tab")
        seen = screen
        for _ in range(25):
            t.send("Down")
            # Paces the presses so that captures fall between them (the last screens hold still at the end);
            # what is checked is the lines seen in all of them.
            time.sleep(0.05)
            seen += t.screen()
        # Every binding was reachable, the OATH-only ones and the general ones, and nothing ran into the border.
        for text in ("filter accounts", "set, change or remove the OATH", "read the accounts again",
                     "quit from anywhere", "Everywhere"):
            assert text in seen, seen
        for line in seen.splitlines():
            if line.startswith("│"):
                assert line.rstrip().endswith("│"), line
        t.send("Escape")
        t.wait_gone("Everywhere")
        # On the APDU tab, its own keys: Enter sends there.
        t.send("4")
        t.wait_for("APDU console")
        t.send("Escape")
        t.send("?")
        screen = t.wait_for("APDU tab")
        assert "send the command" in screen and "copy the code" not in screen, screen
        t.send("x")
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()


def test_the_demo_key_keeps_its_pins_across_runs(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    pins = tmp_path / "config" / "ykterm" / "pins.json"
    for run in range(3):
        t = Tmux(f"{shlex.quote(str(YKTERM))} --virtual", env)
        try:
            screen = t.wait_for("GitHub")
            if run == 0:
                assert "★" not in screen
                t.send("G")  # the last account, Steam, then pin it: pinned accounts come first
                t.send("p")
                t.wait_for(r"(?m)^★ Steam")
            else:
                assert re.search(r"(?m)^★ Steam", screen), screen
            t.send("q")
            t.wait_for("EXITED=0")
        finally:
            t.close()
    assert len(json.loads(pins.read_text())) == 1, pins.read_text()


def test_sigterm_in_the_background_ends_it_and_leaves_the_terminal_cooked(tmp_path):
    """Stopped with Ctrl-Z, put in the background, then sent SIGTERM: it ends and the terminal is not raw."""
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"), ENV="")
    # dash: job control, and no line editor that would put the terminal modes back by itself.
    t = Tmux("sh -i", env)
    marks = itertools.count(1)

    def shell(line):
        """Runs `line` in the pane's shell on a cleared screen and returns the screen once it has finished."""
        mark = f"DONE-{next(marks)}"
        t.type(f"clear; {line}; echo {mark}")
        t.send("Enter")
        return t.wait_for(rf"(?m)^{mark}\s*$", timeout=20)

    def no_job_left():
        # The first `jobs` reports a job that has ended since the shell last looked; the second lists what is left.
        screen = shell("jobs; jobs")
        assert not re.search(r"Stopped|Running", screen), screen

    try:
        t.type(f"set -m; {shlex.quote(str(YKTERM))} --virtual")
        t.send("Enter")
        t.wait_for("GitHub")
        pid = t.pid_of(YKTERM)
        t.send("C-z")
        t.wait_for("Stopped")
        # In the background it stops again at once (its output to the terminal: SIGTTOU), as a TUI does; dash
        # learns of the stop when it looks, so `jobs` until it lists the job as stopped.
        t.type("bg")
        t.send("Enter")
        wait_until(lambda: "Stopped" in shell("jobs"), 10, "the job listed as stopped again after bg",
                   interval=0.2)
        # dash's kill sends SIGTERM alone; the job gets it when it is continued.
        t.type("kill %1; kill -CONT %1")
        t.send("Enter")
        wait_until(lambda: not is_running(pid), 20, "ykterm ended by SIGTERM in the background")
        no_job_left()
        screen = shell("stty -a | tr ' ' '\\n' | grep -x -e echo -e icanon | tr '\\n' ' '; echo STTY")
        assert re.search(r"(?m)^icanon echo STTY", screen), screen
        # Started with &, it waits stopped for the foreground and never draws over the shell; SIGTERM ends it.
        t.type(f"clear; {shlex.quote(str(YKTERM))} --virtual &")
        t.send("Enter")
        pid = t.pid_of(YKTERM)
        wait_until(lambda: process_state(pid) == "T", 10, "ykterm started with & stopped, waiting for the foreground")
        screen = shell("jobs")
        assert "Stopped" in screen and "GitHub" not in screen, screen
        t.type("kill %1; kill -CONT %1")
        t.send("Enter")
        wait_until(lambda: not is_running(pid), 20, "ykterm started with & ended by SIGTERM")
        no_job_left()
        screen = shell("stty -a | tr ' ' '\\n' | grep -x -e echo -e icanon | tr '\\n' ' '; echo STTY")
        assert re.search(r"(?m)^icanon echo STTY", screen) and "GitHub" not in screen, screen
    finally:
        t.close()


def test_ctrl_c_quits_and_restores(virtual_tui):
    t = virtual_tui
    t.wait_for("GitHub")
    t.send("a")
    t.wait_for("Add account")
    t.send("C-c")
    t.wait_for("EXITED=")
    t.wait_for(r"(?m)^icanon echo", timeout=5)


def test_hotp_on_enter_and_pins(virtual_tui):
    t = virtual_tui
    t.wait_for("GitHub")
    t.send("/")
    t.type("bank")
    t.send("Enter")
    t.wait_gone("GitHub")
    t.send("Enter")
    # RFC 4226 HOTP with counter 0 for the demo secret, computed by pyotp.
    secret = bytes([0xBD, 0x11, 0x90, 0x79, 0xB1, 0x5E, 0xE4, 0x34, 0xE7, 0x9C,
                    0x06, 0xF2, 0xDC, 0xF9, 0xA1, 0x2D, 0xBF, 0xDA, 0x52, 0x83])
    expected = pyotp.HOTP(b32(secret)).at(0)
    t.wait_for(f"{expected[:3]} {expected[3:]}")
    t.wait_for(r"Copied the code of Example Bank:alice \(OSC 52")


def served_tui(pcsc, tmp_path, key):
    env = pcsc.env(XDG_CONFIG_HOME=str(tmp_path / "config"))
    return Tmux(f"{shlex.quote(str(YKTERM))} --reader {shlex.quote(key.reader)}", env)


def ykman_accounts(key, env):
    return run_ykman(key.reader, "oath", "accounts", "list", env=env).stdout.splitlines()


def test_served_key_add_rename_delete_seen_by_ykman(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=("--demo-accounts",)).start()
    t = served_tui(pcsc, tmp_path, key)
    try:
        t.wait_for("GitHub")
        stable_code(t, "GitHub", GITHUB)
        # Add from a URI.
        secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
        t.send("a")
        t.wait_for("Add account")
        t.type(f"otpauth://totp/Example:carol@example.com?secret={secret}&issuer=Example")
        # The URI fills the fields for review; one Enter adds.
        t.wait_for(r"Name\s+carol@example.com")
        t.send("Enter")
        t.wait_for("Added Example:carol@example.com")
        assert "Example:carol@example.com" in ykman_accounts(key, env)
        code, _ = stable_code(t, "Example", base64.b32decode(secret))
        # Rename it.
        t.send("/")
        t.type("carol")
        t.send("Enter")
        t.send("r")
        t.wait_for("Rename Example:carol@example.com")
        t.send("C-u")
        t.type("Example:dave@example.com")
        t.send("Enter")
        t.wait_for("Renamed Example:carol@example.com to Example:dave@example.com")
        accounts = ykman_accounts(key, env)
        assert "Example:dave@example.com" in accounts and "Example:carol@example.com" not in accounts
        # Delete it, after saying no once.
        t.send("Escape")
        t.send("/")
        t.type("dave")
        t.send("Enter")
        t.send("d")
        t.wait_for(r"Delete Example:dave@example.com\?")
        t.send("n")
        t.wait_gone(r"Delete Example:dave")
        assert "Example:dave@example.com" in ykman_accounts(key, env)
        t.send("d")
        t.wait_for(r"Delete Example:dave@example.com\?")
        t.answer("y")
        t.wait_for("Deleted Example:dave@example.com")
        assert "Example:dave@example.com" not in ykman_accounts(key, env)
    finally:
        t.close()
        key.stop()


def test_served_key_leaving_and_coming_back(pcsc, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=("--demo-accounts",)).start()
    t = served_tui(pcsc, tmp_path, key)
    try:
        t.wait_for("GitHub")
        key.stop()
        screen = t.wait_for("No key", timeout=20)
        assert "GitHub" not in screen
        key.start()
        # No keypress: the monitor sees the key and the codes come back.
        t.wait_for("GitHub", timeout=20)
        stable_code(t, "GitHub", GITHUB)
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()
        key.stop()


def test_password_protected_key_unlocks_in_the_tui(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=("--demo-accounts",)).start()
    run_ykman(key.reader, "oath", "access", "change", "-n", "s3cret-pw", env=env)
    t = served_tui(pcsc, tmp_path, key)
    try:
        t.wait_for("OATH password")
        t.type("wrong")
        t.send("Enter")
        t.send("Enter")
        t.wait_for("Wrong password")
        screen = t.screen()
        assert "wrong" not in screen.replace("Wrong", "")
        t.type("s3cret-pw")
        t.send("Enter")
        t.send("Enter")
        t.wait_for("GitHub")
        stable_code(t, "GitHub", GITHUB)
        # Nothing was remembered: the config directory has no remembered key.
        assert not (tmp_path / "config" / "ykterm" / "oath-keys.json").exists()
    finally:
        t.close()
        key.stop()


def ykterm_pid(t):
    """The ykterm process in the tmux window (a child of the window's shell)."""
    shell = int(t.tmux("display-message", "-p", "-t", "0", "#{pane_pid}").strip())
    out = subprocess.run(["pgrep", "-P", str(shell), "-x", "ykterm"], capture_output=True, text=True).stdout.split()
    assert len(out) == 1, out
    return int(out[0])


def test_sigterm_restores_the_terminal(virtual_tui):
    t = virtual_tui
    t.wait_for("GitHub")
    os.kill(ykterm_pid(t), 15)
    t.wait_for(r"EXITED=\d+")
    t.wait_for(r"(?m)^icanon echo", timeout=5)


def test_resizing_down_to_narrow_and_back_leaves_no_garbage(virtual_tui):
    t = virtual_tui
    t.wait_for("GitHub")
    for columns, rows in ((80, 24), (50, 16), (120, 40)):
        t.tmux("resize-window", "-t", "0", "-x", str(columns), "-y", str(rows))
        # The tab bar on top, one line per account at most, nothing wider than the window, once the frame for
        # the new size is drawn (a capture right after the resize can catch the old one being cut).
        t.wait_until(lambda screen: bool(screen.splitlines()) and "OATH" in screen.splitlines()[0]
                     and all(len(line) <= columns for line in screen.splitlines()) and screen.count("GitHub") == 1)
    code, _ = code_of(t.screen(), "GitHub")
    assert code == totp(GITHUB, time.time()) or code == totp(GITHUB, time.time() - 1), t.screen()


def test_no_color_and_a_non_utf8_locale_give_plain_ascii(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    t = Tmux(f"env LC_ALL=C LANG=C NO_COLOR=1 TERM=screen {shlex.quote(str(YKTERM))} --virtual", env)
    try:
        screen = t.wait_for("GitHub")
        assert screen.isascii(), screen
        # No colour at all: tmux shows the window's cells with their attributes when asked.
        styled = t.tmux("capture-pane", "-p", "-e", "-t", "0")
        assert not re.search(r"\x1b\[[0-9;]*3[0-7]m|\x1b\[38;", styled), styled
        code, _ = code_of(screen, "GitHub")
        assert code in (totp(GITHUB, time.time()), totp(GITHUB, time.time() - 1))
        # The string tables' symbols have ASCII stand-ins (not "?"): the HOTP row, the hints, every tab.
        assert re.search(r"HOTP \| Enter", screen), screen
        for key, shown in (("a", "Add account"), ("Escape", "GitHub"), ("?", "any other key closes"), ("x", "GitHub"),
                           ("2", "OTP"), ("3", "AAGUID"), ("4", "APDU console")):
            t.send(key)
            screen = t.wait_for(shown)
            # A "?" standing in for a symbol sits between words ("copy ? filter"); the help key is "? help".
            assert screen.isascii() and not re.search(r"\w \? \w|\w\?\w", screen.replace("? help", "")), screen
        t.send("Escape")
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()


def test_a_missing_locale_still_draws_in_utf8_with_the_language_it_names(tmp_path):
    """Over SSH a client's LANG often names a locale the host lacks: the screen still draws in UTF-8 (through
    C.UTF-8) and speaks the language the variable names, installed or not."""
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    missing = "de_DE.UTF-8"
    installed = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.lower().split()
    for lang, extra in ((missing, ""), ("C.UTF-8", f"LC_MESSAGES={missing}")):
        t = Tmux(f"env -u LC_ALL LANG={lang} {extra} {shlex.quote(str(YKTERM))} --virtual", env)
        try:
            screen = t.wait_for("GitHub")
            assert "HOTP · Enter" in screen, screen
            t.send("a")
            # The dialog's last field, so the frame read is the whole dialog, not one half drawn.
            screen = t.wait_for("Berührung verlangen")
            assert "Konto hinzufügen" in screen and "┌" in screen, screen
            t.send("Escape")
            t.send("q")
            t.wait_for("EXITED=0")
        finally:
            t.close()
    if "de_de.utf8" in installed:
        pytest.skip("de_DE.UTF-8 is installed here: the missing-locale path was not exercised")


def test_names_from_outside_cannot_drive_the_terminal(pcsc, env, tmp_path):
    """An account someone else named: an OSC 52 clipboard write, a clear-screen and a right-to-left override in
    its name show as escapes in the TUI and in `oath code`, reach no terminal, and JSON keeps the name exact."""
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=("--demo-accounts",)).start()
    name = "Evil:\x1b]52;c;aGVsbG8=\x07x\x1b[2J\u202emoc.evil"
    run_ykman(key.reader, "oath", "accounts", "add", "--force", name, "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", env=env)
    ykenv = dict(env, YKTERM_READER=key.reader)
    code = run_ykterm("oath", "code", env=ykenv).stdout
    assert "\x1b" not in code and "\u202e" not in code and "\x07" not in code, repr(code)
    assert "Evil:\\x1B]52;c;aGVsbG8=\\x07x\\x1B[2J\\u{202E}moc.evil" in code, code
    listed = json.loads(run_ykterm("oath", "code", "--json", env=ykenv).stdout)
    assert name in [e["id"] for e in listed]
    raw = run_ykterm("oath", "code", "--json", env=ykenv).stdout
    assert "\x1b" not in raw and "\u202e" not in raw and "\\u202e" in raw
    t = served_tui(pcsc, tmp_path, key)
    try:
        # Let tmux take OSC 52 from the program, so a write that got through would leave a buffer.
        t.tmux("set-option", "-g", "set-clipboard", "on")
        t.wait_for("GitHub")
        screen = t.wait_for(r"Evil\s+\\x1B\]52;c;aGVsbG8=\\x07x\\x1B\[2J\\u\{202E\}")
        # The screen was not cleared: the other accounts are still there after a redraw or two (the countdown
        # changes every second, and with it the screen).
        for _ in range(2):
            drawn = t.screen()
            wait_until(lambda: t.screen() != drawn, 5, "the screen drawn again")
        screen = t.screen()
        assert "GitHub" in screen and "Fastmail" in screen, screen
        styled = t.tmux("capture-pane", "-p", "-e", "-t", "0")
        assert "\u202e" not in styled and "]52;" not in styled.replace("\\x1B]52;", ""), repr(styled)
        buffers = subprocess.run(["tmux", "-L", t.socket, "list-buffers"], env=t.env, capture_output=True, text=True)
        assert buffers.stdout.strip() == "", buffers.stdout
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()
        key.stop()
