"""Scenarios run inside `ykterm virtual-key serve --usb ... -- python usb_scenarios.py NAME`, where the virtual
key is a USB key: its HID interfaces are /dev/hidraw nodes and its CCID interface sits on a private pcscd at the
standard socket. Each scenario drives ykterm (the TUI in tmux, or the command line) and checks it with
python-fido2 and ykman from inside; it prints one JSON object with what it found, which test_usb_tui.py checks.
"""

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import YKTERM  # noqa: E402
from test_tui import Tmux  # noqa: E402
from test_tui_fido import fido_tab, submit  # noqa: E402

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
        submit(t, "usb-pin-1", "usb-pin-1")
        t.wait_for("FIDO2 PIN set")
        screen = t.wait_for("set · 8 tries left")
    finally:
        t.close()
    return {"hid": pin_works_over_hid("usb-pin-1"), "pcsc": pin_works_over_pcsc("usb-pin-1"),
            "wrong_hid": pin_works_over_hid("not-the-pin"), "screen": screen}


def pulled_mid_pin_change(home):
    """The key is pulled out right as a PIN change is sent: the PIN is the old or the new one, never unknown;
    the TUI says which to try; plugged in again, the key shows within a second."""
    subprocess.run([str(YKTERM), "fido", "pin", "set"], input="old-pin-1\n", text=True, check=True, timeout=30)
    t = tui(home)
    try:
        fido_tab(t)
        t.send("c")
        t.wait_for("Change the FIDO2 PIN")
        submit(t, "old-pin-1", "new-pin-2", "new-pin-2")
        # The change is under way (each command takes the key 300 ms): pulled out now.
        t.wait_for("changing the PIN…")
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
        submit(t, "sky-pin-1", "sky-pin-1")
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
        time.sleep(0.5)
        while not lines.empty():
            events.append(lines.get())
    finally:
        mon.terminate()
        mon.wait(timeout=5)
    return {"first": first, "left": left, "back": back, "events": events}


def main():
    name, home = sys.argv[1], sys.argv[2]
    result = globals()[name](home)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
