# Over 500 lines on purpose: one scenario whose parts (churn, capture, checks) share one timeline and state.
"""Soak (issue 22, section 1; issue 35): two TUIs for SOAK_MINUTES on two virtual keys while everything around
them churns.

    python soak.py [--minutes N] [--seed S] [--json FILE] [--load] [--sanitized]
    (as root; `make soak SOAK_MINUTES=N`; --load: a busy loop per core beside it; --sanitized: see sanitized())

How the pieces sit. The TUI has to see a USB key (hidraw nodes and a CCID reader) and a second key served
through vpcd, so everything runs inside one `ykterm virtual-key serve --usb -- python soak.py --inside ...`:
the USB key (U, serial 33000001) is plugged in there, and this script is its COMMAND. serve --usb starts a
pcscd of its own in the namespace, at the standard socket, with one reader, and never restarts it. This script
takes that pcscd over at the start (SIGTERM, by the PID it finds among serve's children) and from then on runs
pcscd itself, with two reader configurations: the USB key's (copied from serve's, the one-slot driver on
serve's vpcd port) and a plain vpcd reader on a port of its own, where the second key (N, serial 33000002,
`ykterm virtual-key serve --vpcd`) sits when it is running. vpcd keeps one connection per slot number in
global variables, and both readers would use slot 0 of one loaded library; so the one-slot driver forwards to
a private copy of vpcd (YKTERM_IFD_DRIVER, the variable it reads for that), loaded apart from the copy the
second reader uses. Each kill of pcscd is then a real one, with the TUI, the keys and the clients reconnecting
to the next pcscd at the same socket.

What runs, all at once, for the whole run:
  - two TUIs (`ykterm --device 33000001`: each shows U whenever U is there, else N), each in a tmux of its own,
    100x30, with its standard error in a file of the run's directory (stderr-first.txt, stderr-second.txt: a
    fatal signal's report goes there); each screen is read every 0.1 s (capture-pane). The first stays on the
    OATH tab. The second moves between the tabs: the OATH tab for 4 to 8 s, then the next of the others (OTP,
    FIDO2, APDU, PIV in turn) for 2 to 4 s, and back; it is on the OATH tab over every full minute (from 3 s
    before to 3.5 s after, the WINDOW and half a second) and while the figures at rest are taken;
  - the USB key is pulled out (for 0.5 to 2 s) and plugged back in (for 2 to 5 s) again and again
    (`ykterm virtual-key usb unplug|plug`);
  - the served key N is stopped and started again every 10 to 20 s: it starts while U is out, and stops
    while U is out or while it is in;
  - pcscd is killed every minute (SIGTERM and SIGKILL in turn) and started again after 0.3 to 2 s;
  - `ykterm oath code --json` and `ykman oath accounts code` read U's codes in two loops, with pauses of
    0.2 to 0.6 s and 0.5 to 1.5 s between runs.
No change starts in the few seconds before a full minute, so that the boundary of every minute (of the 30 s
and the 60 s accounts) falls on a settled screen and is judged; the half minutes fall where they fall.
U holds three TOTP accounts (30 s SHA-1 6 digits, 60 s SHA-1 6 digits, 30 s SHA-256 8 digits) and N two (30 s,
60 s), each with a new random secret, so every code is checked against pyotp.

What is checked, on both TUIs' screens (the second's while it is on the OATH tab):
  - every code on screen, in every capture: it must be the account's code for a time within that capture or
    the WINDOW (3 s) before it (the screen may lag a period boundary that much before it counts as wrong);
    "refreshes" are the captures whose codes differ from the one before, "codes checked" the codes they show;
  - every period boundary (30 s, and 60 s for the 60 s accounts) during which the screen showed one key's
    accounts throughout the WINDOW after it: the new codes must be on screen within it, else the boundary is
    missed. Boundaries where the key shown changed in that window are not judged; its arrival is;
  - every arrival: U plugged in (from the start of `usb plug`), N started while U is out (from its start), U
    pulled out while N is there (the TUI turning to N), and U after each pcscd start (from the moment the new
    pcscd accepts connections): its accounts and right codes on screen (within 10 s, else it was never shown;
    how many took over TARGET, 1 s, is a figure, and a criterion only with --latency-limit). On the second TUI an
    arrival is judged when it was on the OATH tab from 0.5 s before the change until its codes showed (else it
    is counted as not judged);
  - the TUI noticing each removal (U's accounts gone after an unplug or a pcscd kill, N's when it stops while
    shown); on the second, when on the OATH tab throughout, as for arrivals;
  - the loops: each run's codes against pyotp; a run that fails is put down to the churn when it overlapped
    U being out or pcscd being down (until U's codes were back on the TUI's screen, and 0.5 s more), and
    counts as a failure otherwise; ykman's "Failed to connect" (it opens the card exclusively and gives up
    when another program has it at that moment) is counted apart, as in test_concurrency.py;
  - each TUI's process: RSS (VmRSS), open descriptors (/proc/PID/fd) and threads, after a warm-up (the first
    third of the run, at most a minute: a pcscd restart, N gone and back, several plug-ins) and at the end,
    both taken with U plugged in, N running and pcscd up, at rest: 7 s after the last change and the last
    period boundary, as the worker threads a burst of work starts end after 5 s idle (5 or 6 threads at rest,
    up to 8 at work). At the end the figures get up to 45 s (more rests) to come back to where they started: the
    same descriptors, and no more threads (a worker still idling at the start may be gone at the end);
  - neither TUI exits, and nothing reaches either's standard error.

The script prints one JSON object (inside) and a table of figures (outside). test_soak.py runs it in
`make test` for SOAK_MINUTES (3 by default) and asserts the pass criteria (`failures()` below). Every process it
starts is stopped by its PID, and its files live in one temporary directory that is removed at the end.
"""

import argparse
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyotp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sanitizers  # noqa: E402
from harness import (VENV_BIN, YKTERM, descendants, free_port_pair, isolate_environ, stop_pid,  # noqa: E402
                     stop_tree, usb_unavailable_reason)

USB_SERIAL = 33000001
NFC_SERIAL = 33000002
USB_READER = "Yubico YubiKey OTP+FIDO+CCID"
NFC_READER = "Virtual PCD 00 00"
PCSCD_SOCKET = "/run/pcscd/pcscd.comm"
PCSCD_EVERY = 60.0
# How soon a new code should be on screen after its period starts, and a key's codes after it arrives: a figure
# the table reports (how many took longer), not a pass criterion. Performance is measured, not asserted: on a
# loaded CI machine a plug-in has taken 1.3 s. `--latency-limit S` makes it a criterion for a run by hand.
TARGET = 1.0
# What is asserted: a new code on screen within WINDOW of its period's start (else the boundary is missed), and no
# code on screen longer than WINDOW after its period ended (else it is wrong). With --sanitized (make soak
# SOAK_SANITIZER=...: a build several times slower) the window is twice as long.
WINDOW = 3.0
SANITIZED_WINDOW = 6.0
SANITIZED = False
LAG = WINDOW
CAPTURE_EVERY = 0.1
# The TUI is at rest this long after its last work (its idle worker threads end after 5 s).
QUIET = 7.0
# Resource pass criteria.
RSS_GROWTH_LIMIT_KIB = 1024
# The second TUI's tabs (key, name); it stays on the first this long, on each of the others this long.
TABS = [("1", "OATH"), ("2", "OTP"), ("3", "FIDO2"), ("4", "APDU"), ("5", "PIV")]
ON_OATH = (4.0, 8.0)
ON_OTHER = (2.0, 4.0)


class Account:
    def __init__(self, key, issuer, name, period=30, digits=6, algorithm="SHA1"):
        self.key, self.issuer, self.name = key, issuer, name
        self.period, self.digits, self.algorithm = period, digits, algorithm
        self.secret = pyotp.random_base32(32)

    @property
    def id(self):
        """As the TUI shows it."""
        return f"{self.issuer}:{self.name}"

    @property
    def credential_id(self):
        """As the key stores it (and ykman and `oath code --json` name it): the period first when not 30 s."""
        return self.id if self.period == 30 else f"{self.period}/{self.id}"

    def code(self, t):
        digest = {"SHA1": hashlib.sha1, "SHA256": hashlib.sha256}[self.algorithm]
        return pyotp.TOTP(self.secret, digits=self.digits, digest=digest, interval=self.period).at(int(t))

    def valid(self, code, start, end):
        """The account's code for some time in [start - LAG, end] (at most two periods meet there)."""
        return code in (self.code(start - LAG), self.code(end))


# One line of the OATH tab: issuer, name, then the code in two groups (absent while it is being read).
ROW = re.compile(r"(Soak USB|Soak NFC)\s+(\S+)(?:\s+(\d{3,4}) (\d{3,4})(?=\s|$))?")


class Capture:
    """One capture of the screen: when it was taken (wall clock, the one TOTP uses), the accounts shown and
    their codes."""

    def __init__(self, start, end, text, accounts):
        self.start, self.end, self.text = start, end, text
        self.rows, self.codes = set(), {}
        for line in text.splitlines():
            m = ROW.search(line)
            if m:
                account = f"{m.group(1)}:{m.group(2)}"
                self.rows.add(account)
                if m.group(3):
                    self.codes[account] = m.group(3) + m.group(4)
        self.key = None
        for key in ("usb", "nfc"):
            ids = {a.id for a in accounts if a.key == key}
            if self.rows == ids:
                self.key = key
        self.exited = "EXITED=" in text

    def complete(self, key):
        """`key`'s accounts are on screen, each with its code."""
        return self.key == key and set(self.codes) == self.rows


class Pane:
    """One of the two TUIs: its tmux, its process, the last seconds of its screen, and its part of the figures
    (`r`: refreshes, codes checked, wrong codes, boundaries, "tui": the process's figures)."""

    def __init__(self, name, r):
        self.name, self.r = name, r
        self.tmux = None
        self.pid = None
        self.captures = []
        # When its tab changed: (time the tab's key was sent, tab name). The first TUI stays on the OATH tab.
        self.tabs = [(0.0, "OATH")]

    def on_oath(self, start, end):
        """On the OATH tab from 0.5 s before `start` (the time a tab key takes to act) until `end`."""
        tabs = list(self.tabs)
        before = [t for t in tabs if t[0] <= start]
        return (before[-1][1] == "OATH" and before[-1][0] <= start - 0.5
                and not any(start < t[0] <= end for t in tabs))


def run_quiet(argv, timeout=60, input=None):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, input=input,
                          stdin=subprocess.DEVNULL if input is None else None)


def process_running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def resources(pid):
    """RSS in KiB, open descriptors and threads of `pid`."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))
    threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))
    names = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            names.append(Path(f"/proc/{pid}/task/{task}/comm").read_text().strip())
        except OSError:
            pass
    fds = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            fds.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return {"rss_kib": rss, "fds": len(fds), "threads": threads, "thread_names": sorted(names),
            "fd_targets": sorted(re.sub(r"\[\d+\]", "[]", f) for f in fds)}


def brief(sample):
    return {k: sample[k] for k in ("rss_kib", "fds", "threads")}


class Soak:
    """Everything inside the namespace (see the module's description)."""

    def __init__(self, workdir, seconds, seed):
        self.dir = Path(workdir)
        self.seconds = seconds
        self.rng = random.Random(seed)
        self.seed = seed
        self.accounts = [Account("usb", "Soak USB", "totp-30"),
                         Account("usb", "Soak USB", "totp-60", period=60),
                         Account("usb", "Soak USB", "sha256-8", digits=8, algorithm="SHA256"),
                         Account("nfc", "Soak NFC", "totp-30"),
                         Account("nfc", "Soak NFC", "totp-60", period=60)]
        self.by_id = {a.id: a for a in self.accounts}
        self.by_credential_id = {a.credential_id: a for a in self.accounts}
        self.lock = threading.Condition()
        self.stopping = threading.Event()
        self.loops_stop = threading.Event()
        self.pcscd = None
        self.pcscd_log = None
        self.nfc = None
        self.nfc_log = None
        self.usb_plugged = True
        self.unplugged_at = None
        self.last_event = time.time()
        # Intervals [start, end] when U was out or pcscd down, for the loops' failures.
        self.away = []
        self.r = {
            "seed": seed, "minutes": seconds / 60, "target": TARGET, "window": WINDOW, "sanitized": SANITIZED,
            "refreshes": 0, "codes_checked": 0, "wrong_codes": [],
            "boundaries": {"judged": 0, "missed": [], "latencies": [], "not_judged": 0},
            "usb": {"unplugs": 0, "plugs": 0, "arrivals": [], "not_shown": [], "removal_noticed": [],
                    "removal_not_noticed": 0, "plug_seconds": []},
            "nfc": {"starts": 0, "stops": 0, "arrivals": [], "not_shown": [], "switches": [],
                    "switch_not_shown": [], "removal_noticed": [], "removal_not_noticed": 0},
            "pcscd": {"restarts": 0, "sigterm": 0, "sigkill": 0, "noticed": [], "not_noticed": 0,
                      "recovered": [], "not_recovered": []},
            "cli": {"ykterm": {"runs": 0, "codes": 0, "wrong": [], "key_away": 0, "failures": []},
                    "ykman": {"runs": 0, "codes": 0, "wrong": [], "key_away": 0, "failures": [], "busy": 0}},
            "tui": {"start": None, "end": None, "peak": {}, "settle_seconds": None, "exited": False,
                    "screen_errors": [], "minutes": [], "stderr": ""},
            "second": {
                "refreshes": 0, "codes_checked": 0, "wrong_codes": [],
                "boundaries": {"judged": 0, "missed": [], "latencies": [], "not_judged": 0},
                "arrivals": [], "not_shown": [], "removal_noticed": [], "removal_not_noticed": 0,
                "not_judged": 0, "tab_visits": {name: 0 for _, name in TABS},
                "tui": {"start": None, "end": None, "peak": {}, "exited": False, "screen_errors": [],
                        "minutes": [], "stderr": ""},
            },
            "errors": [],
        }
        self.first, self.second = Pane("first", self.r), Pane("second", self.r["second"])
        self.panes = (self.first, self.second)
        # The second TUI's tab moves: their own random numbers (the churn's stay as the seed makes them), a lock
        # that keeps a move's keys together, and `hold` (on the OATH tab, no moves) while set.
        self.tab_rng = random.Random(seed * 10 + 7)
        self.tab_lock = threading.Lock()
        self.hold = threading.Event()

    # --- logging --------------------------------------------------------------------------------------

    def progress(self, text):
        print(f"soak {time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)

    # --- pcscd ----------------------------------------------------------------------------------------

    def prepare_pcscd(self):
        """Two reader configurations (see the module's description) and a private copy of vpcd."""
        conf = self.dir / "reader.conf.d"
        conf.mkdir()
        usb = Path("/run/ykterm-usb/reader.conf.d/vpcd").read_text()
        (conf / "10-usb-key").write_text(usb)
        vpcd = re.search(r"^LIBPATH\s+(\S+)", usb, re.M).group(1)
        system_vpcd = "/usr/lib/pcsc/drivers/serial/libifdvpcd.so"
        if "one-slot" not in vpcd:
            raise RuntimeError("serve --usb did not find its one-slot reader driver: " + vpcd)
        shutil.copyfile(system_vpcd, self.dir / "vpcd-usb-key.so")
        self.nfc_port = free_port_pair()
        (conf / "20-served-key").write_text(
            'FRIENDLYNAME "Virtual PCD"\n'
            f"DEVICENAME   /dev/null:0x{self.nfc_port:X}\n"
            f"LIBPATH      {system_vpcd}\n"
            f"CHANNELID    0x{self.nfc_port:X}\n")
        self.pcscd_conf = conf
        # serve's own pcscd goes first: a child of serve (our parent) named pcscd.
        theirs = [p for p in descendants(os.getppid())
                  if p != os.getpid() and Path(f"/proc/{p}/comm").read_text().strip() == "pcscd"]
        if len(theirs) != 1:
            raise RuntimeError(f"serve --usb's pcscd not found among its children: {theirs}")
        os.kill(theirs[0], signal.SIGTERM)
        deadline = time.monotonic() + 10
        while (process_running(theirs[0]) or os.path.exists(PCSCD_SOCKET)) and time.monotonic() < deadline:
            time.sleep(0.05)
        if process_running(theirs[0]):
            raise RuntimeError("serve --usb's pcscd did not stop on SIGTERM")

    def start_pcscd(self):
        """Starts pcscd and returns when it accepts connections (its time)."""
        if self.pcscd_log is None:
            self.pcscd_log = open(self.dir / "pcscd.log", "ab")
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "YKTERM_IFD_DRIVER": str(self.dir / "vpcd-usb-key.so")}
        # TMPDIR too: it is how .ci/run tells the processes of a test run from the machine's others.
        if "TMPDIR" in os.environ:
            env["TMPDIR"] = os.environ["TMPDIR"]
        self.pcscd = subprocess.Popen(["pcscd", "--foreground", "-c", str(self.pcscd_conf)], env=env,
                                      stdin=subprocess.DEVNULL, stdout=self.pcscd_log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.pcscd.poll() is not None:
                raise RuntimeError(f"pcscd exited with {self.pcscd.returncode}: "
                                   + (self.dir / "pcscd.log").read_text()[-2000:])
            try:
                # pcscd writes its PID, a newline and a NUL.
                if Path("/run/pcscd/pcscd.pid").read_text().strip("\0\n ") == str(self.pcscd.pid):
                    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                        s.connect(PCSCD_SOCKET)
                    return time.time()
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError("pcscd did not accept connections within 10 s")

    def stop_pcscd(self, sig):
        os.kill(self.pcscd.pid, sig)
        try:
            self.pcscd.wait(timeout=10)
        except subprocess.TimeoutExpired:
            stop_pid(self.pcscd)

    # --- the keys -------------------------------------------------------------------------------------

    def usb(self, action):
        started = self.last_event = time.time()
        r = run_quiet([YKTERM, "virtual-key", "usb", action], timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"usb {action} failed: {r.stderr.strip()}")
        self.usb_plugged = action == "plug"
        self.r["usb"]["plugs" if action == "plug" else "unplugs"] += 1
        if action == "plug":
            self.r["usb"]["plug_seconds"].append(time.time() - started)
        return started

    def start_nfc(self):
        if self.nfc_log is None:
            self.nfc_log = open(self.dir / "served-key.log", "ab")
        started = self.last_event = time.time()
        self.nfc = subprocess.Popen([str(YKTERM), "virtual-key", "serve", "--vpcd", f"127.0.0.1:{self.nfc_port}",
                                     "--serial", str(NFC_SERIAL), "--state", str(self.dir / "served-key.json")],
                                    stdin=subprocess.DEVNULL, stdout=self.nfc_log, stderr=subprocess.STDOUT)
        self.r["nfc"]["starts"] += 1
        return started

    def stop_nfc(self):
        self.last_event = time.time()
        stop_pid(self.nfc)
        self.nfc = None
        self.r["nfc"]["stops"] += 1

    def wait_reader(self, reader, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = run_quiet([YKTERM, "list", "--readers"], timeout=30)
            if re.search(rf"^{re.escape(reader)}.*: key present", r.stdout, re.M):
                return
            time.sleep(0.1)
        raise RuntimeError(f"{reader} shows no key after {timeout} s")

    def add_accounts(self, key, reader):
        for a in self.accounts:
            if a.key != key:
                continue
            r = run_quiet([YKTERM, "oath", "add", "--reader", reader, "--issuer", a.issuer, "--name", a.name,
                           "--period", a.period, "--digits", a.digits, "--algorithm", a.algorithm,
                           "--secret", "-"], input=a.secret + "\n")
            if r.returncode != 0:
                raise RuntimeError(f"oath add {a.id} on {reader}: {r.stderr.strip()}")

    # --- the screen -----------------------------------------------------------------------------------

    def watch(self, pane):
        """Reads `pane`'s screen every CAPTURE_EVERY seconds until the run stops; checks every code and boundary."""
        last = None
        flagged = set()
        r = pane.r
        next_boundary = {p: (int(time.time()) // p + 1) * p for p in (30, 60)}
        while not self.stopping.is_set():
            start = time.time()
            try:
                text = pane.tmux.screen()
            except subprocess.CalledProcessError as e:
                self.r["errors"].append(f"capture-pane of the {pane.name} TUI failed: {e.stderr}")
                self.stopping.set()
                break
            c = Capture(start, time.time(), text, self.accounts)
            with self.lock:
                pane.captures.append(c)
                while pane.captures and pane.captures[0].end < c.end - 30:
                    pane.captures.pop(0)
                self.lock.notify_all()
            if c.exited:
                r["tui"]["exited"] = True
                self.r["errors"].append(f"the {pane.name} TUI exited:\n" + text)
                self.stopping.set()
                break
            for line in text.splitlines()[-3:]:
                if re.search(r"(?i)error|failed|crash", line) and len(r["tui"]["screen_errors"]) < 20:
                    r["tui"]["screen_errors"].append(line.strip())
            # Every code shown, every time: right for this moment (or the LAG before it).
            for account, code in c.codes.items():
                if not self.by_id[account].valid(code, c.start, c.end) and (account, code) not in flagged:
                    flagged.add((account, code))
                    a = self.by_id[account]
                    r["wrong_codes"].append({"at": c.end, "account": account, "shown": code,
                                             "expected": a.code(c.end), "screen": text})
            if c.codes and (last is None or c.codes != last.codes):
                r["refreshes"] += 1
                r["codes_checked"] += len(c.codes)
            last = c
            # Boundaries whose second has passed.
            for period in (30, 60):
                b = next_boundary[period]
                if c.start > b + WINDOW:
                    self.judge(pane, b, period)
                    next_boundary[period] = b + period
            elapsed = time.time() - start
            self.stopping.wait(max(0.0, CAPTURE_EVERY - elapsed))

    def judge(self, pane, b, period):
        """The boundary at `b` for accounts of `period` on `pane`: judged when one key's accounts were on screen
        in every capture of the WINDOW after it; missed when none of them showed all the new codes."""
        with self.lock:
            window = [c for c in pane.captures if b <= c.start and c.end <= b + WINDOW]
        keys = {c.key for c in window}
        boundaries = pane.r["boundaries"]
        if not window or len(keys) != 1 or None in keys:
            boundaries["not_judged"] += 1
            return
        key = keys.pop()
        due = [a for a in self.accounts if a.key == key and a.period == period]
        if not due:
            return
        boundaries["judged"] += 1
        for c in window:
            if all(c.codes.get(a.id) == a.code(b) for a in due):
                boundaries["latencies"].append(c.end - b)
                return
        boundaries["missed"].append({"boundary": b, "period": period, "key": key, "last_screen": window[-1].text})

    def wait_screen(self, predicate, since, timeout=10, pane=None):
        """The end time of the first capture of `pane` (the first TUI's by default) begun after `since` for
        which `predicate` holds, or None."""
        pane = pane or self.first
        deadline = time.time() + timeout
        with self.lock:
            while True:
                for c in pane.captures:
                    if c.start >= since and predicate(c):
                        return c.end
                if time.time() > deadline or self.stopping.is_set():
                    return None
                self.lock.wait(timeout=0.5)

    def shown(self, key, since, timeout=10, pane=None):
        return self.wait_screen(lambda c: c.complete(key), since, timeout, pane)

    def gone(self, key, since, timeout=10, pane=None):
        return self.wait_screen(lambda c: c.key != key, since, timeout, pane)

    def last_screen(self, pane=None):
        pane = pane or self.first
        return pane.captures[-1].text if pane.captures else ""

    def second_sees(self, what, key, since):
        """The second TUI after a change at `since`: `key`'s accounts and codes shown (what="arrival") or gone
        ("removal"). Judged only when it was on the OATH tab from 0.5 s before the change until then (or until
        the wait ended); else counted as not judged."""
        p = self.second
        f = p.r
        if not p.on_oath(since, since):
            f["not_judged"] += 1
            return
        at = (self.shown if what == "arrival" else self.gone)(key, since, pane=p)
        if not p.on_oath(since, at or time.time()):
            f["not_judged"] += 1
        elif what == "arrival" and at is None:
            f["not_shown"].append({"at": since, "key": key, "screen": self.last_screen(p)})
        elif what == "arrival":
            f["arrivals"].append(at - since)
        elif at is None:
            f["removal_not_noticed"] += 1
        else:
            f["removal_noticed"].append(at - since)

    # --- the second TUI's tabs ------------------------------------------------------------------------

    def switch_second(self, tab, unless_held=False):
        """Escape (the APDU tab's input lets go of the digits), then the tab's digit; nothing when `unless_held`
        and the second TUI is held on the OATH tab. Returns whether it switched."""
        with self.tab_lock:
            if unless_held and self.hold.is_set():
                return False
            self.second.tmux.send("Escape")
            time.sleep(0.3)
            self.second.tmux.send(tab[0])
            if self.second.tabs[-1][1] != tab[1]:
                self.second.tabs.append((time.time(), tab[1]))
                self.r["second"]["tab_visits"][tab[1]] += 1
            return True

    def move(self):
        """Moves the second TUI between its tabs until the run stops (see the module's description)."""
        others = 0
        while not self.stopping.is_set():
            self.switch_second(TABS[0])
            self.pause(self.tab_rng.uniform(*ON_OATH))
            away = self.tab_rng.uniform(*ON_OTHER)
            if self.hold.is_set():
                self.pause(1.0)
                continue
            # On the OATH tab from 3 s before every full minute until WINDOW + 0.5 s after it: a stay that ends
            # just after a minute waits out that minute's window too, not only the next one's lead.
            self.clear_of_minute(away + 0.5 + 3)
            if self.switch_second(TABS[1 + others % (len(TABS) - 1)], unless_held=True):
                others += 1
                self.pause(away)

    def second_to_oath(self):
        """Holds the second TUI on the OATH tab (until `hold` is cleared): for the figures at rest."""
        self.hold.set()
        with self.tab_lock:
            on_oath = self.second.tabs[-1][1] == "OATH"
        if not on_oath:
            self.switch_second(TABS[0])
            self.last_event = time.time()

    # --- the TUI process ------------------------------------------------------------------------------

    def find_tui_pid(self, pane, timeout=10):
        shell = int(pane.tmux.tmux("display-message", "-p", "#{pane_pid}").strip())
        exe = os.path.realpath(YKTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in descendants(shell):
                try:
                    if os.readlink(f"/proc/{p}/exe") == exe:
                        return p
                except OSError:
                    pass
            time.sleep(0.05)
        raise RuntimeError(f"the {pane.name} TUI's process was not found under its pane")

    def sample(self, pane=None):
        pane = pane or self.first
        if not process_running(pane.pid):
            raise RuntimeError(f"the {pane.name} TUI's process is gone")
        s = resources(pane.pid)
        peak = pane.r["tui"]["peak"]
        for k in ("rss_kib", "fds", "threads"):
            peak[k] = max(peak.get(k, 0), s[k])
        return s

    # --- churn ----------------------------------------------------------------------------------------

    def away_from(self, start, back_at):
        self.away.append((start, (back_at or time.time()) + 0.5))

    def plug_usb(self):
        started = self.usb("plug")
        shown = self.shown("usb", started)
        self.away_from(self.unplugged_at, shown)
        if shown is None:
            self.r["usb"]["not_shown"].append({"at": started, "screen": self.last_screen()})
        else:
            self.r["usb"]["arrivals"].append(shown - started)
        self.second_sees("arrival", "usb", started)

    def unplug_usb(self):
        started = self.usb("unplug")
        self.unplugged_at = started
        gone = self.gone("usb", started)
        if gone is None:
            self.r["usb"]["removal_not_noticed"] += 1
        else:
            self.r["usb"]["removal_noticed"].append(gone - started)
        if self.nfc is not None and gone is not None:
            # The TUI turns to the other key present.
            shown = self.shown("nfc", started)
            if shown is None:
                self.r["nfc"]["switch_not_shown"].append({"at": started, "screen": self.last_screen()})
            else:
                self.r["nfc"]["switches"].append(shown - started)
            self.second_sees("arrival", "nfc", started)
        else:
            self.second_sees("removal", "usb", started)

    def toggle_nfc(self):
        if self.nfc is not None:
            stopped = time.time()
            self.stop_nfc()
            if not self.usb_plugged:
                gone = self.gone("nfc", stopped)
                if gone is None:
                    self.r["nfc"]["removal_not_noticed"] += 1
                else:
                    self.r["nfc"]["removal_noticed"].append(gone - stopped)
                self.second_sees("removal", "nfc", stopped)
            return
        started = self.start_nfc()
        if not self.usb_plugged:
            # U is out: N's arrival is what the screen shows.
            shown = self.shown("nfc", started)
            if shown is None:
                self.r["nfc"]["not_shown"].append({"at": started, "screen": self.last_screen()})
            else:
                self.r["nfc"]["arrivals"].append(shown - started)
            self.second_sees("arrival", "nfc", started)

    def restart_pcscd(self):
        sig = signal.SIGKILL if self.r["pcscd"]["restarts"] % 2 else signal.SIGTERM
        killed = self.last_event = time.time()
        self.stop_pcscd(sig)
        self.r["pcscd"]["sigkill" if sig == signal.SIGKILL else "sigterm"] += 1
        noticed = self.gone("usb", killed, timeout=5)
        if noticed is None:
            self.r["pcscd"]["not_noticed"] += 1
        else:
            self.r["pcscd"]["noticed"].append(noticed - killed)
        self.second_sees("removal", "usb", killed)
        time.sleep(self.rng.uniform(0.3, 2.0))  # pcscd down for a while: the scenario
        listening = self.start_pcscd()
        self.r["pcscd"]["restarts"] += 1
        shown = self.shown("usb", listening)
        self.last_event = time.time()
        self.away_from(killed, shown)
        if shown is None:
            self.r["pcscd"]["not_recovered"].append({"at": listening, "screen": self.last_screen()})
        else:
            self.r["pcscd"]["recovered"].append(shown - listening)
        self.second_sees("arrival", "usb", listening)

    def canonical(self):
        """U plugged in, N running, U on both screens (the second held on the OATH tab until `hold` is
        cleared)."""
        self.second_to_oath()
        if self.nfc is None:
            self.start_nfc()
        if not self.usb_plugged:
            self.plug_usb()
        for pane in self.panes:
            if self.shown("usb", time.time(), timeout=15, pane=pane) is None:
                raise RuntimeError(f"the USB key is not on the {pane.name} TUI's screen:\n" + self.last_screen(pane))

    def at_rest(self, want=None, timeout=45):
        """Resource samples of both TUIs at rest: QUIET seconds after the last churn and the last period boundary
        (the threads a burst of work started end after 5 s idle). With `want` (a sample per TUI), samples again
        at rest until the descriptors and threads of both are back to it, for up to `timeout` seconds. Returns
        the samples (one per TUI) and the wait."""
        began = time.monotonic()
        while True:
            now = time.time()
            boundary = now - now % 30
            calm = max(self.last_event, boundary) + QUIET
            if now < calm or boundary + 30 - now < 1:
                self.pause((calm if now < calm else boundary + 30 + QUIET) - now)
                continue
            samples = [self.sample(pane) for pane in self.panes]
            if want is None or time.monotonic() - began > timeout or all(
                    s["fds"] == w["fds"] and s["threads"] <= w["threads"] for s, w in zip(samples, want)):
                return samples, time.monotonic() - began
            self.pause(1)

    def churn(self):
        begin = time.time()
        end = begin + self.seconds
        warm_until = begin + min(60.0, self.seconds / 3)
        next_pcscd = begin + min(30.0, self.seconds / 6)
        next_nfc = begin + self.rng.uniform(5, 10)
        last_report = begin
        while time.time() < end and not self.stopping.is_set():
            if self.r["tui"]["start"] is None and time.time() >= warm_until:
                self.canonical()
                (self.r["tui"]["start"], self.r["second"]["tui"]["start"]), _ = self.at_rest()
                self.hold.clear()
                self.progress(f"warmed up: TUIs {brief(self.r['tui']['start'])}, "
                              f"{brief(self.r['second']['tui']['start'])}")
                continue
            if time.time() >= next_pcscd:
                # Killed, noticed, 0.3 to 2 s down, started and back on screen: at most about 5 s.
                self.clear_of_minute(10)
                self.restart_pcscd()
                next_pcscd += PCSCD_EVERY
                continue
            if time.time() - last_report >= 60:
                last_report = time.time()
                self.report(begin)
            self.pause(self.rng.uniform(2.0, 5.0), until=min(end, next_pcscd))
            # Out for at most 2 s, then plugged in and on screen again.
            self.clear_of_minute(4)
            if time.time() >= end or self.stopping.is_set():
                break
            self.unplug_usb()
            # N starts only while U is out, so that the screen shows its arrival; it stops while U is out (the
            # screen it was on empties) or while U is in (nothing on screen changes), by lot.
            if time.time() >= next_nfc and (self.nfc is None or self.rng.random() < 0.5):
                self.toggle_nfc()
                next_nfc = time.time() + self.rng.uniform(10, 20)
            self.pause(self.rng.uniform(0.5, 2.0))
            self.plug_usb()
            if time.time() >= next_nfc and self.nfc is not None:
                self.toggle_nfc()
                next_nfc = time.time() + self.rng.uniform(10, 20)
        self.report(begin)

    def clear_of_minute(self, lead):
        """Waits, when needed, so that a change taking up to `lead` seconds is over before the next full minute or
        begins WINDOW + 0.5 s after it: every minute's boundary (that of the 30 s and the 60 s accounts) then falls
        on a settled screen and is judged, whatever the churn does around the others."""
        now = time.time()
        minute = now - now % 60
        settled = WINDOW + 0.5
        if now < minute + settled:
            self.pause(minute + settled - now)
        elif minute + 60 - now < lead:
            self.pause(minute + 60 + settled - now)

    def pause(self, seconds, until=None):
        t = time.time() + seconds
        if until is not None:
            t = min(t, until)
        self.stopping.wait(max(0.0, t - time.time()))

    def report(self, begin):
        r = self.r
        samples = []
        for pane in self.panes:
            sample = brief(self.sample(pane))
            pane.r["tui"]["minutes"].append([round((time.time() - begin) / 60, 1), sample["rss_kib"],
                                             sample["fds"], sample["threads"]])
            samples.append(sample)
        sample = " and ".join(str(s) for s in samples)
        self.progress(f"{(time.time() - begin) / 60:.1f} min: {r['refreshes']} refreshes, {r['codes_checked']} codes "
                      f"checked, {len(r['wrong_codes'])} wrong, boundaries {r['boundaries']['judged']} judged "
                      f"{len(r['boundaries']['missed'])} missed, {r['usb']['plugs']} plug-ins, "
                      f"{r['pcscd']['restarts']} pcscd restarts, served key {r['nfc']['starts']} starts; "
                      f"ykterm {r['cli']['ykterm']['runs']} runs, ykman {r['cli']['ykman']['runs']} runs; "
                      f"TUIs {sample}")

    # --- the command-line loops -----------------------------------------------------------------------

    def loop(self, side, rng):
        f = self.r["cli"][side]
        runs = []
        while not self.loops_stop.is_set():
            started = time.time()
            if side == "ykterm":
                argv = [YKTERM, "oath", "code", "--json", "--reader", USB_READER]
            else:
                argv = [VENV_BIN / "ykman", "--reader", USB_READER, "oath", "accounts", "code"]
            try:
                r = run_quiet(argv, timeout=60)
                rc, out, err = r.returncode, r.stdout, r.stderr
            except subprocess.TimeoutExpired:
                rc, out, err = -1, "", "no answer in 60 s"
            except OSError as e:
                # A binary that cannot be run (replaced under the run: ETXTBSY) is a failed run, counted as
                # one; before, it ended this loop's thread and its runs were lost without a word.
                rc, out, err = -4, "", f"could not run {argv[0]}: {e}"
            ended = time.time()
            f["runs"] += 1
            codes = {}
            if rc == 0 and side == "ykterm":
                try:
                    codes = {e["id"]: e["code"] for e in json.loads(out)}
                except (ValueError, KeyError, TypeError):
                    rc, err = -3, f"not the JSON of oath code: {out[-300:]!r}"
            elif rc == 0:
                for line in out.splitlines():
                    m = re.match(r"^(.*\S)\s+(\d{6,8})$", line)
                    if m:
                        codes[m.group(1)] = m.group(2)
            usb_ids = {a.credential_id for a in self.accounts if a.key == "usb"}
            if rc == 0 and set(codes) != usb_ids:
                rc, err = -2, f"accounts listed: {sorted(codes)}"
            for account, code in codes.items():
                a = self.by_credential_id.get(account)
                f["codes"] += 1
                if a is None or code not in (a.code(started), a.code(ended)):
                    f["wrong"].append({"account": account, "code": code, "at": ended})
            runs.append((started, ended, rc, (err or out).strip()[-300:]))
            self.loops_stop.wait(rng.uniform(0.2, 0.6) if side == "ykterm" else rng.uniform(0.5, 1.5))
        return runs

    def classify(self, side, runs):
        f = self.r["cli"][side]
        for started, ended, rc, detail in runs:
            if rc == 0:
                continue
            if any(started <= b and a <= ended for a, b in self.away):
                f["key_away"] += 1
            elif side == "ykman" and "Failed to connect" in detail:
                f["busy"] += 1
            elif side == "ykman" and "SW=0x6d00" in detail:
                # ykman asks for the card exclusively and, when another program holds it at that moment, goes on
                # with a shared connection and no transaction (ykman/pcsc: _open_smartcard_connection). Another
                # program's SELECT (a TUI on the PIV or OTP tab) can then come between ykman's SELECT of OATH and
                # its CALCULATE ALL, which the application then selected does not know (SW 6D00): a gap in
                # ykman's own sequence, which no other program can close. ykterm takes a transaction per
                # operation; its loop counts every such answer as a failure.
                f["selection_taken"] = f.get("selection_taken", 0) + 1
            else:
                f["failures"].append({"at": started, "exit": rc, "detail": detail})

    # --- the whole run --------------------------------------------------------------------------------

    def run(self):
        from test_tui import Tmux
        self.prepare_pcscd()
        self.start_pcscd()
        self.wait_reader(USB_READER)
        self.add_accounts("usb", USB_READER)
        self.start_nfc()
        self.wait_reader(NFC_READER)
        self.add_accounts("nfc", NFC_READER)
        env = dict(os.environ, XDG_CONFIG_HOME=str(self.dir / "config"))
        for pane in self.panes:
            # Standard error to a file: a fatal signal's report (and anything else) is kept there.
            stderr = shlex.quote(str(self.dir / f"stderr-{pane.name}.txt"))
            pane.tmux = Tmux(f"{shlex.quote(str(YKTERM))} --device {USB_SERIAL} 2>{stderr}", env)
            # For the outside, which stops the server and removes its socket's directory if this script cannot.
            suffix = "" if pane is self.first else "-" + pane.name
            (self.dir / f"tmux-dir{suffix}").write_text(pane.tmux.dir)
            (self.dir / f"tmux-server{suffix}.pid").write_text(str(pane.tmux.server_pid))
        for pane in self.panes:
            pane.tmux.wait_for("Soak USB")
            pane.pid = self.find_tui_pid(pane)
        watchers = [threading.Thread(target=self.watch, args=(pane,), name=f"watch-{pane.name}")
                    for pane in self.panes]
        for t in watchers:
            t.start()
        mover = threading.Thread(target=self.move, name="move")
        results = {}
        loops = [threading.Thread(target=lambda s=s, seed=i: results.__setitem__(s, self.loop(s, random.Random(
            self.seed * 10 + seed))), name=s) for i, s in enumerate(("ykterm", "ykman"))]
        try:
            for pane in self.panes:
                if self.shown("usb", time.time(), timeout=15, pane=pane) is None:
                    raise RuntimeError(f"the USB key's codes did not show on the {pane.name} TUI:\n"
                                       + pane.tmux.screen())
            self.progress(f"running {self.seconds / 60:.1f} min (seed {self.seed})")
            mover.start()
            for t in loops:
                t.start()
            self.churn()
            self.loops_stop.set()
            for t in loops:
                t.join(timeout=120)
            if not self.stopping.is_set():
                self.canonical()
                start = [self.r["tui"]["start"], self.r["second"]["tui"]["start"]]
                if None in start:
                    raise RuntimeError("the run ended before its warm-up did")
                (self.r["tui"]["end"], self.r["second"]["tui"]["end"]), self.r["tui"]["settle_seconds"] = \
                    self.at_rest(want=start)
        finally:
            self.loops_stop.set()
            self.stopping.set()
            for t in watchers + ([mover] if mover.ident else []):
                t.join(timeout=30)
        for side in ("ykterm", "ykman"):
            if side not in results and self.r["cli"][side]["runs"]:
                self.r["errors"].append(f"the {side} loop ended early, after {self.r['cli'][side]['runs']} runs")
            self.classify(side, results.get(side, []))
        return self.r

    def cleanup(self):
        """Stops what this script started, by PID: the TUIs' tmux servers, the served key, pcscd (after pulling
        the USB key out, so serve --usb finds nothing to wait for); keeps what the TUIs wrote to stderr."""
        self.stopping.set()
        self.loops_stop.set()
        for pane in self.panes:
            if pane.tmux is not None:
                pane.tmux.close()
            path = self.dir / f"stderr-{pane.name}.txt"
            if path.exists():
                pane.r["tui"]["stderr"] = path.read_bytes().decode(errors="replace")[-20000:]
        if self.nfc is not None:
            stop_pid(self.nfc)
        if self.usb_plugged and self.pcscd is not None and self.pcscd.poll() is None:
            run_quiet([YKTERM, "virtual-key", "usb", "unplug"], timeout=30)
        if self.pcscd is not None:
            stop_pid(self.pcscd)
        for f in (self.pcscd_log, self.nfc_log):
            if f is not None:
                f.close()


def sanitized(on):
    """For a sanitizer build: a window of SANITIZED_WINDOW, and RSS growth a figure, not a criterion (the
    sanitizers' own memory, ThreadSanitizer's history and AddressSanitizer's quarantine of freed blocks, grows)."""
    global WINDOW, LAG, SANITIZED
    SANITIZED = on
    WINDOW = LAG = SANITIZED_WINDOW if on else 3.0


def inside(workdir, minutes, seed, with_sanitizer=False):
    sanitized(with_sanitizer)
    # serve --usb passes SIGTERM on to its command: stop as on any other end, cleaning up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    soak = Soak(workdir, minutes * 60, seed)
    try:
        result = soak.run()
    except Exception as e:  # noqa: BLE001 (reported in the result, which the outside fails on)
        import traceback
        soak.r["errors"].append("".join(traceback.format_exception(e))[-3000:])
        result = soak.r
    finally:
        soak.cleanup()
    # Screens are kept only for what went wrong, and only a few.
    print(json.dumps(result))


# --- outside the namespace ----------------------------------------------------------------------------

def unavailable():
    """Why the soak cannot run here, or None."""
    reason = usb_unavailable_reason()
    if reason:
        return reason
    if shutil.which("tmux") is None:
        return "tmux is missing: run `make deps`"
    return None


def run(minutes, seed=None, progress=None, with_sanitizer=False, load=False):
    """Runs the soak for `minutes` in `virtual-key serve --usb` and returns its figures. Progress lines go to
    `progress` (a file), or into the figures' "log" when None. `load`: a busy loop per core beside it, as
    storm.py's --load."""
    seed = random.randrange(1 << 30) if seed is None else seed
    workdir = Path(tempfile.mkdtemp(prefix="ykterm-soak-"))
    log = progress if progress is not None else open(workdir / "soak.log", "w+")
    loaders = []
    try:
        if load:
            from storm import start_load
            loaders = start_load(os.cpu_count() or 2, 0)
        env = dict(os.environ, YKTERM_BIN=str(YKTERM))
        proc = subprocess.Popen([str(YKTERM), "virtual-key", "serve", "--usb", "--serial", str(USB_SERIAL),
                                 "--state", str(workdir / "usb-key.json"), "--",
                                 sys.executable, str(Path(__file__).resolve()), "--inside", str(workdir),
                                 "--minutes", str(minutes), "--seed", str(seed)]
                                + (["--sanitized"] if with_sanitizer else []),
                                stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True, env=env)
        try:
            out, _ = proc.communicate(timeout=minutes * 60 + 300)
        except subprocess.TimeoutExpired:
            # SIGTERM reaches the script inside, which stops what it started; then whatever is left goes.
            proc.terminate()
            try:
                out, _ = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                for suffix in ("", "-second"):
                    server = workdir / f"tmux-server{suffix}.pid"
                    if server.exists():
                        stop_tree(int(server.read_text()))
                        shutil.rmtree((workdir / f"tmux-dir{suffix}").read_text(), ignore_errors=True)
                for pid in reversed(descendants(proc.pid)):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                stop_pid(proc)
                out = ""
        lines = out.strip().splitlines()
        try:
            result = json.loads(lines[-1])
        except (IndexError, json.JSONDecodeError):
            result = {"errors": [f"no result from inside (exit {proc.returncode}): {out[-2000:]}"]}
        if progress is None:
            log.seek(0)
            result["log"] = log.read()[-6000:]
        result["exit"] = proc.returncode
        result["load"] = len(loaders)
        # A ykterm built with a sanitizer (make soak SOAK_SANITIZER=...): its reports, written to files.
        result["sanitizer_reports"] = sanitizers.reports()
        return result
    finally:
        for p in loaders:
            stop_pid(p)
        if progress is None:
            log.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _ms(values, how):
    if not values:
        return "-"
    v = {"worst": max(values), "median": statistics.median(values)}[how]
    return f"{v * 1000:.0f} ms"


def _arrivals(r):
    """Each kind of arrival with how long its codes took to show, in seconds."""
    return (("second TUI", r["second"]["arrivals"]), ("USB key plugged in", r["usb"]["arrivals"]),
            ("served key", r["nfc"]["arrivals"]), ("served key after the USB key left", r["nfc"]["switches"]),
            ("USB key after pcscd started", r["pcscd"]["recovered"]))


def failures(r, latency_limit=None):
    """The pass criteria, as a list of what failed (empty: passed). An arrival fails when it never showed (within
    10 s); with `latency_limit` (seconds), also when it took longer than that."""
    found = r.get("sanitizer_reports") or []
    reported = [f"{len(found)} sanitizer reports:\n  " + "\n  ".join(sanitizers.summary(found))
                + "\nthe first:\n" + found[0][1][-6000:]] if found else []
    if r.get("errors"):
        return reported + ["errors: " + e[-1500:] for e in r["errors"]] + [
            f"the {n} TUI wrote to stderr:\n{t['stderr'][-3000:]}" for n, t in
            (("first", r.get("tui", {})), ("second", r.get("second", {}).get("tui", {}))) if t.get("stderr")]
    out = reported
    second = r["second"]
    for name, f in (("", r), ("second TUI: ", second)):
        if f["wrong_codes"]:
            out.append(f"{name}{len(f['wrong_codes'])} wrong codes on screen: " + json.dumps(f["wrong_codes"][:3]))
        if f["boundaries"]["missed"]:
            out.append(f"{name}{len(f['boundaries']['missed'])} missed period boundaries: "
                       + json.dumps(f["boundaries"]["missed"][:3]))
        if f["boundaries"]["judged"] < 1:
            out.append(f"{name}no period boundary could be judged")
    if second["not_shown"]:
        out.append(f"second TUI: {len(second['not_shown'])} arrivals never shown: "
                   + json.dumps(second["not_shown"][:2]))
    if second["removal_not_noticed"]:
        out.append(f"second TUI: {second['removal_not_noticed']} removals not noticed")
    for what, late in _arrivals(r):
        slow = [x for x in late if latency_limit is not None and x > latency_limit]
        if slow:
            out.append(f"{what}: {len(slow)} arrivals took over {latency_limit:g} s: "
                       + ", ".join(f"{x * 1000:.0f} ms" for x in slow[:10]))
    for what, missing in (("USB key", r["usb"]["not_shown"]), ("served key", r["nfc"]["not_shown"]),
                          ("served key after the USB key left", r["nfc"]["switch_not_shown"]),
                          ("USB key after pcscd started", r["pcscd"]["not_recovered"])):
        if missing:
            out.append(f"{what}: {len(missing)} arrivals never shown: " + json.dumps(missing[:2]))
    if r["usb"]["removal_not_noticed"] or r["pcscd"]["not_noticed"] or r["nfc"]["removal_not_noticed"]:
        out.append(f"removals not noticed: {r['usb']['removal_not_noticed']} unplugs, "
                   f"{r['nfc']['removal_not_noticed']} stops of the served key, "
                   f"{r['pcscd']['not_noticed']} pcscd kills")
    if r["usb"]["plugs"] < 3 or r["pcscd"]["restarts"] < 1 or r["nfc"]["starts"] < 2 or r["nfc"]["stops"] < 1:
        out.append(f"not enough churn: {r['usb']['plugs']} plug-ins, {r['pcscd']['restarts']} pcscd restarts, "
                   f"served key {r['nfc']['starts']} starts, {r['nfc']['stops']} stops")
    for side, f in r["cli"].items():
        if f["wrong"]:
            out.append(f"{side}: {len(f['wrong'])} wrong codes: {f['wrong'][:3]}")
        if f["failures"]:
            out.append(f"{side}: {len(f['failures'])} failures with the key present: {f['failures'][:3]}")
        if f["runs"] - f["key_away"] - len(f["failures"]) - f.get("busy", 0) - f.get("selection_taken", 0) < 1:
            out.append(f"{side}: no run succeeded")
    for name, tui in (("the first TUI", r["tui"]), ("the second TUI", second["tui"])):
        start, end = tui["start"], tui["end"]
        if start is None or end is None:
            out.append(f"{name}: no resource figures (the run ended early)")
        else:
            if end["rss_kib"] - start["rss_kib"] >= RSS_GROWTH_LIMIT_KIB and not r.get("sanitized"):
                out.append(f"{name}: RSS grew {end['rss_kib'] - start['rss_kib']} KiB after warm-up")
            if end["fds"] != start["fds"]:
                out.append(f"{name}: open descriptors {start['fds']} at the start, {end['fds']} at the end: "
                           f"{start.get('fd_targets')} -> {end.get('fd_targets')}")
            # The pool's idle workers come and go (5 or 6 threads at rest): a leak is more threads, not fewer.
            if end["threads"] > start["threads"]:
                out.append(f"{name}: threads {start['threads']} at the start, {end['threads']} at the end: "
                           f"{start.get('thread_names')} -> {end.get('thread_names')}")
        if tui["exited"]:
            out.append(f"{name} exited")
        if tui.get("stderr"):
            out.append(f"{name} wrote to stderr:\n{tui['stderr'][-3000:]}")
    return out


def over_target(r):
    """How many arrivals and period boundaries (both TUIs) took longer than TARGET: a figure, not a criterion."""
    target = r.get("target", TARGET)
    late = [x for _, xs in _arrivals(r) for x in xs]
    b = r["boundaries"]["latencies"] + r["second"]["boundaries"]["latencies"]
    return (f"{sum(x > target for x in late)} of {len(late)} arrivals and {sum(x > target for x in b)} of {len(b)} "
            f"period boundaries took over {target:g} s (worst {_ms(late + b, 'worst')})")


def table(r):
    """The figures, one per line."""
    if r.get("errors") and r.get("tui", {}).get("start") is None and "refreshes" not in r:
        return "soak: no figures\n" + "\n".join(r["errors"])
    b, usb, nfc, p, tui = r["boundaries"], r["usb"], r["nfc"], r["pcscd"], r["tui"]
    start, end, peak = tui["start"] or {}, tui["end"] or {}, tui["peak"]
    second = r["second"]
    b2, tui2 = second["boundaries"], second["tui"]
    start2, end2, peak2 = tui2["start"] or {}, tui2["end"] or {}, tui2["peak"]

    def res(s, k, unit=""):
        return f"{s[k]}{unit}" if k in s else "-"
    reconnects = len(usb["arrivals"]) + len(nfc["arrivals"]) + len(nfc["switches"]) + len(p["recovered"])
    rows = [
        ("duration", f"{r['minutes']:g} min (seed {r['seed']})"
                     + (f", {r['load']} busy loops beside it" if r.get("load") else "")),
        ("refreshes", f"{r['refreshes']}"),
        ("codes checked", f"{r['codes_checked']}"),
        ("wrong codes", f"{len(r['wrong_codes'])}"),
        ("period boundaries", f"{b['judged']} judged, {len(b['missed'])} missed, new code on screen after "
                              f"{_ms(b['latencies'], 'median')} (median), {_ms(b['latencies'], 'worst')} (worst); "
                              f"{b['not_judged']} fell while the key shown changed"),
        ("reconnects", f"{reconnects}: the TUI showing a key's codes again"),
        ("  over the target", over_target(r)),
        ("  USB key plugged in", f"{usb['plugs']} times, codes on screen after {_ms(usb['arrivals'], 'median')} "
                                 f"(median), {_ms(usb['arrivals'], 'worst')} (worst), {len(usb['not_shown'])} never; "
                                 f"pulled out {usb['unplugs']} times, gone from screen after "
                                 f"{_ms(usb['removal_noticed'], 'worst')} (worst)"),
        ("  served key", f"{nfc['starts']} starts, codes on screen after {_ms(nfc['arrivals'], 'median')} (median), "
                         f"{_ms(nfc['arrivals'], 'worst')} (worst) in {len(nfc['arrivals'])} with the USB key out; "
                         f"{nfc['stops']} stops; shown instead of the USB key pulled out after "
                         f"{_ms(nfc['switches'], 'median')} (median), {_ms(nfc['switches'], 'worst')} (worst) in "
                         f"{len(nfc['switches'])}"),
        ("  pcscd restarts", f"{p['restarts']} ({p['sigterm']} SIGTERM, {p['sigkill']} SIGKILL); USB key's codes "
                             f"gone after {_ms(p['noticed'], 'worst')} (worst), back after "
                             f"{_ms(p['recovered'], 'median')} (median), {_ms(p['recovered'], 'worst')} (worst) "
                             f"from pcscd listening"),
        ("ykterm oath code", f"{r['cli']['ykterm']['runs']} runs, {r['cli']['ykterm']['codes']} codes checked, "
                             f"{len(r['cli']['ykterm']['wrong'])} wrong, {len(r['cli']['ykterm']['failures'])} "
                             f"failures, {r['cli']['ykterm']['key_away']} runs met the key out or pcscd down"),
        ("ykman oath accounts code", f"{r['cli']['ykman']['runs']} runs, {r['cli']['ykman']['codes']} codes "
                                     f"checked, {len(r['cli']['ykman']['wrong'])} wrong, "
                                     f"{len(r['cli']['ykman']['failures'])} failures, "
                                     f"{r['cli']['ykman']['key_away']} runs met the key out or pcscd down, "
                                     f"{r['cli']['ykman']['busy']} found the key busy, "
                                     f"{r['cli']['ykman'].get('selection_taken', 0)} had their selection changed "
                                     f"under a shared connection"),
        ("TUI RSS", f"{res(start, 'rss_kib', ' KiB')} after warm-up, {res(end, 'rss_kib', ' KiB')} at the end "
                    f"(peak {res(peak, 'rss_kib', ' KiB')})"),
        ("TUI open descriptors", f"{res(start, 'fds')} after warm-up, {res(end, 'fds')} at the end "
                                 f"(peak {res(peak, 'fds')})"),
        ("TUI threads", f"{res(start, 'threads')} after warm-up, {res(end, 'threads')} at the end "
                        f"(peak {res(peak, 'threads')})"),
        ("TUI stderr", f"{len(tui.get('stderr', ''))} bytes"),
        ("second TUI", "moving between the tabs: " + ", ".join(f"{k} {v}" for k, v in second["tab_visits"].items())
                       + " visits"),
        ("  refreshes", f"{second['refreshes']}, {second['codes_checked']} codes checked, "
                        f"{len(second['wrong_codes'])} wrong"),
        ("  period boundaries", f"{b2['judged']} judged, {len(b2['missed'])} missed, new code on screen after "
                                f"{_ms(b2['latencies'], 'median')} (median), {_ms(b2['latencies'], 'worst')} "
                                f"(worst); {b2['not_judged']} not judged (another tab, or the key changed)"),
        ("  arrivals", f"{len(second['arrivals'])} judged on the OATH tab, codes on screen after "
                       f"{_ms(second['arrivals'], 'median')} (median), {_ms(second['arrivals'], 'worst')} (worst), "
                       f"{len(second['not_shown'])} never; removals {len(second['removal_noticed'])} judged, gone "
                       f"after {_ms(second['removal_noticed'], 'worst')} (worst), "
                       f"{second['removal_not_noticed']} not noticed; {second['not_judged']} on another tab"),
        ("  RSS", f"{res(start2, 'rss_kib', ' KiB')} after warm-up, {res(end2, 'rss_kib', ' KiB')} at the end "
                  f"(peak {res(peak2, 'rss_kib', ' KiB')})"),
        ("  open descriptors", f"{res(start2, 'fds')} after warm-up, {res(end2, 'fds')} at the end "
                               f"(peak {res(peak2, 'fds')})"),
        ("  threads", f"{res(start2, 'threads')} after warm-up, {res(end2, 'threads')} at the end "
                      f"(peak {res(peak2, 'threads')})"),
        ("  stderr", f"{len(tui2.get('stderr', ''))} bytes"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def main():
    parser = argparse.ArgumentParser(description="The TUI on churning virtual keys (see soak.py's description).")
    parser.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES", "30")))
    parser.add_argument("--seed", type=int)
    parser.add_argument("--load", action="store_true", help="a busy loop per core beside the soak (CPU load)")
    parser.add_argument("--sanitized", action="store_true",
                        help="ykterm is a sanitizer build: a 6 s window, RSS growth not judged")
    parser.add_argument("--latency-limit", type=float, metavar="SECONDS",
                        help="fail when a key's codes took longer than this to show after it arrived (by default "
                             "a figure: how many took over 1 s)")
    parser.add_argument("--json", help="write the figures as JSON to this file")
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.inside:
        inside(a.inside, a.minutes, a.seed, a.sanitized)
        return 0
    reason = unavailable()
    if reason:
        print(f"soak: cannot run here: {reason}", file=sys.stderr)
        return 2
    # What ykterm, ykman and the TUI get does not depend on the shell this was started from (the variables
    # ykterm reads cleared or fixed, a private HOME), as under pytest (conftest.py).
    home = isolate_environ()
    try:
        r = run(a.minutes, a.seed, progress=sys.stderr, with_sanitizer=a.sanitized, load=a.load)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=1))
    print(table(r))
    failed = failures(r, a.latency_limit)
    print("soak: " + ("passed" if not failed else "FAILED\n  " + "\n  ".join(failed)))
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
