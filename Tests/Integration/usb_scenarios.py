"""Scenarios run inside `ykterm virtual-key serve --usb ... -- python usb_scenarios.py NAME`, where the virtual
key is a USB key: its HID interfaces are /dev/hidraw nodes and its CCID interface sits on a private pcscd at the
standard socket. Each scenario drives ykterm (the TUI in tmux, or the command line) and checks it with
python-fido2 and ykman from inside; it prints one JSON object with what it found, which test_usb_tui.py checks.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import YKTERM, clean_environ  # noqa: E402
from test_tui import Tmux  # noqa: E402
from test_tui_fido import fido_tab  # noqa: E402

from fido2.ctap import CtapError  # noqa: E402
from fido2.ctap2 import Ctap2  # noqa: E402
from fido2.ctap2.pin import ClientPin  # noqa: E402
from fido2.hid import CtapHidDevice  # noqa: E402


def pin_works(pin, transport=CtapHidDevice):
    """True when the one device python-fido2 finds on `transport` gives a PIN token for `pin`; else why not."""
    devices = list(transport.list_devices())
    if len(devices) != 1:
        return f"{len(devices)} devices on {transport.__name__}"
    try:
        ClientPin(Ctap2(devices[0])).get_pin_token(pin)
        return True
    except CtapError as e:
        return e.code.name
    finally:
        devices[0].close()


def pin_works_over_hid(pin):
    return pin_works(pin)


def pin_works_over_pcsc(pin):
    from fido2.pcsc import CtapPcscDevice
    return pin_works(pin, CtapPcscDevice)


def usb(action):
    subprocess.run([str(YKTERM), "virtual-key", "usb", action], check=True, timeout=30)


def tui(home):
    env = dict(os.environ, XDG_CONFIG_HOME=str(Path(home) / "config"))
    return Tmux(shlex.quote(str(YKTERM)), env)


def pin_set_in_the_tui(home):
    """A PIN set in the TUI's FIDO2 tab (over HID) works in python-fido2 over HID and over PC/SC."""
    t = tui(home)
    try:
        screen = fido_tab(t)
        t.send("s")
        t.wait_for("Set the FIDO2 PIN")
        t.submit("usb-pin-1", "usb-pin-1")
        t.wait_for("FIDO2 PIN set")
        screen = t.wait_for("set · 8 tries left")
    finally:
        t.close()
    return {"hid": pin_works_over_hid("usb-pin-1"), "pcsc": pin_works_over_pcsc("usb-pin-1"),
            "wrong_hid": pin_works_over_hid("not-the-pin"), "screen": screen}


def oath_add_in_the_tui(home):
    """An account added in the TUI's OATH tab from an otpauth:// URI goes to the USB key's CCID interface: ykman
    reads it there and gives pyotp's code, which the TUI shows too."""
    import pyotp
    from test_tui import code_of
    secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
    t = tui(home)
    try:
        empty = t.wait_for("No accounts yet")
        t.send("a")
        t.wait_for("Add account")
        t.type(f"otpauth://totp/Example:carol@example.com?secret={secret}&issuer=Example")
        t.wait_for(r"Name\s+carol@example.com")
        t.send("Enter")
        added = t.wait_for("Added Example:carol@example.com")
        t.wait_for(r"Example\s.*\d{3} \d{3}")
        # Read away from a period's edge, so that the TUI, ykman and pyotp speak of the same period.
        while not 3 < 30 - time.time() % 30 < 27:
            time.sleep(0.5)
        shown = code_of(t.screen(), "Example")[0]
        ykman = subprocess.run([str(Path(sys.executable).parent / "ykman"), "oath", "accounts", "code", "-s",
                                "Example:carol@example.com"], capture_output=True, text=True, timeout=60)
        expected = pyotp.TOTP(secret).now()
        t.send("q")
        t.wait_for("EXITED=0")
    finally:
        t.close()
    return {"empty": empty, "added": added, "shown": shown, "ykman": ykman.stdout.strip(),
            "ykman_error": ykman.stderr, "pyotp": expected}


def pulled_mid_pin_change(home):
    """The key is pulled out right as a PIN change is sent: the PIN is the old or the new one, never unknown;
    the TUI says which to try; plugged in again, the key shows again."""
    subprocess.run([str(YKTERM), "fido", "pin", "set"], input="old-pin-1\n", text=True, check=True, timeout=30)
    t = tui(home)
    try:
        fido_tab(t)
        t.send("c")
        t.wait_for("Change the FIDO2 PIN")
        t.submit("old-pin-1", "new-pin-2", "new-pin-2")
        # The change is under way (each command takes the key a second): pulled out now.
        t.glimpse("changing the PIN…")
        usb("unplug")
        after = t.wait_for("Try the old first", timeout=10)
        plugged = time.monotonic()
        usb("plug")
        # The key on screen again (the status bar names it), then its FIDO2 information read anew.
        t.wait_for(r"connected", timeout=5)
        shown_after = time.monotonic() - plugged
        back = t.wait_for("FIDO2 authenticator", timeout=10)
    finally:
        t.close()
    old, new = pin_works_over_hid("old-pin-1"), pin_works_over_hid("new-pin-2")
    return {"old": old, "new": new, "after": after, "back": back, "shown_after": shown_after}


def security_key(home):
    """A Security Key (FIDO HID only, no pcscd): listed, shown in the TUI, its FIDO2 tab works."""
    listed = json.loads(subprocess.run([str(YKTERM), "list", "--json"], capture_output=True, text=True,
                                       timeout=30).stdout or "[]")
    t = tui(home)
    try:
        oath = t.wait_for("OATH is not on this key")
        screen = fido_tab(t)
        t.send("s")
        t.wait_for("Set the FIDO2 PIN")
        t.submit("sky-pin-1", "sky-pin-1")
        t.wait_for("FIDO2 PIN set")
    finally:
        t.close()
    return {"listed": listed, "oath": oath, "fido": screen, "pin": pin_works_over_hid("sky-pin-1"),
            "pcscd": os.path.exists("/run/pcscd/pcscd.comm")}


def otp_over_hid(home):
    """A key with CCID turned off (OTP and FIDO HID): a challenge-response secret ykman programs over OTP HID
    gives ykterm the same HMAC-SHA1 over OTP HID, on the command line and in the TUI's OTP tab."""
    import hashlib
    import hmac
    secret, challenge = bytes(range(1, 21)), b"ykterm over the keyboard interface"
    ykman = str(Path(sys.executable).parent / "ykman")
    subprocess.run([ykman, "otp", "chalresp", "--force", "2", secret.hex()], check=True, capture_output=True, timeout=60)
    cli = subprocess.run([str(YKTERM), "otp", "calculate", "--slot", "2", challenge.hex()], capture_output=True,
                         text=True, timeout=30)
    info = subprocess.run([str(YKTERM), "otp", "info", "--json"], capture_output=True, text=True, timeout=30)
    t = tui(home)
    try:
        t.send("2")
        slots = t.wait_for("Slot 1: .* slot 2: programmed")
        t.send("x")
        t.wait_for("Challenge")
        t.type(challenge.hex())
        t.send("Enter")
        answered = t.wait_for(hmac.new(secret, challenge, hashlib.sha1).hexdigest()[:16])
    finally:
        t.close()
    return {"expected": hmac.new(secret, challenge, hashlib.sha1).hexdigest(), "cli": cli.stdout.strip(),
            "cli_error": cli.stderr, "info": info.stdout, "slots": slots, "tui": answered}


def monitor_events(home):
    """`ykterm monitor --json` while the key is pulled out and plugged in again: one key, its interfaces
    leaving and coming back as key events for that key, seen through pcscd and inotify (no udev here)."""
    import queue
    import threading
    mon = subprocess.Popen([str(YKTERM), "monitor", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(json.loads(line)) for line in mon.stdout], daemon=True).start()
    events = []

    def until(pred, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                e = lines.get(timeout=max(0.05, deadline - time.monotonic()))
            except Exception:
                break
            events.append(e)
            if pred(e):
                return e
        return None

    def full(e):
        return e.get("event") in ("key-arrived", "key-changed") and e.get("interfaces") == "ccid,fido,otp"

    try:
        first = until(full)
        usb("unplug")
        left = until(lambda e: e.get("event") == "key-left")
        usb("plug")
        back = until(full)
        # Nothing to wait for: a moment in which a second key, or the key again, would have been reported.
        time.sleep(0.5)
        while not lines.empty():
            events.append(lines.get())
    finally:
        mon.terminate()
        mon.wait(timeout=5)
    return {"first": first, "left": left, "back": back, "events": events}


def two_fido_clients(home, seconds=20):
    """ykterm (the TUI's FIDO2 tab verifying the PIN, and `fido info` in a loop) and python-fido2 (a PIN token
    and getInfo in a loop) on one key's FIDO HID interface at once: each on its own channel. The key answers
    a request on one channel while it works on another's with ERR_CHANNEL_BUSY; ykterm asks again, python-fido2
    raises, and this loop counts that and asks again. Every program that has the hidraw node open reads every
    answer the key sends, whatever its channel (as with a real key): ykterm passes over the others', python-fido2
    gives up on reading one ("Wrong channel", or "Wrong nonce" for another program's CTAPHID_INIT answer),
    which this loop counts and retries as well."""
    import random
    import threading
    from fido2.ctap import CtapError
    pin = "two-clients-1"
    subprocess.run([str(YKTERM), "fido", "pin", "set"], input=pin + "\n", text=True, check=True, timeout=30)
    stop = time.monotonic() + seconds
    counts = {"cli_runs": 0, "cli_failures": [], "peer_runs": 0, "peer_busy": 0, "peer_crossed": 0,
              "peer_failures": [],
              "tui_verified": 0, "tui_failures": []}

    def cli():
        while time.monotonic() < stop:
            r = subprocess.run([str(YKTERM), "fido", "info", "--json"], capture_output=True, text=True, timeout=30)
            counts["cli_runs"] += 1
            if r.returncode != 0 or json.loads(r.stdout).get("pin_retries") != 8:
                counts["cli_failures"].append(r.stderr.strip()[-300:] or r.stdout[-300:])
            # Pauses, as a person's use has: python-fido2 cannot finish a request while another program's
            # answers arrive.
            time.sleep(random.uniform(0, 0.4))

    def peer():
        # A fresh device (and channel) each round: the answer to a request python-fido2 gave up on may still
        # come on the old channel, where python-fido2 would take it for the answer to its next request.
        while time.monotonic() < stop:
            device = None
            try:
                try:
                    device = next(CtapHidDevice.list_devices())
                    ctap = Ctap2(device)
                    ClientPin(ctap).get_pin_token(pin)
                    ctap.get_info()
                    counts["peer_runs"] += 1
                    time.sleep(random.uniform(0, 0.4))  # a pause between uses, as above
                except CtapError as e:
                    if e.code == CtapError.ERR.CHANNEL_BUSY:
                        counts["peer_busy"] += 1
                        time.sleep(random.uniform(0.02, 0.1))  # a moment before asking the busy key again
                    else:
                        counts["peer_failures"].append(e.code.name)
                except Exception as e:  # noqa: BLE001 (reported, not hidden)
                    if "Wrong channel" in str(e) or "Wrong nonce" in str(e):
                        counts["peer_crossed"] += 1
                    else:
                        counts["peer_failures"].append(repr(e))
                    time.sleep(random.uniform(0.02, 0.1))  # a moment before asking again
            finally:
                if device is not None:
                    device.close()

    threads = [threading.Thread(target=cli), threading.Thread(target=peer)]
    for th in threads:
        th.start()
    t = tui(home)
    try:
        fido_tab(t)
        while time.monotonic() < stop:
            t.send("v")
            t.wait_for("Verify the FIDO2 PIN")
            t.submit(pin)
            screen = t.wait_for(r"The PIN is correct|[Ff]ailed|error|busy", timeout=15)
            if "The PIN is correct (8 tries left)" in screen:
                counts["tui_verified"] += 1
            else:
                counts["tui_failures"].append(screen[-400:])
            t.send("Escape")
            time.sleep(random.uniform(0, 0.4))  # a pause between uses, as above
    finally:
        t.close()
        for th in threads:
            th.join(timeout=60)
    return counts


def ssh_tab(home):
    """The SSH tab on the USB key: the FIDO2 PIN once per visit, then a PIV slot (key and certificate made by the
    command line) and a FIDO SSH key the tab makes (n, defaults: ed25519 into ~/.ssh) in one list; c copies each
    line through OSC 52 (tmux keeps what the program sent as a buffer); OpenSSH logs in with the handle file the
    tab wrote, to an sshd of the test's own; d deletes the key after asking, and the command line no longer lists
    it."""
    from sshd_scripts import SSHD
    exec(SSHD, globals())
    pin = "ssh-pin-246"  # what the askpass program answers (test_usb.ssh_keygen_env)
    out = {}

    def cli(*args, stdin=None):
        return subprocess.run([str(YKTERM), *args], input=stdin, capture_output=True, text=True, timeout=60,
                              stdin=None if stdin is not None else subprocess.DEVNULL)

    def listed():
        r = cli("ssh", "list", "--json", stdin=pin + "\n")
        return json.loads(r.stdout) if r.returncode == 0 else r.stderr

    out["pin_set"] = cli("fido", "pin", "set", stdin=pin + "\n").returncode
    out["piv_key"] = cli("piv", "keys", "generate", "9a", "-a", "ECCP256").returncode
    out["piv_cert"] = cli("piv", "certificates", "generate", "9a", "--subject", "CN=tui-ssh",
                          stdin="123456\n").returncode
    out["piv_line"] = cli("piv", "ssh-key", "9a").stdout.strip()
    t = tui(home)
    try:
        # tmux takes the program's OSC 52 as a paste buffer: what the copy sent, byte for byte.
        t.tmux("set-option", "-g", "set-clipboard", "on")
        t.wait_for("6 SSH")
        t.send("6")
        t.wait_for("FIDO2 PIN for the SSH keys")
        t.submit(pin)
        out["before"] = t.wait_for("CN=tui-ssh")
        t.send("n")
        t.wait_for("New FIDO SSH key")
        # The application has "ssh:" typed already; the rest keep their defaults (Ed25519, touch, ~/.ssh).
        t.submit("tui", "", "", "", "", "")
        out["made"] = t.wait_for("Made an ed25519-sk key")
        out["list"] = t.wait_for(r"ssh:tui[\s\S]*PIV 9A")
        t.send("c")
        t.wait_for("Copied the SSH key of ssh:tui")
        out["copied_fido"] = t.tmux("show-buffer")
        t.send("j")
        t.send("c")
        t.wait_for("Copied the SSH key of PIV 9A")
        out["copied_piv"] = t.tmux("show-buffer")
        t.send("Enter")
        out["details"] = t.wait_for("authorized_keys line")
        t.send("Escape")
        handle = Path(home) / ".ssh" / "id_ed25519_sk_rk_tui"
        out["files"] = {p.name: [oct(p.stat().st_mode & 0o777), p.read_text()] for p in handle.parent.iterdir()}
        out["listed_cli"] = listed()
        # OpenSSH (through libfido2 and the hidraw shim) logs in with the handle file the tab wrote.
        work = tempfile.mkdtemp(prefix="ykterm-ssh-tab-")
        sshd = Sshd(work, (Path(str(handle) + ".pub")).read_text())
        try:
            env = dict(os.environ, LD_PRELOAD=os.environ["HIDRAW_SHIM"], SSH_ASKPASS=os.environ["PIN_ASKPASS"],
                       SSH_ASKPASS_REQUIRE="force")
            r = subprocess.run(sshd.client() + ["-i", str(handle), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
                                                "127.0.0.1", "echo", "logged-in-from-tab"],
                               env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
            out["login"] = {"rc": r.returncode, "out": r.stdout.strip(), "err": r.stderr[-400:]}
        finally:
            sshd.stop()
            shutil.rmtree(work, ignore_errors=True)
        # d on the FIDO key (the cursor goes back up to it), after the question.
        t.send("k")
        t.send("d")
        t.wait_for("Delete the SSH key of ssh:tui")
        t.answer("y")
        out["deleted"] = t.wait_for("Deleted the SSH key of ssh:tui")
        out["after"] = t.wait_for("SSH keys on the key: 1")
    finally:
        t.close()
    out["listed_after"] = listed()
    return out


def three_keys(home, port):
    """Every key at once, three keys: this USB key ("daily") and two served to vpcd readers of the namespace's pcscd
    (`serve --usb --vpcd-readers PORT`): "backup", and "spare", a firmware 5.4 key that already holds 32 accounts.
    `oath add --all-keys` puts an account on the two with room and names the full one; ykman on each key gives
    pyotp's code. Then the TUI's all-keys view: each account once with its keys; the USB key pulled out takes its
    marks away and the others' codes stay."""
    import pyotp
    port = int(port)
    secret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
    account = "Three Keys:alice@example.com"
    uri = f"otpauth://totp/Three%20Keys:alice@example.com?secret={secret}&issuer=Three%20Keys"
    served, logs = [], []
    out = {}

    def ykterm(*args, check=True, input=None):
        r = subprocess.run([str(YKTERM), *args], capture_output=True, text=True, timeout=60, input=input)
        assert not check or r.returncode == 0, (args, r.stdout, r.stderr)
        return r

    def serials():
        r = ykterm("list", "--json", check=False)
        return sorted(k.get("serial") or 0 for k in json.loads(r.stdout or "[]"))

    def ykman_code(selector):
        """ykman's code for the account on one key (asked again when it fell on a period's edge)."""
        for _ in range(2):
            r = subprocess.run([str(Path(sys.executable).parent / "ykman"), *selector, "oath", "accounts", "code",
                                "-s", account], capture_output=True, text=True, timeout=60)
            code = r.stdout.strip()
            if code == pyotp.TOTP(secret).now():
                break
        return code

    try:
        # The USB key's serial, read while it is the only key (the list is in pcscd's reader order).
        usb_serial = json.loads(ykterm("list", "--json").stdout)[0]["serial"]
        for offset, serial, extra in ((0, 41000012, []), (1, 41000013, ["--firmware", "5.4.3", "--accounts", "32"])):
            log = open(Path(home) / f"serve-{serial}.log", "wb")
            logs.append(log)
            served.append(subprocess.Popen(
                [str(YKTERM), "virtual-key", "serve", "--vpcd", f"127.0.0.1:{port + offset}", "--serial",
                 str(serial), "--state", str(Path(home) / f"{serial}.json"), *extra],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        deadline = time.monotonic() + 20
        while serials() != sorted([usb_serial, 41000012, 41000013]) and time.monotonic() < deadline:
            time.sleep(0.2)
        out["serials"] = serials()
        for serial, name in ((usb_serial, "daily"), (41000012, "backup"), (41000013, "spare")):
            ykterm("key", "name", str(serial), name)
        out["listed"] = ykterm("list").stdout
        added = ykterm("oath", "add", "--all-keys", uri, check=False)
        out["add"] = {"status": added.returncode, "stdout": added.stdout, "stderr": added.stderr}
        out["codes"] = {
            "daily": ykman_code(["--device", str(usb_serial)]),
            "backup": ykman_code(["--reader", "Virtual PCD 00 00"]),
        }
        out["pyotp"] = pyotp.TOTP(secret).now()
        spare = subprocess.run([str(Path(sys.executable).parent / "ykman"), "--reader", "Virtual PCD 00 01", "oath",
                                "accounts", "list"], capture_output=True, text=True, timeout=60).stdout
        out["on_spare"] = account in spare
        out["all_keys"] = ykterm("oath", "list", "--all-keys").stdout

        config = Path(home) / ".config" / "ykterm"
        config.mkdir(parents=True, exist_ok=True)
        (config / "config.toml").write_text("[oath]\nall_keys = true\n")
        # Tall enough for the spare's 32 accounts and the new one, wide enough for the keys column's holders and
        # its "not on" mark side by side.
        t = Tmux(shlex.quote(str(YKTERM)), dict(os.environ), columns=120, rows=45)

        def keys_line(s):
            return next((line for line in s.splitlines() if "Keys:" in line), "")

        try:
            # The keys in the order the view keeps them (the selected one first), whichever that is.
            out["before"] = t.wait_until(
                lambda s: all(name in keys_line(s) for name in ("daily", "backup", "spare"))
                and re.search(r"Three Keys\s.*(daily · backup|backup · daily)\s+not on spare", s)
                and re.search(r"Issuer 00\s.*spare\s+not on (daily, backup|backup, daily)", s), timeout=30)
            usb("unplug")
            pulled = time.monotonic()
            out["after"] = t.wait_until(
                lambda s: "daily" not in keys_line(s) and "not on daily" not in s
                and re.search(r"Three Keys\s.*\d{3} \d{3}.*\sbackup\s+not on spare", s)
                and re.search(r"Issuer 00\s.*not on backup", s), timeout=10)
            out["marks_gone_after"] = time.monotonic() - pulled
            # The code shown for the account is the backup's, pyotp's (read away from a period's edge).
            while 1.5 > 30 - time.time() % 30 or 30 - time.time() % 30 > 28.5:
                time.sleep(0.5)
            screen = t.screen()
            line = [row for row in screen.splitlines() if "Three Keys" in row]
            out["code_line"] = line[0] if line else screen
            out["code_pyotp"] = pyotp.TOTP(secret).now()
            usb("plug")
            t.send("q")
            t.wait_for("EXITED=0")
        finally:
            t.close()
    finally:
        for p in served:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in logs:
            log.close()
    return out


def usb_mode(home, serial):
    """A YubiKey 4 (serve --usb --firmware 4.3.7) whose USB mode ykterm and ykman set: after SET MODE the key
    leaves the bus and comes back with the interfaces of the new mode, as a real one re-enumerates. For each mode
    what is on the bus (the hidraw nodes and their HID names, the readers pcscd shows) and what ykman and ykterm
    say, once every one of them sees the new mode."""
    from smartcard.System import readers
    ykman = str(Path(sys.executable).parent / "ykman")

    def run(*argv):
        r = subprocess.run([*argv], capture_output=True, text=True, timeout=60)
        return {"status": r.returncode, "stdout": r.stdout, "stderr": r.stderr}

    def reader_names():
        try:
            return sorted(str(r) for r in readers())
        except Exception:  # pcscd without readers (or not there): none
            return []

    def seen():
        nodes = sorted(str(p) for p in Path("/dev").glob("hidraw*"))
        names = []
        for link in sorted(Path("/sys/class/hidraw").iterdir()):
            uevent = (link.resolve() / "device" / "uevent").read_text()
            names.append(next(line[9:] for line in uevent.splitlines() if line.startswith("HID_NAME=")))
        listed = run(str(YKTERM), "list", "--json")
        return {"nodes": nodes, "hid_names": names, "readers": reader_names(),
                "ykman_list": run(ykman, "list")["stdout"].strip(), "ykman_info": run(ykman, "info")["stdout"],
                "list": json.loads(listed["stdout"] or "[]"),
                "info": json.loads(run(str(YKTERM), "info", "--json")["stdout"] or "{}")}

    def settled(mode):
        """What is seen once the key is back as MODE: ykman lists it alone so, ykterm finds it with as many interfaces,
        pcscd has a reader for it with CCID (the key leaves the bus a moment after its answer, and a client looking
        meanwhile may still find the old one, or the new reader before its card)."""
        deadline = time.monotonic() + 30
        while True:
            now = seen()
            if (now["ykman_list"] == f"YubiKey 4 (4.3.7) [{mode}] Serial: {serial}" and len(now["list"]) == 1
                    and len(now["list"][0]["interfaces"]) == mode.count("+") + 1
                    and len(now["readers"]) == ("CCID" in mode)) or time.monotonic() > deadline:
                return now
            time.sleep(0.2)

    out = {"start": settled("OTP+FIDO+CCID")}
    # ykterm sends SET MODE over CCID; then, with CCID off, over the FIDO interface.
    out["set_fido"] = run(str(YKTERM), "config", "mode", "FIDO", "--force")
    out["fido"] = settled("FIDO")
    out["set_all"] = run(str(YKTERM), "config", "mode", "OTP+FIDO+CCID", "--force")
    out["all"] = settled("OTP+FIDO+CCID")
    # ykman's SET MODE, read by ykterm; then ykterm's over CCID.
    out["ykman_set"] = run(ykman, "config", "mode", "OTP+CCID", "--force")
    out["otp_ccid"] = settled("OTP+CCID")
    out["set_ccid"] = run(str(YKTERM), "config", "mode", "CCID", "--force")
    out["ccid"] = settled("CCID")
    # A key with CCID alone is reached through pcscd only, which stays while the key is plugged in (it lives as
    # long as the server, not as the thread that restarted it for the new reader name): some seconds later ykterm
    # still sets the mode back over CCID.
    time.sleep(10)
    out["set_back"] = run(str(YKTERM), "config", "mode", "o+f+c", "--force")
    out["back"] = settled("OTP+FIDO+CCID")
    time.sleep(10)
    out["later_readers"] = reader_names()
    return out


def main():
    name, home = sys.argv[1], sys.argv[2]
    # The environment of every program a scenario starts does not depend on the shell the test was started from
    # (harness.clean_environ, as conftest.py does for the tests), HOME the test's directory; what serve --usb
    # sets for its command is kept.
    env = clean_environ(home, keep=("YKTERM_USB_CONTROL", "SYSTEMD_DEVICE_VERIFY_SYSFS"))
    os.environ.clear()
    os.environ.update(env)
    result = globals()[name](home, *sys.argv[3:])
    print(json.dumps(result))


if __name__ == "__main__":
    main()
