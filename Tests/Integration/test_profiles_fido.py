"""CTAP2 keys of other makes (issue 22 §6): the virtual key's FIDO profiles, served through pcscd (CTAP over
PC/SC, as on an NFC reader) and as a USB key (FIDO HID). python-fido2, an independent client, first shows that
the key really behaves that way; then ykterm must give a clear, correct answer with it.

  pin-protocol-1/2     getInfo offers one PIN/UV auth protocol; the other is refused (CTAP1_ERR_INVALID_PARAMETER)
  ctap-unknown-fields  getInfo carries versions, extensions, options and fields no client knows
  u2f-only             the FIDO application speaks U2F only: CTAP2 refused (6D00; no CBOR over HID)
  pin-retries-refused  getPinRetries answers CTAP2_ERR_PIN_NOT_SET until a PIN is set
  slow-keepalive       4 s of "processing", then 4 s of "touch needed", before each answer that needs the user
"""

import json
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest

from harness import YKTERM, ServedKey, run_ykterm, serve_usb, usb_unavailable_reason, wait_until
from test_tui import Tmux

PRELUDE = """
import json, os, sys, time
from fido2.ctap import CtapError
from fido2.ctap1 import Ctap1
from fido2.ctap2 import Ctap2
from fido2.ctap2.pin import ClientPin
from fido2.hid import CAPABILITY
def emit(**kw):
    print(json.dumps(kw), flush=True)
"""

PCSC_DEVICE = """
from fido2.pcsc import CtapPcscDevice
device = next(iter(CtapPcscDevice.list_devices(os.environ["READER"])))
"""


def results(text):
    out = {}
    for line in text.splitlines():
        if line.startswith("{"):
            out.update(json.loads(line))
    return out


def fido2(key, env, code, stdin=""):
    """Runs python-fido2 `code` against the served key; returns what it emitted."""
    r = subprocess.run([sys.executable, "-c", PRELUDE + PCSC_DEVICE + code], env=dict(env, READER=key.reader),
                       capture_output=True, text=True, input=stdin, timeout=60)
    assert r.returncode == 0, r.stderr
    return results(r.stdout)


@pytest.fixture
def env(pcsc, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return pcsc.env(HOME=home, XDG_CONFIG_HOME=home / ".config", YKTERM_READER=pcsc.READER0)


def served(pcsc, tmp_path, profile):
    return ServedKey(pcsc, slot=0, state=tmp_path / f"{profile}.json", extra=("--profile", profile)).start()


def info(env):
    return json.loads(run_ykterm("fido", "info", "--json", env=env).stdout)


@pytest.mark.parametrize("number", [1, 2])
def test_a_key_with_one_pin_protocol(pcsc, env, tmp_path, number):
    other = 2 if number == 1 else 1
    key = served(pcsc, tmp_path, f"pin-protocol-{number}")
    try:
        seen = fido2(key, env, f"""
ctap = Ctap2(device)
emit(protocols=ctap.info.pin_uv_protocols)
try:
    ctap.client_pin({other}, ClientPin.CMD.GET_KEY_AGREEMENT)
    emit(other="accepted")
except CtapError as e:
    emit(other=e.code.name)
""")
        assert seen == {"protocols": [number], "other": "INVALID_PARAMETER"}

        assert info(env)["pin_protocols"] == [number]
        assert f"PIN protocols:        {number}" in run_ykterm("fido", "info", env=env).stdout
        run_ykterm("fido", "pin", "set", env=env, input="first-pin\n")
        run_ykterm("fido", "pin", "change", env=env, input="first-pin\nother-pin\n")
        assert "PIN is correct (8 attempts left)" in run_ykterm("fido", "pin", "verify", env=env,
                                                                 input="other-pin\n").stdout
        # python-fido2 takes a token with ykterm's PIN and makes a discoverable credential with it, which ykterm's
        # credential management then lists.
        made = fido2(key, env, """
import hashlib
ctap = Ctap2(device)
pin = ClientPin(ctap)
token = pin.get_pin_token(sys.stdin.readline().strip(), ClientPin.PERMISSION.MAKE_CREDENTIAL, "one.example")
cdh = hashlib.sha256(b"one").digest()
att = ctap.make_credential(cdh, {"id": "one.example"}, {"id": b"u1", "name": "one-user"},
                           [{"type": "public-key", "alg": -7}], options={"rk": True},
                           pin_uv_param=pin.protocol.authenticate(token, cdh), pin_uv_protocol=pin.protocol.VERSION)
emit(protocol=pin.protocol.VERSION, id=att.auth_data.credential_data.credential_id.hex())
""", stdin="other-pin\n")
        assert made["protocol"] == number
        listed = json.loads(run_ykterm("fido", "credentials", "list", "--json", env=env, input="other-pin\n").stdout)
        assert [(c["rp_id"], c["user_name"], c["credential_id"]) for c in listed] == [
            ("one.example", "one-user", made["id"])]
        # A wrong PIN is told as such (not as a protocol error).
        r = run_ykterm("fido", "pin", "verify", env=env, input="wrong-pin\n", check=False)
        assert r.returncode == 1 and "wrong PIN: 7 tries left" in r.stderr, r.stderr
    finally:
        key.stop()


def test_getinfo_with_entries_no_client_knows(pcsc, env, tmp_path):
    key = served(pcsc, tmp_path, "ctap-unknown-fields")
    try:
        seen = fido2(key, env, """
info = Ctap2(device).info
emit(versions=info.versions, extensions=info.extensions, options=info.options,
     certifications=info.certifications, protocols=info.pin_uv_protocols)
""")
        assert {"FIDO_2_1", "FIDO_2_2", "FIDO_3_0"} <= set(seen["versions"])
        assert seen["options"]["futureOption"] is True and seen["certifications"] == {"FIDO": 2}

        i = info(env)
        # What ykterm reads agrees with python-fido2, unknown names included, as the key sent them.
        assert i["versions"] == seen["versions"] and i["extensions"] == seen["extensions"]
        assert i["options"] == seen["options"] and i["pin_protocols"] == seen["protocols"]
        assert i["fido2"] is True and i["pin_set"] is False
        assert i["other_fields"]["0x13"] == {"FIDO": 2} and i["other_fields"]["0x7F"] == "deadbeef"
        assert sorted(i["other_fields"]) == sorted(["0x13", "0x18", "0x21", "0x30", "0x7F", "0x1000"])
        text = run_ykterm("fido", "info", env=env).stdout
        assert "FIDO_2_2, FIDO_3_0" in text and "futureOption=yes" in text and "x-vendor-mode=no" in text
        assert "x-vendor-telemetry" in text and "Other fields:         0x13 0x18 0x21 0x30 0x7F 0x1000" in text
        # The key works as any other: a PIN set by ykterm gives python-fido2 a token.
        run_ykterm("fido", "pin", "set", env=env, input="future-pin\n")
        assert fido2(key, env, "emit(token=len(ClientPin(Ctap2(device)).get_pin_token('future-pin')))") == {"token": 32}
    finally:
        key.stop()


def test_a_u2f_only_key_through_pcscd(pcsc, env, tmp_path):
    key = served(pcsc, tmp_path, "u2f-only")
    try:
        seen = fido2(key, env, """
import hashlib
emit(cbor=bool(device.capabilities & CAPABILITY.CBOR))
try:
    Ctap2(device)
    emit(ctap2="accepted")
except Exception as e:
    emit(ctap2=type(e).__name__)
app = hashlib.sha256(b"https://u2f.example").digest()
reg = Ctap1(device).register(os.urandom(32), app)
emit(key_handle=reg.key_handle.hex(), public_key=reg.public_key.hex())
""")
        assert seen["cbor"] is False and seen["ctap2"] != "accepted"
        # NFCCTAP_MSG is an unknown instruction to it.
        raw = run_ykterm("apdu", "00A4040008A0000006472F0001", "80108000010400", env=env).stdout
        assert "SW=6D00" in raw and raw.count("SW=9000") == 1, raw

        listed = json.loads(run_ykterm("list", "--json", env=env).stdout)[0]
        assert "U2F" in listed["applications"] and "FIDO2" not in listed["applications"], listed
        r = run_ykterm("fido", "info", env=env)
        assert r.stdout.splitlines()[0].split() == ["Versions:", "U2F_V2"]
        assert "FIDO2:                not supported: this key speaks U2F only" in r.stdout and r.stderr == ""
        i = info(env)
        assert i["fido2"] is False and i["versions"] == ["U2F_V2"] and i["pin_set"] is False
        assert i["pin_retries"] is None and i["aaguid"] is None

        # Nothing FIDO2 is tried: one clear line, status 1, for every FIDO2 command.
        for args in (["pin", "set"], ["credentials", "list"], ["test"]):
            r = run_ykterm("fido", *args, env=env, input="some-pin\nsome-pin\n", check=False)
            assert r.returncode == 1, (args, r.stdout, r.stderr)
            assert r.stderr.strip() == ("ykterm: this key speaks U2F only, not FIDO2 (CTAP2): it has no FIDO2 PIN, "
                                        "passkeys or FIDO2 reset; `ykterm u2f` registers and signs with it"), r.stderr

        # U2F works, both ways round with python-fido2.
        reg = json.loads(run_ykterm("u2f", "register", "--app-id", "https://u2f.example", "--json", env=env).stdout)
        signed = run_ykterm("u2f", "sign", "--app-id", "https://u2f.example", "--key-handle", seen["key_handle"],
                            "--public-key", seen["public_key"], env=env).stdout
        assert signed.startswith("Signature verified; counter ")
        checked = fido2(key, env, f"""
import hashlib
from fido2.ctap1 import RegistrationData
app = hashlib.sha256(b"https://u2f.example").digest()
chal = os.urandom(32)
sig = Ctap1(device).authenticate(chal, app, bytes.fromhex("{reg['key_handle']}"))
sig.verify(app, chal, bytes.fromhex("{reg['public_key']}"))
emit(counter=sig.counter)
""")
        assert checked["counter"] >= 2
    finally:
        key.stop()


def test_get_pin_retries_refused_before_a_pin_is_set(pcsc, env, tmp_path):
    key = served(pcsc, tmp_path, "pin-retries-refused")
    try:
        retries = """
try:
    emit(retries=ClientPin(Ctap2(device)).get_pin_retries()[0])
except CtapError as e:
    emit(retries=e.code.name)
"""
        assert fido2(key, env, retries) == {"retries": "PIN_NOT_SET"}
        i = info(env)
        assert i["pin_set"] is False and i["pin_retries"] is None
        text = run_ykterm("fido", "info", env=env)
        assert "no PIN set (set one with `ykterm fido pin set`)" in text.stdout and text.stderr == ""
        run_ykterm("fido", "pin", "set", env=env, input="late-pin\n")
        assert fido2(key, env, retries) == {"retries": 8}
        assert info(env)["pin_retries"] == 8
        assert "set, 8 attempts left" in run_ykterm("fido", "info", env=env).stdout
    finally:
        key.stop()


def tui(pcsc, tmp_path, key):
    return Tmux(f"{shlex.quote(str(YKTERM))} --reader {shlex.quote(key.reader)}",
                pcsc.env(XDG_CONFIG_HOME=str(tmp_path / "config")))


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is missing: run `make deps`")
def test_the_fido2_tab_with_a_u2f_only_key_and_one_that_refuses_retries(pcsc, env, tmp_path):
    key = served(pcsc, tmp_path, "u2f-only")
    t = tui(pcsc, tmp_path, key)
    try:
        t.send("3")
        screen = t.wait_for("This key speaks U2F only")
        assert "No FIDO2 here" in screen and "Traceback" not in screen and "error" not in screen.lower()
    finally:
        t.close()
        key.stop()
    key = served(pcsc, tmp_path, "pin-retries-refused")
    t = tui(pcsc, tmp_path, key)
    try:
        t.send("3")
        t.wait_for(r"not set \(s sets one\)")
        t.send("s")
        t.wait_for("Set the FIDO2 PIN")
        for text in ("tab-pin-1", "tab-pin-1"):
            t.type(text)
            t.send("Enter")
        t.wait_for("set · 8 tries left")
    finally:
        t.close()
        key.stop()


def test_a_slow_key_is_waited_for_and_ctrl_c_stops_the_wait(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "slow-keepalive.json",
                    extra=("--profile", "slow-keepalive", "--log-apdus")).start()

    def polls():
        # NFCCTAP_GETRESPONSE: the client asking the busy key for its answer.
        return key.log_path.read_text().count("apdu 80 11 ")
    try:
        # The resets first: keys take one only within seconds of being powered up.
        run_ykterm("fido", "pin", "set", env=env, input="slow-pin\n")
        # Ctrl-C while the key reports "processing": ykterm has the key stop waiting and ends as Ctrl-C ends a
        # program; nothing is reset.
        asked = polls()
        proc = subprocess.Popen([str(YKTERM), "fido", "reset", "--force"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        wait_until(lambda: polls() > asked or proc.poll() is not None, 10, "ykterm polling the busy key")
        assert proc.poll() is None
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
        # Ended well before the key's remaining 6.5 s of keepalives: the wait was stopped, not waited out.
        assert time.monotonic() - sent < 5
        assert proc.returncode == -signal.SIGINT and "interrupted: the key was asked to stop waiting" in err, err
        assert info(env)["pin_set"] is True

        # Left alone, the reset waits out the keepalives, says to touch the key, and resets.
        start = time.monotonic()
        r = run_ykterm("fido", "reset", "--force", env=env, timeout=30)
        took = time.monotonic() - start
        assert took >= 8, took
        assert "Touch your key" in r.stderr and "FIDO application reset" in r.stdout
        assert info(env)["pin_set"] is False

        # python-fido2 sees both statuses, in order, and the answer after 8 s.
        seen = fido2(key, env, """
statuses = []
start = time.monotonic()
Ctap2(device).selection(on_keepalive=lambda s: statuses.append(int(s)))
emit(statuses=statuses, seconds=time.monotonic() - start)
""")
        assert seen["statuses"] == [1, 2] and seen["seconds"] >= 8, seen
    finally:
        key.stop()


usb = pytest.mark.skipif(usb_unavailable_reason() is not None, reason=usb_unavailable_reason() or "")

USB_PRELUDE = PRELUDE + """
import subprocess
from fido2.hid import CtapHidDevice
YKTERM = os.environ["YKTERM_BIN"]
def ykterm(*args, stdin=""):
    return subprocess.run([YKTERM] + list(args), capture_output=True, text=True, input=stdin, timeout=40)
device = next(iter(CtapHidDevice.list_devices()))
"""


@usb
def test_a_u2f_only_usb_key_over_fido_hid():
    run = serve_usb("--profile", "u2f-only", "--interfaces", "fido", script=USB_PRELUDE + """
import hashlib
emit(cbor=bool(device.capabilities & CAPABILITY.CBOR))
try:
    Ctap2(device)
    emit(ctap2="accepted")
except Exception as e:
    emit(ctap2=type(e).__name__)
app = hashlib.sha256(b"https://hid.example").digest()
reg = Ctap1(device).register(os.urandom(32), app)
device.close()
info = ykterm("fido", "info")
emit(info_status=info.returncode, info=info.stdout, info_err=info.stderr)
emit(info_json=json.loads(ykterm("fido", "info", "--json").stdout))
emit(listed=json.loads(ykterm("list", "--json").stdout))
pin = ykterm("fido", "pin", "set", stdin="a-pin-1\\na-pin-1\\n")
emit(pin_status=pin.returncode, pin_err=pin.stderr)
signed = ykterm("u2f", "sign", "--app-id", "https://hid.example", "--key-handle", reg.key_handle.hex(),
                "--public-key", reg.public_key.hex())
emit(signed=signed.stdout, signed_err=signed.stderr)
""")
    assert run.returncode == 0, run.stderr
    r = results(run.stdout)
    assert r["cbor"] is False and r["ctap2"] != "accepted"
    assert r["info_status"] == 0 and "speaks U2F only" in r["info"] and r["info_err"] == "", r
    assert r["info_json"]["fido2"] is False and r["info_json"]["versions"] == ["U2F_V2"]
    assert len(r["listed"]) == 1
    apps = r["listed"][0]["applications"]
    assert "U2F" in apps and "FIDO2" not in apps, r["listed"]
    assert r["pin_status"] == 1 and "speaks U2F only" in r["pin_err"]
    assert r["signed"].startswith("Signature verified; counter 1"), r


@usb
def test_a_slow_usb_key_sends_keepalives_and_ykterm_waits():
    # The reset first: keys take it only within seconds of being plugged in.
    run = serve_usb("--profile", "slow-keepalive", "--interfaces", "fido", script=USB_PRELUDE + """
device.close()
ykterm("fido", "pin", "set", stdin="slow-usb-pin\\n")
# Ctrl-C while the key reports "processing": the key is told to stop, so it is free again at once.
import tempfile
trace = os.path.join(tempfile.mkdtemp(), "trace.log")
proc = subprocess.Popen([YKTERM, "fido", "reset", "--force"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        env=dict(os.environ, YKTERM_LOG=trace))
def reads():
    try:
        with open(f"/proc/{proc.pid}/io") as f:
            return int(next(line for line in f if line.startswith("syscr:")).split()[1])
    except OSError:
        return -1
def traced():
    try:
        with open(trace) as f:
            return f.read().count("] < ")
    except OSError:
        return 0
# The reset is under way, the key reporting "processing", once an exchange has gone on for a quarter of a second
# (an answer's reports come within milliseconds; the trace holds an exchange once it is answered) with ykterm
# reading the key's KEEPALIVEs (every 100 ms).
since, answered, read = time.monotonic(), traced(), reads()
deadline = time.monotonic() + 10
while time.monotonic() < deadline and proc.poll() is None:
    if traced() != answered:
        since, answered, read = time.monotonic(), traced(), reads()
    elif answered and time.monotonic() - since > 0.25 and reads() - read >= 2:
        break
    time.sleep(0.02)
emit(waited_in_exchange=time.monotonic() - since, answered_before=answered)
sent = time.monotonic()
proc.send_signal(2)
_, err = proc.communicate(timeout=10)
emit(interrupt_seconds=time.monotonic() - sent, interrupt_status=proc.returncode, interrupt_err=err)
start = time.monotonic()
after = ykterm("fido", "info", "--json")
emit(after_seconds=time.monotonic() - start, after_status=after.returncode,
     pin_set_after_interrupt=json.loads(after.stdout)["pin_set"] if after.returncode == 0 else after.stderr)
start = time.monotonic()
reset = ykterm("fido", "reset", "--force")
emit(reset_status=reset.returncode, reset=reset.stdout, reset_err=reset.stderr, reset_seconds=time.monotonic() - start)
device = next(iter(CtapHidDevice.list_devices()))
ctap = Ctap2(device)
emit(pin_set_after=ctap.info.options.get("clientPin"))
statuses = []
start = time.monotonic()
ctap.selection(on_keepalive=lambda s: statuses.append(int(s)))
emit(statuses=statuses, seconds=time.monotonic() - start)
""", timeout=90)
    assert run.returncode == 0, run.stderr
    r = results(run.stdout)
    # Ended well before the key's remaining keepalives: the wait was stopped, not waited out.
    assert r["interrupt_status"] == -2 and r["interrupt_seconds"] < 5, r
    assert "interrupted: the key was asked to stop waiting" in r["interrupt_err"]
    # Without the cancel the key would be busy for 6 more seconds, and fido info would find it so.
    assert r["after_status"] == 0 and r["after_seconds"] < 5 and r["pin_set_after_interrupt"] is True, r
    # ykterm waits out 8 s of keepalives, says to touch the key once it asks for a touch, and resets.
    assert r["reset_status"] == 0, r
    assert "FIDO application reset" in r["reset"] and "Touch your key" in r["reset_err"]
    assert r["reset_seconds"] >= 8 and r["pin_set_after"] is False
    # Over HID the key repeats KEEPALIVE every 100 ms: python-fido2 hears "processing", then "touch needed".
    assert r["statuses"] and r["statuses"][0] == 1 and r["statuses"][-1] == 2, r["statuses"]
    assert r["statuses"] == sorted(r["statuses"])
    assert r["seconds"] >= 8
