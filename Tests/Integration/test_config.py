"""`ykterm config`: the enabled applications and the lock code written by ykterm are what ykman reads back,
and the other way round; the virtual key keeps the lock code's rules (ykman needs -L once ykterm set one), a
disabled application is unreachable, and the USB key drops an interface none of whose applications is on."""

import json
import shutil

import pytest

from harness import ServedKey, run_ykman, run_ykterm, serve_usb, usb_unavailable_reason

LOCK = "00112233445566778899aabbccddeeff"
WRONG = "ffeeddccbbaa99887766554433221100"


def applications_table(info_text):
    """ykman info's application rows: name -> (USB, NFC)."""
    rows = {}
    for line in info_text.splitlines():
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) == 3 and parts[1] in ("Enabled", "Disabled", "Not available"):
            rows[parts[0]] = (parts[1], parts[2])
    return rows


def listed_applications(key, env):
    out = json.loads(run_ykterm("list", "--json", "--reader", key.reader, env=env).stdout)
    return out[0]["applications"], out[0]["config_locked"]


def test_ykman_reads_what_ykterm_wrote_and_the_state_file_keeps_it(pcsc, tmp_path, env):
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    r = run_ykterm("config", "nfc", "--disable", "oath", "--disable", "OpenPGP", "--force", "--reader", key.reader,
                   env=env)
    assert "NFC applications: OTP U2F FIDO2 OATH PIV OpenPGP HSMAUTH → OTP U2F FIDO2 PIV HSMAUTH" in r.stdout
    r = run_ykterm("config", "usb", "--disable", "PIV", "--chalresp-timeout", "30", "--force", "--reader",
                   key.reader, env=env)
    assert "Challenge-response timeout: 15 s → 30 s" in r.stdout
    table = applications_table(run_ykman(key.reader, "info", env=env).stdout)
    assert table["OATH"] == ("Enabled", "Disabled")
    assert table["OpenPGP"] == ("Enabled", "Disabled")
    assert table["PIV"] == ("Disabled", "Enabled")
    assert table["FIDO2"] == ("Enabled", "Enabled")
    # Kept in the state file across a restart of the key.
    key.stop()
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    apps, locked = listed_applications(key, env)
    assert apps == ["OTP", "U2F", "FIDO2", "PIV", "HSMAUTH"] and locked is False
    state = json.loads((tmp_path / "key.json").read_text())
    assert state["challengeResponseTimeout"] == 30
    key.stop()


def test_ykterm_sees_what_ykman_wrote_and_a_disabled_application_is_unreachable(key, env):
    run_ykman(key.reader, "config", "nfc", "--disable", "OATH", "-f", env=env)
    apps, _ = listed_applications(key, env)
    assert "OATH" not in apps and "PIV" in apps
    r = run_ykterm("oath", "list", "--reader", key.reader, env=env, check=False)
    assert r.returncode == 1
    assert "no OATH application, or it is disabled" in r.stderr
    # SELECT answers 6A82, as a YubiKey's does.
    r = run_ykterm("apdu", "--reader", key.reader, "00A4040007A0000005272101", env=env, check=False)
    assert "6A82" in (r.stdout + r.stderr).upper()
    run_ykman(key.reader, "config", "nfc", "--enable", "OATH", "-f", env=env)
    assert run_ykterm("oath", "list", "--reader", key.reader, env=env).returncode == 0


def test_lock_code_set_by_ykterm_binds_ykman_and_ykterm(key, env):
    r = run_ykterm("config", "set-lock-code", "--reader", key.reader, input=LOCK + "\n", env=env)
    assert "Configuration lock: none → set" in r.stdout
    assert listed_applications(key, env)[1] is True
    assert "Configured lock code" not in r.stdout and LOCK not in r.stdout + r.stderr
    # ykman with a wrong lock code: the key itself refuses.
    r = run_ykman(key.reader, "config", "nfc", "--disable", "PIV", "-f", "-L", WRONG, env=env, check=False)
    assert r.returncode != 0 and "Failed to configure" in r.stderr
    r = run_ykman(key.reader, "config", "nfc", "--disable", "PIV", "-f", env=env, check=False)
    assert r.returncode != 0
    assert "PIV" in listed_applications(key, env)[0]
    run_ykman(key.reader, "config", "nfc", "--disable", "PIV", "-f", "-L", LOCK, env=env)
    assert "PIV" not in listed_applications(key, env)[0]
    # ykterm: a wrong lock code changes nothing (exit 1); the right one does.
    r = run_ykterm("config", "nfc", "--enable", "PIV", "--force", "--reader", key.reader, input=WRONG + "\n",
                   env=env, check=False)
    assert r.returncode == 1 and "lock code was wrong" in r.stderr
    assert "PIV" not in listed_applications(key, env)[0]
    r = run_ykterm("config", "nfc", "--enable", "PIV", "--force", "--reader", key.reader, input="12\n", env=env,
                   check=False)
    assert r.returncode == 2 and "32 hex digits" in r.stderr
    run_ykterm("config", "nfc", "--enable", "PIV", "--force", "--reader", key.reader, input=LOCK + "\n", env=env)
    assert "PIV" in listed_applications(key, env)[0]
    # Changed, then cleared: ykman works without -L again.
    new = "a" * 32
    run_ykterm("config", "set-lock-code", "--reader", key.reader, input=LOCK + "\n" + new + "\n", env=env)
    run_ykman(key.reader, "config", "nfc", "--disable", "OTP", "-f", "-L", new, env=env)
    r = run_ykterm("config", "set-lock-code", "--clear", "--reader", key.reader, input=new + "\n", env=env)
    assert "Configuration lock: set → none" in r.stdout
    assert "Configuration is locked" not in run_ykman(key.reader, "info", env=env).stdout
    run_ykman(key.reader, "config", "nfc", "--enable", "OTP", "-f", env=env)
    assert listed_applications(key, env) == (["OTP", "U2F", "FIDO2", "OATH", "PIV", "OpenPGP", "HSMAUTH"], False)


def test_refusals_change_nothing(key, env):
    def refused(*args, status=2):
        r = run_ykterm("config", *args, "--reader", key.reader, env=env, check=False)
        assert r.returncode == status, r
        return r.stderr

    assert "unknown application \"ssh\"" in refused("usb", "--disable", "ssh", "--force")
    assert "cannot be enabled and disabled" in refused("usb", "--enable", "OATH", "--disable", "oath", "--force")
    assert "at least one application" in refused("usb", "-d", "OTP", "-d", "U2F", "-d", "FIDO2", "-d", "OATH",
                                                 "-d", "PIV", "-d", "OpenPGP", "-d", "HSMAUTH", "--force")
    assert "needs --force" in refused("usb", "--disable", "OATH")
    # Over NFC, no application left over NFC cuts the connection ykterm uses.
    assert "NFC interface" in refused("nfc", "-d", "OTP", "-d", "U2F", "-d", "FIDO2", "-d", "OATH", "-d", "PIV",
                                      "-d", "OpenPGP", "-d", "HSMAUTH")
    assert "no lock code to clear" in refused("set-lock-code", "--clear")
    assert "nothing to change" in refused("nfc")
    assert listed_applications(key, env) == (["OTP", "U2F", "FIDO2", "OATH", "PIV", "OpenPGP", "HSMAUTH"], False)


def test_device_reset_empties_the_applications(key, env):
    run_ykterm("oath", "add", "--reader", key.reader, "otpauth://totp/reset-me?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP",
               env=env)
    assert "reset-me" in run_ykman(key.reader, "oath", "accounts", "list", env=env).stdout
    assert run_ykterm("config", "reset", "--reader", key.reader, env=env, check=False).returncode == 2
    r = run_ykterm("config", "reset", "--force", "--reader", key.reader, env=env)
    assert "reset" in r.stdout
    assert "reset-me" not in run_ykman(key.reader, "oath", "accounts", "list", env=env).stdout


INSIDE = """
import json, os, subprocess, time
YKTERM = os.environ["YKTERM_BIN"]
YKMAN = os.environ["YKMAN_BIN"]
def run(*argv):
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    return {"rc": r.returncode, "out": r.stdout, "err": r.stderr}
def emit(**kw):
    print(json.dumps(kw), flush=True)
def listed():
    return json.loads(run(YKTERM, "list", "--json")["out"])[0]
def usb_ids():
    # The product IDs yubikit reads from each interface (hidraw ioctls, the PC/SC reader's name), and the
    # keys ykman makes of them (interfaces of one product ID and serial are one key).
    from ykman.device import list_all_devices, list_ccid_devices, list_ctap_devices, list_otp_devices
    ids = {name: [hex(d.pid) for d in found()] for name, found in
           [("ccid", list_ccid_devices), ("fido", list_ctap_devices), ("otp", list_otp_devices)]}
    ids["keys"] = [[hex(d.pid), info.serial] for d, info in list_all_devices()]
    return ids
import signal, threading
def until(check, timeout=15):
    # Waits until check() holds (the key has restarted with its new interfaces and is seen again) and still
    # holds 0.3 s later (while the key goes, its interfaces may leave one by one), at most `timeout` s; when it
    # never does, says so, and the test's assertions say what was seen.
    deadline = time.monotonic() + timeout
    last, held = None, False
    while time.monotonic() < deadline:
        try:
            if check():
                if held:
                    return
                held = True
                time.sleep(0.3)
                continue
            last = None
        except Exception as e:  # noqa: BLE001 (the key away for the moment: no key listed, ykman failing)
            last = repr(e)
        held = False
        time.sleep(0.1)
    emit(gave_up=[check.__doc__ or "a check", last])
def interfaces(*names):
    def check():
        return listed()["interfaces"] == list(names)
    check.__doc__ = f"ykterm lists the key with {names}"
    return check
def monitor_keys():
    keys = {}
    for event in list(events):
        if event["event"] in ("key-arrived", "key-changed"):
            keys[event["id"]] = event
        elif event["event"] == "key-left":
            keys.pop(event["id"], None)
    return [(k["interfaces"], k.get("reader")) for k in keys.values()]
events = []
monitor = subprocess.Popen([YKTERM, "monitor", "--json"], stdout=subprocess.PIPE, text=True)
reading = threading.Thread(target=lambda: events.extend(json.loads(line) for line in monitor.stdout))
reading.start()
until(lambda: monitor_keys() == [("ccid,fido,otp", "Yubico YubiKey OTP+FIDO+CCID 00 00")])
emit(otp_off=run(YKTERM, "config", "usb", "--disable", "OTP", "--force"))
until(interfaces("ccid", "fido"))
emit(otp_off_info=run(YKMAN, "info")["out"], otp_off_list=run(YKMAN, "list")["out"], otp_off_ids=usb_ids(),
     otp_off_listed=listed())
until(lambda: monitor_keys() == [("ccid,fido", "Yubico YubiKey FIDO+CCID 00 00")])
monitor.send_signal(signal.SIGINT)
monitor.wait(timeout=10)
reading.join(timeout=10)
emit(monitor=events)
emit(otp_on=run(YKTERM, "config", "usb", "--enable", "OTP", "--force"))
until(interfaces("ccid", "fido", "otp"))
emit(otp_on_info=run(YKMAN, "info")["out"], otp_on_ids=usb_ids(), otp_on_listed=listed())
emit(disable=run(YKTERM, "config", "usb", "--disable", "OATH", "--force"))
emit(info=run(YKMAN, "info")["out"])
emit(oath=run(YKTERM, "oath", "list"))
emit(ykman=run(YKMAN, "config", "usb", "--enable", "OATH", "--disable", "OTP", "-f"))
until(interfaces("ccid", "fido"))
emit(after_otp=listed())
emit(cut=run(YKTERM, "config", "usb", "-d", "OATH", "-d", "PIV", "-d", "OpenPGP", "-d", "HSMAUTH"))
emit(cut_forced=run(YKTERM, "config", "usb", "-d", "OATH", "-d", "PIV", "-d", "OpenPGP", "-d", "HSMAUTH", "--force"))
until(interfaces("fido"))
emit(fido_only=listed(), fido_only_ids=usb_ids())
emit(over_fido=run(YKTERM, "config", "usb", "--enable-all", "--force"))
until(interfaces("ccid", "fido", "otp"))
emit(back_from_fido=listed())
emit(ykman_otp_only=run(YKMAN, "config", "usb", "-d", "U2F", "-d", "FIDO2", "-d", "OATH", "-d", "PIV", "-d", "OpenPGP",
                        "-d", "HSMAUTH", "-f"))
until(interfaces("otp"))
emit(otp_only=listed(), otp_only_ids=usb_ids())
emit(over_otp=run(YKTERM, "config", "usb", "--enable-all", "--force"))
until(interfaces("ccid", "fido", "otp"))
emit(back_from_otp=listed())
emit(info_at_end=run(YKMAN, "info")["out"], ids_at_end=usb_ids())
"""


@pytest.mark.skipif(usb_unavailable_reason() is not None, reason=usb_unavailable_reason() or "")
def test_usb_key_obeys_its_usb_set():
    run = serve_usb(script=INSIDE)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr
    got = {}
    for line in run.stdout.splitlines():
        if line.startswith("{"):
            got.update(json.loads(line))
    assert "gave_up" not in got, got["gave_up"]
    serial = 28123456
    # ykterm turns OTP off over USB: the key comes back as a YubiKey FIDO+CCID, product ID 0x0406 on its FIDO
    # HID interface and in its reader's name, so ykman makes one key of them and says which interfaces are on.
    assert got["otp_off"]["rc"] == 0 and "OTP+FIDO+CCID → FIDO+CCID" in got["otp_off"]["out"], got["otp_off"]
    assert "Enabled USB interfaces: FIDO, CCID\n" in got["otp_off_info"], got["otp_off_info"]
    assert applications_table(got["otp_off_info"])["Yubico OTP"] == ("Disabled", "Enabled")
    assert "[FIDO+CCID]" in got["otp_off_list"], got["otp_off_list"]
    assert got["otp_off_ids"] == {"ccid": ["0x406"], "fido": ["0x406"], "otp": [], "keys": [["0x406", serial]]}
    # ykterm sees one key too, with its reader under the new name.
    assert got["otp_off_listed"]["interfaces"] == ["ccid", "fido"] and got["otp_off_listed"]["serial"] == serial
    assert got["otp_off_listed"]["reader"] == "Yubico YubiKey FIDO+CCID 00 00"
    # ykterm's key monitor (as the TUI has it) went through the restart and the new pcscd to one key again.
    keys = {}
    for event in got["monitor"]:
        if event["event"] in ("key-arrived", "key-changed"):
            keys[event["id"]] = event
        elif event["event"] == "key-left":
            keys.pop(event["id"])
    assert [(k["interfaces"], k.get("reader")) for k in keys.values()] == [("ccid,fido", "Yubico YubiKey FIDO+CCID 00 00")]
    # On again: OTP+FIDO+CCID, 0x0407, on all three interfaces.
    assert got["otp_on"]["rc"] == 0, got["otp_on"]
    assert "Enabled USB interfaces: OTP, FIDO, CCID\n" in got["otp_on_info"], got["otp_on_info"]
    assert got["otp_on_ids"] == {"ccid": ["0x407"], "fido": ["0x407"], "otp": ["0x407"], "keys": [["0x407", serial]]}
    assert got["otp_on_listed"]["interfaces"] == ["ccid", "fido", "otp"]
    assert got["otp_on_listed"]["reader"] == "Yubico YubiKey OTP+FIDO+CCID 00 00"
    assert got["disable"]["rc"] == 0, got["disable"]
    assert applications_table(got["info"])["OATH"] == ("Disabled", "Enabled")
    assert got["oath"]["rc"] == 1 and "disabled" in got["oath"]["err"]
    assert got["ykman"]["rc"] == 0, got["ykman"]
    # OTP off over USB: the key restarted without its OTP HID interface.
    assert got["after_otp"]["interfaces"] == ["ccid", "fido"]
    assert got["after_otp"]["otp_hid"] is None
    assert "OATH" in got["after_otp"]["applications"] and "OTP" not in got["after_otp"]["applications"]
    # Turning off the CCID interface ykterm is using needs --force.
    assert got["cut"]["rc"] == 2 and "CCID interface" in got["cut"]["err"]
    # With --force it is done; the key comes back with FIDO HID alone, and ykterm reconfigures it over that
    # interface (the vendor WRITE CONFIG), then over the OTP interface when only OTP is left.
    assert got["cut_forced"]["rc"] == 0, got["cut_forced"]
    assert got["fido_only"]["interfaces"] == ["fido"] and got["fido_only"]["applications"] == ["U2F", "FIDO2"]
    # A YubiKey with FIDO alone on is a YubiKey FIDO (0x0402), not a Security Key; no reader is left.
    assert got["fido_only_ids"] == {"ccid": [], "fido": ["0x402"], "otp": [], "keys": [["0x402", serial]]}
    assert got["over_fido"]["rc"] == 0, got["over_fido"]
    assert got["back_from_fido"]["interfaces"] == ["ccid", "fido", "otp"]
    assert got["ykman_otp_only"]["rc"] == 0, got["ykman_otp_only"]
    assert got["otp_only"]["interfaces"] == ["otp"]
    assert got["otp_only_ids"] == {"ccid": [], "fido": [], "otp": ["0x401"], "keys": [["0x401", serial]]}
    assert got["over_otp"]["rc"] == 0, got["over_otp"]
    assert got["back_from_otp"]["interfaces"] == ["ccid", "fido", "otp"]
    assert set(applications_table(got["info_at_end"]).values()) == {("Enabled", "Enabled")}
    assert "Enabled USB interfaces: OTP, FIDO, CCID\n" in got["info_at_end"]
    assert got["ids_at_end"]["keys"] == [["0x407", serial]]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is missing: run `make deps`")
def test_tui_device_view_toggles_and_lock_code_what_ykman_reads(pcsc, env, tmp_path):
    from test_tui import served_tui

    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    t = served_tui(pcsc, tmp_path, key)
    try:
        t.wait_for("serial 28123456")
        t.send("i")
        t.wait_for("Space on/off")
        # The cursor starts on OTP over USB: three to the right is OATH.
        t.send("Right", "Right", "Right", "Space")
        t.wait_for(r"USB applications: OTP U2F FIDO2 OATH PIV OpenPGP HSMAUTH → OTP U2F")
        t.answer("n")
        t.wait_for("nothing was changed")
        assert applications_table(run_ykman(key.reader, "info", env=env).stdout)["OATH"] == ("Enabled", "Enabled")
        t.send("Space")
        t.wait_for("y applies the change")
        t.answer("y")
        t.wait_for("Configuration updated")
        assert applications_table(run_ykman(key.reader, "info", env=env).stdout)["OATH"] == ("Disabled", "Enabled")
        # The view shows it read back from the key: OATH(off) in the USB row.
        t.wait_for(r"USB applications\s+OTP U2F FIDO2 OATH\(off\) PIV")
        # Locked meanwhile by ykman: the key refuses, the view says so and reads the key again; from then on
        # a change asks for the lock code after its question.
        run_ykman(key.reader, "config", "set-lock-code", "-n", LOCK, "-f", env=env)
        t.send("Space")
        t.wait_for("y applies the change")
        t.answer("y")
        t.wait_for("lock code was wrong")
        t.wait_for(r"Configuration locked\s+yes")
        assert applications_table(run_ykman(key.reader, "info", env=env).stdout)["OATH"] == ("Disabled", "Enabled")
        t.send("Space")
        t.wait_for("its lock code is asked for next")
        t.answer("y")
        t.wait_for("Configuration lock code")
        # A wrong lock code: refused, nothing changed, the dialog stays for another try; the code never shows.
        t.type(WRONG)
        assert WRONG not in t.screen()
        t.send("Enter")
        t.wait_for("the lock code was wrong")
        assert applications_table(run_ykman(key.reader, "info", env=env).stdout)["OATH"] == ("Disabled", "Enabled")
        t.type(LOCK)
        t.send("Enter")
        t.wait_for("Configuration updated")
        assert applications_table(run_ykman(key.reader, "info", env=env).stdout)["OATH"] == ("Enabled", "Enabled")
        # L removes the lock with the current code (after a question): ykman needs no -L again.
        t.wait_for(r"USB applications\s+OTP U2F FIDO2 OATH PIV")
        t.send("L")
        t.wait_for("Set the configuration lock code")
        t.send("Space", "Down")
        t.type(LOCK)
        t.send("Enter")
        t.wait_for("Configuration lock: set → none. Apply it?")
        t.answer("y")
        t.wait_for(r"Configuration locked\s+no")
        run_ykman(key.reader, "config", "nfc", "--disable", "OTP", "-f", env=env)
        # L on the unlocked key sets a new one, typed twice: ykman config usb then needs -L with it.
        new = "0123456789abcdef" * 2
        t.send("L")
        t.wait_for("Set the configuration lock code")
        t.type(new)
        t.send("Enter")
        t.type(new)
        assert new not in t.screen()
        t.send("Enter")
        t.wait_for("Configuration lock: none → set. Apply it?")
        t.answer("y")
        t.wait_for(r"Configuration locked\s+yes")
        r = run_ykman(key.reader, "config", "usb", "--disable", "OATH", "-f", env=env, check=False)
        assert r.returncode != 0
        r = run_ykman(key.reader, "config", "usb", "--disable", "OATH", "-f", "-L", LOCK, env=env, check=False)
        assert r.returncode != 0
        assert applications_table(run_ykman(key.reader, "info", env=env).stdout)["OATH"] == ("Enabled", "Enabled")
        run_ykman(key.reader, "config", "usb", "--disable", "OATH", "-f", "-L", new, env=env)
        assert applications_table(run_ykman(key.reader, "info", env=env).stdout)["OATH"] == ("Disabled", "Enabled")
    finally:
        t.close()
        key.stop()


def test_disable_all_touch_eject_and_nfc_restricted_as_ykman_reads_them(pcsc, tmp_path, env):
    """config nfc --disable-all and config usb --touch-eject, read back by ykman; config nfc --restrict over the
    NFC reader cuts ykterm's own way to the key, so it needs --force, and afterwards nothing answers there."""
    key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
    try:
        def config(*args, check=True):
            return run_ykterm("config", *args, "--reader", key.reader, env=env, check=check)

        r = config("nfc", "--disable-all", "--enable", "PIV", check=False)
        assert r.returncode == 2 and "PIV cannot be enabled and disabled at once" in r.stderr, r.stderr
        # Over the NFC reader this leaves ykterm nothing to talk to: --force.
        assert config("nfc", "--disable-all", check=False).returncode == 2
        r = config("nfc", "--disable-all", "--force")
        assert "NFC applications: OTP U2F FIDO2 OATH PIV OpenPGP HSMAUTH → -" in r.stdout, r.stdout
        state = json.loads((tmp_path / "key.json").read_text())
        assert state["nfcEnabled"] == 0
        # The applications back over NFC, in the state file, for what follows.
        key.stop()
        state["nfcEnabled"] = state["nfcSupported"]
        (tmp_path / "key.json").write_text(json.dumps(state))
        key = ServedKey(pcsc, slot=0, state=tmp_path / "key.json").start()
        r = config("usb", "--touch-eject", "--force")
        assert "Touch eject: off → on" in r.stdout, r.stdout
        assert json.loads((tmp_path / "key.json").read_text())["deviceFlags"] & 0x80
        assert "Touch eject: on → off" in config("usb", "--no-touch-eject", "--force").stdout
        assert config("usb", "--no-touch-eject", "--force").stdout == "Nothing changes.\n"
        assert not json.loads((tmp_path / "key.json").read_text())["deviceFlags"] & 0x80

        r = config("nfc", "--restrict", check=False)
        assert r.returncode == 2 and "--force" in r.stderr, r.stderr
        r = config("nfc", "--restrict", "--force")
        assert "NFC: off until the key is next powered from USB" in r.stdout, r.stdout
        assert json.loads((tmp_path / "key.json").read_text())["nfcRestricted"] is True
        assert run_ykman(key.reader, "info", env=env, check=False).returncode != 0
        assert run_ykterm("info", "--reader", key.reader, env=env, check=False).returncode != 0
    finally:
        key.stop()
