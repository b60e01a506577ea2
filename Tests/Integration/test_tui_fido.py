"""The TUI's FIDO2 tab end to end in tmux: on the virtual key served through pcscd, checked with python-fido2
(PINs set and changed in the tab, credentials made by python-fido2 listed and deleted in the tab), and on
`ykterm --virtual` (the guided reset, and Esc cancelling the wait for a touch).
"""

import json
import os
import shlex
import subprocess
import sys
import time

from harness import YKTERM, ServedKey, run_ykterm
from test_tui import Tmux, pytestmark, served_tui  # noqa: F401  (pytestmark: skipped without tmux)
from test_fido import PEER


def peer(key, env, action, *args, pin=None):
    r = subprocess.run([sys.executable, str(PEER), key.reader, action, *args], env=env, capture_output=True,
                       text=True, input=(pin + "\n") if pin is not None else "", timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def peer_when_back(key, env, action, timeout=10):
    """`peer` once the key answers again: pcscd may still report it away for a moment, and the first request
    after it is back can meet the reader still settling (the peer then reports a CTAP error)."""
    deadline = time.monotonic() + timeout
    while True:
        r = subprocess.run([sys.executable, str(PEER), key.reader, action], env=env, capture_output=True,
                           text=True, input="", timeout=60)
        answer = json.loads(r.stdout) if r.returncode == 0 else None
        if (answer is not None and "ctap_error" not in answer) or time.monotonic() > deadline:
            assert r.returncode == 0, r.stderr
            assert "ctap_error" not in answer, answer
            return answer
        time.sleep(0.2)  # before asking again, until the deadline


def set_pin_with_cli(key, env, pin):
    run_ykterm("fido", "pin", "set", env=dict(env, YKTERM_READER=key.reader), input=pin + "\n")


def fido_tab(t):
    t.send("3")
    return t.wait_for("FIDO2 authenticator")


def test_pin_set_in_the_tab_works_in_python_fido2_and_a_change_makes_the_old_one_fail(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    t = served_tui(pcsc, tmp_path, key)
    try:
        screen = fido_tab(t)
        assert "not set (s sets one)" in screen
        assert "AAGUID" in screen and "Minimum PIN length" in screen
        aaguid = peer(key, env, "info")["aaguid"]
        assert "-".join([aaguid[:8], aaguid[8:12], aaguid[12:16], aaguid[16:20], aaguid[20:]]) in screen
        t.send("s")
        t.wait_for("Set the FIDO2 PIN")
        # Rules checked as typed, and no echo.
        t.type("zq")
        screen = t.wait_for(r"the PIN must have at least 4 characters \(2 given\)")
        assert "zq" not in screen and "••" in screen
        t.submit("x-pin-1", "zqx-pin-1")
        t.wait_for("FIDO2 PIN set")
        t.wait_for("set · 8 tries left")
        assert peer(key, env, "token", pin="zqx-pin-1") == {"token": 32}
        assert peer(key, env, "token", pin="other-pin") == {"ctap_error": "PIN_INVALID"}
        # Change it: the old PIN fails in python-fido2, the new one works.
        t.send("c")
        t.wait_for("Change the FIDO2 PIN")
        t.submit("zqx-pin-1", "zq-pin-2", "zq-pin-2")
        t.wait_for("FIDO2 PIN changed")
        assert peer(key, env, "token", pin="zqx-pin-1") == {"ctap_error": "PIN_INVALID"}
        assert peer(key, env, "token", pin="zq-pin-2") == {"token": 32}
    finally:
        t.close()
        key.stop()


def test_wrong_pin_shows_the_tries_left(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    set_pin_with_cli(key, env, "right-pin")
    t = served_tui(pcsc, tmp_path, key)
    try:
        fido_tab(t)
        t.send("v")
        t.wait_for("Verify the FIDO2 PIN")
        t.submit("wrong-pin")
        t.wait_for("Wrong PIN: 7 tries left")
        # The dialog stays; Esc cancels it.
        t.send("Escape")
        t.wait_gone("Verify the FIDO2 PIN")
        t.wait_for("set · 7 tries left")
        assert peer(key, env, "retries") == {"retries": 7}
        t.send("v")
        t.submit("right-pin")
        t.wait_for(r"The PIN is correct \(8 tries left\)")
    finally:
        t.close()
        key.stop()


def test_credentials_made_by_python_fido2_are_listed_and_deleted_after_confirmation(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    set_pin_with_cli(key, env, "cred-pin")
    alice = peer(key, env, "make-resident", "example.org", "alice", pin="cred-pin")["credential_id"]
    bob = peer(key, env, "make-resident", "example.com", "bob", pin="cred-pin")["credential_id"]
    t = served_tui(pcsc, tmp_path, key)
    try:
        fido_tab(t)
        t.send("l")
        t.wait_for("PIN for the credentials")
        t.submit("cred-pin")
        screen = t.wait_for(r"Discoverable credentials \(2\)")
        assert screen.index("example.com") < screen.index("example.org")
        assert f"id {alice[:15]}" in screen and f"id {bob[:15]}" in screen
        # bob (example.com) first; move to alice and delete her credential, answering no first.
        t.send("j")
        t.send("d")
        t.wait_for(r"Delete the credential of alice for example.org\?")
        t.send("n")
        t.wait_gone("Delete the credential")
        t.wait_for(r"Discoverable credentials \(2\)")
        t.send("d")
        t.wait_for(r"Delete the credential of alice for example.org\?")
        t.answer("y")
        screen = t.wait_for("Deleted the credential of alice for example.org|PIN for the credentials")
        if "PIN for the credentials" in screen:
            # pcscd powered the idle card down, which ends a PIN token: the tab asks for the PIN again, says
            # why, lists again, and the delete is asked for once more.
            assert "The key dropped the earlier PIN verification" in screen
            t.submit("cred-pin")
            t.wait_gone("PIN for the credentials")
            t.send("d")
            t.wait_for(r"Delete the credential of alice for example.org\?")
            t.answer("y")
            t.wait_for("Deleted the credential of alice for example.org")
        t.wait_for(r"Discoverable credentials \(1\)")
        left = peer(key, env, "list-resident", pin="cred-pin")["credentials"]
        assert [c["credential_id"] for c in left] == [bob]
    finally:
        t.close()
        key.stop()


def test_key_pulled_out_while_the_pin_is_set_leaves_no_pin(pcsc, env, tmp_path):
    # The key is pulled out just before it carries out clientPIN setPIN (06.03), for two seconds.
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=("--fault", "remove-before@ctap=06.03")).start()
    t = served_tui(pcsc, tmp_path, key)
    try:
        fido_tab(t)
        t.send("s")
        t.wait_for("Set the FIDO2 PIN")
        t.submit("lost-pin", "lost-pin")
        # The TUI says the key has no PIN or the new one (the set was cut short), or that the key was removed.
        screen = t.wait_for(r"Removed mid PIN set: the key has no PIN or the new one|was removed")
        assert "Set the FIDO2 PIN" not in screen and "FIDO2 PIN set" not in screen
        # Back in the reader: nothing half-done, no PIN; setting it now works.
        key.wait_present(timeout=20)
        assert peer_when_back(key, env, "info")["options"]["clientPin"] is False
        # The tab shows the key's PIN state once the TUI has the key again ("No key" until then).
        t.wait_for(r"not set \(s sets one\)")
        t.send("s")
        t.wait_for("Set the FIDO2 PIN")
        t.submit("kept-pin", "kept-pin")
        t.wait_for("FIDO2 PIN set")
        assert peer(key, env, "token", pin="kept-pin") == {"token": 32}
    finally:
        t.close()
        key.stop()


def test_virtual_reset_is_guided_and_esc_cancels_the_touch(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    t = Tmux(f"{shlex.quote(str(YKTERM))} --virtual", env)
    try:
        t.wait_for("GitHub")
        fido_tab(t)
        t.send("s")
        t.submit("virt-pin", "virt-pin")
        t.wait_for("FIDO2 PIN set")
        # The warning says what is lost; n keeps everything.
        t.send("R")
        screen = t.wait_for(r"Reset FIDO2\?")
        assert "Every FIDO credential on this key is lost" in screen
        t.send("n")
        t.wait_gone(r"Reset FIDO2\?")
        # "Ry" pasted is no key press: nothing opens, nothing is reset.
        t.paste("Ry")
        t.wait_for("Paste ignored")
        # Nothing to wait for: a moment in which a key taken from the paste would have shown.
        time.sleep(0.5)
        assert "Reset FIDO2?" not in t.screen() and "Touch your key" not in t.screen()
        # Enter is No.
        t.send("R")
        t.wait_for(r"Reset FIDO2\?")
        t.answer("Enter")
        t.wait_gone(r"Reset FIDO2\?")
        t.wait_for("set · 8 tries left")
        # Confirmed, the key waits for a touch; Esc cancels it and nothing is reset.
        t.send("R")
        t.wait_for(r"Reset FIDO2\?")
        t.answer("y")
        # The --virtual key's touch comes after a second: Esc goes the moment the prompt shows.
        t.glimpse(r"(?s)(?=.*Touch your key)(?=.*Esc cancels)")
        t.send("Escape")
        t.wait_for("Reset cancelled: nothing was reset")
        t.wait_gone("Touch your key")
        t.wait_for("set · 8 tries left")
        # Again, and this time the (simulated) touch comes: the PIN is gone.
        t.send("R")
        t.wait_for(r"Reset FIDO2\?")
        t.answer("y")
        t.glimpse("Touch your key")
        t.wait_for("FIDO2 reset: every credential and the PIN are gone")
        t.wait_for(r"not set \(s sets one\)")
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()
