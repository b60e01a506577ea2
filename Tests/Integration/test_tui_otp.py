"""The TUI's OTP tab end to end in tmux, against the virtual key served through pcscd (and `--virtual`).

Yubico OTPs are made by PyPI yubiotp and typed into the tab the way a key types them (one burst ending in
Enter); the AES keys come from $XDG_CONFIG_HOME/ykterm/config.toml's [otp.aes_keys]. NDEF reads are
decrypted again with yubiotp, and the challenge-response answer is checked against Python's HMAC-SHA1.
"""

import hashlib
import hmac
import os
import re
import shlex
import shutil
import time

import pytest
from yubiotp.otp import OTP, YubiKey, decode_otp, encode_otp

from harness import YKTERM, ServedKey, run_ykterm
from test_tui import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is missing: run `make deps`")

# The served key's NDEF credential.
NDEF_KEY_HEX = "2b7e151628aed2a6abf7158809cf4f3c"
NDEF_PUBLIC_ID = "vvccccfhcbdn"
NDEF_PRIVATE_ID = bytes.fromhex("c0ffee123456")
# A second token, typed into the tab: only yubiotp knows it.
TYPED_KEY_HEX = "000102030405060708090a0b0c0d0e0f"
TYPED_PUBLIC_ID = b"cccjgjgkhcbb"
TYPED_PRIVATE_ID = bytes.fromhex("a1b2c3d4e5f6")
# A public ID whose configured key is not the one its OTPs were made with.
WRONG_PUBLIC_ID = b"ccccccbcdefg"

HMAC_KEY_HEX = "303132333435363738393a3b3c3d3e3f40414243"


def write_config(config_home, aes_keys):
    """config.toml with [otp.aes_keys], mode 0600 as the file must be when it holds keys."""
    directory = config_home / "ykterm"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config.toml"
    lines = ["[otp.aes_keys]"] + [f'{public_id} = "{key}"' for public_id, key in aes_keys.items()]
    path.write_text("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return path


def serve_otp_key(pcsc, tmp_path, *extra):
    return ServedKey(pcsc, slot=0, state=tmp_path / "key.json",
                     extra=["--otp-aes-key", NDEF_KEY_HEX, "--otp-public-id", NDEF_PUBLIC_ID,
                            "--otp-private-id", NDEF_PRIVATE_ID.hex()] + list(extra)).start()


def open_otp_tab(pcsc, tmp_path, key):
    """The TUI on the served key with the config's AES keys, on the OTP tab, after the tab's own NDEF read
    (the served key answers with an NFC reader's ATR, so the tab reads its tag once when it opens)."""
    config_home = tmp_path / "config"
    write_config(config_home, {
        NDEF_PUBLIC_ID: NDEF_KEY_HEX,
        TYPED_PUBLIC_ID.decode(): TYPED_KEY_HEX,
        WRONG_PUBLIC_ID.decode(): "ff" * 16,
    })
    env = pcsc.env(XDG_CONFIG_HOME=str(config_home))
    t = Tmux(f"{shlex.quote(str(YKTERM))} --reader {shlex.quote(key.reader)}", env)
    try:
        t.wait_for("serial")
        t.send("2")
        t.wait_for("Touch your key now")
        t.wait_for("read from the NDEF tag")
    except BaseException:
        t.close()
        raise
    return t


@pytest.fixture
def otp_key(pcsc, tmp_path):
    k = serve_otp_key(pcsc, tmp_path)
    yield k
    k.stop()


@pytest.fixture
def otp_tui(pcsc, tmp_path, otp_key):
    t = open_otp_tab(pcsc, tmp_path, otp_key)
    yield t
    t.close()


def captured_rows(screen):
    return re.findall(r"(?m)^ \d\d:\d\d:\d\d ", screen)


def typed_otp(usage, session, key_hex=TYPED_KEY_HEX, public_id=TYPED_PUBLIC_ID):
    """A Yubico OTP from yubiotp. YubiKey(uid, session, counter): `session` is the usage counter."""
    token = YubiKey(TYPED_PRIVATE_ID, usage, session).generate()
    return encode_otp(token, bytes.fromhex(key_hex), public_id=public_id).decode(), token


def key_types(t, text):
    """Types `text` and Enter at once, as a key does: one tmux command list, so that the Enter follows the text
    within microseconds (two tmux clients, one after the other, can be more than the 50 ms a burst allows apart
    on a busy machine)."""
    t.tmux("send-keys", "-t", "0", "-l", text, ";", "send-keys", "-t", "0", "Enter")


def row_of(screen, text):
    for line in screen.splitlines():
        if text in line:
            return line
    raise AssertionError(f"no row with {text!r}:\n{screen}")


def test_yubiotp_otp_shows_its_public_id_and_with_the_aes_key_its_counters(otp_tui):
    t = otp_tui
    otp, token = typed_otp(41, 3)
    key_types(t, otp)
    screen = t.wait_for("usage 41 · session 3")
    row = row_of(screen, TYPED_PUBLIC_ID.decode())
    assert re.search(r"\d\d:\d\d:\d\d\s+Yubico OTP\s+" + TYPED_PUBLIC_ID.decode(), row), row
    assert "usage 41 · session 3" in row
    # The selected (newest) capture in full, with yubiotp's fields.
    assert "Yubico OTP · typed by the key" in screen
    assert otp in screen
    assert f"Usage counter 41 · session counter 3 · timestamp {token.timestamp}" in screen
    assert f"Private ID {TYPED_PRIVATE_ID.hex()} · CRC ok" in screen
    assert "Yubico OTP captured" in screen
    # The next OTP of the same token counts on; the first one again is a replay.
    later, _ = typed_otp(41, 4)
    key_types(t, later)
    t.wait_for("usage 41 · session 4")
    key_types(t, otp)
    t.wait_for(r"usage 41 · session 3 · replay\?")


def test_wrong_aes_key_and_unknown_public_id(otp_tui):
    t = otp_tui
    otp, _ = typed_otp(2, 0, public_id=WRONG_PUBLIC_ID)
    key_types(t, otp)
    screen = t.wait_for(r"wrong AES key \(CRC failed\)")
    assert WRONG_PUBLIC_ID.decode() in row_of(screen, "wrong AES key")
    assert f"The AES key for {WRONG_PUBLIC_ID.decode()} fails the CRC check" in screen
    assert "its AES key fails the CRC check" in screen
    unknown, _ = typed_otp(2, 0, public_id=b"cccccccbcccb")
    key_types(t, unknown)
    screen = t.wait_for("No AES key for cccccccbcccb")
    assert "no AES key" in row_of(screen, "cccccccbcccb")


def test_slow_typing_is_not_an_otp_and_static_and_hotp_are_classified(otp_tui):
    t = otp_tui
    before = len(captured_rows(t.screen()))
    # A person: a key at a time, far slower than a key types.
    for c in "hello":
        t.type(c)
        time.sleep(0.2)  # a person's pace between keys: the scenario
    t.send("Enter")
    screen = t.wait_for("Ignored 5 characters typed by hand")
    assert "hello" not in screen
    assert len(captured_rows(screen)) == before, "something was captured"
    # A static password typed by a key: classified, never shown.
    key_types(t, "Correct-Horse-Battery")
    screen = t.wait_for(r"21 characters \(hidden\)")
    assert re.search(r"\d\d:\d\d:\d\d\s+static\s", row_of(screen, "(hidden)"))
    assert "Correct-Horse" not in screen
    assert "Static password captured (not shown)" in screen
    # OATH-HOTP as ykman programs it: "ubhe" and the serial, then the code.
    key_types(t, "ubhe28123456" + "755224")
    screen = t.wait_for("code 755224")
    row = row_of(screen, "code 755224")
    assert "OATH-HOTP" in row and "ubhe28123456" in row and "28123456" in row
    # A bare 6-digit code starting with "1" (a tab key): captured, the tab stays.
    key_types(t, "123456")
    screen = t.wait_for("code 123456")
    assert "Touch your key now" in screen


def test_ndef_read_on_the_served_key_decrypts_with_the_config_key(otp_tui):
    t = otp_tui
    t.send("F5")
    # Wait until both reads (the tab's own and F5's) are listed.
    screen = t.screen()
    deadline = time.monotonic() + 15
    while len(re.findall(r"(?m)^ \d\d:\d\d:\d\d\s+Yubico OTP\s+" + NDEF_PUBLIC_ID, screen)) < 2:
        assert time.monotonic() < deadline, screen
        time.sleep(0.1)
        screen = t.screen()
    # The newest is selected: its OTP on screen, decrypted again by yubiotp with the served key's AES key.
    otp = re.search(r"(?m)^\s+(" + NDEF_PUBLIC_ID + r"[cbdefghijklnrtuv]{32})\s*$", screen).group(1)
    public_id, token = decode_otp(otp.encode(), bytes.fromhex(NDEF_KEY_HEX))
    assert public_id.decode() == NDEF_PUBLIC_ID and token.uid == NDEF_PRIVATE_ID
    assert f"Usage counter {token.session} · session counter {token.counter} · timestamp {token.timestamp}" in screen
    assert f"Private ID {NDEF_PRIVATE_ID.hex()} · CRC ok" in screen
    assert "replay" not in screen


def test_challenge_response_form_answers_hmac_sha1(otp_tui, otp_key, env):
    t = otp_tui
    run_ykterm("otp", "chalresp", "--slot", "2", "--reader", otp_key.reader, "-", input=HMAC_KEY_HEX + "\n", env=env)
    t.send("x")
    t.wait_for(r"Challenge-response \(HMAC-SHA1\)")
    # Bad input is refused as it is typed.
    t.type("c0fz")
    t.wait_for('"z" is not a hex digit')
    t.send("BSpace")
    t.type("fee 01")
    t.wait_gone("not a hex digit")
    t.send("Enter")
    expected = hmac.new(bytes.fromhex(HMAC_KEY_HEX), bytes.fromhex("c0ffee01"), hashlib.sha1).hexdigest()
    screen = t.wait_for("Challenge-response, slot 2, challenge c0ffee01:")
    assert re.search(r"(?m)^\s+" + expected + r"\s*$", screen), screen
    assert "Slot 2 answered" in screen
    # Slot 1 is empty: the form says so and stays.
    t.send("x")
    t.wait_for(r"Challenge-response \(HMAC-SHA1\)")
    t.send("Up")
    t.send("Space")
    t.send("Down")
    t.type("00")
    t.send("Enter")
    screen = t.wait_for("Slot 1 is empty")
    assert "Challenge-response (HMAC-SHA1)" in screen
    t.send("Escape")
    t.wait_gone(r"Challenge-response \(HMAC-SHA1\)")


def test_key_pulled_out_mid_challenge_says_so(pcsc, tmp_path, env):
    # A slot that waits for a touch that takes 20 s keeps the key busy long enough to pull it out.
    key = serve_otp_key(pcsc, tmp_path, "--touch-delay", "20000")
    run_ykterm("otp", "chalresp", "--slot", "1", "--touch", "--reader", key.reader, "-",
               input=HMAC_KEY_HEX + "\n", env=env)
    t = open_otp_tab(pcsc, tmp_path, key)
    try:
        pull_out_mid_challenge(t, key)
    finally:
        t.close()
        key.stop()


def pull_out_mid_challenge(t, key):
    t.send("x")
    t.wait_for(r"Challenge-response \(HMAC-SHA1\)")
    t.send("Up")
    t.send("Space")
    t.send("Down")
    t.type("42")
    t.send("Enter")
    t.wait_for("Touch your key")
    key.stop(wait=False)
    # Whichever comes first, the failed exchange or pcscd's news of the card leaving, the form closes and
    # the status line says the key was removed.
    screen = t.wait_for("removed", timeout=30)
    t.wait_gone(r"Challenge-response \(HMAC-SHA1\)")
    screen = t.screen()
    assert "Challenge-response, slot 1" not in screen


def test_virtual_key_touch_types_a_decoded_yubico_otp(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    t = Tmux(f"{shlex.quote(str(YKTERM))} --virtual", env)
    try:
        t.wait_for("GitHub")
        t.send("2")
        t.wait_for("Touch your key now")
        screen = t.wait_for(r"T touch · F5 NDEF")
        count = len(re.findall(r"Yubico OTP\s+vv", screen))
        t.send("T")
        screen = t.wait_for("Yubico OTP · the virtual key's touch")
        assert len(re.findall(r"Yubico OTP\s+vv", screen)) == count + 1
        # --virtual knows its own key's AES key: the counters are there.
        assert re.search(r"usage \d+ · session \d+", row_of(screen, "Yubico OTP  "))
        assert "CRC ok" in screen
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()
