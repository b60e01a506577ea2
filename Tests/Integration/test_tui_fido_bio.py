"""The FIDO2 tab on a key with a fingerprint sensor, end to end in tmux on the virtual key served with --bio
through pcscd: fingerprints enrolled by python-fido2 (one named, one not) are listed in the tab's information
once the PIN has been given for the credentials."""

import json
import subprocess
import sys
from pathlib import Path

from harness import ServedKey
from test_tui import Tmux, pytestmark, served_tui  # noqa: F401  (pytestmark: skipped without tmux)
from test_tui_fido import fido_tab, set_pin_with_cli

BIO_PEER = Path(__file__).with_name("fido2_bio_peer.py")


def enroll_with_python_fido2(key, env, pin, *name):
    r = subprocess.run([sys.executable, str(BIO_PEER), key.reader, "enroll", *name], env=env, capture_output=True,
                       text=True, input=pin + "\n", timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["id"]


def test_fingerprints_enrolled_by_python_fido2_are_listed_in_the_tab(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=["--bio"]).start()
    set_pin_with_cli(key, env, "bio-pin1")
    enroll_with_python_fido2(key, env, "bio-pin1", "thumb")
    enroll_with_python_fido2(key, env, "bio-pin1")
    t = served_tui(pcsc, tmp_path, key)
    try:
        screen = fido_tab(t)
        assert "Fingerprints" in screen and "shown with the credentials (l)" in screen
        t.send("l")
        t.wait_for("PIN for the credentials")
        t.submit("bio-pin1")
        t.wait_for(r"Discoverable credentials \(0\)")
        t.send("Escape")
        screen = t.wait_for("thumb")
        line = next(line for line in screen.splitlines() if "Fingerprints" in line)
        assert "thumb" in line and "(no name)" in line
    finally:
        t.close()
        key.stop()
