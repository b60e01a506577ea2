"""The FIDO2 tab's settings and credential details end to end in tmux, on the virtual key served through pcscd:
always-UV set by the command line shows in the tab, and a user renamed in the tab is read back by python-fido2.
"""

import json
import subprocess
import sys
from pathlib import Path

from harness import ServedKey, run_ykterm
from test_tui import Tmux, pytestmark, served_tui  # noqa: F401  (pytestmark: skipped without tmux)
from test_tui_fido import fido_tab, peer, set_pin_with_cli

CONFIG_PEER = Path(__file__).with_name("fido2_config_peer.py")


def listed_by_python_fido2(key, env, pin):
    r = subprocess.run([sys.executable, str(CONFIG_PEER), key.reader, "list"], env=env, capture_output=True,
                       text=True, input=pin + "\n", timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["credentials"]


def open_details(t, pin):
    """Lists the credentials (after the PIN) and opens the selected one's details."""
    t.send("l")
    t.wait_for("PIN for the credentials")
    t.submit(pin)
    t.wait_for(r"Discoverable credentials \(1\)")
    t.send("Enter")
    return t.wait_for("Large-blob key")


def test_always_uv_shows_and_a_user_renamed_in_the_tab_is_read_back_by_python_fido2(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    set_pin_with_cli(key, env, "cred-pin")
    cred_id = peer(key, env, "make-resident", "example.org", "alice", pin="cred-pin")["credential_id"]
    run_ykterm("fido", "config", "toggle-always-uv", env=dict(env, YKTERM_READER=key.reader), input="cred-pin\n")
    t = served_tui(pcsc, tmp_path, key)
    try:
        screen = fido_tab(t)
        assert "Always UV" in screen and "on: every registration and sign-in needs the PIN" in screen
        screen = open_details(t, "cred-pin")
        assert cred_id[:32] in screen  # the credential ID, wrapped after its first line
        assert "credProtect" in screen and "1: the credential may be used without the PIN" in screen
        for attempt in range(2):
            t.send("n")
            t.wait_for("User names of the credential for example.org")
            t.send(*["BSpace"] * 5)
            t.submit("alice.liddell", "Alice Liddell")
            screen = t.wait_for("Changed the user names|PIN for the credentials")
            if "Changed the user names" in screen:
                break
            # pcscd powered the idle card down, which ends a PIN token: the tab asks for the PIN again.
            assert attempt == 0 and "The key dropped the earlier PIN verification" in screen
            t.submit("cred-pin")
            t.wait_for(r"Discoverable credentials \(1\)")
            t.send("Enter")
            t.wait_for("Large-blob key")
        screen = t.wait_for("alice.liddell")
        assert "Alice Liddell" in screen
        listed = listed_by_python_fido2(key, env, "cred-pin")
        assert [(c["credential_id"], c["user_name"], c["display_name"]) for c in listed] == \
            [(cred_id, "alice.liddell", "Alice Liddell")]
    finally:
        t.close()
        key.stop()
