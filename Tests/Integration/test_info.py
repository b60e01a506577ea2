"""`ykterm info`: one key at a glance, checked against `ykman info` both ways: what ykman turns off is off in
ykterm's table and JSON, and what ykterm's `config nfc` turns off, ykman shows off."""

import json
import re

from harness import ServedKey, run_ykman, run_ykterm


def ykman_table(key, env):
    """ykman info's application table: application -> (USB, NFC)."""
    out = run_ykman(key.reader, "info", env=env).stdout
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(Yubico OTP|FIDO U2F|FIDO2|OATH|PIV|OpenPGP|YubiHSM Auth)\s+(\S+(?: \S+)?)\s+(\S+(?: \S+)?)\s*$", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3))
    return out, rows


def test_info_agrees_with_ykman_info_both_ways(key, env):
    text = run_ykterm("info", "--reader", key.reader, env=env).stdout
    assert re.search(r"^Product:\s+YubiKey 5 NFC$", text, re.M), text
    data = json.loads(run_ykterm("info", "--reader", key.reader, "--json", env=env).stdout)
    out, rows = ykman_table(key, env)
    assert f"Serial number: {data['serial']}" in out and f"Firmware version: {data['version']}" in out, out
    assert rows["OATH"] == ("Enabled", "Enabled") and data["usb"]["oath"] == "enabled", (rows, data)
    # ykman turns OATH off over NFC: ykterm's table and JSON say so.
    run_ykman(key.reader, "config", "nfc", "--disable", "oath", "--force", env=env)
    data = json.loads(run_ykterm("info", "--reader", key.reader, "--json", env=env).stdout)
    assert data["nfc"]["oath"] == "disabled" and data["usb"]["oath"] == "enabled", data
    text = run_ykterm("info", "--reader", key.reader, env=env).stdout
    assert re.search(r"^OATH\s+on\s+off$", text, re.M), text
    # ykterm turns PIV off over NFC: ykman shows it.
    run_ykterm("config", "nfc", "--disable", "PIV", "--force", "--reader", key.reader, env=env)
    _, rows = ykman_table(key, env)
    assert rows["PIV"] == ("Enabled", "Disabled") and rows["OATH"] == ("Enabled", "Disabled"), rows


def test_info_in_german(key, env):
    text = run_ykterm("info", "--reader", key.reader, env=dict(env, LANG="de_DE.UTF-8")).stdout
    assert re.search(r"^Seriennummer:\s+\d+$", text, re.M) and re.search(r"^Anwendung\s+USB\s+NFC$", text, re.M), text


# Shapes whose names follow different rules (form factor byte: low nibble the shape, 0x80 FIPS, 0x40 Security Key):
# a USB-A keychain without NFC, a USB-C nano, a FIDO-only USB-C Bio, a USB-C Security Key with NFC and a serial
# (an Enterprise Edition), a FIPS USB-C key with NFC.
SHAPES = [
    ("5A", dict(formFactor=0x01, nfcSupported=0, nfcEnabled=0)),
    ("5C Nano", dict(formFactor=0x04, nfcSupported=0, nfcEnabled=0)),
    ("C Bio FIDO", dict(formFactor=0x07, nfcSupported=0, nfcEnabled=0, usbSupported=0x0202, usbEnabled=0x0202)),
    ("Security Key C NFC", dict(formFactor=0x43, nfcSupported=0x0202, nfcEnabled=0x0202, usbSupported=0x0202,
                                usbEnabled=0x0202)),
    ("5C NFC FIPS", dict(formFactor=0x83)),
]


def test_product_names_are_ykmans(pcsc, key, env):
    """ykterm names each shape as `ykman info` does (its Device type)."""
    for label, fields in SHAPES:
        key.stop()
        state = json.loads(key.state.read_text())
        state.update(fields)
        key.state.write_text(json.dumps(state))
        key = ServedKey(pcsc, slot=0, state=key.state).start()
        product = json.loads(run_ykterm("info", "--reader", key.reader, "--json", env=env).stdout)["product"]
        ykman = re.search(r"^Device type: (.*)$", run_ykman(key.reader, "info", env=env).stdout, re.M)
        assert ykman and product == ykman.group(1), (label, product, ykman and ykman.group(1))
    key.stop()
