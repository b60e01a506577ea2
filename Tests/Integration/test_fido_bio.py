"""Fingerprints (CTAP 2.1 authenticatorBioEnrollment) on the virtual key served with --bio, through pcscd,
cross-checked with python-fido2's FPBioEnrollment: a fingerprint enrolled by one is listed by the other with
its name, renames and deletions agree both ways, the sensor's sample statuses reach ykterm's progress lines,
the templates stay in the --state file until a reset, and a key without a sensor gets one clear line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import ServedKey, run_ykterm

PEER = Path(__file__).with_name("fido2_bio_peer.py")
PIN = "bio-pin-1\n"


def peer(key, env, action, *args, stdin=PIN):
    r = subprocess.run([sys.executable, str(PEER), key.reader, action, *args], env=env, capture_output=True,
                       text=True, input=stdin, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def fido(key, env, *args, **kw):
    return run_ykterm("fido", *args, env=dict(env, YKTERM_READER=key.reader), **kw)


def listed(key, env):
    return {f["id"]: f["name"] for f in json.loads(fido(key, env, "fingerprints", "list", "--json",
                                                        input=PIN).stdout)}


@pytest.fixture
def bio(pcsc, tmp_path):
    """A fresh virtual YubiKey Bio with a PIN."""
    k = ServedKey(pcsc, slot=0, state=tmp_path / "bio.json", extra=["--bio"]).start()
    fido(k, pcsc.env(), "pin", "set", input=PIN)
    yield k
    k.stop()


def test_the_key_announces_a_sensor_that_python_fido2_accepts(bio, env):
    seen = peer(bio, env, "info")
    assert seen["supported"] is True and seen["options"]["bioEnroll"] is False and seen["uv_modality"] == 2
    assert peer(bio, env, "sensor", stdin="") == {"kind": 1, "samples": 5, "max_name": 15}
    assert "No fingerprints" in fido(bio, env, "fingerprints", "list", input=PIN).stdout
    assert peer(bio, env, "list") == {"fingerprints": {}}


def test_a_fingerprint_enrolled_by_ykterm_is_listed_by_python_fido2(bio, env):
    r = fido(bio, env, "fingerprints", "add", "--name", "right thumb", input=PIN)
    assert "Touch the sensor…" in r.stderr
    progress = [line for line in r.stderr.splitlines() if line.startswith("Touch the sensor again")]
    assert progress == [f"Touch the sensor again ({n} more sample{'s' if n > 1 else ''} needed)"
                        for n in (4, 3, 2, 1)]
    assert r.stdout.startswith("Enrolled fingerprint ") and r.stdout.rstrip().endswith("(right thumb)")
    template = r.stdout.split()[2]
    assert peer(bio, env, "list") == {"fingerprints": {template: "right thumb"}}
    assert peer(bio, env, "info")["options"]["bioEnroll"] is True
    # Kept in the state file: the key served again still has it.
    bio.stop()
    bio.start()
    assert peer(bio, env, "list") == {"fingerprints": {template: "right thumb"}}


def test_one_enrolled_by_python_fido2_is_listed_renamed_and_deleted_by_ykterm(bio, env):
    made = peer(bio, env, "enroll", "left index")
    assert made["steps"] == [["GOOD", n] for n in (4, 3, 2, 1, 0)]
    template = made["id"]
    assert listed(bio, env) == {template: "left index"}
    assert f"{template}  left index" in fido(bio, env, "fingerprints", "list", input=PIN).stdout
    # ykterm renames (by a unique start of the ID), python-fido2 reads the new name.
    r = fido(bio, env, "fingerprints", "rename", template[:2], "index L", input=PIN)
    assert f"Renamed fingerprint {template} to index L" in r.stdout
    assert peer(bio, env, "list") == {"fingerprints": {template: "index L"}}
    # python-fido2 renames, ykterm reads.
    assert peer(bio, env, "rename", template, "pinky") == {"done": True}
    assert listed(bio, env) == {template: "pinky"}
    # A name longer than the key takes is refused before anything is sent.
    r = fido(bio, env, "fingerprints", "rename", template, "a name far too long", input=PIN, check=False)
    assert r.returncode == 2 and "at most 15 bytes" in r.stderr
    # ykterm deletes; python-fido2 sees none left.
    r = fido(bio, env, "fingerprints", "delete", template, input=PIN, check=False)
    assert r.returncode == 2 and "--force" in r.stderr
    assert f"Deleted fingerprint {template} (pinky)" in fido(bio, env, "fingerprints", "delete", template,
                                                              "--force", input=PIN).stdout
    assert peer(bio, env, "list") == {"fingerprints": {}}
    r = fido(bio, env, "fingerprints", "delete", template, "--force", input=PIN, check=False)
    assert r.returncode == 1 and "no fingerprint with ID" in r.stderr


def test_python_fido2_deletes_what_ykterm_enrolled_and_a_reset_removes_the_rest(bio, env):
    first = fido(bio, env, "fingerprints", "add", input=PIN).stdout.split()[2]
    second = fido(bio, env, "fingerprints", "add", "--name", "thumb", input=PIN).stdout.split()[2]
    assert listed(bio, env) == {first: None, second: "thumb"}
    assert f"{first}  (no name)" in fido(bio, env, "fingerprints", "list", input=PIN).stdout
    assert peer(bio, env, "delete", first) == {"done": True}
    assert listed(bio, env) == {second: "thumb"}
    # A reset (just after the key came up) removes every fingerprint with the PIN.
    bio.stop()
    bio.start()
    fido(bio, env, "reset", "--force")
    assert peer(bio, env, "info")["options"]["bioEnroll"] is False
    fido(bio, env, "pin", "set", input=PIN)
    assert peer(bio, env, "list") == {"fingerprints": {}}


def test_bad_samples_are_said_and_asked_for_again(pcsc, env, tmp_path):
    k = ServedKey(pcsc, slot=1, state=tmp_path / "samples.json",
                  extra=["--bio", "--bio-samples", "too-fast,good,poor-quality"]).start()
    try:
        fido(k, env, "pin", "set", input=PIN)
        r = fido(k, env, "fingerprints", "add", input=PIN)
        lines = [line for line in r.stderr.splitlines() if "touch the sensor again" in line.lower()]
        assert lines[:3] == ["The finger moved too fast: touch the sensor again (5 more samples needed)",
                             "Touch the sensor again (4 more samples needed)",
                             "The sample was of poor quality: touch the sensor again (4 more samples needed)"]
        assert len(lines) == 6 and "Enrolled fingerprint" in r.stdout
        # The sequence is used up: python-fido2 gets good samples only.
        assert peer(k, env, "enroll")["steps"] == [["GOOD", n] for n in (4, 3, 2, 1, 0)]
        assert len(listed(k, env)) == 2
    finally:
        k.stop()


def test_a_key_without_a_sensor_says_so(key, env):
    fido(key, env, "pin", "set", input=PIN)
    assert peer(key, env, "info")["supported"] is False
    for args in (["list"], ["add"], ["rename", "0102", "x"], ["delete", "0102", "--force"]):
        r = fido(key, env, "fingerprints", *args, input=PIN, check=False)
        assert r.returncode == 1 and "does not support fingerprint enrollment" in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
