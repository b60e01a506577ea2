"""FIDO2 through pcscd (CTAP over PC/SC, as on an NFC reader), cross-checked with python-fido2 and ykman."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import run_ykman, run_ykterm

PEER = Path(__file__).with_name("fido2_peer.py")


def peer(key, env, action, *args, pin=None):
    r = subprocess.run([sys.executable, str(PEER), key.reader, action, *args], env=env, capture_output=True,
                       text=True, input=(pin + "\n") if pin is not None else "", timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def fido(key, env, *args, **kw):
    return run_ykterm("fido", *args, env=dict(env, YKTERM_READER=key.reader), **kw)


def info(key, env):
    return json.loads(fido(key, env, "info", "--json").stdout)


def test_info_json_fields(key, env):
    i = info(key, env)
    assert "FIDO_2_0" in i["versions"] and "U2F_V2" in i["versions"]
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", i["aaguid"])
    assert i["pin_set"] is False and i["options"]["clientPin"] is False
    assert i["min_pin_length"] == 4
    assert i["aaguid"].replace("-", "") == peer(key, env, "info")["aaguid"]


def test_info_text_labels_line_up_and_firmware_is_a_version(key, env):
    assert info(key, env)["firmware_version"] == "5.7.2"
    lines = fido(key, env, "info").stdout.splitlines()
    assert any(line.startswith("Room for credentials:") for line in lines)
    assert "PIN:" in "".join(lines) and any("no PIN set" in line for line in lines)
    columns = {re.match(r"^[^:]+:\s+", line).end() for line in lines}
    assert len(columns) == 1, lines
    assert any(re.fullmatch(r"Firmware:\s+5\.7\.2", line) for line in lines)


def test_pin_set_by_ykterm_works_in_python_fido2(key, env):
    fido(key, env, "pin", "set", input="4711-abc\n")
    assert info(key, env)["pin_set"] is True
    assert peer(key, env, "token", pin="4711-abc") == {"token": 32}
    assert peer(key, env, "token", pin="wrong-pin") == {"ctap_error": "PIN_INVALID"}
    assert info(key, env)["pin_retries"] == 7


def test_pin_change_old_fails_new_works(key, env):
    fido(key, env, "pin", "set", input="first-pin\n")
    r = fido(key, env, "pin", "change", input="first-pin\nsecond-pin\n")
    assert "PIN changed" in r.stdout
    assert peer(key, env, "token", pin="first-pin") == {"ctap_error": "PIN_INVALID"}
    assert peer(key, env, "token", pin="second-pin") == {"token": 32}
    assert info(key, env)["pin_retries"] == 8
    assert peer(key, env, "retries") == {"retries": 8}


def test_pin_rules_checked_before_sending(key, env):
    r = fido(key, env, "pin", "set", input="abc\n", check=False)
    assert r.returncode == 2 and "at least 4" in r.stderr
    r = fido(key, env, "pin", "set", input="x" * 64 + "\n", check=False)
    assert r.returncode == 2 and "63 bytes" in r.stderr
    assert info(key, env)["pin_set"] is False


def test_wrong_pins_count_down_and_block_until_reinsert(pcsc, key, env):
    fido(key, env, "pin", "set", input="right-pin\n")
    messages = []
    for expected in (7, 6):
        r = fido(key, env, "pin", "verify", input="bad-pin\n", check=False)
        assert r.returncode == 1
        assert f"{expected} tries left" in r.stderr
        messages.append(r.stderr)
    r = fido(key, env, "pin", "verify", input="bad-pin\n", check=False)
    assert r.returncode == 1 and "remove the key and insert it again" in r.stderr
    r = fido(key, env, "pin", "verify", input="right-pin\n", check=False)
    assert r.returncode == 1 and "remove the key and insert it again" in r.stderr
    assert info(key, env)["pin_retries"] == 5
    # Re-insert: stop and serve the same key (state file) again.
    key.stop()
    key.start()
    r = fido(key, env, "pin", "verify", input="right-pin\n")
    assert "PIN is correct (8 attempts left)" in r.stdout


def test_resident_credential_from_python_fido2_listed_and_deleted(key, env):
    fido(key, env, "pin", "set", input="cred-pin\n")
    made = peer(key, env, "make-resident", "example.org", "alice", pin="cred-pin")
    cred_id = made["credential_id"]
    listed = json.loads(fido(key, env, "credentials", "list", "--json", input="cred-pin\n").stdout)
    assert [(c["rp_id"], c["credential_id"], c["user_name"]) for c in listed] == [("example.org", cred_id, "alice")]
    # Every field, always there (null when the key has no value for it).
    assert set(listed[0]) == {"rp_id", "credential_id", "user_id", "user_name", "display_name", "cred_protect",
                              "large_blob_key"}, listed
    assert peer(key, env, "assert", "example.org") == {"credential_id": cred_id}
    r = fido(key, env, "credentials", "delete", cred_id[:12], input="cred-pin\n", check=False)
    assert r.returncode == 2  # needs --force without a terminal
    fido(key, env, "credentials", "delete", "--force", cred_id[:12], input="cred-pin\n")
    assert peer(key, env, "list-resident", pin="cred-pin") == {"credentials": []}
    assert peer(key, env, "assert", "example.org") == {"ctap_error": "NO_CREDENTIALS"}


def test_eddsa_credentials_made_and_checked_by_python_fido2(key, env):
    """The virtual key makes Ed25519 credentials as a YubiKey 5 does: python-fido2 asks for EdDSA, checks the
    self attestation, the assertion and the key credential management lists with its own fido2.cose.EdDSA."""
    assert info(key, env)["algorithms"] == [-7, -8]
    fido(key, env, "pin", "set", input="eddsa-pin\n")
    made = peer(key, env, "make-verify", "ssh:", "alice", "-8", pin="eddsa-pin")
    x = made["cose_key"].pop("-2")
    assert made["cose_class"] == "EdDSA" and made["cose_key"] == {"1": 1, "3": -8, "-1": 6} and len(x) == 64
    assert made["attestation_alg"] == -8 and made["signature_length"] == 64
    assert made["other_message"] == "InvalidSignature" and made["listed_key_same"] is True
    # In the RP's order: the first algorithm the key has.
    first_es256 = peer(key, env, "make-verify", "ssh:", "bob", "-7", "-8", pin="eddsa-pin")
    assert first_es256["cose_class"] == "ES256" and first_es256["attestation_alg"] == -7
    first_eddsa = peer(key, env, "make-verify", "ssh:", "carol", "-257", "-8", "-7", pin="eddsa-pin")
    assert first_eddsa["cose_class"] == "EdDSA" and first_eddsa["listed_key_same"] is True
    listed = json.loads(fido(key, env, "credentials", "list", "--json", input="eddsa-pin\n").stdout)
    assert sorted(c["credential_id"] for c in listed) == sorted(
        m["credential_id"] for m in (made, first_es256, first_eddsa))


def test_self_test_with_and_without_pin(key, env):
    r = fido(key, env, "test")
    assert "FIDO2 self-test passed" in r.stdout and "attestation verified" in r.stdout
    fido(key, env, "pin", "set", input="selftest-pin\n")
    r = fido(key, env, "test", input="selftest-pin\n")
    assert "deleted the test credential" in r.stdout
    assert peer(key, env, "list-resident", pin="selftest-pin") == {"credentials": []}


def test_ykman_reads_the_same_state(key, env):
    fido(key, env, "pin", "set", input="ykman-pin\n")
    fido(key, env, "pin", "verify", input="nope-nope\n", check=False)
    out = run_ykman(key.reader, "fido", "info", env=env).stdout
    pin_line = next(line for line in out.splitlines() if line.startswith("PIN"))
    assert "7" in pin_line, out
    assert info(key, env)["pin_retries"] == 7


def test_pin_changed_by_ykman_works_in_ykterm(key, env):
    fido(key, env, "pin", "set", input="before-ykman\n")
    run_ykman(key.reader, "fido", "access", "change-pin", "--pin", "before-ykman", "--new-pin", "after-ykman",
              env=env)
    r = fido(key, env, "pin", "verify", input="after-ykman\n")
    assert "PIN is correct" in r.stdout
    r = fido(key, env, "pin", "verify", input="before-ykman\n", check=False)
    assert r.returncode == 1 and "wrong PIN" in r.stderr


def test_reset_within_window(key, env):
    fido(key, env, "pin", "set", input="reset-pin\n")
    key.stop()
    key.start()
    r = fido(key, env, "reset", "--force")
    assert "reset" in r.stdout
    assert info(key, env)["pin_set"] is False


def test_pin_never_from_argv():
    for args in (["fido", "pin", "set", "1234"], ["fido", "pin", "set", "--pin", "1234"],
                 ["oath", "password", "set", "--password", "pw"]):
        r = run_ykterm(*args, check=False)
        assert r.returncode == 2, args


def test_u2f_both_ways_with_python_fido2(key, env):
    app = "https://u2f.example"
    theirs = peer(key, env, "u2f-register", app)
    r = run_ykterm("u2f", "sign", "--reader", key.reader, "--app-id", app, "--key-handle", theirs["key_handle"],
                   "--public-key", theirs["public_key"], "--json", env=env)
    first = json.loads(r.stdout)["counter"]
    ours = json.loads(run_ykterm("u2f", "register", "--reader", key.reader, "--app-id", app, "--json",
                                 env=env).stdout)
    assert peer(key, env, "u2f-sign", app, ours["key_handle"], ours["public_key"])["counter"] > first
    r = run_ykterm("u2f", "sign", "--reader", key.reader, "--app-id", "https://other.example", "--key-handle",
                   ours["key_handle"], "--public-key", ours["public_key"], env=env, check=False)
    assert r.returncode == 1 and "does not know this credential" in r.stderr
