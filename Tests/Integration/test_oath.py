"""OATH end to end through pcscd, cross-checked with ykman and pyotp."""

import base64
import hashlib
import hmac
import json
import os
import re
import stat
import struct
import time

import pyotp
import pytest

from harness import run_ykman, run_ykterm

SECRET_A = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"   # 20 bytes: pyotp wants 16+ byte secrets
SECRET_B = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
SECRET_C = "MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U"
SECRET_D = "ONSWG4TFOQQGC3TEEBYGC43TO5XXEZDT"


@pytest.fixture
def env(pcsc, tmp_path):
    """Own HOME and config directory per test: remembered passwords of ykterm and ykman stay here."""
    home = tmp_path / "home"
    home.mkdir()
    return pcsc.env(HOME=home, XDG_CONFIG_HOME=home / ".config")


def yk(key, env, *args, **kw):
    return run_ykterm(*args, "--reader", key.reader, env=env, **kw) if args[0] != "oath" else \
        run_ykterm(*args, env=dict(env, YKTERM_READER=key.reader), **kw)


def ykman(key, env, *args, **kw):
    return run_ykman(key.reader, "oath", *args, env=env, **kw)


def codes_json(key, env, *query, stdin=None):
    return {e["id"]: e for e in json.loads(yk(key, env, "oath", "code", "--json", *query, input=stdin).stdout)}


def totp(secret, digits=6, digest=hashlib.sha1, period=30):
    return pyotp.TOTP(secret, digits=digits, digest=digest, interval=period)


def ykman_codes(key, env, *extra):
    out = ykman(key, env, "accounts", "code", *extra).stdout
    result = {}
    for line in out.splitlines():
        m = re.match(r"^(.*\S)\s+(\S+)$", line)
        if m:
            result[m.group(1)] = m.group(2)
    return result


def steam_code(secret_b32, t):
    """Steam Guard code computed here, independently of ykterm."""
    key = base64.b32decode(secret_b32)
    mac = hmac.new(key, struct.pack(">Q", t // 30), hashlib.sha1).digest()
    offset = mac[-1] & 0x0F
    value = struct.unpack(">I", mac[offset:offset + 4])[0] & 0x7FFFFFFF
    alphabet = "23456789BCDFGHJKMNPQRTVWXY"
    out = ""
    for _ in range(5):
        out += alphabet[value % 26]
        value //= 26
    return out


def test_accounts_added_by_ykman_are_calculated_by_ykterm(key, env):
    ykman(key, env, "accounts", "add", "-i", "Example", "alice@example.com", SECRET_A)
    ykman(key, env, "accounts", "add", "-i", "Wide", "-a", "SHA256", "-d", "8", "bob", SECRET_B)
    ykman(key, env, "accounts", "add", "-i", "Slow", "-P", "60", "carol", SECRET_C)
    ykman(key, env, "accounts", "add", "-o", "HOTP", "-i", "Counter", "dave", SECRET_D)
    before = int(time.time())
    codes = codes_json(key, env)
    after = int(time.time())
    assert set(codes) == {"Example:alice@example.com", "Wide:bob", "60/Slow:carol", "Counter:dave"}
    a = codes["Example:alice@example.com"]
    assert (a["issuer"], a["name"], a["type"], a["algorithm"], a["digits"], a["period"], a["touch"]) == \
        ("Example", "alice@example.com", "totp", "SHA1", 6, 30, False)
    assert a["valid_from"] <= after and a["valid_to"] >= before and a["valid_to"] - a["valid_from"] == 30
    assert a["code"] == totp(SECRET_A).at(a["valid_from"])
    b = codes["Wide:bob"]
    assert (b["algorithm"], b["digits"]) == ("SHA256", 8)
    assert b["code"] == totp(SECRET_B, 8, hashlib.sha256).at(b["valid_from"])
    c = codes["60/Slow:carol"]
    assert c["period"] == 60 and c["valid_to"] - c["valid_from"] == 60 and c["valid_from"] % 60 == 0
    assert c["code"] == totp(SECRET_C, period=60).at(c["valid_from"])
    d = codes["Counter:dave"]
    assert d["type"] == "hotp" and d["code"] is None and d["valid_to"] is None
    # A query that leaves the HOTP account alone calculates it, and the counter advances.
    first = codes_json(key, env, "dave")["Counter:dave"]["code"]
    second = codes_json(key, env, "dave")["Counter:dave"]["code"]
    assert (first, second) == (pyotp.HOTP(SECRET_D).at(0), pyotp.HOTP(SECRET_D).at(1))


def test_accounts_added_by_ykterm_are_calculated_by_ykman(key, env):
    add = lambda *a, **kw: yk(key, env, "oath", "add", *a, **kw)
    add("--issuer", "T30", "--name", "one", "--secret", "-", input=SECRET_A + "\n")
    add("--issuer", "T60", "--name", "two", "--secret", "-", "--period", "60", input=SECRET_B + "\n")
    add("--issuer", "S256", "--name", "three", "--secret", "-", "--algorithm", "SHA256", input=SECRET_C + "\n")
    add("--issuer", "S512", "--name", "four", "--secret", "-", "--algorithm", "SHA512", "--digits", "8",
        input=SECRET_D + "\n")
    add("-", input=f"otpauth://hotp/H:five?secret={SECRET_A}&counter=5&issuer=H\n")
    expected = {
        "T30:one": lambda t: totp(SECRET_A).at(t),
        "60/T60:two": lambda t: totp(SECRET_B, period=60).at(t),
        "S256:three": lambda t: totp(SECRET_C, digest=hashlib.sha256).at(t),
        "S512:four": lambda t: totp(SECRET_D, 8, hashlib.sha512).at(t),
    }
    before = int(time.time())
    seen = ykman_codes(key, env)
    after = int(time.time())
    for name, fn in expected.items():
        assert name in seen, seen
        assert seen[name] in {fn(before), fn(after)}, (name, seen)
    listed = ykman(key, env, "accounts", "list").stdout.split()
    assert "H:five" in listed
    hotp = ykman_codes(key, env, "H:five")
    assert hotp["H:five"] == pyotp.HOTP(SECRET_A).at(5)


def test_code_and_list_sort_as_the_tui_does_not_in_the_keys_order(key, env):
    # Added by ykman in an order that is neither sorted nor reversed; an account without issuer sorts by name.
    for name in ("zed:amy", "Beta:carol", "alpha:bob", "Carl", "beta:Anne"):
        ykman(key, env, "accounts", "add", "--force", name, SECRET_A)
    expected = ["alpha:bob", "beta:Anne", "Beta:carol", "Carl", "zed:amy"]
    code_lines = yk(key, env, "oath", "code").stdout.splitlines()
    assert [line.split()[0] for line in code_lines] == expected, code_lines
    assert [e["id"] for e in json.loads(yk(key, env, "oath", "code", "--json").stdout)] == expected
    assert [line.split()[0] for line in yk(key, env, "oath", "list").stdout.splitlines()] == expected


def test_secret_on_argv_warns_and_uri_argument_works(key, env):
    r = yk(key, env, "oath", "add", "--name", "argv", "--secret", SECRET_A)
    assert "visible to other users" in r.stderr
    r = yk(key, env, "oath", "add", f"otpauth://totp/URI:acct?secret={SECRET_B}&issuer=URI&digits=7")
    assert "visible to other users" in r.stderr
    codes = codes_json(key, env)
    assert codes["URI:acct"]["digits"] == 7
    assert codes["URI:acct"]["code"] == totp(SECRET_B, 7).at(codes["URI:acct"]["valid_from"])


def test_overwrite_needs_force_when_not_a_terminal(key, env):
    yk(key, env, "oath", "add", "--name", "dup", "--secret", "-", input=SECRET_A + "\n")
    r = yk(key, env, "oath", "add", "--name", "dup", "--secret", "-", input=SECRET_B + "\n", check=False)
    assert r.returncode == 1 and "already exists" in r.stderr
    assert codes_json(key, env)["dup"]["code"] == totp(SECRET_A).at(codes_json(key, env)["dup"]["valid_from"])
    yk(key, env, "oath", "add", "--force", "--name", "dup", "--secret", "-", input=SECRET_B + "\n")
    c = codes_json(key, env)["dup"]
    assert c["code"] == totp(SECRET_B).at(c["valid_from"])


def test_password_set_by_ykman_unlocks_ykterm_and_back(key, env):
    ykman(key, env, "accounts", "add", "-i", "Locked", "acct", SECRET_A)
    ykman(key, env, "access", "change", "-n", "correct horse")
    r = yk(key, env, "oath", "list", check=False, input="")
    assert r.returncode == 1 and "ended before Password" in r.stderr
    r = yk(key, env, "oath", "list", check=False, input="wrong\n")
    assert r.returncode == 1 and "wrong OATH password" in r.stderr
    assert yk(key, env, "oath", "list", input="correct horse\n").stdout.split() == ["Locked:acct"]
    # ykterm changes it; ykman needs the new one.
    yk(key, env, "oath", "password", "change", input="correct horse\nbattery staple\n")
    r = ykman(key, env, "accounts", "list", "-p", "correct horse", check=False)
    assert r.returncode != 0
    assert "Locked:acct" in ykman(key, env, "accounts", "list", "-p", "battery staple").stdout
    # Clear with ykterm: ykman needs none.
    yk(key, env, "oath", "password", "clear", input="battery staple\n")
    assert "Locked:acct" in ykman(key, env, "accounts", "list").stdout


def test_password_set_by_ykterm_and_remembered(key, env):
    yk(key, env, "oath", "add", "--name", "x", "--secret", "-", input=SECRET_A + "\n")
    yk(key, env, "oath", "password", "set", "--remember", input="s3cret\n")
    assert "x" in ykman(key, env, "accounts", "list", "-p", "s3cret").stdout
    store = os.path.join(env["XDG_CONFIG_HOME"], "ykterm", "oath-keys.json")
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o600
    assert "s3cret" not in open(store).read()
    # Remembered: no password needed now.
    assert yk(key, env, "oath", "list", input="").stdout.split() == ["x"]
    yk(key, env, "oath", "password", "forget")
    r = yk(key, env, "oath", "list", input="", check=False)
    assert r.returncode == 1


def test_info_and_remember_agree_with_ykman(key, env):
    # Without a password: ykman's oath info and ykterm's say the same.
    said = ykman(key, env, "info").stdout
    version = re.search(r"^OATH version:\s+(\S+)$", said, re.M).group(1)
    assert re.search(r"^Password protection:\s+disabled$", said, re.M), said
    assert json.loads(yk(key, env, "oath", "info", "--json").stdout) == \
        {"version": version, "password": False, "remembered": False}
    assert yk(key, env, "oath", "info").stdout == f"OATH version: {version}\nPassword: none\n"
    r = yk(key, env, "oath", "password", "remember", input="anything\n", check=False)
    assert r.returncode == 1 and "the key has no password: there is nothing to remember" in r.stderr, r.stderr
    # ykman sets a password: both say so.
    ykman(key, env, "accounts", "add", "-i", "Locked", "acct", SECRET_A)
    ykman(key, env, "access", "change", "-n", "correct horse")
    assert re.search(r"^Password protection:\s+enabled$", ykman(key, env, "info").stdout, re.M)
    assert json.loads(yk(key, env, "oath", "info", "--json").stdout) == \
        {"version": version, "password": True, "remembered": False}
    # A wrong password is refused by the key, and nothing is remembered.
    store = os.path.join(env["XDG_CONFIG_HOME"], "ykterm", "oath-keys.json")
    r = yk(key, env, "oath", "password", "remember", input="wrong\n", check=False)
    assert r.returncode == 1 and "wrong OATH password" in r.stderr, r.stderr
    assert not os.path.exists(store)
    r = yk(key, env, "oath", "password", "remember", input="correct horse\n")
    assert r.stdout == "Remembered the password of this key on this computer\n"
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o600
    assert "correct horse" not in open(store).read()
    # Remembered: no password is asked for, and info says so.
    assert yk(key, env, "oath", "list", input="").stdout.split() == ["Locked:acct"]
    assert json.loads(yk(key, env, "oath", "info", "--json").stdout)["remembered"] is True
    assert yk(key, env, "oath", "info").stdout.endswith("Password: set\n"
                                                         "The password of this key is remembered on this computer\n")
    # The key's password is still ykman's: nothing but the access key on this computer changed.
    assert "Locked:acct" in ykman(key, env, "accounts", "list", "-p", "correct horse").stdout
    yk(key, env, "oath", "password", "forget")
    assert json.loads(yk(key, env, "oath", "info", "--json").stdout)["remembered"] is False
    assert yk(key, env, "oath", "list", input="", check=False).returncode == 1


def test_rename_and_delete_agree_with_ykman(key, env):
    ykman(key, env, "accounts", "add", "-i", "Old", "name", SECRET_A)
    ykman(key, env, "accounts", "add", "-i", "Keep", "me", SECRET_B)
    r = yk(key, env, "oath", "rename", "Old:name", "New:label")
    assert "Renamed Old:name to New:label" in r.stdout
    listed = ykman(key, env, "accounts", "list").stdout.split()
    assert "New:label" in listed and "Old:name" not in listed
    ykman(key, env, "accounts", "rename", "-f", "Keep:me", "Kept:me")
    assert "Kept:me" in yk(key, env, "oath", "list").stdout.split()
    r = yk(key, env, "oath", "delete", "New:label", check=False)
    assert r.returncode == 2 and "--force" in r.stderr
    yk(key, env, "oath", "delete", "--force", "New:label")
    assert ykman(key, env, "accounts", "list").stdout.split() == ["Kept:me"]
    ykman(key, env, "accounts", "delete", "-f", "Kept:me")
    assert yk(key, env, "oath", "list").stdout.strip() == ""


def test_touch_and_steam_accounts(key, env):
    ykman(key, env, "accounts", "add", "-t", "-i", "Touchy", "t", SECRET_A)
    yk(key, env, "oath", "add", "--issuer", "Steam", "--name", "gamer", "--secret", "-", input=SECRET_B + "\n")
    codes = codes_json(key, env)
    assert codes["Touchy:t"]["touch"] is True and codes["Touchy:t"]["code"] is None
    s = codes["Steam:gamer"]
    assert re.fullmatch(r"[23456789BCDFGHJKMNPQRTVWXY]{5}", s["code"])
    assert s["code"] == steam_code(SECRET_B, s["valid_from"])
    r = yk(key, env, "oath", "code", "--json", "Touchy")
    t = json.loads(r.stdout)[0]
    assert t["code"] == totp(SECRET_A).at(t["valid_from"])


def test_bad_input_is_rejected_before_touching_the_key(key, env):
    r = yk(key, env, "oath", "add", "otpauth://totp/X?secret=NOT*BASE32", check=False)
    assert r.returncode == 2 and "secret" in r.stderr.lower()
    r = yk(key, env, "oath", "add", "otpauth://totp/X?secret=" + SECRET_A + "&digits=9", check=False)
    assert r.returncode == 2 and "digits" in r.stderr
    r = yk(key, env, "oath", "add", "--name", "n" * 70, "--secret", "-", input=SECRET_A + "\n", check=False)
    assert r.returncode == 2 and "64 bytes" in r.stderr
    assert yk(key, env, "oath", "list").stdout.strip() == ""


def test_capacity_limit(key, env):
    for i in range(64):
        yk(key, env, "oath", "add", "--name", f"acct{i:02}", "--secret", "-", input=SECRET_A + "\n")
    r = yk(key, env, "oath", "add", "--name", "one-too-many", "--secret", "-", input=SECRET_A + "\n", check=False)
    assert r.returncode == 1 and "no room" in r.stderr
    codes = codes_json(key, env)
    assert len(codes) == 64 and all(c["code"] for c in codes.values())
    assert len(ykman_codes(key, env)) == 64


def test_reset(key, env):
    ykman(key, env, "accounts", "add", "gone", SECRET_A)
    ykman(key, env, "access", "change", "-n", "pw")
    r = yk(key, env, "oath", "reset", check=False)
    assert r.returncode == 2
    yk(key, env, "oath", "reset", "--force")
    assert ykman(key, env, "accounts", "list").stdout.strip() == ""


def _pb_varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _pb_field(number, value):
    if isinstance(value, int):
        return _pb_varint(number << 3) + _pb_varint(value)
    return _pb_varint(number << 3 | 2) + _pb_varint(len(value)) + value


def test_migration_export_imports_every_account(key, env):
    from urllib.parse import quote
    accounts = [
        (base64.b32decode(SECRET_A), b"alice@example.com", b"Example", 1, 1, 2, 0),   # TOTP SHA1 6
        (base64.b32decode(SECRET_B), b"bob", b"Wide", 2, 2, 2, 0),                     # TOTP SHA256 8
        (base64.b32decode(SECRET_C), b"Counter:carol", b"", 1, 1, 1, 7),                # HOTP, counter 7
    ]
    payload = b""
    for secret, name, issuer, alg, digits, typ, counter in accounts:
        p = _pb_field(1, secret) + _pb_field(2, name) + (_pb_field(3, issuer) if issuer else b"")
        p += _pb_field(4, alg) + _pb_field(5, digits) + _pb_field(6, typ) + _pb_field(7, counter)
        payload += _pb_field(1, p)
    payload += _pb_field(2, 1) + _pb_field(3, 1)
    uri = "otpauth-migration://offline?data=" + quote(base64.b64encode(payload).decode(), safe="")
    r = yk(key, env, "oath", "add", "-", input=uri + "\n")
    assert r.stdout.split("\n")[:3] == ["Added Example:alice@example.com", "Added Wide:bob", "Added Counter:carol"]
    before = int(time.time())
    seen = ykman_codes(key, env)
    after = int(time.time())
    assert seen["Example:alice@example.com"] in {totp(SECRET_A).at(before), totp(SECRET_A).at(after)}
    assert seen["Wide:bob"] in {totp(SECRET_B, 8, hashlib.sha256).at(t) for t in (before, after)}
    assert ykman_codes(key, env, "Counter:carol")["Counter:carol"] == pyotp.HOTP(SECRET_C).at(7)
    # The same export again, with one account gone from the key: two of its three IDs are taken, and without
    # --force nothing at all is added (the missing one neither), so a refusal leaves the key as it was.
    yk(key, env, "oath", "delete", "--force", "Wide:bob")
    r = yk(key, env, "oath", "add", "-", input=uri + "\n", check=False)
    assert r.returncode == 1 and "Example:alice@example.com" in r.stderr and "already exists" in r.stderr, r.stderr
    assert "Wide:bob" not in ykman_codes(key, env)
    r = yk(key, env, "oath", "add", "--force", "-", input=uri + "\n")
    assert "Added Wide:bob" in r.stdout and "Wide:bob" in ykman_codes(key, env)


def test_single_prints_the_code_alone_as_ykman_does(key, env):
    """`oath code QUERY -s` prints the one account's code alone (pyotp's for its secret; a HOTP account is
    calculated), as `ykman oath accounts code -s` does; a query that leaves several lists them (status 2), none
    says so (status 1)."""
    ykman(key, env, "accounts", "add", "-i", "Example", "alice", SECRET_A)
    ykman(key, env, "accounts", "add", "-i", "Example", "bob", SECRET_B)
    ykman(key, env, "accounts", "add", "-o", "HOTP", "-i", "Counter", "carol", SECRET_C)
    for attempt in range(3):
        before = totp(SECRET_A).now()
        ours = yk(key, env, "oath", "code", "alice", "-s").stdout
        theirs = ykman(key, env, "accounts", "code", "alice", "-s").stdout
        if before == totp(SECRET_A).now():
            break
    assert ours == before + "\n" and theirs == ours, (ours, theirs, before)
    assert yk(key, env, "oath", "code", "Counter:carol", "--single").stdout == pyotp.HOTP(SECRET_C).at(0) + "\n"
    r = yk(key, env, "oath", "code", "Example", "-s", check=False)
    assert r.returncode == 2 and "Example:alice" in r.stderr and "Example:bob" in r.stderr, r.stderr
    r = yk(key, env, "oath", "code", "nobody", "-s", check=False)
    assert r.returncode == 1 and 'no account matches "nobody"' in r.stderr, r.stderr
    r = yk(key, env, "oath", "code", "-s", check=False)
    assert r.returncode == 2 and "--single needs a QUERY" in r.stderr, r.stderr
