"""`ykterm otp settings` against ykman's `otp settings`: on two virtual keys with the same slot (programmed by
ykman), ykterm updates one and ykman the other with the same options (pacing, numeric keypad, serial visible
over USB, Enter, access code); the slot configurations the keys then store are the same bytes."""

import json

import pytest

from harness import ServedKey, run_ykman, run_ykterm

PUBLIC_ID = "vvccccfiluij"
PRIVATE_ID = "c0ffee123456"
AES_KEY = "2b7e151628aed2a6abf7158809cf4f3c"
ACCESS = "a0b0c0d0e0f0"


def slot1(path):
    return json.loads(path.read_text())["otpSlots"]["slot1"]


@pytest.mark.parametrize("ours, theirs", [
    (["--pacing", "20", "--use-numeric-keypad"], ["--pacing", "20", "--use-numeric-keypad"]),
    (["--pacing", "40", "--no-enter", "--serial-usb-visible"], ["-p", "40", "--no-enter", "--serial-usb-visible"]),
    (["--pacing", "60", "--lock"], ["--pacing", "60", "--new-access-code", ACCESS]),
    ([], []),
])
def test_settings_store_what_ykman_s_store(pcsc, env, tmp_path, ours, theirs):
    a = ServedKey(pcsc, slot=0, state=tmp_path / "a.json").start()
    b = ServedKey(pcsc, slot=1, state=tmp_path / "b.json").start()
    try:
        for k in (a, b):
            run_ykman(k.reader, "otp", "yubiotp", "1", "--public-id", PUBLIC_ID, "--private-id", PRIVATE_ID,
                      "--key", AES_KEY, "--force", env=env)
        lock_input = ACCESS + "\n" if "--lock" in ours else None
        r = run_ykterm("otp", "settings", "--slot", "1", *ours, "--force", "--reader", a.reader, env=env,
                       input=lock_input)
        assert "Settings of slot 1 updated" in r.stdout, r.stdout
        run_ykman(b.reader, "otp", "settings", "1", *theirs, "--force", env=env)
    finally:
        a.stop()
        b.stop()
    assert slot1(tmp_path / "a.json") == slot1(tmp_path / "b.json")
