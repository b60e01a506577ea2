"""PSKC files (RFC 6030): `oath add --output` and `oath import`, each crossed with ykman (`oath accounts add -O`,
`oath accounts import`, which read and write PSKC through python-pskc), plain, with a pre-shared key and with a
passphrase; the codes each key then shows are checked with pyotp."""

import base64
import json
import hashlib
import os
import re
import stat
import time

import pyotp
import pytest

from harness import run_ykman, run_ykterm

SECRET_A = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
SECRET_B = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
SECRET_C = "MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U"
PASSPHRASE = "correct horse battery"
KEY16 = "000102030405060708090a0b0c0d0e0f"


@pytest.fixture
def env(pcsc, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return pcsc.env(HOME=home, XDG_CONFIG_HOME=home / ".config")


def yk(key, env, *args, **kw):
    return run_ykterm(*args, env=dict(env, YKTERM_READER=key.reader), **kw)


def ykman(key, env, *args, **kw):
    return run_ykman(key.reader, "oath", *args, env=env, **kw)


def ykman_codes(key, env):
    result = {}
    for line in ykman(key, env, "accounts", "code").stdout.splitlines():
        m = re.match(r"^(.*\S)\s+(\S+)$", line)
        if m:
            result[m.group(1)] = m.group(2)
    return result


def ykterm_codes(key, env):
    return {e["id"]: e for e in json.loads(yk(key, env, "oath", "code", "--json").stdout)}


def around(fn):
    """The codes fn gives just before and just after now: a code read in between is one of them."""
    now = int(time.time())
    return {fn(now), fn(now + 2)}


@pytest.mark.parametrize("protection", ["plain", "key", "passphrase"])
def test_what_ykterm_writes_ykman_imports(key, env, tmp_path, protection):
    path = tmp_path / "out.pskc"
    extra, lines = [], [SECRET_A]
    if protection == "key":
        extra, lines = ["--encrypt", "key"], [SECRET_A, KEY16]
    elif protection == "passphrase":
        extra, lines = ["--encrypt", "passphrase"], [SECRET_A, PASSPHRASE]
    r = yk(key, env, "oath", "add", "--issuer", "Example", "--name", "alice@example.com", "--secret", "-",
           "--algorithm", "SHA256", "--digits", "8", "--period", "60", "--output", path, *extra,
           input="\n".join(lines) + "\n")
    assert str(path) in r.stdout
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    raw = base64.b32decode(SECRET_A)
    assert (base64.b64encode(raw).decode() in text) == (protection == "plain")
    # The key emptied, then ykman imports the file.
    ykman(key, env, "reset", "--force")
    answer = {"plain": "", "key": KEY16 + "\n", "passphrase": PASSPHRASE + "\n"}[protection]
    ykman(key, env, "accounts", "import", "--force", path, input=answer)
    codes = ykman_codes(key, env)
    assert "60/Example:alice@example.com" in codes, codes
    expected = around(lambda t: pyotp.TOTP(SECRET_A, digits=8, digest=hashlib.sha256, interval=60).at(t))
    assert codes["60/Example:alice@example.com"] in expected


def test_ykterm_refuses_to_write_over_a_file_and_a_short_passphrase(key, env, tmp_path):
    path = tmp_path / "exists.pskc"
    path.write_text("keep")
    r = yk(key, env, "oath", "add", "--name", "n", "--secret", "-", "--output", path, input=SECRET_A + "\n",
           check=False)
    assert r.returncode == 2 and "--force" in r.stderr and path.read_text() == "keep"
    r = yk(key, env, "oath", "add", "--name", "n", "--secret", "-", "--output", tmp_path / "new.pskc",
           "--encrypt", "passphrase", input=SECRET_A + "\nshort\n", check=False)
    assert r.returncode == 2 and "8" in r.stderr and not (tmp_path / "new.pskc").exists()
    r = yk(key, env, "oath", "add", "--name", "n", "--secret", "-", "--encrypt", "key", input=SECRET_A + "\n",
           check=False)
    assert r.returncode == 2 and "--output" in r.stderr
    assert ykman_codes(key, env) == {}


@pytest.mark.parametrize("protection", ["plain", "key", "passphrase"])
def test_what_ykman_writes_ykterm_imports(key, env, tmp_path, protection):
    path = tmp_path / "ykman.pskc"
    extra = {"plain": [], "key": ["--pskc-key", KEY16], "passphrase": ["--pskc-passphrase", PASSPHRASE]}
    ykman(key, env, "accounts", "add", "-O", path, *extra[protection], "-i", "Corp", "bob", SECRET_B)
    ykman(key, env, "accounts", "add", "-O", tmp_path / "hotp.pskc", "-o", "HOTP", "-c", "3", "-i", "Ctr",
          "carol", SECRET_C)
    ykman(key, env, "reset", "--force")
    answer = {"plain": "", "key": KEY16 + "\n", "passphrase": PASSPHRASE + "\n"}[protection]
    r = yk(key, env, "oath", "import", path, input=answer)
    assert "Corp:bob" in r.stdout
    yk(key, env, "oath", "import", tmp_path / "hotp.pskc")
    codes = ykterm_codes(key, env)
    assert set(codes) == {"Corp:bob", "Ctr:carol"}
    bob = codes["Corp:bob"]
    assert bob["code"] == pyotp.TOTP(SECRET_B).at(bob["valid_from"])
    assert ykman(key, env, "accounts", "code", "carol").stdout.split()[-1] == pyotp.HOTP(SECRET_C).at(3)
    if protection != "plain":
        ykman(key, env, "reset", "--force")
        wrong = {"key": "f" * 32, "passphrase": "wrong horse battery"}[protection]
        r = yk(key, env, "oath", "import", path, input=wrong + "\n", check=False)
        assert r.returncode == 1 and "MAC" in r.stderr, r.stderr
        assert ykman_codes(key, env) == {}


def test_import_refuses_a_taken_name_without_force_and_what_is_no_pskc(key, env, tmp_path):
    path = tmp_path / "a.pskc"
    yk(key, env, "oath", "add", "--issuer", "I", "--name", "n", "--secret", "-", "--output", path,
       input=SECRET_A + "\n")
    r = yk(key, env, "oath", "import", path, check=False)
    assert r.returncode == 1 and "I:n" in r.stderr
    yk(key, env, "oath", "import", "--force", "--touch", path)
    assert ykterm_codes(key, env)["I:n"]["touch"] is True
    bad = tmp_path / "bad.pskc"
    bad.write_text("<html><body>no</body></html>")
    r = yk(key, env, "oath", "import", bad, check=False)
    assert r.returncode == 1 and "PSKC" in r.stderr
    german = {k: v for k, v in env.items() if not k.startswith("LC_") and k not in ("LANG", "LANGUAGE")}
    r = run_ykterm("oath", "import", bad, env=dict(german, YKTERM_READER=key.reader, LANG="de_DE.UTF-8"),
                   check=False)
    assert r.returncode == 1 and "keine PSKC-Datei" in r.stderr, r.stderr
