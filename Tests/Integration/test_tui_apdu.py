"""The APDU console tab and the device view end to end in tmux, on virtual keys served through pcscd.

What the console shows is checked against what independent clients read from the same key
(`ykman --reader ... info`, `ykterm list --json`).
"""

import json
import os
import re
import shlex
import shutil
import stat

import pytest

from harness import YKTERM, ServedKey, run_ykman, run_ykterm
from test_tui import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is missing: run `make deps`")

SELECT_OATH = "00A4040007A0000005272101"


def tui(pcsc, tmp_path, reader=None):
    env = pcsc.env(XDG_CONFIG_HOME=str(tmp_path / "config"))
    command = shlex.quote(str(YKTERM))
    if reader:
        command += f" --reader {shlex.quote(reader)}"
    return Tmux(command, env)


def listed(key, env):
    """`ykterm list --json` for the key's reader: its one entry."""
    keys = json.loads(run_ykterm("list", "--json", "--reader", key.reader, env=env).stdout)
    assert len(keys) == 1, keys
    return keys[0]


def ykman_serial(key, env):
    out = run_ykman(key.reader, "info", env=env).stdout
    m = re.search(r"Serial number:\s*(\d+)", out)
    assert m, out
    return int(m.group(1))


def open_console(t):
    """Waits for the key to be read, then opens the APDU tab (the input has the focus)."""
    t.wait_for(r"serial \d+")
    t.send("4")
    t.wait_for("APDU console")
    t.wait_for("hex, or select NAME")


def send_line(t, line):
    t.type(line)
    t.send("Enter")


def test_select_oath_answers_9000_with_its_tlv(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json", extra=("--demo-accounts",)).start()
    # Read before the console opens its connection: another client's SELECT would change what is selected.
    version = listed(key, env)["version"]
    t = tui(pcsc, tmp_path, key.reader)
    try:
        open_console(t)
        # Checked as typed: the summary of a well-formed command.
        t.type(SELECT_OATH)
        t.wait_for(r"12 bytes · case 3 · INS A4 · Lc 7")
        t.send("Enter")
        screen = t.wait_for(r"< SW=9000 \(success\)")
        assert f"> {SELECT_OATH}" in screen, screen
        assert "selected: OATH" in screen, screen
        # The TLV view of the OATH SELECT data: the version the key reports, and its name (salt).
        v = "".join(f"{int(p):02X}" for p in version.split("."))
        assert re.search(rf"79 \(3\) {v}\s+version", screen), screen
        assert re.search(r"71 \(8\) [0-9A-F]{16}\s+name", screen), screen
        # A second command holds on to the selection: LIST answers with name-list (72) TLVs.
        send_line(t, "00 A1 00 00")
        screen = t.wait_for(r"(?s)> 00A10000.*< SW=9000.*72 \(\d+\)")
        assert "name list" in screen, screen
        # Chaining: with Le = 4 the answer comes in parts, each exchange shown.
        send_line(t, SELECT_OATH + "04")
        screen = t.wait_for(r"→ 00A50000")
        assert re.search(r"← 4 bytes, SW=61[0-9A-F]{2} \(\d+ more bytes available\)", screen), screen
        assert re.search(r"← \d+ bytes, SW=9000 \(success\)", screen), screen
    finally:
        t.close()
        key.stop()


def test_malformed_line_sends_nothing_and_the_transcript_has_the_exchange(pcsc, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    t = tui(pcsc, tmp_path, key.reader)
    transcript = tmp_path / "apdu transcript.txt"
    history = tmp_path / "history.txt"
    try:
        open_console(t)
        t.type("00A4 04 0G")
        t.wait_for(r"'G' at position 10 is not a hexadecimal digit")
        t.send("Enter")
        screen = t.wait_for(r"not sent: 00A4 04 0G")
        assert "SW=" not in screen, screen
        assert "connection opened" not in screen, screen
        # The line stays for correcting: fix the last digit and send.
        t.send("BSpace")
        t.type("0")
        t.wait_for(r"4 bytes · case 1")
        t.send("C-u")
        send_line(t, "sel oath")
        t.wait_for(r"< SW=9000 \(success\)")
        send_line(t, "select fido")
        t.wait_for(r"SELECT FIDO")
        screen = t.wait_for(r"(?s)SELECT FIDO.*< SW=9000.*text: U2F_V2")
        # Leave the input and save the transcript to a file named in the dialog.
        t.send("Escape")
        t.wait_for("s save transcript")
        t.send("s")
        t.wait_for("Save the transcript")
        t.send("C-u")
        t.type(str(transcript))
        t.send("Enter")
        t.wait_for("Transcript saved to")
        text = transcript.read_text()
        assert stat.S_IMODE(os.stat(transcript).st_mode) == 0o600
        assert "not sent: 00A4 04 0G" in text, text
        commands = [line for line in text.splitlines() if line.startswith("> ")]
        assert commands == ["> 00A4040007A0000005272101  SELECT OATH", "> 00A4040008A0000006472F0001  SELECT FIDO"], text
        assert "< SW=9000 (success)" in text and "79 (3)" in text and "text: U2F_V2" in text, text
        # A second save to the same file asks first; the history goes to a file of its own.
        t.send("s")
        t.wait_for("Save the transcript")
        t.send("C-u")
        t.type(str(transcript))
        t.send("Enter")
        t.wait_for("The file exists. Overwrite it?")
        t.send("n")
        t.wait_gone("Overwrite it")
        t.send("h")
        t.wait_for("Save the command history")
        t.send("C-u")
        t.type(str(history))
        t.send("Enter")
        t.wait_for("History saved to")
        assert history.read_text() == "sel oath\nselect fido\n"
        # Up recalls the history in the input.
        t.send("Enter")
        t.send("Up")
        t.wait_for(r"> select fido")
        t.send("Up")
        t.wait_for(r"> sel oath")
        # Quit from outside the input.
        t.send("C-u")
        t.send("Escape")
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()
        key.stop()


def test_device_view_shows_the_served_keys_serial(pcsc, env, tmp_path):
    key = ServedKey(pcsc, slot=0, serial=31415926, state=tmp_path / "key.json").start()
    t = tui(pcsc, tmp_path, key.reader)
    try:
        info = listed(key, env)
        assert info["serial"] == 31415926 == ykman_serial(key, env)
        t.wait_for("serial 31415926")
        t.send("i")
        screen = t.wait_for("Device information")
        assert re.search(r"Serial\s+31415926", screen), screen
        assert re.search(rf"Firmware\s+{re.escape(info['version'])}", screen), screen
        assert re.search(r"USB applications\s+\S.*OATH", screen), screen
        assert "NFC applications" in screen and "Form factor" in screen, screen
        t.send("x")
        t.wait_gone("Device information")
        # From the APDU tab: Esc leaves the input, then i opens it.
        t.send("4")
        t.wait_for("APDU console")
        t.send("Escape")
        t.send("i")
        t.wait_for(r"Serial\s+31415926")
    finally:
        t.close()
        key.stop()


def test_key_switcher_with_two_served_keys(pcsc, env, tmp_path):
    first = ServedKey(pcsc, slot=0, serial=11111111, state=tmp_path / "a.json").start()
    second = ServedKey(pcsc, slot=1, serial=22222222, state=tmp_path / "b.json").start()
    t = tui(pcsc, tmp_path)
    try:
        t.wait_for(r"2 keys \(K to switch\)")
        t.wait_for(r"serial (11111111|22222222)")
        t.send("K")
        screen = t.wait_for("Keys present")
        t.wait_for(r"(?s)serial 11111111.*serial 22222222|serial 22222222.*serial 11111111")
        screen = t.screen()
        rows = [line for line in screen.splitlines() if "serial 1111" in line or "serial 2222" in line]
        current = next(line for line in rows if "●" in line)
        other = "22222222" if "11111111" in current else "11111111"
        # Move to the other key and choose it.
        lines = screen.splitlines()
        index = next(i for i, line in enumerate(lines) if "●" in line)
        t.send("Down" if any(other in line for line in lines[index + 1:]) else "Up")
        t.send("Enter")
        t.wait_gone("Keys present")
        t.wait_for(rf"serial {other} ·")
        t.send("i")
        t.wait_for(rf"Serial\s+{other}")
        t.wait_for("2 keys present: K switches")
        # K from the device view: the switcher over it, and the device view then shows the key chosen.
        t.send("K")
        t.wait_for("Keys present")
        back = "11111111" if other == "22222222" else "22222222"
        lines = t.screen().splitlines()
        index = next(i for i, line in enumerate(lines) if "●" in line)
        down = any(back in line for line in lines[index + 1:])
        t.send("Down" if down else "Up")
        t.send("Enter")
        t.wait_gone("Keys present")
        t.wait_for(rf"Serial\s+{back}")
        t.send("K")
        t.wait_for("Keys present")
        t.send("Up" if down else "Down")
        t.send("Enter")
        t.wait_for(rf"Serial\s+{other}")
        t.send("x")
        # The console talks to the chosen key: the Management SELECT answers with its firmware version.
        t.send("4")
        t.wait_for("APDU console")
        send_line(t, "select management")
        screen = t.wait_for(r"< SW=9000")
        reader = first.reader if other == "11111111" else second.reader
        assert "text: " in screen, screen
        version = json.loads(run_ykterm("list", "--json", "--reader", reader, env=env).stdout)[0]["version"]
        assert f"text: {version}" in screen, screen
    finally:
        t.close()
        first.stop()
        second.stop()


def test_key_pulled_out_under_the_console(pcsc, tmp_path):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    t = tui(pcsc, tmp_path, key.reader)
    try:
        open_console(t)
        send_line(t, "sel oath")
        t.wait_for(r"< SW=9000")
        key.stop()
        t.wait_for("the key left: the console's connection is closed", timeout=20)
        send_line(t, "00A10000")
        t.wait_for("No key to send to")
        key.start()
        t.wait_for(r"serial \d+", timeout=20)
        # The key is back: a new connection, nothing selected until a SELECT.
        t.send("C-u")
        send_line(t, "sel oath")
        t.wait_for(r"(?s)connection opened.*connection opened")
        t.wait_for(r"(?s)the key left.*< SW=9000")
    finally:
        t.close()
        key.stop()
