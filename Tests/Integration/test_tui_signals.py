"""The TUI and signals, end to end in tmux: Ctrl-Z and `fg` (the loop gives the terminal back and takes it again,
drawing nothing in between), and a crash (the terminal restored first, then a report on standard error with the
signal, the thread and what was written to standard error while the screen was up)."""

import os
import re
import shlex
import signal
import time

from harness import YKTERM
from test_tui import Tmux, pytestmark  # noqa: F401 (pytestmark: skipped without tmux)


def start(tmp_path, prefix=""):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"), ENV="")
    t = Tmux(f"{prefix}{shlex.quote(str(YKTERM))} --virtual", env)
    t.wait_for("GitHub")
    return t


def test_ctrl_z_gives_the_terminal_back_and_fg_draws_the_frame_again(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"), ENV="")
    t = Tmux("sh -i", env)
    try:
        t.type(f"set -m; {shlex.quote(str(YKTERM))} --virtual")
        t.send("Enter")
        t.wait_for("GitHub")
        t.send("C-z")
        t.wait_for("Stopped")
        # Stopped: the shell's screen and modes, not the TUI's.
        t.type("stty -a | tr ' ' '\\n' | grep -x -e echo -e icanon | tr '\\n' ' '; echo STTY")
        t.send("Enter")
        screen = t.wait_for(r"(?m)^\S*icanon \S*echo STTY")
        assert re.search(r"(?m)^icanon echo STTY", screen) and "GitHub" not in screen, screen
        t.type("fg")
        t.send("Enter")
        # Back in the foreground: the whole frame again, codes counting down.
        screen = t.wait_for(r"GitHub .*\d{3} \d{3}")
        assert "1 OATH" in screen and "icanon" not in screen, screen
        t.send("q")
        t.wait_gone("1 OATH")
        t.type("echo BACK=$?")
        t.send("Enter")
        t.wait_for("BACK=0")
    finally:
        t.close()


def test_a_fatal_signal_restores_the_terminal_and_reports_on_stderr(tmp_path):
    # No core file: the report is what a user sees.
    t = start(tmp_path, prefix="ulimit -c 0; ")
    try:
        pid = t.pid_of(YKTERM)
        # What a runtime or a C library writes before it aborts goes to standard error while the screen is up:
        # it must not be lost with the alternate screen.
        with open(f"/proc/{pid}/fd/2", "w") as stderr:
            stderr.write("last words before the abort\n")
        os.kill(pid, signal.SIGABRT)
        screen = t.wait_for(r"EXITED=\d+")
        assert "EXITED=134" in screen, screen
        assert re.search(rf"ykterm: fatal signal SIGABRT \(6\) in thread {pid}\b", screen), screen
        assert "last words before the abort" in screen, screen
        # The report comes after the TUI's frame is gone, and the terminal is cooked again.
        assert "1 OATH" not in screen, screen
        t.wait_for(r"(?m)^icanon echo", timeout=5)
    finally:
        t.close()


def test_stderr_written_while_the_screen_is_up_shows_after_quitting(tmp_path):
    t = start(tmp_path)
    try:
        pid = t.pid_of(YKTERM)
        with open(f"/proc/{pid}/fd/2", "w") as stderr:
            stderr.write("a warning during the session\n")
        # It does not appear over the frame.
        time.sleep(0.5)  # a moment in which a write straight to the terminal would have shown
        assert "a warning during the session" not in t.screen()
        t.send("q")
        screen = t.wait_for("EXITED=0")
        assert "a warning during the session" in screen, screen
    finally:
        t.close()
