"""`ykterm info`: one key at a glance, checked against `ykman info` both ways: what ykman turns off is off in
ykterm's table and JSON, and what ykterm's `config nfc` turns off, ykman shows off."""

import json
import re

from harness import run_ykman, run_ykterm


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
