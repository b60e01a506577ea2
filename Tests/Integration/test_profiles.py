"""Virtual key profiles through pcscd: keys of other makes that speak the same protocols.

strict-le answers a command without Le 61xx and no data, every time, as a key of another make does; data
goes only to commands that carry Le. ykterm must work with it as with a YubiKey, at full speed; ykman (which
sends Le where a command has no data field) reads the same accounts as an independent client.
"""

import base64
import json
import re
import time

import pyotp
import pytest

from harness import ServedKey, run_ykman, run_ykterm

ACCOUNTS = 12


def secret(i):
    """A 20-byte Base32 secret per account (pyotp wants 16+ bytes)."""
    return base64.b32encode(bytes((i * 37 + j * 11 + 3) % 256 for j in range(20))).decode()


def account_id(i):
    return f"Vendor {i:02d}:user{i}@example.org"


@pytest.fixture
def strict_key(pcsc, tmp_path):
    k = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=("--profile", "strict-le", "--log-apdus")).start()
    yield k
    k.stop()


@pytest.fixture
def env(pcsc, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return pcsc.env(HOME=home, XDG_CONFIG_HOME=home / ".config", YKTERM_READER=pcsc.READER0)


def apdu_headers(key):
    """The command headers the served key logged: [(CLA INS P1 P2, bytes after the header)]."""
    return [(m.group(1), int(m.group(2)))
            for m in re.finditer(r"apdu ((?:[0-9A-F]{2} ){3}[0-9A-F]{2}) \+(\d+)", key.log_path.read_text())]


def test_the_served_key_says_which_profile_it_has(strict_key):
    deadline = time.monotonic() + 5
    while "profile strict-le" not in strict_key.log_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "profile strict-le" in strict_key.log_path.read_text()


def test_unknown_profile_is_refused_with_the_known_names(pcsc):
    r = run_ykterm("virtual-key", "serve", "--vpcd", f"127.0.0.1:{pcsc.port}", "--profile", "other", check=False)
    assert r.returncode == 2
    assert 'unknown virtual key profile "other": use one of yubikey, strict-le, no-management' in r.stderr


def test_oath_add_list_and_code_with_12_accounts_on_a_strict_le_key(strict_key, env, tmp_path):
    started = time.monotonic()
    for i in range(ACCOUNTS):
        issuer, name = account_id(i).split(":")
        run_ykterm("oath", "add", "--issuer", issuer, "--name", name, "--secret", "-", env=env,
                   input=secret(i) + "\n", timeout=30)
    added = time.monotonic() - started

    listed = run_ykterm("oath", "list", env=env, timeout=30).stdout.splitlines()
    assert sorted(listed) == sorted(account_id(i) for i in range(ACCOUNTS))

    before = int(time.time())
    codes = {e["id"]: e for e in json.loads(run_ykterm("oath", "code", "--json", env=env, timeout=30).stdout)}
    after = int(time.time())
    assert sorted(codes) == sorted(account_id(i) for i in range(ACCOUNTS))
    for i in range(ACCOUNTS):
        totp = pyotp.TOTP(secret(i))
        assert codes[account_id(i)]["code"] in {totp.at(before), totp.at(after)}, account_id(i)
    # Nothing waits for thousands of rounds: 12 adds, a list and the codes take seconds, not minutes.
    assert added < 30 and time.monotonic() - started < 60

    # Every LIST, CALCULATE ALL and SEND REMAINING that ykterm sent carried Le (one byte after the
    # header for LIST and SEND REMAINING; Lc, data and Le for CALCULATE ALL).
    headers = apdu_headers(strict_key)
    lists = [n for h, n in headers if h == "00 A1 00 00"]
    remaining = [n for h, n in headers if h == "00 A5 00 00"]
    calculate_all = [n for h, n in headers if h == "00 A4 00 01"]
    assert lists and calculate_all and remaining
    assert set(lists) == {1} and set(remaining) == {1} and set(calculate_all) == {1 + 10 + 1}

    # ykman, an independent client, reads the same accounts and codes from the same key.
    ykman_list = run_ykman(strict_key.reader, "oath", "accounts", "list", env=env).stdout.splitlines()
    assert sorted(ykman_list) == sorted(account_id(i) for i in range(ACCOUNTS))
    before = int(time.time())
    out = run_ykman(strict_key.reader, "oath", "accounts", "code", env=env).stdout
    after = int(time.time())
    for i in range(ACCOUNTS):
        m = re.search(re.escape(account_id(i)) + r"\s+(\d{6})$", out, re.M)
        assert m, out
        assert m.group(1) in {pyotp.TOTP(secret(i)).at(before), pyotp.TOTP(secret(i)).at(after)}


def test_trace_of_a_strict_le_list_has_one_label_per_exchange(pcsc, env, tmp_path):
    # 40 accounts: LIST and CALCULATE ALL come in several parts each, so a label nested once per round
    # would show.
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json",
                    extra=("--profile", "strict-le", "--accounts", "40")).start()
    try:
        trace = tmp_path / "trace.log"
        listed = run_ykterm("oath", "list", env=dict(env, YKTERM_LOG=str(trace)), timeout=30).stdout.splitlines()
        assert len(listed) == 40
    finally:
        key.stop()
    lines = trace.read_text().splitlines()
    fetches = [line for line in lines if "> 00A5000000" in line]
    assert len(fetches) >= 4, lines
    assert all(re.search(r"SEND REMAINING \(OATH (LIST|CALCULATE ALL)\)$", line) for line in fetches), fetches
    assert not any("SEND REMAINING (SEND REMAINING" in line for line in lines)
    assert len(trace.read_bytes()) < 64 * 1024


def test_a_key_without_management_is_identified_by_probing(pcsc, env, tmp_path):
    """Another make's key with no Management application: list says what probing found (the applications
    that answer SELECT, the version from the OTP application, the serial it gives), and OATH works."""
    key = ServedKey(pcsc, slot=0, serial=44332211, state=tmp_path / "key.json", extra=("--profile", "no-management")).start()
    try:
        listed = json.loads(run_ykterm("list", "--json", "--reader", key.reader, env=env).stdout)
        assert len(listed) == 1, listed
        k = listed[0]
        assert k["from_management"] is False and k["serial"] == 44332211 and k["version"] == "5.7.2", k
        assert {"OTP", "FIDO2", "OATH"} <= set(k["applications"]), k
        # The applets are there all the same: an account added is read back with its code.
        run_ykterm("oath", "add", "--issuer", "Probe", "--name", "me", "--secret", "-", env=env,
                   input=secret(1) + "\n")
        codes = {e["id"]: e for e in json.loads(run_ykterm("oath", "code", "--json", env=env).stdout)}
        assert codes["Probe:me"]["code"] == pyotp.TOTP(secret(1)).at(codes["Probe:me"]["valid_from"])
    finally:
        key.stop()


def test_ndef_in_another_file_is_found_through_the_capability_container(pcsc, env, tmp_path):
    """A tag whose NDEF message is in E105: the capability container names it, and ykterm reads it there
    (a client that assumed E104 would find no file)."""
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=("--profile", "ndef-elsewhere")).start()
    try:
        read = json.loads(run_ykterm("otp", "read", "--json", env=env).stdout)
        # The key really has no E104: SELECT of it fails, E105 is there.
        raw = run_ykterm("apdu", "00A4040007D2760000850101", "00A4000C02E104", "00A4000C02E105",
                         env=env).stdout.splitlines()
    finally:
        key.stop()
    assert [line.split()[0] for line in raw if line.startswith("SW=")] == ["SW=9000", "SW=6A82", "SW=9000"], raw
    assert read["type"] == "yubico-otp", read
    assert re.fullmatch(r"[cbdefghijklnrtuv]{44}", read["otp"]), read
    assert [r["type"] for r in read["records"]] == ["uri"], read
    assert read["records"][0]["value"].endswith("#" + read["otp"]), read


@pytest.fixture
def basic_key(pcsc, tmp_path):
    k = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=("--profile", "oath-basic")).start()
    yield k
    k.stop()


@pytest.mark.parametrize("command,what,sw", [
    (("oath", "reset", "--force"), "OATH reset", "6D00"),
    (("oath", "rename", "Vendor 00:user0@example.org", "Vendor 00:other"), "renaming accounts", "6A81"),
    (("oath", "password", "set"), "an OATH password", "6E00"),
])
def test_optional_oath_commands_a_key_lacks_are_named_and_nothing_is_lost(basic_key, env, command, what, sw):
    issuer, name = account_id(0).split(":")
    run_ykterm("oath", "add", "--issuer", issuer, "--name", name, "--secret", "-", env=env, input=secret(0) + "\n")
    r = run_ykterm(*command, env=env, input="pass1234\npass1234\n", check=False)
    assert r.returncode != 0
    assert f"This key does not support {what}" in r.stderr, r.stderr
    assert sw in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "Fatal" not in r.stderr
    # The account is still there and still gives the right code, without a password.
    before = int(time.time())
    codes = json.loads(run_ykterm("oath", "code", "--json", env=env).stdout)
    after = int(time.time())
    assert [c["id"] for c in codes] == [account_id(0)]
    assert codes[0]["code"] in {pyotp.TOTP(secret(0)).at(before), pyotp.TOTP(secret(0)).at(after)}
