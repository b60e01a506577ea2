"""FIDO2 settings (CTAP 2.1 authenticatorConfig) and credential details through pcscd, cross-checked with
python-fido2: a minimum PIN length and a forced PIN change set by ykterm hold for python-fido2 (and the other
way round), alwaysUv and enterprise attestation are seen by both, a user renamed by one is read back by the
other, and a key without authenticatorConfig gets one clear line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import ServedKey, serve_usb, usb_unavailable_reason
from test_fido import fido, info  # noqa: E402

PEER = Path(__file__).with_name("fido2_config_peer.py")
PEER_BASIC = Path(__file__).with_name("fido2_peer.py")


def peer(key, env, action, *args, stdin="", script=PEER):
    r = subprocess.run([sys.executable, str(script), key.reader, action, *args], env=env, capture_output=True,
                       text=True, input=stdin, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_minimum_set_by_ykterm_holds_for_python_fido2_and_the_named_sites(key, env):
    r = fido(key, env, "pin", "set-min-length", "6", "--rp-id", "example.com", "--rp-id", "login.example.org")
    assert "Minimum PIN length set to 6" in r.stdout and "example.com, login.example.org" in r.stdout
    seen = peer(key, env, "info")
    assert seen["min_pin_length"] == 6 and seen["force_pin_change"] is False
    assert seen["options"]["setMinPINLength"] is True and "minPinLength" in seen["extensions"]
    # Only the named relying parties learn the minimum (minPinLength extension).
    assert peer(key, env, "make", "example.com") == {"min_pin_length": 6}
    assert peer(key, env, "make", "other.example") == {"min_pin_length": None}
    # The new minimum holds for the first PIN: ykterm checks it before sending.
    r = fido(key, env, "pin", "set", input="12345\n", check=False)
    assert r.returncode == 2 and "at least 6" in r.stderr
    # Lower is refused before anything is sent.
    r = fido(key, env, "pin", "set-min-length", "5", check=False)
    assert r.returncode == 2 and "can only be raised" in r.stderr
    assert peer(key, env, "info")["min_pin_length"] == 6


def test_a_minimum_above_the_pin_forces_a_change_that_python_fido2_must_make(key, env):
    fido(key, env, "pin", "set", input="123456\n")
    r = fido(key, env, "pin", "set-min-length", "8", input="123456\n")
    assert "The current PIN is shorter" in r.stdout
    seen = peer(key, env, "info")
    assert seen["min_pin_length"] == 8 and seen["force_pin_change"] is True
    # The right PIN, but no token for python-fido2 or ykterm until it is changed.
    assert peer(key, env, "token", stdin="123456\n") == {"ctap_error": "PIN_POLICY_VIOLATION"}
    r = fido(key, env, "pin", "verify", input="123456\n", check=False)
    assert r.returncode == 1 and "wants a new PIN" in r.stderr and "ykterm fido pin change" in r.stderr
    assert info(key, env)["pin_retries"] == 8
    assert peer(key, env, "change-pin", stdin="123456\n12345678\n") == {"changed": True}
    assert info(key, env)["force_pin_change"] is False
    assert peer(key, env, "token", stdin="12345678\n") == {"token": 32}
    assert "PIN is correct" in fido(key, env, "pin", "verify", input="12345678\n").stdout


def test_force_change_by_ykterm_then_the_change_by_ykterm(key, env):
    r = fido(key, env, "pin", "force-change", check=False)
    assert r.returncode == 1 and "no PIN is set" in r.stderr
    fido(key, env, "pin", "set", input="first-pin\n")
    r = fido(key, env, "pin", "force-change", input="first-pin\n")
    assert "must now be changed" in r.stdout
    assert peer(key, env, "info")["force_pin_change"] is True
    assert peer(key, env, "token", stdin="first-pin\n") == {"ctap_error": "PIN_POLICY_VIOLATION"}
    lines = fido(key, env, "info").stdout.splitlines()
    assert any("must be changed before use" in line for line in lines)
    # Settings want a token too, so they fail the same way until the change.
    r = fido(key, env, "config", "toggle-always-uv", input="first-pin\n", check=False)
    assert r.returncode == 1 and "wants a new PIN" in r.stderr
    assert "PIN changed" in fido(key, env, "pin", "change", input="first-pin\nsecond-pin\n").stdout
    assert peer(key, env, "token", stdin="second-pin\n") == {"token": 32}
    assert peer(key, env, "info")["force_pin_change"] is False


def test_always_uv_toggled_by_ykterm_is_seen_by_python_fido2_and_back(key, env):
    r = fido(key, env, "config", "toggle-always-uv")
    assert "Always-UV is on" in r.stdout
    options = peer(key, env, "info")["options"]
    assert options["alwaysUv"] is True and options["makeCredUvNotRqd"] is False
    # Without user verification python-fido2 gets no credential.
    assert peer(key, env, "make", "example.com") == {"ctap_error": "PUAT_REQUIRED"}
    assert info(key, env)["always_uv"] is True
    assert any(line.startswith("Always UV:") and "on" in line for line in fido(key, env, "info").stdout.splitlines())
    # python-fido2 switches it back (no PIN on the key, so no token); ykterm sees it off.
    assert peer(key, env, "toggle-always-uv", stdin="\n") == {"done": True}
    assert info(key, env)["always_uv"] is False
    assert peer(key, env, "make", "example.com") == {"min_pin_length": None}


def test_enterprise_attestation_enabled_by_ykterm(key, env):
    assert info(key, env)["enterprise_attestation"] is False
    fido(key, env, "pin", "set", input="ep-pin-1\n")
    r = fido(key, env, "config", "enable-ep-attestation", input="wrong-pin\n", check=False)
    assert r.returncode == 1 and "wrong PIN" in r.stderr
    assert "Enterprise attestation enabled" in fido(key, env, "config", "enable-ep-attestation",
                                                    input="ep-pin-1\n").stdout
    assert peer(key, env, "info")["options"]["ep"] is True
    assert "already enabled" in fido(key, env, "config", "enable-ep-attestation").stdout
    # Kept in the state file: the same key served again still has it.
    key.stop()
    key.start()
    assert peer(key, env, "info")["options"]["ep"] is True


def test_user_renamed_by_ykterm_is_read_back_by_python_fido2(key, env):
    fido(key, env, "pin", "set", input="cred-pin\n")
    made = peer(key, env, "make-resident", "example.org", "alice", stdin="cred-pin\n", script=PEER_BASIC)
    cred_id = made["credential_id"]
    r = fido(key, env, "credentials", "update", cred_id[:10], "--name", "alice@example.org",
             "--display-name", "Alice Liddell", input="cred-pin\n")
    assert "alice@example.org" in r.stdout
    listed = peer(key, env, "list", stdin="cred-pin\n")["credentials"]
    assert listed == [{"rp_id": "example.org", "credential_id": cred_id, "user_name": "alice@example.org",
                       "display_name": "Alice Liddell", "cred_protect": 1, "large_blob_key": False}]
    # ykterm's details agree with python-fido2's.
    ours = json.loads(fido(key, env, "credentials", "list", "--json", input="cred-pin\n").stdout)
    assert [(c["user_name"], c["display_name"], c["cred_protect"], c["large_blob_key"]) for c in ours] == \
        [("alice@example.org", "Alice Liddell", 1, False)]
    # An empty display name removes it; the name stays.
    fido(key, env, "credentials", "update", cred_id, "--display-name", "", input="cred-pin\n")
    assert peer(key, env, "list", stdin="cred-pin\n")["credentials"][0]["display_name"] is None
    # The other way: python-fido2 renames, ykterm lists.
    user_id = ours[0]["user_id"]
    assert peer(key, env, "update-user", cred_id, user_id, "bob", "Bob", stdin="cred-pin\n") == {"done": True}
    text = fido(key, env, "credentials", "list", input="cred-pin\n").stdout
    assert f"bob (Bob)  id {cred_id}  credProtect 1" in text
    r = fido(key, env, "credentials", "update", cred_id, check=False)
    assert r.returncode == 2 and "--name" in r.stderr


def test_credentials_csv_is_ykmans(key, env):
    """`fido credentials list --csv` (-c): the rows ykman's --csv writes for the same credentials, a name with a
    comma and quotes quoted as Python's csv module quotes it, each row ended with CR LF; --csv with --json is
    refused."""
    import csv
    import io
    from harness import YKTERM, run_ykman
    fido(key, env, "pin", "set", input="cred-pin\n")
    for rp, user in (("example.org", "alice"), ("example.com", 'o"brien, jr'), ("example.com", "carol")):
        peer(key, env, "make-resident", rp, user, stdin="cred-pin\n", script=PEER_BASIC)
    ours = subprocess.run([str(YKTERM), "fido", "credentials", "list", "--csv", "--reader", key.reader], env=env,
                          input=b"cred-pin\n", capture_output=True, timeout=60)
    assert ours.returncode == 0, ours.stderr
    theirs = run_ykman(key.reader, "fido", "credentials", "list", "--csv", "--pin", "cred-pin", env=env).stdout
    rows = list(csv.reader(io.StringIO(ours.stdout.decode(), newline="")))
    assert rows[0] == ["credential_id", "rp_id", "user_name", "user_display_name", "user_id"]
    # ykman's echo adds a blank line after the last row.
    assert sorted(rows[1:]) == sorted(r for r in list(csv.reader(io.StringIO(theirs)))[1:] if r), (rows, theirs)
    assert len(rows) == 4 and ours.stdout.count(b"\r\n") == 4
    assert b'"o""brien, jr"' in ours.stdout
    short = fido(key, env, "credentials", "list", "-c", input="cred-pin\n").stdout
    assert short.replace("\r\n", "\n") == ours.stdout.decode().replace("\r\n", "\n")
    r = fido(key, env, "credentials", "list", "--csv", "--json", input="cred-pin\n", check=False)
    assert r.returncode == 2 and "--csv and --json exclude each other" in r.stderr, r.stderr


def test_settings_made_by_python_fido2_are_shown_by_ykterm(key, env):
    fido(key, env, "pin", "set", input="peer-pin-1\n")
    assert peer(key, env, "set-min-length", "7", "example.com", stdin="peer-pin-1\n") == {"done": True}
    assert peer(key, env, "toggle-always-uv", stdin="peer-pin-1\n") == {"done": True}
    i = info(key, env)
    assert i["min_pin_length"] == 7 and i["always_uv"] is True and i["force_pin_change"] is False
    assert i["max_rpids_for_min_pin_length"] == peer(key, env, "info")["max_rpids_for_min_pin"] == 8
    assert peer(key, env, "force-change", stdin="peer-pin-1\n") == {"done": True}
    lines = fido(key, env, "info").stdout.splitlines()
    assert any(line.startswith("Minimum PIN length:") and line.endswith(" 7") for line in lines)
    assert any("must be changed before use" in line for line in lines)
    assert info(key, env)["force_pin_change"] is True
    # ykterm's change lifts what python-fido2 forced; the minimum holds for the new PIN.
    r = fido(key, env, "pin", "change", input="peer-pin-1\nshort\n", check=False)
    assert r.returncode == 2 and "at least 7" in r.stderr
    fido(key, env, "pin", "change", input="peer-pin-1\npeer-pin-2\n")
    assert peer(key, env, "token", stdin="peer-pin-2\n") == {"token": 32}


def test_a_key_without_authenticator_config_says_so(pcsc, env, tmp_path):
    old = ServedKey(pcsc, slot=1, state=tmp_path / "old.json", extra=["--firmware", "5.4.3"]).start()
    try:
        assert "authnrCfg" not in peer(old, env, "info")["options"]
        for args in (["config", "toggle-always-uv"], ["config", "enable-ep-attestation"],
                     ["pin", "set-min-length", "6"], ["pin", "force-change"]):
            r = fido(old, env, *args, check=False)
            assert r.returncode == 1 and "does not support" in r.stderr, (args, r.stderr)
            assert len(r.stderr.strip().splitlines()) == 1
        i = info(old, env)
        assert i["always_uv"] is None and i["enterprise_attestation"] is None
        assert not any(line.startswith("Always UV:") for line in fido(old, env, "info").stdout.splitlines())
    finally:
        old.stop()


@pytest.mark.skipif(usb_unavailable_reason() is not None, reason=usb_unavailable_reason() or "")
def test_over_the_fido_hid_interface_with_python_fido2_on_hidraw():
    """The same settings through the USB route: ykterm and python-fido2 both on the key's hidraw node."""
    run = serve_usb("--interfaces", "fido", script="""
import json, os, subprocess
from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2, ClientPin
from fido2.hid import CtapHidDevice
def ykterm(*args, stdin=""):
    r = subprocess.run([os.environ["YKTERM_BIN"], "fido"] + list(args), input=stdin, capture_output=True,
                       text=True, timeout=30)
    return {"rc": r.returncode, "out": r.stdout, "err": r.stderr}
def ctap():
    return Ctap2(list(CtapHidDevice.list_devices())[0])
out = {"set": ykterm("pin", "set", stdin="hid-pin\\n"),
       "uv": ykterm("config", "toggle-always-uv", stdin="hid-pin\\n"),
       "min": ykterm("pin", "set-min-length", "8", stdin="hid-pin\\n")}
info = ctap().info
out["info"] = {"min": info.min_pin_length, "force": info.force_pin_change, "always_uv": info.options.get("alwaysUv")}
try:
    ClientPin(ctap()).get_pin_token("hid-pin")
except CtapError as e:
    out["token_error"] = e.code.name
out["verify"] = ykterm("pin", "verify", stdin="hid-pin\\n")
ClientPin(ctap()).change_pin("hid-pin", "hid-pin-2")
out["after"] = json.loads(ykterm("info", "--json")["out"])
print(json.dumps(out))
""")
    assert run.returncode == 0, run.stderr
    r = json.loads(run.stdout.strip().splitlines()[-1])
    assert r["set"]["rc"] == 0 and r["min"]["rc"] == 0 and "shorter" in r["min"]["out"], r
    assert "Always-UV is on" in r["uv"]["out"], r["uv"]
    assert r["info"] == {"min": 8, "force": True, "always_uv": True}
    assert r["token_error"] == "PIN_POLICY_VIOLATION"
    assert r["verify"]["rc"] == 1 and "wants a new PIN" in r["verify"]["err"]
    assert r["after"]["force_pin_change"] is False and r["after"]["always_uv"] is True
    assert r["after"]["min_pin_length"] == 8
