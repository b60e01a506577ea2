"""An Enhanced PIN key (`virtual-key serve --pin-complexity`): ykman and ykterm both see that it enforces PIN
complexity; PIV, OpenPGP and FIDO2 refuse a PIN too easy to guess from either client (ykman reads the key's
answers as a real key's: "does not meet complexity requirement"), ykterm explains the refusal in English and
German, changes nothing, and a PIN that meets the rule is taken and works for ykman. An OTP access code of one
byte repeated is refused by both clients on such a key (the key itself takes it: ykman's rule), and taken on
an ordinary key."""

import json
import re

import pytest

from harness import ServedKey, run_ykman, run_ykterm


@pytest.fixture
def enhanced(pcsc, tmp_path):
    k = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=["--pin-complexity"]).start()
    yield k
    k.stop()


def refused(r, what):
    """ykterm's words for the key's refusal, on standard error, with the failure exit status."""
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert f"the key enforces PIN complexity and refused the new {what} as too easy to guess" in r.stderr, r.stderr


def test_both_clients_see_it(enhanced, env):
    info = json.loads(run_ykterm("info", "--reader", enhanced.reader, "--json", env=env).stdout)
    assert info["pin_complexity"] is True and info["product"] == "YubiKey 5 NFC - Enhanced PIN", info
    text = run_ykterm("info", "--reader", enhanced.reader, env=env).stdout
    assert re.search(r"^PIN complexity:\s+enforced", text, re.M), text
    out = run_ykman(enhanced.reader, "info", env=env).stdout
    assert "PIN complexity is enforced" in out and "Device type: YubiKey 5 NFC - Enhanced PIN" in out, out


def test_an_ordinary_key_says_nothing_of_it(key, env):
    info = json.loads(run_ykterm("info", "--reader", key.reader, "--json", env=env).stdout)
    assert info["pin_complexity"] is False
    assert "PIN complexity" not in run_ykterm("info", "--reader", key.reader, env=env).stdout


def test_piv(enhanced, env):
    def piv(*args, lang=None, **kw):
        e = dict(env, LANG=lang) if lang else env
        return run_ykterm("piv", *args, "--reader", enhanced.reader, env=e, check=False, **kw)

    def ykman(*args):
        return run_ykman(enhanced.reader, "piv", *args, env=env, check=False)

    r = ykman("access", "change-pin", "-P", "123456", "-n", "111111")
    assert r.returncode != 0 and "PIN does not meet complexity requirement" in r.stderr, r.stderr
    refused(piv("pin", "change", input="123456\n111111\n"), "PIN")
    refused(piv("puk", "change", input="12345678\n87654321\n"), "PUK")
    refused(piv("pin", "unblock", input="12345678\n000000\n"), "PIN")
    r = piv("pin", "change", input="123456\n222222\n", lang="de_DE.UTF-8")
    assert r.returncode == 1 and "verlangt komplexe PINs" in r.stderr and "PIN" in r.stderr, r.stderr
    # Nothing changed and no try was spent.
    out = ykman("info").stdout
    assert re.search(r"^PIN tries remaining:\s+3/3$", out, re.M) and "Using default PIN" in out, out
    assert re.search(r"^PUK tries remaining:\s+3/3$", out, re.M), out
    assert piv("pin", "change", input="123456\n482916\n").returncode == 0
    assert ykman("access", "change-pin", "-P", "482916", "-n", "519283").returncode == 0


def test_openpgp(enhanced, env):
    def openpgp(*args, **kw):
        return run_ykterm("openpgp", *args, "--reader", enhanced.reader, env=env, check=False, **kw)

    r = run_ykman(enhanced.reader, "openpgp", "access", "change-pin", "-P", "123456", "-n", "999999", env=env,
                  check=False)
    assert r.returncode != 0 and "PIN does not meet complexity requirement" in r.stderr, r.stderr
    refused(openpgp("access", "change-pin", input="123456\n999999\n"), "PIN")
    refused(openpgp("access", "change-admin-pin", input="12345678\npassword\n"), "admin PIN")
    refused(openpgp("access", "change-reset-code", input="12345678\n33333333\n"), "reset code")
    assert openpgp("access", "change-pin", input="123456\n482916\n").returncode == 0
    run_ykman(enhanced.reader, "openpgp", "access", "change-pin", "-P", "482916", "-n", "519283", env=env)


def test_fido2(enhanced, env):
    def fido(*args, **kw):
        return run_ykterm("fido", *args, env=dict(env, YKTERM_READER=enhanced.reader), check=False, **kw)

    r = run_ykman(enhanced.reader, "fido", "access", "change-pin", "--new-pin", "aaaaaa", env=env, check=False)
    assert r.returncode != 0 and "New PIN doesn't meet complexity requirements" in r.stderr, r.stderr
    r = fido("pin", "set", input="123456\n")
    assert r.returncode == 1 and "breaks the key's PIN rules" in r.stderr, r.stderr
    assert fido("pin", "set", input="4829-16\n").returncode == 0
    r = fido("pin", "change", input="4829-16\n7777777\n")
    assert r.returncode == 1 and "breaks the key's PIN rules" in r.stderr, r.stderr
    run_ykman(enhanced.reader, "fido", "access", "change-pin", "--pin", "4829-16", "--new-pin", "5192-83", env=env)


TRIVIAL = "111111111111"
GOOD = "a0b0c0d0e0f0"


def program_slot_1(k, env):
    run_ykman(k.reader, "otp", "chalresp", "1", "0102030405", "--force", env=env)


def test_otp_access_code(enhanced, env):
    def otp(*args, lang=None, **kw):
        e = dict(env, LANG=lang) if lang else env
        return run_ykterm("otp", *args, "--reader", enhanced.reader, env=e, check=False, **kw)

    program_slot_1(enhanced, env)
    r = run_ykman(enhanced.reader, "otp", "settings", "1", "--new-access-code", TRIVIAL, "--force", env=env,
                  check=False)
    assert r.returncode != 0 and "Access code does not meet complexity requirement" in r.stderr, r.stderr
    for r in (otp("settings", "--slot", "1", "--lock", "--force", input=TRIVIAL + "\n"),
              otp("chalresp", "--slot", "2", "--lock", "--force", "0a0b0c", input=TRIVIAL + "\n")):
        assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
        assert "the key enforces PIN complexity, so a new access code must not be one byte repeated" in r.stderr, \
            r.stderr
    r = otp("settings", "--slot", "1", "--lock", "--force", input=TRIVIAL + "\n", lang="de_DE.UTF-8")
    assert r.returncode == 2 and "verlangt komplexe PINs" in r.stderr and "Zugangscode" in r.stderr, r.stderr
    # Nothing was written: slot 1 has no access code (ykman changes it without one), slot 2 is still empty.
    out = run_ykman(enhanced.reader, "otp", "info", env=env).stdout
    assert re.search(r"^Slot 2:\s+empty", out, re.M), out
    run_ykman(enhanced.reader, "otp", "settings", "1", "--pacing", "20", "--force", env=env)
    # A code of two different bytes is taken, and guards the slot for ykman.
    assert otp("settings", "--slot", "1", "--lock", "--force", input=GOOD + "\n").returncode == 0
    r = run_ykman(enhanced.reader, "otp", "delete", "1", "--force", env=env, check=False)
    assert r.returncode != 0, r.stdout
    run_ykman(enhanced.reader, "otp", "--access-code", GOOD, "delete", "1", "--force", env=env)


def test_an_ordinary_key_takes_any_access_code(key, env):
    program_slot_1(key, env)
    r = run_ykterm("otp", "settings", "--slot", "1", "--lock", "--force", "--reader", key.reader, env=env,
                   input=TRIVIAL + "\n")
    assert "Settings of slot 1 updated" in r.stdout, r.stdout
    run_ykman(key.reader, "otp", "--access-code", TRIVIAL, "delete", "1", "--force", env=env)
