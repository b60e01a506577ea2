"""`ykterm config mode`: the USB mode as ykman's `config mode` sets it. On a YubiKey 5 (the virtual key's 5.7.2)
the mode becomes the device configuration, which ykman's `info` reads back, and ykman's mode is what ykterm reads;
on a YubiKey 4 (the virtual key as firmware 4.3.7) both send SET MODE, and the key stores the same configuration
for the same mode and options whichever of the two sent it."""

import json
import re

import pytest

from harness import ServedKey, run_ykman, run_ykterm


def usb_column(ykman_info):
    """ykman info's applications table: application -> its USB column."""
    out = {}
    for line in ykman_info.splitlines():
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) == 3 and parts[1] in ("Enabled", "Disabled", "Not available"):
            out[parts[0]] = parts[1]
    return out


def ykterm_usb(key, env):
    """The applications `ykterm info --json` says are enabled over USB."""
    usb = json.loads(run_ykterm("info", "--json", "--reader", key.reader, env=env).stdout)["usb"]
    return {name for name, state in usb.items() if state == "enabled"}


def test_yubikey5_mode_is_the_device_configuration_both_ways(key, env):
    r = run_ykterm("config", "mode", "o+f", "--force", "--reader", key.reader, env=env)
    assert "Mode set to OTP+FIDO" in r.stdout, r.stdout
    usb = usb_column(run_ykman(key.reader, "info", env=env).stdout)
    assert usb["Yubico OTP"] == usb["FIDO U2F"] == usb["FIDO2"] == "Enabled", usb
    assert usb["OATH"] == usb["PIV"] == usb["OpenPGP"] == usb["YubiHSM Auth"] == "Disabled", usb
    assert ykterm_usb(key, env) == {"otp", "u2f", "fido2"}
    # The same mode again is nothing to do; ykman's mode, read by ykterm.
    again = run_ykterm("config", "mode", "OTP+FIDO", "--reader", key.reader, env=env)
    assert "already" in again.stdout, again.stdout
    # A change of the current mode, as ykman's "+CCID".
    run_ykterm("config", "mode", "+c", "--force", "--reader", key.reader, env=env)
    usb = usb_column(run_ykman(key.reader, "info", env=env).stdout)
    assert usb["Yubico OTP"] == usb["FIDO2"] == usb["PIV"] == usb["OATH"] == "Enabled", usb
    run_ykman(key.reader, "config", "mode", "FIDO+CCID", "--force", env=env)
    assert ykterm_usb(key, env) == {"u2f", "fido2", "oath", "piv", "openpgp", "hsmauth"}
    # Without a terminal a change needs --force; a bad mode and touch-eject outside CCID are refused.
    asked = run_ykterm("config", "mode", "otp", "--reader", key.reader, env=env, check=False)
    assert asked.returncode != 0 and ykterm_usb(key, env) != {"otp"}
    bad = run_ykterm("config", "mode", "OTP+NFC", "--force", "--reader", key.reader, env=env, check=False)
    assert bad.returncode == 2 and "no USB mode" in bad.stderr, bad.stderr
    eject = run_ykterm("config", "mode", "o+c", "--touch-eject", "--force", "--reader", key.reader, env=env, check=False)
    assert eject.returncode == 2 and "CCID mode only" in eject.stderr, eject.stderr


def key_state(path):
    s = json.loads(path.read_text())
    return {k: s[k] for k in ("usbEnabled", "deviceFlags", "autoEjectTimeout", "challengeResponseTimeout")}


@pytest.mark.parametrize("mode, options", [
    ("OTP+CCID", ["--chalresp-timeout", "20"]),
    ("c", ["--autoeject-timeout", "300"]),
    ("2", []),
])
def test_yubikey4_set_mode_stores_what_ykman_s_does(pcsc, env, tmp_path, mode, options):
    ours = ServedKey(pcsc, slot=0, state=tmp_path / "ours.json", extra=["--firmware", "4.3.7"]).start()
    theirs = ServedKey(pcsc, slot=1, state=tmp_path / "theirs.json", extra=["--firmware", "4.3.7"]).start()
    try:
        r = run_ykterm("config", "mode", mode, *options, "--force", "--reader", ours.reader, env=env)
        assert "remove and re-insert" in r.stdout, r.stdout
        run_ykman(theirs.reader, "config", "mode", mode, *options, "--force", env=env)
    finally:
        ours.stop()
        theirs.stop()
    assert key_state(tmp_path / "ours.json") == key_state(tmp_path / "theirs.json")
    assert key_state(tmp_path / "ours.json")["usbEnabled"] != 0x033B
