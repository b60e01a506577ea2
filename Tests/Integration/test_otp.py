"""`ykterm otp`: Yubico OTPs made by PyPI yubiotp decrypt the same; the virtual key's NDEF tag serves OTPs
that yubiotp decrypts with the key's AES key."""

import json
import struct

import pytest
from yubiotp.modhex import modhex
from yubiotp.otp import OTP, YubiKey, decode_otp, encode_otp

from harness import ServedKey, run_ykterm

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


def _capture_on_pty(feed, timeout="10"):
    """Runs `otp capture --json` with a pseudo-terminal as standard input; `feed(master)` types."""
    import os
    import subprocess
    import termios
    import time

    from harness import YKTERM

    master, slave = os.openpty()
    before = termios.tcgetattr(slave)
    proc = subprocess.Popen([str(YKTERM), "otp", "capture", "--json", "--timeout", timeout], stdin=slave,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
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
            time.sleep(0.12)
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
