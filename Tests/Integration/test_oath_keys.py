"""Every key at once, on the command line: keys with names (`key name`, `--device NAME`, `list`), one OATH list
and one set of codes across the keys plugged in, an account added to several keys in one step (checked with
ykman and pyotp on each key, a full key named while the others take it), and `oath diff` against what ykman put
on one key only."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pyotp
import pytest

from harness import ServedKey, run_ykman, run_ykterm, wait_until

PEER = Path(__file__).with_name("fido2_peer.py")

SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
URI = f"otpauth://totp/Backup%20Test:alice@example.com?secret={SECRET}&issuer=Backup%20Test"


def two_keys(pcsc, tmp_path, firmware_b=None, extra_b=()):
    a = ServedKey(pcsc, slot=0, serial=41000001, state=tmp_path / "a.json").start()
    extra = tuple(extra_b) + (("--firmware", firmware_b) if firmware_b else ())
    b = ServedKey(pcsc, slot=1, serial=41000002, state=tmp_path / "b.json", extra=extra).start()
    # Both keys answer before the test starts: vpcd powers its readers' cards up again for a moment after the
    # second one arrives (a command sent to both at once in that moment found both cards reset).
    wait_until(lambda: sorted(k.get("serial") or 0 for k in json.loads(
        run_ykterm("list", "--json", env=pcsc.env(), check=False).stdout or "[]")) == [41000001, 41000002],
        10, "both keys answering")
    return a, b


@pytest.fixture
def env(pcsc, tmp_path):
    """The key names of each test its own: a HOME of its own."""
    home = tmp_path / "home"
    home.mkdir()
    return pcsc.env(HOME=str(home))


def peer(key, env, action, *args, pin=None):
    """python-fido2 on one key (fido2_peer.py): the PIN on standard input, never in argv."""
    r = subprocess.run([sys.executable, str(PEER), key.reader, action, *args], env=env, capture_output=True,
                       text=True, input=(pin + "\n") if pin is not None else "", timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def ykman_code(key, env, account):
    out = run_ykman(key.reader, "oath", "accounts", "code", "-s", account, env=env).stdout.strip()
    return out


def test_names_are_taken_by_device_and_shown_by_list(pcsc, env, tmp_path):
    a, b = two_keys(pcsc, tmp_path)
    assert "is now \"daily\"" in run_ykterm("key", "name", "41000001", "daily", env=env).stdout
    run_ykterm("key", "name", "41000002", "backup", env=env)
    # A name is one key's; digits only would read as a serial number.
    taken = run_ykterm("key", "name", "41000002", "Daily", env=env, check=False)
    assert taken.returncode == 1 and "41000001 already has this name" in taken.stderr, taken.stderr
    digits = run_ykterm("key", "name", "41000002", "1234", env=env, check=False)
    assert digits.returncode == 2 and "digits only" in digits.stderr, digits.stderr
    listed = run_ykterm("list", env=env).stdout
    assert re.search(r"'daily', serial 41000001", listed) and re.search(r"'backup', serial 41000002", listed), listed
    rows = {k["serial"]: k for k in json.loads(run_ykterm("list", "--json", env=env).stdout)}
    assert rows[41000001]["key_name"] == "daily" and rows[41000002]["key_name"] == "backup"
    # --device NAME picks that key (the account ykman put on backup only is seen there only).
    run_ykman(b.reader, "oath", "accounts", "add", "OnlyOnBackup", SECRET, env=env)
    assert "OnlyOnBackup" in run_ykterm("oath", "list", "--device", "backup", env=env).stdout
    assert "OnlyOnBackup" not in run_ykterm("oath", "list", "--device", "daily", env=env).stdout
    unknown = run_ykterm("oath", "list", "--device", "spare", env=env, check=False)
    assert unknown.returncode == 2 and 'no key is named "spare"' in unknown.stderr, unknown.stderr
    assert "no longer \"backup\"" in run_ykterm("key", "forget", "backup", env=env).stdout
    assert json.loads(run_ykterm("key", "names", "--json", env=env).stdout) == [{"serial": 41000001, "name": "daily"}]


def test_add_to_all_keys_list_and_codes_across_keys_and_diff(pcsc, env, tmp_path):
    a, b = two_keys(pcsc, tmp_path)
    run_ykterm("key", "name", "41000001", "daily", env=env)
    run_ykterm("key", "name", "41000002", "backup", env=env)
    added = run_ykterm("oath", "add", "--all-keys", URI, env=env)
    assert "Added Backup Test:alice@example.com to daily" in added.stdout
    assert "Added Backup Test:alice@example.com to backup" in added.stdout
    # Each key gives pyotp's code for the secret (ykman asks each key; a code at a period's edge is asked again).
    for key in (a, b):
        for _ in range(2):
            line = ykman_code(key, env, "Backup Test:alice@example.com")
            code = line.split()[-1]
            if code == pyotp.TOTP(SECRET).now():
                break
        assert code == pyotp.TOTP(SECRET).now(), (key.reader, line)

    # The same: nothing differs.
    same = run_ykterm("oath", "diff", env=env, check=False)
    assert same.returncode == 0 and "daily and backup hold the same 1 accounts" in same.stdout, same.stdout
    assert "secrets cannot be read" in same.stderr
    # An account ykman puts on daily only, and one set up differently on each.
    run_ykman(a.reader, "oath", "accounts", "add", "-i", "Daily Only", "bob", SECRET, env=env)
    run_ykman(a.reader, "oath", "accounts", "add", "-i", "Mixed", "carol", "-d", "6", SECRET, env=env)
    run_ykman(b.reader, "oath", "accounts", "add", "-i", "Mixed", "carol", "-d", "8", SECRET, env=env)
    diff = run_ykterm("oath", "diff", "daily", "backup", env=env, check=False)
    assert diff.returncode == 1, diff
    assert "Daily Only:bob: only on daily, not on backup" in diff.stdout, diff.stdout
    assert re.search(r"Mixed:carol: set up differently \(digits 6 / 8\)", diff.stdout), diff.stdout
    data = json.loads(run_ykterm("oath", "diff", "--json", env=env, check=False).stdout)
    assert data["only_a"] == ["Daily Only:bob"] and data["only_b"] == []
    assert data["differing"] == [{"id": "Mixed:carol", "settings": [{"setting": "digits", "a": "6", "b": "8"}]}]
    assert [k["name"] for k in data["keys"]] == ["daily", "backup"]

    # One list across the keys: each account once, with the keys that hold it.
    listed = run_ykterm("oath", "list", "--all-keys", env=env).stdout
    assert listed.count("Backup Test:alice@example.com") == 1
    assert re.search(r"Daily Only:bob\s+daily\s+\(not on backup\)", listed), listed
    assert re.search(r"Backup Test:alice@example.com\s+daily · backup\n", listed), listed
    codes = json.loads(run_ykterm("oath", "code", "--all-keys", "--json", env=env).stdout)
    by_id = {c["id"]: c for c in codes}
    assert by_id["Daily Only:bob"]["keys"] == [{"serial": 41000001, "name": "daily"}]
    assert by_id["Backup Test:alice@example.com"]["keys"] == [
        {"serial": 41000001, "name": "daily"}, {"serial": 41000002, "name": "backup"}]
    assert by_id["Backup Test:alice@example.com"]["code"] in {pyotp.TOTP(SECRET).now(),
                                                              pyotp.TOTP(SECRET).at(by_id["Backup Test:alice@example.com"]["valid_from"])}
    # Same name, different secrets: the codes tell.
    run_ykman(b.reader, "oath", "accounts", "add", "-f", "-i", "Daily Only", "bob", "GEZDGNBVGY3TQOJQ", env=env)
    warned = run_ykterm("oath", "code", "--all-keys", "bob", env=env)
    assert "Daily Only:bob: the keys daily, backup give different codes" in warned.stderr, warned.stderr


def test_a_full_key_is_named_and_the_others_take_the_account(pcsc, env, tmp_path):
    # Firmware 5.4 holds 32 accounts; this one has them all.
    a, b = two_keys(pcsc, tmp_path, firmware_b="5.4.3", extra_b=("--accounts", "32"))
    run_ykterm("key", "name", "41000002", "full", env=env)
    r = run_ykterm("oath", "add", "--device", "41000001,full", URI, env=env, check=False)
    assert r.returncode == 1, r
    assert "Added Backup Test:alice@example.com to 41000001" in r.stdout, r.stdout
    assert "full: the key has no room for another account" in r.stderr, r.stderr
    assert "Backup Test:alice@example.com" in run_ykman(a.reader, "oath", "accounts", "list", env=env).stdout
    assert "Backup Test" not in run_ykman(b.reader, "oath", "accounts", "list", env=env).stdout


def test_fido_pin_change_on_every_key_one_prompt_each(pcsc, env, tmp_path):
    a, b = two_keys(pcsc, tmp_path)
    run_ykterm("key", "name", "41000001", "daily", env=env)
    run_ykterm("fido", "pin", "set", "--device", "daily", env=env, input="daily-pin-1\n")
    run_ykterm("fido", "pin", "set", "--device", "41000002", env=env, input="backup-pin-1\n")
    # One current and one new PIN per key, in the order the keys are found (their readers).
    r = run_ykterm("fido", "pin", "change", "--all-keys", env=env,
                   input="daily-pin-1\ndaily-pin-2\nbackup-pin-1\nbackup-pin-2\n")
    assert "Changed the FIDO2 PIN of daily" in r.stdout and "Changed the FIDO2 PIN of 41000002" in r.stdout, r
    for device, pin in (("daily", "daily-pin-2"), ("41000002", "backup-pin-2")):
        ok = run_ykterm("fido", "pin", "verify", "--device", device, env=env, input=pin + "\n", check=False)
        assert ok.returncode == 0, (device, ok.stderr)
    # A wrong current PIN on one key is named; the other key's PIN still changes.
    r = run_ykterm("fido", "pin", "change", "--all-keys", env=env, check=False,
                   input="not-the-pin\nx-pin-3\nbackup-pin-2\nbackup-pin-3\n")
    assert r.returncode == 1 and "daily:" in r.stderr and "Changed the FIDO2 PIN of 41000002" in r.stdout, r
    assert run_ykterm("fido", "pin", "verify", "--device", "41000002", env=env, input="backup-pin-3\n",
                      check=False).returncode == 0


def test_delete_and_rename_on_every_key_that_holds_the_account(pcsc, env, tmp_path):
    a, b = two_keys(pcsc, tmp_path)
    run_ykterm("key", "name", "41000002", "backup", env=env)
    run_ykterm("oath", "add", "--all-keys", URI, env=env)
    run_ykman(a.reader, "oath", "accounts", "add", "-i", "Solo", "dave", SECRET, env=env)
    # Rename: on both keys; the account on one key only is said to be missing on the other.
    r = run_ykterm("oath", "rename", "--all-keys", "Backup Test:alice", "Renamed:alice", env=env)
    assert "on 41000001" in r.stdout and "on backup" in r.stdout, r
    for key in (a, b):
        assert "Renamed:alice" in run_ykman(key.reader, "oath", "accounts", "list", env=env).stdout
    solo = run_ykterm("oath", "rename", "--all-keys", "Solo:dave", "Solo:erin", env=env)
    assert "backup holds no account matching Solo:dave" in solo.stderr, solo
    # Delete: one question naming the keys that hold it (without a terminal: --force), then gone from both.
    refused = run_ykterm("oath", "delete", "--all-keys", "Renamed:alice", env=env, check=False)
    assert refused.returncode != 0
    r = run_ykterm("oath", "delete", "--all-keys", "--force", "Renamed:alice", env=env)
    assert "Deleted Renamed:alice from 41000001" in r.stdout and "Deleted Renamed:alice from backup" in r.stdout
    for key in (a, b):
        assert "Renamed" not in run_ykman(key.reader, "oath", "accounts", "list", env=env).stdout
    assert "Solo:erin" in run_ykman(a.reader, "oath", "accounts", "list", env=env).stdout


def test_fido_credentials_of_every_key_by_relying_party(pcsc, env, tmp_path):
    a, b = two_keys(pcsc, tmp_path)
    run_ykterm("key", "name", "41000001", "daily", env=env)
    run_ykterm("key", "name", "41000002", "backup", env=env)
    run_ykterm("fido", "pin", "set", "--device", "daily", env=env, input="daily-pin-1\n")
    run_ykterm("fido", "pin", "set", "--device", "backup", env=env, input="backup-pin-1\n")
    # python-fido2 makes the passkeys: one relying party on both keys, one on daily only.
    shared_a = peer(a, env, "make-resident", "shared.example", "alice", pin="daily-pin-1")["credential_id"]
    shared_b = peer(b, env, "make-resident", "shared.example", "alice", pin="backup-pin-1")["credential_id"]
    only_a = peer(a, env, "make-resident", "daily-only.example", "bob", pin="daily-pin-1")["credential_id"]

    # One PIN per key, in the order the keys are found; each relying party once, with the keys that hold it.
    r = run_ykterm("fido", "credentials", "list", "--all-keys", env=env, input="daily-pin-1\nbackup-pin-1\n")
    assert re.search(r"^shared\.example\s+daily · backup$", r.stdout, re.M), r.stdout
    assert re.search(r"^daily-only\.example\s+daily  \(not on backup\)$", r.stdout, re.M), r.stdout
    assert r.stdout.count("shared.example") == 1, r.stdout
    assert f"alice  id {shared_a}  on daily" in r.stdout and f"alice  id {shared_b}  on backup" in r.stdout
    assert f"bob  id {only_a}  on daily" in r.stdout
    for pin in ("daily-pin-1", "backup-pin-1"):
        assert pin not in r.stdout + r.stderr

    data = json.loads(run_ykterm("fido", "credentials", "list", "--all-keys", "--json", env=env,
                                 input="daily-pin-1\nbackup-pin-1\n").stdout)
    by_rp = {p["rp_id"]: p for p in data}
    assert sorted(by_rp) == ["daily-only.example", "shared.example"]
    daily, backup = {"serial": 41000001, "name": "daily"}, {"serial": 41000002, "name": "backup"}
    assert by_rp["shared.example"]["keys"] == [daily, backup] and by_rp["shared.example"]["not_on"] == []
    assert [(c["credential_id"], c["key"]) for c in by_rp["shared.example"]["credentials"]] == [
        (shared_a, daily), (shared_b, backup)]
    assert by_rp["daily-only.example"]["keys"] == [daily] and by_rp["daily-only.example"]["not_on"] == [backup]
    # Each credential has every field of one key's list, then its key.
    assert set(by_rp["daily-only.example"]["credentials"][0]) == {
        "rp_id", "credential_id", "user_id", "user_name", "display_name", "cred_protect", "large_blob_key", "key"}
    assert by_rp["shared.example"]["rp_name"] == "shared.example"

    # A wrong PIN on one key is named (with the tries left); the other key's credentials are still listed.
    r = run_ykterm("fido", "credentials", "list", "--all-keys", env=env, check=False,
                   input="daily-pin-1\nnot-the-pin\n")
    assert r.returncode == 1 and re.search(r"backup: .*\b7\b", r.stderr), r
    assert "daily-only.example" in r.stdout and "backup" not in r.stdout, r.stdout
    # --all-keys names no key: beside --device it is refused.
    refused = run_ykterm("fido", "credentials", "list", "--all-keys", "--device", "daily", env=env, check=False)
    assert refused.returncode == 2 and "--all-keys works on every key plugged in" in refused.stderr, refused


def test_fido_credentials_of_every_key_name_a_key_without_a_pin(pcsc, env, tmp_path):
    a, b = two_keys(pcsc, tmp_path)
    run_ykterm("key", "name", "41000002", "backup", env=env)
    run_ykterm("fido", "pin", "set", "--device", "41000001", env=env, input="daily-pin-1\n")
    made = peer(a, env, "make-resident", "example.org", "alice", pin="daily-pin-1")["credential_id"]
    # Backup has no PIN: it is named and left out, and asks for nothing (one line of standard input is enough).
    r = run_ykterm("fido", "credentials", "list", "--all-keys", env=env, input="daily-pin-1\n")
    assert "backup has no FIDO2 PIN: its credentials cannot be listed" in r.stderr, r
    assert re.search(r"^example\.org\s+41000001$", r.stdout, re.M) and made in r.stdout, r.stdout
