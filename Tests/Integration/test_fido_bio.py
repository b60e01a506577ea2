"""Fingerprints (CTAP 2.1 authenticatorBioEnrollment) on the virtual key served with --bio, through pcscd,
cross-checked with python-fido2's FPBioEnrollment: a fingerprint enrolled by one is listed by the other with
its name, renames and deletions agree both ways, the sensor's sample statuses reach ykterm's progress lines,
the templates stay in the --state file until a reset, a key without a sensor gets one clear line, and Ctrl-C
during an enrollment on the USB-served key cancels it on the key (nothing enrolled, the key not stuck)."""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import YKTERM, ServedKey, run_ykterm, serve_usb, usb_unavailable_reason, wait_until
from test_tui import Tmux
from test_usb import PRELUDE, results

PEER = Path(__file__).with_name("fido2_bio_peer.py")
PIN = "bio-pin-1\n"


def peer(key, env, action, *args, stdin=PIN):
    r = subprocess.run([sys.executable, str(PEER), key.reader, action, *args], env=env, capture_output=True,
                       text=True, input=stdin, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def fido(key, env, *args, **kw):
    return run_ykterm("fido", *args, env=dict(env, YKTERM_READER=key.reader), **kw)


def polls(key):
    """How many NFCCTAP_GETRESPONSE commands (the client asking a busy key for its answer) the key served with
    --log-apdus has had."""
    return key.log_path.read_text().count("apdu 80 11 ")


def listed(key, env):
    prints = json.loads(fido(key, env, "fingerprints", "list", "--json", input=PIN).stdout)
    assert all(set(f) == {"id", "name"} for f in prints), prints
    return {f["id"]: f["name"] for f in prints}


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


def test_ctrl_c_during_an_enrollment_over_pcsc_cancels_it_too(pcsc, env, tmp_path):
    # The same through pcscd (CTAP over ISO 7816): the cancel is NFCCTAP_GETRESPONSE with P1 0x11. The sensor
    # takes 6 s for the second sample (the one cancelled, and the first of the next enrollment: a capture
    # cancelled takes no place in the list), a fifth of a second for the others.
    k = ServedKey(pcsc, slot=1, state=tmp_path / "slow.json",
                  extra=["--bio", "--bio-sensor-delay", "200,6000,200", "--log-apdus"]).start()
    try:
        fido(k, env, "pin", "set", input=PIN)
        proc = subprocess.Popen([str(YKTERM), "fido", "fingerprints", "add"], env=dict(env, YKTERM_READER=k.reader),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.stdin.write(PIN)
        proc.stdin.flush()
        seen = [proc.stderr.readline().rstrip("\n") for _ in range(2)]
        assert seen == ["Touch the sensor…", "Touch the sensor again (4 more samples needed)"], seen
        # The second sample is under way once ykterm asks the busy key for its answer (the first was answered
        # before the line above).
        asked = polls(k)
        wait_until(lambda: polls(k) > asked, 5, "ykterm polling the key during the second sample")
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = proc.communicate(timeout=20)
        # At once, not when the sensor's 6 s sample would have ended (the margin keeps a loaded machine from
        # telling the two apart wrongly).
        assert time.monotonic() - sent < 3.0
        # Ended by SIGINT (130 in a shell), with the one line.
        assert proc.returncode == -signal.SIGINT and out == ""
        assert err.splitlines() == ["ykterm: cancelled, nothing enrolled: the key dropped the samples taken so far"]
        # Nothing enrolled, and python-fido2 enrolls at once.
        assert peer(k, env, "list") == {"fingerprints": {}}
        assert peer(k, env, "enroll")["steps"] == [["GOOD", n] for n in (4, 3, 2, 1, 0)]
    finally:
        k.stop()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is missing: run `make deps`")
def test_ctrl_c_on_a_terminal_gives_the_terminal_back(pcsc, env, tmp_path):
    # On a terminal: the PIN asked for without echo, then Ctrl-C while the slow sensor works.
    k = ServedKey(pcsc, slot=1, state=tmp_path / "tty.json",
                  extra=["--bio", "--bio-sensor-delay", "3000", "--log-apdus"]).start()
    try:
        fido(k, env, "pin", "set", input=PIN)
        t = Tmux(f"{shlex.quote(str(YKTERM))} fido fingerprints add --reader {shlex.quote(k.reader)}", env)
        try:
            t.wait_for("PIN:")
            t.type(PIN.strip())
            t.send("Enter")
            t.wait_for("Touch the sensor…")
            # The first sample is under way once ykterm asks the busy key for its answer.
            asked = polls(k)
            wait_until(lambda: polls(k) > asked, 5, "ykterm polling the key during the first sample")
            t.send("C-c")
            screen = t.wait_for(r"EXITED=\d+")
            assert "bio-pin-1" not in screen
            assert "ykterm: cancelled, nothing enrolled" in screen and "EXITED=130" in screen, screen
            # Echo and canonical mode on again.
            t.wait_for(r"(?m)^icanon echo", timeout=5)
        finally:
            t.close()
        assert peer(k, env, "list") == {"fingerprints": {}}
    finally:
        k.stop()


CANCEL_INSIDE = PRELUDE + """
import signal
from fido2.cbor import decode
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.ctap2.bio import FPBioEnrollment
from fido2.ctap2.pin import ClientPin
from fido2.hid import CtapHidDevice
PIN = "bio-pin-1"
TRACE = os.path.join(os.environ["WORKDIR"], "trace.log")
def with_pin(*args):
    return subprocess.run([YKTERM] + list(args), input=PIN + "\\n", capture_output=True, text=True, timeout=60)
assert with_pin("fido", "pin", "set").returncode == 0
# As from a shell, which reports how ykterm ended; the trace shows what went to the key.
sh = subprocess.Popen(["sh", "-c", YKTERM + ' fido fingerprints add; echo "status $?" >&2'], text=True,
                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                      env=dict(os.environ, YKTERM_LOG=TRACE))
sh.stdin.write(PIN + "\\n")
sh.stdin.flush()
seen = []
while not seen or not seen[-1].startswith("Touch the sensor again"):
    seen.append(sh.stderr.readline().rstrip("\\n"))
child = int(open(f"/proc/{sh.pid}/task/{sh.pid}/children").read().split()[0])
def reads():
    with open(f"/proc/{child}/io") as f:
        return int(next(line for line in f if line.startswith("syscr:")).split()[1])
# The second sample is under way, its sensor busy for 6 s, once ykterm reads from the key again (a KEEPALIVE:
# the first sample was answered before the line above).
before = reads()
deadline = time.monotonic() + 5
while reads() == before and time.monotonic() < deadline:
    time.sleep(0.01)
emit(reads_while_waiting=reads() - before)
os.kill(child, signal.SIGINT)
sent = time.monotonic()
out, err = sh.communicate(timeout=20)
emit(stderr=seen + err.splitlines(), stdout=out, seconds=time.monotonic() - sent)

requests = []
for line in open(TRACE):
    if "] > " in line:
        requests.append([line.split("] > ")[1].split()[0], None])
    elif "] < " in line and requests:
        requests[-1][1] = line.split("] < ")[1].split()[0]
emit(exchanges=requests[-3:])
begun = next(answer for request, answer in requests if request.startswith("09A50101020103"))
template = decode(bytes.fromhex(begun)[1:])[4]

def bio():
    # Opened for each use and closed after it: an open hidraw file gets the reports of ykterm's channel too.
    device = list(CtapHidDevice.list_devices())[0]
    ctap = Ctap2(device)
    client_pin = ClientPin(ctap)
    return device, FPBioEnrollment(ctap, client_pin.protocol,
                                   client_pin.get_pin_token(PIN, ClientPin.PERMISSION.BIO_ENROLL))
device, enrollment = bio()
try:
    enrollment.enroll_capture_next(template)
    emit(continued=True)
except CtapError as e:
    emit(continued=e.code.name)
emit(listed={k.hex(): v for k, v in enrollment.enumerate_enrollments().items()})
device.close()
again = with_pin("fido", "fingerprints", "add", "--name", "thumb")
emit(again=again.stdout, again_status=again.returncode)
device, enrollment = bio()
emit(listed_after={k.hex(): v for k, v in enrollment.enumerate_enrollments().items()})
device.close()
"""


@pytest.mark.skipif(usb_unavailable_reason() is not None, reason=usb_unavailable_reason() or "")
def test_ctrl_c_during_an_enrollment_cancels_it_on_the_usb_key(tmp_path):
    # A slow sensor on the virtual key plugged in over USB (FIDO HID): 6 s for the second sample, the one
    # cancelled (and the first of the next enrollment), a fifth of a second for the others.
    r = results(serve_usb("--bio", "--bio-sensor-delay", "200,6000,200", script=CANCEL_INSIDE,
                          env=dict(os.environ, WORKDIR=str(tmp_path)), timeout=120))
    assert r["stderr"][:2] == ["Touch the sensor…", "Touch the sensor again (4 more samples needed)"], r
    # Ctrl-C: the key stopped waiting at once (not after the rest of the sensor's 6 s), ykterm said so in one
    # line and ended as Ctrl-C ends a program, which the shell reports as 130.
    assert r["stderr"][2:] == ["ykterm: cancelled, nothing enrolled: the key dropped the samples taken so far",
                               "status 130"], r
    assert r["seconds"] < 3.0 and r["stdout"] == ""
    # The capture answered CTAP2_ERR_KEEPALIVE_CANCEL (CTAPHID_CANCEL on its channel), then
    # cancelCurrentEnrollment (subcommand 3) went to the key and was answered OK.
    (capture, cancelled), (cancel, ok) = r["exchanges"][-2:]
    assert capture.startswith("09A50101020203") and cancelled == "2D", r["exchanges"]
    assert cancel == "09A201010203" and ok == "00", r["exchanges"]
    # python-fido2: the template begun is gone (no capture continues it), none was stored...
    assert r["continued"] == "INVALID_PARAMETER" and r["listed"] == {}
    # ...and the key is not stuck: the next enrollment runs to its template.
    assert r["again_status"] == 0 and r["again"].startswith("Enrolled fingerprint ")
    template = r["again"].split()[2]
    assert r["listed_after"] == {template: "thumb"}
