"""Foundation: device information through pcscd, raw APDUs, key choice, removal, monitor, state."""

import json
import os
import queue
import threading
import re
import stat
import subprocess
import time

import pytest

from harness import YKTERM, PrivatePCSC, ServedKey, run_ykman, run_ykterm, stop_pid, wait_until

MGMT_SELECT = "00A4040008A000000527471117"


def ykman_info(reader, env):
    out = run_ykman(reader, "info", env=env).stdout
    serial = re.search(r"^Serial number: (\d+)$", out, re.M)
    firmware = re.search(r"^Firmware version: (\S+)$", out, re.M)
    assert serial and firmware, out
    return int(serial.group(1)), firmware.group(1), out


def test_list_json_matches_ykman_info(key, env):
    listed = json.loads(run_ykterm("list", "--json", env=env).stdout)
    assert len(listed) == 1
    entry = listed[0]
    assert entry["reader"] == key.reader
    assert entry["serial"] == 28123456
    assert entry["version"] == "5.7.2"
    assert entry["form_factor"] == "usb-a-keychain"
    assert entry["transport"] == "nfc"
    assert set(entry["applications"]) >= {"OTP", "FIDO2", "OATH", "PIV"}
    serial, firmware, text = ykman_info(key.reader, env)
    assert serial == entry["serial"]
    assert firmware == entry["version"]
    assert "YubiKey 5 NFC" in text


def test_configured_serial_and_firmware_seen_by_both(pcsc, tmp_path):
    k = ServedKey(pcsc, slot=1, serial=9876543, extra=["--firmware", "5.4.3"]).start()
    try:
        env = pcsc.env()
        entry = json.loads(run_ykterm("list", "--json", "--reader", "00 01", env=env).stdout)[0]
        assert (entry["serial"], entry["version"]) == (9876543, "5.4.3")
        assert ykman_info(k.reader, env)[:2] == (9876543, "5.4.3")
    finally:
        k.stop()


def test_apdu_management_select(key, env):
    r = run_ykterm("apdu", MGMT_SELECT, env=env)
    lines = r.stdout.strip().splitlines()
    assert lines == [b"5.7.2".hex().upper(), "SW=9000 (success)"]


def test_apdu_from_stdin_with_comments_and_status_meanings(key, env):
    script = "# select management\n00 A4 04 00 08 A0 00 00 05 27 47 11 17\n\n00A4040003AABBCC\n"
    r = run_ykterm("apdu", env=env, input=script)
    assert r.stdout.strip().splitlines() == [b"5.7.2".hex().upper(), "SW=9000 (success)",
                                             "SW=6A82 (file or application not found)"]
    strict = run_ykterm("apdu", "--strict", "00A4040003AABBCC", env=env, check=False)
    assert strict.returncode == 1


def test_apdu_read_config_chained_with_small_le(key, env):
    # Le=16 makes the key answer in parts (61xx); ykterm follows with GET RESPONSE and shows each exchange.
    r = run_ykterm("apdu", "-v", MGMT_SELECT, "001D000010", env=env)
    out = r.stdout.strip().splitlines()
    assert any(line.startswith("> 00C00000") for line in out), out
    data = bytes.fromhex(out[-2])
    assert data[0] == len(data) - 1
    assert bytes.fromhex("02040" + "1AD2140") in data  # serial 28123456 = 0x01AD2140 under tag 02


@pytest.mark.parametrize("bad", ["00A4zz", "00A", "00", "00A4040005AABB"])
def test_apdu_malformed_hex_exit_2(key, env, bad):
    r = run_ykterm("apdu", MGMT_SELECT, bad, env=env, check=False)
    assert r.returncode == 2
    assert "invalid APDU" in r.stderr
    assert r.stdout == ""  # nothing was sent, not even the valid first command


def test_no_key_and_selection_errors(pcsc, key, env):
    r = run_ykterm("list", "--reader", "no such reader", env=env, check=False)
    assert r.returncode == 3 and "no key found" in r.stderr
    r = run_ykterm("apdu", "--device", "1", MGMT_SELECT, env=env, check=False)
    assert r.returncode == 3 and "serial 1" in r.stderr
    r = run_ykterm("apdu", "--device", "28123456", MGMT_SELECT, env=env)
    assert "SW=9000" in r.stdout
    r = run_ykterm("apdu", MGMT_SELECT, env=dict(env, YKTERM_READER="00 00"))
    assert "SW=9000" in r.stdout


def test_several_keys_listed_and_ambiguity_is_an_error(pcsc, key, env):
    second = ServedKey(pcsc, slot=1, serial=555000).start()
    try:
        listed = json.loads(run_ykterm("list", "--json", env=env).stdout)
        assert sorted(k["serial"] for k in listed) == [555000, 28123456]
        r = run_ykterm("apdu", MGMT_SELECT, env=env, check=False)
        assert r.returncode == 2
        assert "several keys match" in r.stderr
        assert pcsc.READER0 in r.stderr and pcsc.READER1 in r.stderr
        r = run_ykterm("apdu", "--device", "555000", "0001100000", env=env, check=False)
        # OTP not selected: the management applet is not the target; select OTP and read the serial.
        r = run_ykterm("apdu", "--device", "555000", "00A4040007A0000005272001", "0001100000", env=env)
        assert r.stdout.strip().splitlines()[-2] == f"{555000:08X}"
    finally:
        second.stop()


def test_key_pulled_mid_command_ends_quickly(pcsc, tmp_path):
    slow = ServedKey(pcsc, slot=1, latency_ms=8000, extra=["--log-apdus"]).start(wait=False)
    try:
        # Wait for the card to be present without sending APDUs (they would take 8 s each).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            out = run_ykterm("list", "--readers", env=pcsc.env(), check=False).stdout
            if f"{pcsc.READER1}: key present" in out:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"the slow key never showed in {pcsc.READER1}: {out}")
        def apdus():
            return slow.log_path.read_text().count("apdu ")
        before = apdus()
        proc = subprocess.Popen([str(YKTERM), "apdu", "--reader", "00 01", MGMT_SELECT], env=pcsc.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Pulled once a command has reached the key (which holds each for 8 s): mid-exchange.
        wait_until(lambda: apdus() > before, 10, "a command APDU at the slow key")
        start = time.monotonic()
        slow.stop(wait=False)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            stop_pid(proc)
            pytest.fail("ykterm apdu hung after the key was pulled")
        elapsed = time.monotonic() - start
        assert proc.returncode == 1, (out, err)
        assert "removed" in err
        assert elapsed < 5
    finally:
        slow.stop()


def test_monitor_reports_arrival_and_departure(pcsc):
    mon = subprocess.Popen([str(YKTERM), "monitor", "--json"], env=pcsc.env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in mon.stdout], daemon=True).start()
    events = []

    def next_event(timeout=30):
        try:
            e = json.loads(lines.get(timeout=timeout))
        except queue.Empty:
            pytest.fail(f"no event within {timeout}s; got {events}")
        events.append(e)
        return e

    try:
        while [e["event"] for e in events].count("reader-added") < 2:
            next_event()
        assert events[0] == {"event": "pcscd-available"}
        k = ServedKey(pcsc, slot=1, serial=4242).start(wait=False)
        try:
            e = next_event()
            assert e["event"] == "key-arrived" and e["reader"] == pcsc.READER1
            assert e["atr"].startswith("3b8d80")
        finally:
            k.stop(wait=False)
        e = next_event()
        assert e == {"event": "key-left", "id": "pcsc:" + pcsc.READER1}
    finally:
        stop_pid(mon)
        k.wait_absent()


def test_state_file_mode_and_persistence(pcsc, tmp_path):
    state = tmp_path / "state.json"
    k = ServedKey(pcsc, slot=1, serial=1111, state=state).start()
    k.stop()
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert json.loads(state.read_text())["serial"] == 1111
    # A later start with another --serial keeps the stored key.
    k = ServedKey(pcsc, slot=1, serial=2222, state=state).start()
    try:
        entry = json.loads(run_ykterm("list", "--json", "--reader", "00 01", env=pcsc.env()).stdout)[0]
        assert entry["serial"] == 1111
    finally:
        k.stop()


def test_corrupt_state_file_is_a_clear_error(pcsc, tmp_path):
    state = tmp_path / "bad.json"
    state.write_text("{not json")
    r = run_ykterm("virtual-key", "serve", "--vpcd", f"127.0.0.1:{pcsc.port + 1}", "--state", state, check=False,
                   timeout=10)
    assert r.returncode == 1
    assert "state file" in r.stderr and str(state) in r.stderr


def test_serve_reconnects_after_pcscd_restart(tmp_path):
    own = PrivatePCSC().start()
    k = None
    try:
        k = ServedKey(own, slot=0, serial=31337).start()
        own.stop()
        # pcscd starts again once the served key has seen it go.
        wait_until(lambda: "vpcd connection closed" in k.log_path.read_text(), 10, "the served key seeing pcscd go")
        own.start()
        k.wait_present(timeout=15)
        entry = json.loads(run_ykterm("list", "--json", env=own.env()).stdout)[0]
        assert entry["serial"] == 31337
    finally:
        if k:
            k.stop()
        own.cleanup()


def test_doctor_sees_pcscd_reader_and_key(key, env):
    r = run_ykterm("doctor", env=env)
    assert "ok    pcscd: reachable" in r.stdout
    assert f"{key.reader}: YubiKey 5 NFC, serial 28123456, firmware 5.7.2" in r.stdout


def test_pcscd_missing_is_explained(tmp_path):
    env = dict(os.environ, PCSCLITE_CSOCK_NAME=str(tmp_path / "nothing-here.comm"))
    r = run_ykterm("list", env=env, check=False)
    assert r.returncode == 3
    assert "pcscd is not reachable" in r.stderr
    r = run_ykterm("doctor", env=env, check=False)
    assert r.returncode == 1
    assert r.stdout.startswith("fail  pcscd is not reachable")


def test_list_without_pcscd_says_what_doctor_says(tmp_path):
    # pcscd is installed here (the tests run their own), so both say it is installed but not running.
    env = dict(os.environ, PCSCLITE_CSOCK_NAME=str(tmp_path / "nothing-here.comm"))
    doctor = run_ykterm("doctor", env=env, check=False).stdout.splitlines()[0]
    said = doctor.split("fail  ", 1)[1]
    assert said.startswith("pcscd is not reachable: it is installed but not running")
    for command in (["list"], ["oath", "list"]):
        r = run_ykterm(*command, env=env, check=False)
        assert r.returncode == 3
        assert r.stderr.strip() == "ykterm: " + said, r.stderr
        assert "apt-get install" not in r.stderr


def test_usage_errors_exit_2():
    r = run_ykterm("list", "--no-such-option", check=False)
    assert r.returncode == 2
    r = run_ykterm("virtual-key", "serve", "--vpcd", "nonsense", check=False)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr


def test_the_daily_command_lines_still_report_errors_as_before():
    # `oath code`, `fido info`, `list` ... are read without ArgumentParser when they are plain; anything odd
    # is left to it, so its messages and exit statuses are what they always were.
    env = dict(os.environ, YKTERM_DEVICE="abc")
    r = run_ykterm("oath", "code", env=env, check=False)
    assert r.returncode == 2 and 'YKTERM_DEVICE must be a serial number or a key\'s name' in r.stderr, r.stderr
    assert 'not "abc"' in r.stderr, r.stderr
    assert "Usage: ykterm" in r.stderr, r.stderr
    env = dict(os.environ)
    env.pop("YKTERM_DEVICE", None)
    r = run_ykterm("fido", "info", "--device", "abc", env=env, check=False)
    assert r.returncode == 2 and 'no key is named "abc"' in r.stderr, r.stderr
    r = run_ykterm("oath", "code", "--jsn", env=env, check=False)
    assert r.returncode == 2 and "Unknown option '--jsn'" in r.stderr, r.stderr
    r = run_ykterm("list", "--reader", env=env, check=False)
    assert r.returncode == 2 and "Missing value for '--reader <NAME>'" in r.stderr, r.stderr
    # --version is answered before anything else starts; --verbose --version by the same table.
    version = run_ykterm("--version", env=env)
    # The version, then the commit the build was made from (make exports it; a plain `swift build` has none).
    assert re.fullmatch(r"\d+\.\d+\.\d+( \([0-9a-f]{7,}(-dirty)?\))?\n", version.stdout) and version.stderr == ""
    assert run_ykterm("--verbose", "--version", env=env).stdout == version.stdout
