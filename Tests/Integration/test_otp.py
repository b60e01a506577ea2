"""`ykterm otp`: Yubico OTPs made by PyPI yubiotp decrypt the same; the virtual key's NDEF tag serves OTPs
that yubiotp decrypts with the key's AES key; challenge-response slots programmed by ykman answer ykterm
with the HMAC-SHA1 Python computes, and the other way round; info and delete agree with ykman."""

import json
import struct

import pytest
from yubiotp.modhex import modhex
from yubiotp.otp import OTP, YubiKey, decode_otp, encode_otp

from harness import ServedKey, run_ykman, run_ykterm

KEY_HEX = "2b7e151628aed2a6abf7158809cf4f3c"
KEY = bytes.fromhex(KEY_HEX)
PRIVATE_ID = bytes.fromhex("c0ffee123456")
PUBLIC_ID = b"vvccccfhcbdn"


def decrypt(otp, *args, check=True):
    return run_ykterm("otp", "decrypt", "--key", "-", otp, "--json", *args, input=KEY_HEX + "\n", check=check)


def test_yubiotp_tokens_decrypt_to_the_same_fields():
    # yubiotp's YubiKey(uid, session, counter): session is the usage counter, counter the session counter.
    key = YubiKey(PRIVATE_ID, 41, 3)
    for _ in range(5):
        token = key.generate()
        otp = encode_otp(token, KEY, public_id=PUBLIC_ID).decode()
        out = json.loads(decrypt(otp).stdout)
        assert out["crc_ok"] is True
        assert out["public_id"] == PUBLIC_ID.decode()
        assert out["private_id"] == PRIVATE_ID.hex()
        assert out["counter"] == token.session == 41
        assert out["session_counter"] == token.counter
        assert out["timestamp"] == token.timestamp
        assert out["random"] == token.rand


def test_wrong_key_and_tampered_otp_fail_the_crc():
    otp = encode_otp(OTP(PRIVATE_ID, 1, 2, 3, 4), KEY, public_id=PUBLIC_ID).decode()
    r = run_ykterm("otp", "decrypt", "--key", "-", otp, "--json", input="00" * 16 + "\n", check=False)
    assert r.returncode == 1
    assert json.loads(r.stdout)["crc_ok"] is False
    assert "CRC" in r.stderr
    tampered = otp[:-1] + ("c" if otp[-1] != "c" else "b")
    r = decrypt(tampered, check=False)
    assert r.returncode == 1 and json.loads(r.stdout)["crc_ok"] is False


def test_key_on_the_command_line_warns():
    otp = encode_otp(OTP(PRIVATE_ID, 1, 2, 3, 4), KEY).decode()
    r = run_ykterm("otp", "decrypt", "--key", KEY_HEX, otp)
    assert "visible" in r.stderr
    assert "Private ID: " + PRIVATE_ID.hex() in r.stdout


def test_parse_serial_public_id():
    serial = 28123456
    public_id = modhex(b"\xff\x00" + struct.pack(">I", serial))
    otp = encode_otp(OTP(PRIVATE_ID, 1, 2, 3, 4), KEY, public_id=public_id).decode()
    out = json.loads(run_ykterm("otp", "parse", otp, "--json").stdout)
    assert out["type"] == "yubico-otp"
    assert out["public_id"] == public_id.decode()
    assert out["serial"] == serial
    assert json.loads(run_ykterm("otp", "parse", "ubhe28123456123456", "--json").stdout)["type"] == "oath-hotp"
    assert json.loads(run_ykterm("otp", "parse", "hunter2", "--json").stdout)["type"] == "static"


def test_capture_reads_a_line_when_not_a_terminal():
    otp = encode_otp(OTP(PRIVATE_ID, 1, 2, 3, 4), KEY, public_id=PUBLIC_ID).decode()
    out = json.loads(run_ykterm("otp", "capture", "--json", input=otp + "\n").stdout)
    assert out["otp"] == otp and out["type"] == "yubico-otp"


@pytest.fixture
def otp_key(pcsc, tmp_path):
    k = ServedKey(pcsc, slot=1, state=tmp_path / "otp-key.json",
                  extra=["--otp-aes-key", KEY_HEX, "--otp-public-id", PUBLIC_ID.decode(),
                         "--otp-private-id", PRIVATE_ID.hex()]).start()
    yield k
    k.stop()


def test_read_ndef_from_the_virtual_key(otp_key, env):
    seen = []
    for _ in range(3):
        out = json.loads(run_ykterm("otp", "read", "--reader", otp_key.reader, "--json", env=env).stdout)
        assert out["type"] == "yubico-otp"
        assert out["public_id"] == PUBLIC_ID.decode()
        assert out["records"][0]["value"] == "https://my.yubico.com/yk/#" + out["otp"]
        public_id, token = decode_otp(out["otp"].encode(), KEY)
        assert public_id == PUBLIC_ID
        assert token.uid == PRIVATE_ID
        seen.append((token.session, token.counter))
    # One power-up: the usage counter stays, the session counter counts the OTPs.
    assert len({s for s, _ in seen}) == 1
    assert [c for _, c in seen] == sorted(c for _, c in seen) and len({c for _, c in seen}) == 3
    text = run_ykterm("otp", "read", "--reader", otp_key.reader, env=env).stdout
    assert "URI: https://my.yubico.com/yk/#" in text and "OTP: " in text
    custom = run_ykterm("otp", "read", "--reader", otp_key.reader, "--pattern", "yk/#(.{12})", env=env).stdout
    assert "OTP: " + PUBLIC_ID.decode() in custom


def test_read_json_without_an_otp_still_prints_the_records(otp_key, env):
    r = run_ykterm("otp", "read", "--reader", otp_key.reader, "--json", "--pattern", "no-such-thing/(.+)", env=env,
                   check=False)
    assert r.returncode == 1 and r.stderr.startswith("ykterm: "), r.stderr
    out = json.loads(r.stdout)
    assert out["otp"] is None and out["type"] is None
    assert out["records"][0]["type"] == "uri"
    assert out["records"][0]["value"].startswith("https://my.yubico.com/yk/#")


def _capture_on_pty(feed, timeout="10"):
    """Runs `otp capture --json` with a pseudo-terminal as standard input; `feed(master)` types."""
    import os
    import subprocess
    import termios

    from harness import YKTERM, wait_for_input

    master, slave = os.openpty()
    before = termios.tcgetattr(slave)
    proc = subprocess.Popen([str(YKTERM), "otp", "capture", "--json", "--timeout", timeout], stdin=slave,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Typed once it reads the terminal (its modes set for the capture).
        wait_for_input(proc)
        feed(master)
        out, err = proc.communicate(timeout=20)
        after = termios.tcgetattr(slave)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        os.close(slave)
    return proc.returncode, out, err, before, after


def test_capture_on_a_terminal_takes_the_burst_and_restores_the_terminal():
    import os
    import time

    otp = encode_otp(OTP(PRIVATE_ID, 1, 2, 3, 4), KEY, public_id=PUBLIC_ID).decode()

    def feed(master):
        for c in "slow\r":  # a human: too slow, ignored
            os.write(master, c.encode())
            time.sleep(0.12)  # a person's pace between keys: the scenario
        os.write(master, (otp + "\r").encode())

    code, out, err, before, after = _capture_on_pty(feed)
    assert code == 0, err
    assert "Touch your key now" in err
    assert "too slowly" in err
    assert json.loads(out)["otp"] == otp
    assert after == before


def test_capture_times_out_and_restores_the_terminal():
    code, out, err, before, after = _capture_on_pty(lambda m: None, timeout="1")
    assert code == 1 and "within" in err
    assert after == before


# The OTP application's slots: challenge-response programmed and answered by ykterm and by ykman.

HMAC_KEY = "303132333435363738393a3b3c3d3e3f40414243"  # 20 bytes, the largest an HMAC-SHA1 slot holds
SHORT_KEY = "0102030405"
# Challenges shorter than 64 bytes, including ones that end in 00 and 01 (the key strips the padding).
CHALLENGES = ["00", "01", "313233", "0102030400", "fefe0101", "a5" * 62 + "00", bytes(range(1, 64)).hex()]


def hmac_sha1(key_hex, challenge_hex):
    import hashlib
    import hmac

    return hmac.new(bytes.fromhex(key_hex), bytes.fromhex(challenge_hex), hashlib.sha1).hexdigest()


def ykterm_otp(key, env, *args, **kw):
    return run_ykterm("otp", args[0], "--reader", key.reader, *args[1:], env=env, **kw)


def ykman_slots(key, env):
    """ykman's view of the slots: {1: 'programmed'|'empty', 2: ...}."""
    out = run_ykman(key.reader, "otp", "info", env=env).stdout
    slots = {}
    for line in out.splitlines():
        if line.startswith("Slot "):
            n, state = line[5:].split(": ", 1)
            slots[int(n)] = state.strip()
    return slots


def test_slot_programmed_by_ykman_answers_ykterm_calculate(key, env):
    run_ykman(key.reader, "otp", "chalresp", "2", HMAC_KEY, "-f", env=env)
    for challenge in CHALLENGES:
        r = ykterm_otp(key, env, "calculate", "--slot", "2", challenge)
        assert r.stdout.strip() == hmac_sha1(HMAC_KEY, challenge), challenge
    assert "Touch" not in r.stderr  # a slot without touch answers at once
    # The challenge from standard input.
    r = ykterm_otp(key, env, "calculate", "--slot", "2", "-", input="c0ffee\n")
    assert r.stdout.strip() == hmac_sha1(HMAC_KEY, "c0ffee")
    # A short key, with touch: the answer waits for the (simulated) touch and ykterm says so.
    run_ykman(key.reader, "otp", "chalresp", "--touch", "1", SHORT_KEY, "-f", env=env)
    r = ykterm_otp(key, env, "calculate", "--slot", "1", "313233")
    assert r.stdout.strip() == hmac_sha1(SHORT_KEY, "313233")
    assert "Touch your key" in r.stderr


def test_slot_programmed_by_ykterm_answers_ykman_calculate(key, env):
    # The key from standard input: no warning.
    r = ykterm_otp(key, env, "chalresp", "--slot", "1", "-", input=HMAC_KEY + "\n")
    assert "visible" not in r.stderr and HMAC_KEY not in r.stdout + r.stderr
    assert "Slot 1 programmed" in r.stdout
    for challenge in CHALLENGES:
        assert run_ykman(key.reader, "otp", "calculate", "1", challenge, env=env).stdout.strip() \
            == hmac_sha1(HMAC_KEY, challenge), challenge
    # A 64-byte challenge: the key takes the run of equal bytes at its end for padding, for every client alike.
    full = bytes(range(64)).hex()
    assert ykterm_otp(key, env, "calculate", "--slot", "1", full).stdout.strip() \
        == run_ykman(key.reader, "otp", "calculate", "1", full, env=env).stdout.strip()
    # The key on the command line works, with a warning; --touch makes the slot wait for a touch.
    r = ykterm_otp(key, env, "chalresp", "--slot", "2", "--touch", SHORT_KEY)
    assert "visible to other users" in r.stderr
    assert "touch required" in r.stdout
    assert run_ykman(key.reader, "otp", "calculate", "2", "abcdef", env=env).stdout.strip().splitlines()[-1] \
        == hmac_sha1(SHORT_KEY, "abcdef")
    assert "Touch your key" in ykterm_otp(key, env, "calculate", "--slot", "2", "abcdef").stderr


# RFC 6238, appendix B: the SHA-1 seed "12345678901234567890" and its 8-digit codes.
RFC6238_SEED = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
RFC6238_SHA1 = {59: "94287082", 1111111109: "07081804", 1111111111: "14050471", 1234567890: "89005924",
                2000000000: "69279037", 20000000000: "65353130"}


def test_totp_from_a_challenge_response_slot_gives_rfc_6238s_codes_and_ykmans(key, env):
    """`otp chalresp --totp` stores a Base32 TOTP secret; `otp calculate --totp` gives RFC 6238's published codes
    from it, the ones ykman calculates from the same slot, and pyotp's for the same secret; ykman's --totp slot
    works for ykterm."""
    import pyotp

    r = ykterm_otp(key, env, "chalresp", "--slot", "2", "--totp", "--force", input=RFC6238_SEED + "\n")
    assert "holds the TOTP secret" in r.stdout and RFC6238_SEED not in r.stdout + r.stderr, r.stdout + r.stderr
    for t, code in RFC6238_SHA1.items():
        assert ykterm_otp(key, env, "calculate", "--slot", "2", "--totp", str(t), "--digits", "8").stdout.strip() \
            == code, t
        assert run_ykman(key.reader, "otp", "calculate", "2", "--totp", str(t), "-d", "8", env=env).stdout.strip() \
            == code, t
    # Six digits by default: the last six, as pyotp gives them.
    for t in (59, 1234567890, 1_767_225_600):
        assert ykterm_otp(key, env, "calculate", "--slot", "2", "--totp", str(t)).stdout.strip() \
            == pyotp.TOTP(RFC6238_SEED).at(t), t
    # Without a time: now (the code pyotp gives for a moment around the call).
    before = pyotp.TOTP(RFC6238_SEED).now()
    now = ykterm_otp(key, env, "calculate", "--slot", "2", "--totp").stdout.strip()
    assert now in (before, pyotp.TOTP(RFC6238_SEED).now()), now

    # ykman's --totp programming, read by ykterm.
    secret = pyotp.random_base32()
    run_ykman(key.reader, "otp", "chalresp", "1", "--totp", secret, "-f", env=env)
    assert ykterm_otp(key, env, "calculate", "--slot", "1", "--totp", "1767225600").stdout.strip() \
        == pyotp.TOTP(secret).at(1767225600)

    # Bad input is refused before the key is asked.
    r = ykterm_otp(key, env, "calculate", "--slot", "2", "--totp", "yesterday", check=False)
    assert r.returncode == 2 and "a Unix time in seconds" in r.stderr, r.stderr
    r = ykterm_otp(key, env, "calculate", "--slot", "2", "--digits", "8", "00", check=False)
    assert r.returncode == 2 and "--digits" in r.stderr and "--totp" in r.stderr, r.stderr
    r = ykterm_otp(key, env, "calculate", "--slot", "2", "--totp", "--digits", "7", check=False)
    assert r.returncode == 2 and "6 or 8" in r.stderr, r.stderr
    r = ykterm_otp(key, env, "chalresp", "--slot", "2", "--totp", "--force", input="not base32!\n", check=False)
    assert r.returncode == 2 and "Base32" in r.stderr, r.stderr


def test_key_omitted_is_read_from_standard_input(key, env):
    r = ykterm_otp(key, env, "chalresp", "--slot", "2", input=SHORT_KEY + "\n")
    assert "visible" not in r.stderr
    assert run_ykman(key.reader, "otp", "calculate", "2", "00ff", env=env).stdout.strip() \
        == hmac_sha1(SHORT_KEY, "00ff")


def test_info_agrees_with_ykman(key, env):
    def check():
        info = json.loads(ykterm_otp(key, env, "info", "--json").stdout)
        slots = ykman_slots(key, env)
        assert {s["slot"]: ("programmed" if s["configured"] else "empty") for s in info["slots"]} == slots
        text = ykterm_otp(key, env, "info").stdout.splitlines()
        for n, state in slots.items():
            assert f"Slot {n}: {state}" in text
        return info

    info = check()
    assert info["version"] == "5.7.2"
    assert info["serial"] == 28123456
    ykman_info = run_ykman(key.reader, "info", env=env).stdout
    assert "Serial number: 28123456" in ykman_info and "5.7.2" in ykman_info
    assert "Serial: 28123456" in ykterm_otp(key, env, "info").stdout
    run_ykman(key.reader, "otp", "chalresp", "2", HMAC_KEY, "-f", env=env)
    info = check()
    assert [s["configured"] for s in info["slots"]] == [False, True]
    assert not any(s["touch_triggered"] for s in info["slots"])  # challenge-response slots type nothing
    ykterm_otp(key, env, "chalresp", "--slot", "1", "--touch", "-", input=SHORT_KEY + "\n")
    info = check()
    assert [s["configured"] for s in info["slots"]] == [True, True]


def test_keyboard_slot_is_touch_triggered_and_not_challenge_response(key, env):
    run_ykman(key.reader, "otp", "static", "--keyboard-layout", "MODHEX", "1", "cbdefghijklnrtuv", "-f", env=env)
    info = json.loads(ykterm_otp(key, env, "info", "--json").stdout)
    assert info["slots"][0] == {"slot": 1, "configured": True, "touch_triggered": True}
    assert "Slot 1: programmed, touch-triggered" in ykterm_otp(key, env, "info").stdout
    r = ykterm_otp(key, env, "calculate", "--slot", "1", "00", check=False)
    assert r.returncode == 1 and "not configured for HMAC-SHA1 challenge-response" in r.stderr


def test_delete_and_ykman_sees_the_slot_empty(key, env):
    run_ykman(key.reader, "otp", "chalresp", "1", HMAC_KEY, "-f", env=env)
    run_ykman(key.reader, "otp", "chalresp", "2", SHORT_KEY, "-f", env=env)
    # Without a terminal to ask on, --force is needed; the slot is left as it was.
    r = ykterm_otp(key, env, "delete", "--slot", "1", check=False)
    assert r.returncode == 2 and "--force" in r.stderr
    assert ykman_slots(key, env) == {1: "programmed", 2: "programmed"}
    r = ykterm_otp(key, env, "delete", "--slot", "1", "--force")
    assert "Slot 1 deleted" in r.stdout
    assert ykman_slots(key, env) == {1: "empty", 2: "programmed"}
    assert run_ykman(key.reader, "otp", "calculate", "2", "00", env=env).stdout.strip() == hmac_sha1(SHORT_KEY, "00")
    r = ykterm_otp(key, env, "delete", "--slot", "1", "-f", check=False)
    assert r.returncode == 1 and "already empty" in r.stderr
    r = ykterm_otp(key, env, "calculate", "--slot", "1", "00", check=False)
    assert r.returncode == 1 and "slot 1 is empty" in r.stderr
    # The last slot: the key's program sequence goes back to 0, which ykterm accepts.
    ykterm_otp(key, env, "delete", "--slot", "2", "-f")
    assert ykman_slots(key, env) == {1: "empty", 2: "empty"}
    assert json.loads(ykterm_otp(key, env, "info", "--json").stdout)["program_sequence"] == 0


def test_overwrite_needs_force_when_not_a_terminal(key, env):
    ykterm_otp(key, env, "chalresp", "--slot", "2", "-", input=HMAC_KEY + "\n")
    r = ykterm_otp(key, env, "chalresp", "--slot", "2", "-", input=SHORT_KEY + "\n", check=False)
    assert r.returncode == 2 and "--force" in r.stderr
    assert run_ykman(key.reader, "otp", "calculate", "2", "42", env=env).stdout.strip() == hmac_sha1(HMAC_KEY, "42")
    ykterm_otp(key, env, "chalresp", "--slot", "2", "-f", "-", input=SHORT_KEY + "\n")
    assert run_ykman(key.reader, "otp", "calculate", "2", "42", env=env).stdout.strip() == hmac_sha1(SHORT_KEY, "42")


def _on_pty(args, env, answers):
    """Runs ykterm with a pseudo-terminal as standard input, typing each answer once it waits for one. Returns
    the exit status, stdout, stderr and what the terminal showed (the echo)."""
    import os
    import select
    import subprocess

    from harness import YKTERM, wait_for_input

    master, slave = os.openpty()
    proc = subprocess.Popen([str(YKTERM)] + list(args), stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    shown = b""
    try:
        reads = None
        for answer in answers:
            reads = wait_for_input(proc, since=reads)
            os.write(master, (answer + "\n").encode())
        out, err = proc.communicate(timeout=30)
        while select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        os.close(slave)
    return proc.returncode, out, err, shown.decode(errors="replace")


def test_on_a_terminal_the_key_is_asked_without_echo_and_overwriting_is_confirmed(key, env):
    base = ["otp", "chalresp", "--reader", key.reader, "--slot", "1"]
    code, out, err, shown = _on_pty(base, env, [HMAC_KEY])
    assert code == 0, err
    assert "HMAC-SHA1 key (hex)" in err
    assert HMAC_KEY not in shown and HMAC_KEY not in out + err
    assert run_ykman(key.reader, "otp", "calculate", "1", "99", env=env).stdout.strip() == hmac_sha1(HMAC_KEY, "99")
    # Overwriting asks; "n" leaves the slot alone, "y" overwrites.
    code, out, err, _ = _on_pty(base + ["-"], env, [SHORT_KEY, "n"])
    assert code == 1 and "Overwrite it?" in err and "nothing was changed" in err
    assert run_ykman(key.reader, "otp", "calculate", "1", "99", env=env).stdout.strip() == hmac_sha1(HMAC_KEY, "99")
    code, out, err, _ = _on_pty(base + ["-"], env, [SHORT_KEY, "y"])
    assert code == 0, err
    assert run_ykman(key.reader, "otp", "calculate", "1", "99", env=env).stdout.strip() == hmac_sha1(SHORT_KEY, "99")
    # Deleting asks too.
    code, out, err, _ = _on_pty(["otp", "delete", "--reader", key.reader, "--slot", "1"], env, ["y"])
    assert code == 0 and "Delete the configuration of slot 1?" in err
    assert ykman_slots(key, env)[1] == "empty"


def test_bad_input_is_rejected(key, env):
    def fails(*args, status=2, input=None):
        r = ykterm_otp(key, env, *args, input=input, check=False)
        assert r.returncode == status, (args, r.stderr)
        return r.stderr

    assert "--slot must be 1 or 2" in fails("calculate", "--slot", "3", "00")
    assert "--slot must be 1 or 2" in fails("chalresp", "--slot", "0", "-f", SHORT_KEY)
    assert "not hex" in fails("calculate", "--slot", "1", "xyz0")
    assert "odd number" in fails("calculate", "--slot", "1", "abc")
    assert "empty" in fails("calculate", "--slot", "1", "")
    assert "at most 64" in fails("calculate", "--slot", "1", "00" * 65)
    assert "1 to 20 bytes" in fails("chalresp", "--slot", "1", "-f", "-", input="11" * 21 + "\n")
    assert "1 to 20 bytes" in fails("chalresp", "--slot", "1", "-f", "-", input="\n")
    # A key that is not hex: the message does not repeat it.
    err = fails("chalresp", "--slot", "1", "-f", "-", input="0102zz0405\n")
    assert "not hex" in err and "zz" not in err and "0102" not in err
    # None of these changed the key.
    assert ykman_slots(key, env) == {1: "empty", 2: "empty"}
    assert "slot 2 is empty" in fails("calculate", "--slot", "2", "00", status=1)
