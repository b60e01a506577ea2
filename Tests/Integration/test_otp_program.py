"""`ykterm otp yubiotp|static|hotp|swap|ndef|settings` and slot access codes, on the served virtual key.

What a slot types is read from the key's NDEF tag (the served key is on an NFC reader), which serves the NDEF
slot's output after its URI: a Yubico OTP ykterm programmed decrypts with PyPI yubiotp to the private ID ykterm
printed, with the counters `ykterm otp decrypt` shows; an HOTP slot's codes are pyotp's. `ykman otp info`
agrees with `ykterm otp info` after every change, and slots ykman programmed are reported and served right.
"""

import base64
import json
import re

from yubiotp.otp import decode_otp
import pyotp

from harness import run_ykman, run_ykterm

SERIAL = 28123456
SERIAL_PUBLIC_ID = "vvcccbltdbfc"  # modhex of ff 00 01 ad 21 40 (the serial, big-endian)
PRIVATE_ID = "c0ffee123456"
AES_KEY = "2b7e151628aed2a6abf7158809cf4f3c"
ACCESS_CODE = "0102030405a6"
HOTP_SECRET = base64.b32encode(b"12345678901234567890").decode()  # RFC 4226's test secret


def ykterm_otp(key, env, *args, **kw):
    return run_ykterm("otp", args[0], "--reader", key.reader, *args[1:], env=env, **kw)


def ykterm_slots(key, env):
    info = json.loads(ykterm_otp(key, env, "info", "--json").stdout)
    return {s["slot"]: ("programmed" if s["configured"] else "empty") for s in info["slots"]}


def ykman_slots(key, env):
    out = run_ykman(key.reader, "otp", "info", env=env).stdout
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"(?m)^Slot (\d): (\w+)", out)}


def agree(key, env, expected):
    """ykman and ykterm see the slots alike, and as expected."""
    assert ykman_slots(key, env) == ykterm_slots(key, env) == expected


def ndef_value(key, env):
    """The URI (or text) the NDEF tag serves now: a fresh output of the NDEF slot."""
    r = run_ykterm("otp", "read", "--reader", key.reader, "--json", "--pattern", "(.*)", env=env)
    return json.loads(r.stdout)["records"][0]["value"]


def test_yubiotp_with_serial_public_id_decrypts_with_yubiotp(key, env):
    out = json.loads(ykterm_otp(key, env, "yubiotp", "--slot", "1", "--json").stdout)
    assert out["public_id"] == SERIAL_PUBLIC_ID and out["serial"] == SERIAL
    assert re.fullmatch(r"[0-9a-f]{12}", out["private_id"]) and re.fullmatch(r"[0-9a-f]{32}", out["key"])
    # Yubico format: serial, public ID, private ID, AES key, access code (left out), time, and a trailing comma.
    fields = out["csv"].split(",")
    assert fields[:5] == [str(SERIAL), SERIAL_PUBLIC_ID, out["private_id"], out["key"], ""]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", fields[5]) and fields[6] == "" and len(fields) == 7
    agree(key, env, {1: "programmed", 2: "empty"})
    counters = []
    for _ in range(3):
        value = ndef_value(key, env)
        assert value.startswith("https://my.yubico.com/yk/#" + SERIAL_PUBLIC_ID)
        otp = value.split("#", 1)[1]
        public_id, token = decode_otp(otp.encode(), bytes.fromhex(out["key"]))
        assert public_id.decode() == SERIAL_PUBLIC_ID and token.uid.hex() == out["private_id"]
        # ykterm's own decryption shows the same counters (yubiotp: session = usage counter).
        d = json.loads(run_ykterm("otp", "decrypt", "--key", "-", otp, "--json", input=out["key"] + "\n").stdout)
        assert (d["private_id"], d["counter"], d["session_counter"]) == (out["private_id"], token.session, token.counter)
        counters.append((token.session, token.counter))
    # A newly written slot: the first power-up's usage counter is 1, the session counter counts the OTPs.
    assert counters == [(1, 0), (1, 1), (1, 2)]
    # The text output prints the values once.
    r = ykterm_otp(key, env, "yubiotp", "--slot", "2")
    assert "Public ID: " + SERIAL_PUBLIC_ID in r.stdout and "Private ID: " in r.stdout and "AES key: " in r.stdout
    assert "CSV (Yubico format" in r.stdout
    agree(key, env, {1: "programmed", 2: "programmed"})


def test_yubiotp_values_from_standard_input(key, env):
    r = ykterm_otp(key, env, "yubiotp", "--slot", "1", "--public-id", "cccccccccccb", "--private-id", "-",
                   "--key", "-", "--no-enter", "--json", input=f"{PRIVATE_ID}\n{AES_KEY}\n")
    out = json.loads(r.stdout)
    assert (out["public_id"], out["private_id"], out["key"]) == ("cccccccccccb", PRIVATE_ID, AES_KEY)
    otp = ndef_value(key, env).split("#", 1)[1]
    public_id, token = decode_otp(otp.encode(), bytes.fromhex(AES_KEY))
    assert public_id == b"cccccccccccb" and token.uid.hex() == PRIVATE_ID
    # Values on the command line are refused: secrets come from standard input.
    r = ykterm_otp(key, env, "yubiotp", "--slot", "2", "--key", AES_KEY, check=False)
    assert r.returncode == 2 and "standard input" in r.stderr and AES_KEY not in r.stderr
    r = ykterm_otp(key, env, "yubiotp", "--slot", "2", "--key", "-", input="00" * 15 + "\n", check=False)
    assert r.returncode == 2 and "16 bytes" in r.stderr
    agree(key, env, {1: "programmed", 2: "empty"})


def test_hotp_codes_equal_pyotp(key, env):
    r = ykterm_otp(key, env, "hotp", "--slot", "2", "--digits", "8", "--counter", "32", input=HOTP_SECRET + "\n")
    assert "Slot 2 programmed" in r.stdout
    agree(key, env, {1: "empty", 2: "programmed"})
    ykterm_otp(key, env, "ndef", "--slot", "2", "--prefix", "https://example.com/hotp?code=", "--force")
    hotp = pyotp.HOTP(HOTP_SECRET, digits=8)
    for counter in range(32, 36):
        assert ndef_value(key, env) == "https://example.com/hotp?code=" + hotp.at(counter)
    # 6 digits from counter 0 in slot 1, served once slot 1 is the NDEF slot again.
    ykterm_otp(key, env, "hotp", "--slot", "1", input=HOTP_SECRET + "\n")
    ykterm_otp(key, env, "ndef", "--slot", "1", "--force")
    assert [ndef_value(key, env) for _ in range(2)] == \
        ["https://my.yubico.com/yk/#" + pyotp.HOTP(HOTP_SECRET).at(c) for c in (0, 1)]
    r = ykterm_otp(key, env, "hotp", "--slot", "1", "--counter", "17", "--force", input=HOTP_SECRET + "\n", check=False)
    assert r.returncode == 2 and "multiple of 16" in r.stderr
    r = ykterm_otp(key, env, "hotp", "--slot", "1", "--digits", "7", "--force", input=HOTP_SECRET + "\n", check=False)
    assert r.returncode == 2 and "6 or 8 digits" in r.stderr


def test_static_password_given_and_generated(key, env):
    password = "Tr0ub4dor&3!"
    r = ykterm_otp(key, env, "static", "--slot", "1", "--keyboard-layout", "US", input=password + "\n")
    assert "static password of 12 characters" in r.stdout and password not in r.stdout + r.stderr
    # The virtual key types on a US host: the NDEF tag serves the password after its URI.
    assert ndef_value(key, env) == "https://my.yubico.com/yk/#" + password
    # Modhex (the default layout) refuses what it cannot type, without repeating the password.
    r = ykterm_otp(key, env, "static", "--slot", "1", "--force", input=password + "\n", check=False)
    assert r.returncode == 2 and "character 3 of the password" in r.stderr and password not in r.stderr
    r = ykterm_otp(key, env, "static", "--slot", "1", "--force", "--generate", "--length", "38")
    assert "generated static password of 38 characters (MODHEX layout)" in r.stdout
    generated = ndef_value(key, env).split("#", 1)[1]
    assert re.fullmatch(r"[cbdefghijklnrtuvCBDEFGHIJKLNRTUV]{38}", generated)
    r = ykterm_otp(key, env, "static", "--slot", "1", "--force", "--generate", "--length", "39", check=False)
    assert r.returncode == 2 and "1 to 38 characters" in r.stderr
    agree(key, env, {1: "programmed", 2: "empty"})


def test_overwrite_swap_settings_and_ndef_need_force_without_a_terminal(key, env):
    ykterm_otp(key, env, "static", "--slot", "1", "--keyboard-layout", "US", input="first\n")
    for args in (["static", "--slot", "1", "--keyboard-layout", "US"], ["swap"],
                 ["settings", "--slot", "1"], ["ndef", "--slot", "1"]):
        r = ykterm_otp(key, env, *args, input="second\n", check=False)
        assert r.returncode == 2 and "--force" in r.stderr, args
    assert ndef_value(key, env) == "https://my.yubico.com/yk/#first"
    agree(key, env, {1: "programmed", 2: "empty"})
    r = ykterm_otp(key, env, "settings", "--slot", "2", "--force", check=False)
    assert r.returncode == 1 and "slot 2 is empty" in r.stderr


def test_swap_and_delete_agree_with_ykman(key, env):
    ykterm_otp(key, env, "static", "--slot", "1", "--keyboard-layout", "US", input="slot-one\n")
    ykterm_otp(key, env, "hotp", "--slot", "2", input=HOTP_SECRET + "\n")
    agree(key, env, {1: "programmed", 2: "programmed"})
    assert ndef_value(key, env) == "https://my.yubico.com/yk/#slot-one"
    assert "Slots 1 and 2 swapped" in ykterm_otp(key, env, "swap", "--force").stdout
    agree(key, env, {1: "programmed", 2: "programmed"})
    # The NDEF tag serves slot 1, which now holds the HOTP credential.
    assert ndef_value(key, env) == "https://my.yubico.com/yk/#" + pyotp.HOTP(HOTP_SECRET).at(0)
    ykterm_otp(key, env, "delete", "--slot", "1", "--force")
    agree(key, env, {1: "empty", 2: "programmed"})
    ykterm_otp(key, env, "swap", "--force")
    agree(key, env, {1: "programmed", 2: "empty"})
    assert ndef_value(key, env) == "https://my.yubico.com/yk/#slot-one"
    # ykman swaps back and ykterm sees it.
    run_ykman(key.reader, "otp", "swap", "-f", env=env)
    agree(key, env, {1: "empty", 2: "programmed"})


def test_access_code_protects_the_slot(key, env):
    ykterm_otp(key, env, "static", "--slot", "1", "--keyboard-layout", "US", "--lock",
               input=f"{ACCESS_CODE}\nguarded\n")
    agree(key, env, {1: "programmed", 2: "empty"})
    # Without the code (or with a wrong one) every write is refused, by ykterm and ykman alike.
    r = ykterm_otp(key, env, "delete", "--slot", "1", "--force", check=False)
    assert r.returncode == 1 and "access code" in r.stderr
    r = ykterm_otp(key, env, "delete", "--slot", "1", "--force", "--locked", input="a1a2a3a4a5a6\n",
                   check=False)
    assert r.returncode == 1
    r = ykterm_otp(key, env, "static", "--slot", "1", "--keyboard-layout", "US", "--force", input="other\n",
                   check=False)
    assert r.returncode == 1
    assert run_ykman(key.reader, "otp", "delete", "1", "-f", env=env, check=False).returncode != 0
    assert run_ykman(key.reader, "otp", "swap", "-f", env=env, check=False).returncode != 0
    r = ykterm_otp(key, env, "settings", "--slot", "1", "--no-enter", "--force", check=False)
    assert r.returncode == 1
    agree(key, env, {1: "programmed", 2: "empty"})
    assert ndef_value(key, env) == "https://my.yubico.com/yk/#guarded"
    # No option takes the code itself; a code of the wrong length is explained.
    r = ykterm_otp(key, env, "delete", "--slot", "1", "--access-code", ACCESS_CODE, check=False)
    assert r.returncode == 2 and "Unknown option" in r.stderr
    r = ykterm_otp(key, env, "delete", "--slot", "1", "-f", "--locked", input="0102\n", check=False)
    assert r.returncode == 2 and "6 bytes" in r.stderr
    # With the code: settings keep the secret and change the code (ykman then uses the new one).
    new_code = "a0b0c0d0e0f0"
    ykterm_otp(key, env, "settings", "--slot", "1", "--pacing", "20", "--force", "--locked",
               "--lock", input=f"{ACCESS_CODE}\n{new_code}\n")
    assert ndef_value(key, env) == "https://my.yubico.com/yk/#guarded"
    assert run_ykman(key.reader, "otp", "--access-code", ACCESS_CODE, "delete", "1", "-f", env=env,
                     check=False).returncode != 0
    run_ykman(key.reader, "otp", "--access-code", new_code, "settings", "1", "-f", env=env)
    # --unlock removes it: then writes need no code.
    ykterm_otp(key, env, "settings", "--slot", "1", "--unlock", "--locked", "--force",
               input=new_code + "\n")
    ykterm_otp(key, env, "delete", "--slot", "1", "--force")
    agree(key, env, {1: "empty", 2: "empty"})


def test_slot_protected_by_ykman_needs_the_code_in_ykterm(key, env):
    run_ykman(key.reader, "otp", "static", "2", "--keyboard-layout", "US", "hello", "-f", env=env)
    run_ykman(key.reader, "otp", "settings", "2", "--new-access-code", ACCESS_CODE, "-f", env=env)
    r = ykterm_otp(key, env, "delete", "--slot", "2", "--force", check=False)
    assert r.returncode == 1
    agree(key, env, {1: "empty", 2: "programmed"})
    ykterm_otp(key, env, "delete", "--slot", "2", "--force", "--locked", input=ACCESS_CODE + "\n")
    agree(key, env, {1: "empty", 2: "empty"})


def test_slots_programmed_by_ykman_are_reported_and_served(key, env):
    r = run_ykman(key.reader, "otp", "yubiotp", "1", "--serial-public-id", "--generate-private-id",
                  "--generate-key", "-f", env=env)
    aes = re.search(r"secret key: ([0-9a-f]{32})", r.stdout + r.stderr).group(1)
    private = re.search(r"private ID: ([0-9a-f]{12})", r.stdout + r.stderr).group(1)
    agree(key, env, {1: "programmed", 2: "empty"})
    info = json.loads(ykterm_otp(key, env, "info", "--json").stdout)
    assert info["slots"][0] == {"slot": 1, "configured": True, "touch_triggered": True}
    otp = ndef_value(key, env).split("#", 1)[1]
    assert otp.startswith(SERIAL_PUBLIC_ID)
    d = json.loads(run_ykterm("otp", "decrypt", "--key", "-", otp, "--json", input=aes + "\n").stdout)
    assert d["crc_ok"] and d["private_id"] == private and d["serial"] == SERIAL
    _, token = decode_otp(otp.encode(), bytes.fromhex(aes))
    assert (d["counter"], d["session_counter"]) == (token.session, token.counter)

    run_ykman(key.reader, "otp", "static", "2", "--keyboard-layout", "US", "Sesame-0pen", "-f", env=env)
    agree(key, env, {1: "programmed", 2: "programmed"})
    assert "Slot 2: programmed, touch-triggered" in ykterm_otp(key, env, "info").stdout
    ykterm_otp(key, env, "ndef", "--slot", "2", "--force")
    assert ndef_value(key, env) == "https://my.yubico.com/yk/#Sesame-0pen"

    run_ykman(key.reader, "otp", "hotp", "2", HOTP_SECRET, "--digits", "8", "--counter", "16", "-f", env=env)
    agree(key, env, {1: "programmed", 2: "programmed"})
    hotp = pyotp.HOTP(HOTP_SECRET, digits=8)
    assert [ndef_value(key, env) for _ in range(2)] == ["https://my.yubico.com/yk/#" + hotp.at(c) for c in (16, 17)]

    # ykman's NDEF setting is served the same way; ykman deleting a slot is seen by ykterm.
    run_ykman(key.reader, "otp", "ndef", "1", "--prefix", "https://example.org/otp/", env=env)
    assert ndef_value(key, env).startswith("https://example.org/otp/" + SERIAL_PUBLIC_ID)
    run_ykman(key.reader, "otp", "delete", "2", "-f", env=env)
    agree(key, env, {1: "programmed", 2: "empty"})


def test_settings_keep_the_secret_and_refuse_bad_values(key, env):
    ykterm_otp(key, env, "yubiotp", "--slot", "1", "--private-id", "-", "--key", "-", input=f"{PRIVATE_ID}\n{AES_KEY}\n")
    before = json.loads(ykterm_otp(key, env, "info", "--json").stdout)["program_sequence"]
    r = ykterm_otp(key, env, "settings", "--slot", "1", "--no-enter", "--pacing", "60", "--use-numeric-keypad",
                   "--force")
    assert "Settings of slot 1 updated" in r.stdout
    assert json.loads(ykterm_otp(key, env, "info", "--json").stdout)["program_sequence"] == before + 1
    _, token = decode_otp(ndef_value(key, env).split("#", 1)[1].encode(), bytes.fromhex(AES_KEY))
    assert token.uid.hex() == PRIVATE_ID
    agree(key, env, {1: "programmed", 2: "empty"})
    r = ykterm_otp(key, env, "settings", "--slot", "1", "--pacing", "30", "--force", check=False)
    assert r.returncode == 2 and "--pacing" in r.stderr
    r = ykterm_otp(key, env, "settings", "--slot", "1", "--unlock", "--force", check=False)
    assert r.returncode == 2 and "--locked" in r.stderr
    r = ykterm_otp(key, env, "ndef", "--slot", "1", "--prefix", "https://example.com/" + "x" * 60, "--force",
                   check=False)
    assert r.returncode == 2 and "54" in r.stderr


def test_over_the_otp_hid_interface_of_a_usb_key(tmp_path):
    """A USB key without CCID: ykterm and ykman reach the slots over the OTP HID interface only. What ykterm
    wrote is in the key's state file, byte for byte as yubikey-manager would build it."""
    from harness import serve_usb, usb_unavailable_reason
    import pytest

    if usb_unavailable_reason():
        pytest.skip(usb_unavailable_reason())
    from yubikit.yubiotp import YubiOtpSlotConfiguration

    state = tmp_path / "usb-key.json"
    script = f"""
import json, os, re, subprocess
YKTERM = os.environ["YKTERM_BIN"]
YKMAN = os.environ["YKMAN_BIN"]
def run(tool, *args, input=None):
    p = subprocess.run([tool] + list(args), capture_output=True, text=True, timeout=60, input=input)
    return {{"rc": p.returncode, "out": p.stdout, "err": p.stderr}}
def slots():
    return re.findall(r"(?m)^Slot (\\d): (\\w+)", run(YKMAN, "otp", "info")["out"])
out = {{}}
out["program"] = run(YKTERM, "otp", "yubiotp", "--slot", "1", "--private-id", "-", "--key", "-", "--json",
                     "--lock", input="{ACCESS_CODE}\\n{PRIVATE_ID}\\n{AES_KEY}\\n")
out["after_program"] = slots()
out["ykterm_info"] = run(YKTERM, "otp", "info", "--json")
out["ykman_delete"] = run(YKMAN, "otp", "delete", "1", "-f")
out["swap_refused"] = run(YKTERM, "otp", "swap", "--force")
out["swap"] = run(YKTERM, "otp", "swap", "--force", "--locked", input="{ACCESS_CODE}\\n")
out["after_swap"] = slots()
out["unlock"] = run(YKTERM, "otp", "settings", "--slot", "2", "--force", "--locked", "--unlock",
                    input="{ACCESS_CODE}\\n")
out["state"] = json.load(open("{state}"))
out["ykman_delete_after"] = run(YKMAN, "otp", "delete", "2", "-f")
out["after_delete"] = slots()
print(json.dumps(out))
"""
    r = serve_usb("--state", state, "--interfaces", "otp,fido", script=script)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["program"]["rc"] == 0, out["program"]["err"]
    assert json.loads(out["program"]["out"])["public_id"] == "vvcccbltdbfc"
    assert out["after_program"] == [["1", "programmed"], ["2", "empty"]]
    info = json.loads(out["ykterm_info"]["out"])
    assert [s["configured"] for s in info["slots"]] == [True, False] and info["slots"][0]["touch_triggered"]
    assert out["ykman_delete"]["rc"] != 0 and out["swap_refused"]["rc"] == 1
    assert out["swap"]["rc"] == 0, out["swap"]["err"]
    assert out["after_swap"] == [["1", "empty"], ["2", "programmed"]]
    assert out["unlock"]["rc"] == 0, out["unlock"]["err"]
    # What the key holds after --unlock: ykman's configuration for the same values, access code removed.
    expected = YubiOtpSlotConfiguration(bytes.fromhex("ff0001ad2140"), bytes.fromhex(PRIVATE_ID),
                                        bytes.fromhex(AES_KEY)).get_config()
    assert bytes(out["state"]["otpSlots"]["slot2"]) == expected
    assert out["ykman_delete_after"]["rc"] == 0
    assert out["after_delete"] == [["1", "empty"], ["2", "empty"]]


def test_on_a_terminal_codes_and_passwords_are_asked_without_echo(key, env):
    from test_otp import _on_pty

    base = ["otp", "static", "--reader", key.reader, "--slot", "1", "--keyboard-layout", "US"]
    code, out, err, shown = _on_pty(base + ["--lock"], env, [ACCESS_CODE, ACCESS_CODE, "Hidden-1", "Hidden-1"])
    assert code == 0, err
    assert "New access code (hex)" in err and "Repeat new access code" in err and "Repeat static password" in err
    assert ACCESS_CODE not in shown + out + err and "Hidden-1" not in shown + out + err
    assert ndef_value(key, env) == "https://my.yubico.com/yk/#Hidden-1"
    # Overwriting a protected slot: the current code, then the password, then the question.
    code, out, err, shown = _on_pty(base + ["--locked"], env, [ACCESS_CODE, "Other-2", "Other-2", "y"])
    assert code == 0, err
    assert "Current access code (hex)" in err and "Overwrite it?" in err and ACCESS_CODE not in shown
    assert ndef_value(key, env) == "https://my.yubico.com/yk/#Other-2"
    # Two different entries change nothing.
    code, out, err, _ = _on_pty(base + ["--locked"], env, [ACCESS_CODE, "Third-3", "Third-4"])
    assert code == 2 and "differ" in err
    code, out, err, _ = _on_pty(["otp", "swap", "--reader", key.reader, "--locked"], env, [ACCESS_CODE, "y"])
    assert code == 0 and "Swap the configurations" in err, err
    agree(key, env, {1: "empty", 2: "programmed"})


def test_ndef_needs_a_programmed_slot(key, env):
    r = ykterm_otp(key, env, "ndef", "--slot", "2", "--force", check=False)
    assert r.returncode == 1 and "slot 2 is empty" in r.stderr
    # The tag still serves the key's own credential after the standard URI.
    assert ndef_value(key, env).startswith("https://my.yubico.com/yk/#vvcc")


def test_ndef_text_record_as_ykman_writes_it(key, env):
    """--ndef-type text: the tag serves a text record, the prefix then the slot's output, as ykman's -t TEXT makes
    it; `otp read` finds the code in it."""
    ykterm_otp(key, env, "hotp", "--slot", "2", input=HOTP_SECRET + "\n")
    hotp = pyotp.HOTP(HOTP_SECRET)
    r = ykterm_otp(key, env, "ndef", "--slot", "2", "--ndef-type", "text", "--prefix", "code: ", "--force")
    assert 'serves slot 2 as a text record after \u201ccode: \u201d' in r.stdout, r.stdout
    read = json.loads(run_ykterm("otp", "read", "--reader", key.reader, "--json", env=env).stdout)
    assert read["records"] == [{"type": "text", "value": "code: " + hotp.at(0), "language": "en"}], read
    # ykman's text record without a prefix, and ykterm's: the output alone, which `otp read` gives as the OTP.
    run_ykman(key.reader, "otp", "ndef", "--ndef-type", "TEXT", "2", env=env)
    assert ndef_value(key, env) == hotp.at(1)
    r = ykterm_otp(key, env, "ndef", "--slot", "2", "-t", "TEXT", "--force")
    assert "serves slot 2 as a text record" in r.stdout, r.stdout
    out = run_ykterm("otp", "read", "--reader", key.reader, env=env).stdout.splitlines()
    assert "Text: " + hotp.at(2) in out and "OTP: " + hotp.at(2) in out and "Type: OATH-HOTP" in out, out
    r = ykterm_otp(key, env, "ndef", "--slot", "2", "--ndef-type", "text", "--prefix", "x" * 52, "--force",
                   check=False)
    assert r.returncode != 0 and "55" in r.stderr and "54" in r.stderr, r.stderr
    ykterm_otp(key, env, "ndef", "--slot", "2", "--ndef-type", "uri", "--force")
    assert ndef_value(key, env) == "https://my.yubico.com/yk/#" + hotp.at(3)


def test_hotp_token_identifier_as_ykman_programs_it(key, env):
    """--identifier: the key types the OATH token identifier before each code, as after ykman's -i with the same
    value (the served slot is alike either way); "-" is Yubico's ubhe and the serial; `otp parse` reads the
    identifier and the code apart."""
    hotp = pyotp.HOTP(HOTP_SECRET)
    r = ykterm_otp(key, env, "hotp", "--slot", "1", "--identifier", "-", input=HOTP_SECRET + "\n")
    assert f"after the token identifier ubhe{SERIAL}" in r.stdout, r.stdout
    otp = ndef_value(key, env).split("#", 1)[1]
    assert otp == f"ubhe{SERIAL}" + hotp.at(0)
    parsed = json.loads(run_ykterm("otp", "parse", "--json", otp, env=env).stdout)
    assert (parsed["type"], parsed["public_id"], parsed["code"], parsed["serial"]) == \
        ("oath-hotp", f"ubhe{SERIAL}", hotp.at(0), SERIAL), parsed
    for identifier in ("vvcc", "ub1212345678", "cccccccccccb", "123412345678"):
        run_ykman(key.reader, "otp", "hotp", "--force", "-i", identifier, "1", HOTP_SECRET, env=env)
        theirs = ndef_value(key, env)
        ykterm_otp(key, env, "hotp", "--slot", "1", "-i", identifier, "--force", input=HOTP_SECRET + "\n")
        assert ndef_value(key, env) == theirs, identifier
    assert theirs.endswith("#123412345678" + hotp.at(0))
    for bad in ("ubh", "12he12345678", "xxhe12345678"):
        r = ykterm_otp(key, env, "hotp", "--slot", "2", "-i", bad, input=HOTP_SECRET + "\n", check=False)
        assert r.returncode == 2 and "token identifier is 12 characters" in r.stderr, r.stderr
    agree(key, env, {1: "programmed", 2: "empty"})
