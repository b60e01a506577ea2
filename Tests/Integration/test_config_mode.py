"""`ykterm config mode`: the USB mode as ykman's `config mode` sets it. On a YubiKey 5 (the virtual key's 5.7.2)
the mode becomes the device configuration, which ykman's `info` reads back, and ykman's mode is what ykterm reads;
on a YubiKey 4 (the virtual key as firmware 4.3.7: OTP, FIDO U2F, OATH, PIV and OpenPGP over USB, no NFC) both
send SET MODE, and the key stores the same configuration for the same mode and options whichever of the two sent
it."""

import json
import re
import subprocess

import pytest

from harness import VENV_BIN, ServedKey, run_ykman, run_ykterm


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


def usb_only_table(ykman_info):
    """ykman info's applications table of a key without NFC (one column, no NFC header): application -> USB."""
    lines = ykman_info.splitlines()
    assert "Applications" in lines and not any("NFC" in line for line in lines), ykman_info
    out = {}
    for line in lines:
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) == 2 and parts[1] in ("Enabled", "Disabled", "Not available"):
            out[parts[0]] = parts[1]
    return out


YK4_APPS = ("Yubico OTP", "FIDO U2F", "OATH", "PIV", "OpenPGP")


def test_a_firmware_before_5_is_a_yubikey_4_as_ykman_shows_one(pcsc, env, tmp_path):
    yk4 = ServedKey(pcsc, slot=0, state=tmp_path / "yk4.json", extra=["--firmware", "4.3.7", "--serial", "4300017"])
    yk4.start()
    try:
        out = run_ykman(yk4.reader, "info", env=env).stdout
        assert "Device type: YubiKey 4\n" in out and "Firmware version: 4.3.7" in out, out
        assert "Serial number: 4300017" in out and "NFC transport" not in out, out
        # Supported over USB: the five applications of a YubiKey 4, not FIDO2 or YubiHSM Auth. (Which are on, ykman
        # takes from the USB interfaces of the product ID on a YubiKey 4, not from the device information; behind a
        # reader that is no YubiKey's it has none, so it shows them off: test_usb.py checks them on a USB key.)
        usb = usb_only_table(out)
        assert usb == {**{a: "Disabled" for a in YK4_APPS}, "FIDO2": "Not available",
                       "YubiHSM Auth": "Not available"}, usb
        # ykterm names it and lists its applications as ykman does, with no NFC set.
        text = run_ykterm("info", "--reader", yk4.reader, env=env).stdout
        assert re.search(r"^Product:\s+YubiKey 4$", text, re.M), text
        data = json.loads(run_ykterm("info", "--reader", yk4.reader, "--json", env=env).stdout)
        assert ykterm_usb(yk4, env) == {"otp", "u2f", "oath", "piv", "openpgp"}, data
        assert data["product"] == "YubiKey 4" and not data.get("nfc"), data
        listed = json.loads(run_ykterm("list", "--json", env=env).stdout)
        [entry] = [k for k in listed if k.get("serial") == 4300017]
        assert entry["name"] == "YubiKey 4", entry
        assert entry["applications"] == ["OTP", "U2F", "OATH", "PIV", "OpenPGP"], entry
        # CCID alone, set by ykterm: the OTP and U2F it had are off, FIDO2 and YubiHSM Auth still not there.
        run_ykterm("config", "mode", "c", "--force", "--reader", yk4.reader, env=env)
        assert ykterm_usb(yk4, env) == {"oath", "piv", "openpgp"}
        assert usb_only_table(run_ykman(yk4.reader, "info", env=env).stdout) == usb
    finally:
        yk4.stop()


def key_state(path):
    s = json.loads(path.read_text())
    return {k: s[k] for k in ("usbEnabled", "deviceFlags", "autoEjectTimeout", "challengeResponseTimeout")}


# What `ykman config mode MODE OPTIONS` sends, called in yubikit directly: the yubikit mode code and its
# set_mode arguments (challenge-response timeout, auto-eject timeout, which implies touch-eject). ykman's command
# itself refuses a YubiKey 4 behind a reader that is no YubiKey's: it takes the current mode from the USB
# interfaces the reader's name gives, and the vpcd reader's gives none (test_usb.py runs it on a USB key).
YKMAN_SET_MODE = """
import sys
from ykman.pcsc import list_devices
from yubikit.core.smartcard import SmartCardConnection
from yubikit.management import ManagementSession, Mode
reader, code, chalresp, autoeject = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
[device] = [d for d in list_devices(reader) if d.reader.name == reader]
with device.open_connection(SmartCardConnection) as connection:
    ManagementSession(connection).set_mode(Mode.from_code(code), chalresp, int(autoeject) if autoeject else None)
"""


@pytest.mark.parametrize("mode, options, yubikit", [
    ("OTP+CCID", ["--chalresp-timeout", "20"], (2, 20, "")),
    ("c", ["--autoeject-timeout", "300"], (1, 0, "300")),
    ("2", [], (2, 0, "")),
])
def test_yubikey4_set_mode_stores_what_ykman_s_does(pcsc, env, tmp_path, mode, options, yubikit):
    ours = ServedKey(pcsc, slot=0, state=tmp_path / "ours.json", extra=["--firmware", "4.3.7"]).start()
    theirs = ServedKey(pcsc, slot=1, state=tmp_path / "theirs.json", extra=["--firmware", "4.3.7"]).start()
    try:
        r = run_ykterm("config", "mode", mode, *options, "--force", "--reader", ours.reader, env=env)
        assert "remove and re-insert" in r.stdout, r.stdout
        set_mode = subprocess.run([str(VENV_BIN / "python"), "-c", YKMAN_SET_MODE, theirs.reader, *map(str, yubikit)],
                                  env=env, capture_output=True, text=True, timeout=60)
        assert set_mode.returncode == 0, set_mode.stderr
        # ykman reads both back the same: a YubiKey 4, without FIDO2 or YubiHSM Auth whatever the mode.
        tables = []
        for k in (ours, theirs):
            out = run_ykman(k.reader, "info", env=env).stdout
            assert "Device type: YubiKey 4\n" in out, out
            tables.append(usb_only_table(out))
        assert tables[0] == tables[1] and tables[0]["FIDO2"] == tables[0]["YubiHSM Auth"] == "Not available", tables
        assert set(tables[0]) == {*YK4_APPS, "FIDO2", "YubiHSM Auth"}, tables
    finally:
        ours.stop()
        theirs.stop()
    assert key_state(tmp_path / "ours.json") == key_state(tmp_path / "theirs.json")
    assert key_state(tmp_path / "ours.json")["usbEnabled"] != 0x033B
