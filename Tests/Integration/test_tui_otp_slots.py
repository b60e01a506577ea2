"""The OTP tab's slots panel end to end in tmux, on the virtual key served through pcscd: a slot programmed,
the slots swapped and a slot deleted in the tab are what `ykman otp info` reports after each step, and the
Yubico OTP values the tab shows once are the ones the slot types (yubiotp decrypts its OTP with them); an access
code set in the tab is one ykman then needs, and a wrong one given to remove it is refused and said.
"""

import base64
import json
import re

from yubiotp.otp import decode_otp

from harness import run_ykman, run_ykterm
from test_tui import pytestmark  # noqa: F401  (skipped without tmux)
from test_tui_otp import otp_key, otp_tui  # noqa: F401  (fixtures)

HOTP_SECRET = base64.b32encode(b"12345678901234567890").decode()  # RFC 4226's test secret


def ykman_slots(key, env):
    out = run_ykman(key.reader, "otp", "info", env=env).stdout
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"(?m)^Slot (\d): (\w+)", out)}


def press(t, key):
    """A bound key alone (the tab waits out the burst gap before it acts)."""
    t.send(key)


def confirm(t, question):
    t.wait_for(question)
    t.answer("y")


def program_hotp_in_slot_1(t):
    """From both slots empty: an HOTP slot in slot 1 (the first empty one), the type chosen with Right, the
    secret typed hidden."""
    t.wait_for("Slot 1: empty · slot 2: empty")
    press(t, "p")
    t.wait_for("Program an OTP slot")
    t.send("Down", "Right", "Right", "Down")
    t.wait_for("Secret \\(Base32\\)")
    t.type(HOTP_SECRET)
    assert HOTP_SECRET not in t.screen()
    t.send("Enter", "Enter", "Enter")
    t.wait_for("Slot 1: programmed, types on touch · slot 2: empty")


def test_program_swap_and_delete_in_the_tab_agree_with_ykman(otp_tui, otp_key, env):
    t, key = otp_tui, otp_key
    program_hotp_in_slot_1(t)
    assert ykman_slots(key, env) == {1: "programmed", 2: "empty"}
    # Programming it again asks first; no leaves the slot as it is.
    press(t, "p")
    t.wait_for("Program an OTP slot")
    t.send("Left", "Enter", "Enter", "Enter")
    t.wait_for("Slot 1 is programmed. Overwrite it?")
    t.send("n")
    t.send("Escape")
    # Swap (asked), then ykman sees the slot in 2.
    press(t, "w")
    t.wait_for("Swap the OTP slots")
    t.send("Enter")
    confirm(t, "Swap the configurations of slot 1 and 2?")
    t.wait_for("Slot 1: empty · slot 2: programmed, types on touch")
    assert ykman_slots(key, env) == {1: "empty", 2: "programmed"}
    # Delete (asked): the dialog opens on the programmed slot.
    press(t, "D")
    t.wait_for("Delete an OTP slot")
    t.send("Enter", "Enter")
    confirm(t, "Delete the configuration of slot 2")
    t.wait_for("Slot 1: empty · slot 2: empty")
    assert ykman_slots(key, env) == {1: "empty", 2: "empty"}
    # A Yubico OTP on slot 1: the values shown once decrypt what the slot types.
    press(t, "p")
    t.wait_for("Program an OTP slot")
    t.send("Enter", "Enter", "Enter")
    screen = t.wait_for("Slot 1 programmed: shown once")
    public_id = re.search(r"│ Public ID +([cbdefghijklnrtuv]+)", screen).group(1)
    private_id = re.search(r"│ Private ID +([0-9a-f]{12})", screen).group(1)
    aes_key = re.search(r"│ AES key +([0-9a-f]{32})", screen).group(1)
    assert ykman_slots(key, env) == {1: "programmed", 2: "empty"}
    t.send("Escape")
    t.wait_for("Slot 1: programmed, types on touch · slot 2: empty")
    # The NDEF tag serves slot 1: its OTP carries the public ID shown, and decrypts with the key shown.
    r = run_ykterm("otp", "read", "--reader", key.reader, "--json", "--pattern", "(.*)", env=env)
    served = json.loads(r.stdout)["records"][0]["value"].rsplit("#", 1)[-1]
    assert served.startswith(public_id) and len(served) == 44
    _, token = decode_otp(served.encode(), bytes.fromhex(aes_key))
    assert token.uid.hex() == private_id


def test_access_code_set_in_the_tab_binds_ykman_and_a_wrong_one_is_refused(otp_tui, otp_key, env):
    t, key = otp_tui, otp_key
    code, wrong = "a1a2a3a4a5a6", "010203040506"
    program_hotp_in_slot_1(t)
    # The access code dialog opens on the programmed slot; the new code typed twice, never shown.
    press(t, "a")
    t.wait_for("Access code of an OTP slot")
    t.send("Down", "Down", "Down")
    t.type(code)
    t.send("Enter")
    t.type(code)
    assert code not in t.screen()
    t.send("Enter")
    confirm(t, "Set the access code of slot 1?")
    t.wait_for("Access code of slot 1 set")
    # ykman now needs it: without it (or with another) the key refuses; with it the slot changes.
    r = run_ykman(key.reader, "otp", "settings", "1", "--no-enter", "-f", env=env, check=False)
    assert r.returncode != 0
    r = run_ykman(key.reader, "otp", "--access-code", wrong, "delete", "1", "-f", env=env, check=False)
    assert r.returncode != 0 and ykman_slots(key, env) == {1: "programmed", 2: "empty"}
    run_ykman(key.reader, "otp", "--access-code", code, "settings", "1", "--enter", "-f", env=env)
    # Removing it with a wrong current code: the key refuses, the dialog stays and says why.
    press(t, "a")
    t.wait_for("Access code of an OTP slot")
    t.send("Down", "Space", "Down")
    t.wait_for(r"Remove the access code\s+< yes >")
    t.type(wrong)
    t.send("Enter")
    confirm(t, "Remove the access code of slot 1?")
    t.wait_for("the current access code is wrong or missing")
    t.type(code)
    assert code not in t.screen()
    t.send("Enter")
    confirm(t, "Remove the access code of slot 1?")
    t.wait_for("Access code of slot 1 removed")
    # Unprotected again: ykman deletes the slot without a code.
    run_ykman(key.reader, "otp", "delete", "1", "-f", env=env)
    assert ykman_slots(key, env) == {1: "empty", 2: "empty"}
