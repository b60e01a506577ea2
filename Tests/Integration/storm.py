"""Plug-in storm (issue 35): the TUI on a USB virtual key pulled out and plugged in every 20 to 200 ms, on each tab.

    python storm.py [--plugs N] [--minutes M] [--load] [--seed S] [--json FILE] [--workdir DIR] [--stacks]
    (as root; `make storm STORM_PLUGS=N STORM_MINUTES=M STORM_ARGS=...`)

Everything runs inside one `ykterm virtual-key serve --usb -- python storm.py --inside ...`: the USB key (serial
34000001, three TOTP accounts with random secrets added at the start) and its namespace's pcscd are serve's; this
script is its COMMAND. In there:
  - the TUI (`ykterm`, in tmux, 100x30) runs with its standard error redirected to a file, stderr.txt in the run's
    work directory (its working directory too): a fatal signal's report ("ykterm: fatal signal SIGABRT (6) in
    thread N (name)" and whatever was written to standard error before it) goes there and is not lost with the
    alternate screen. The pane's shell line ends with `echo EXITED=$?`, so an exit shows on screen with its
    status (134: SIGABRT). ykterm never leaves a core file (it makes itself not dumpable: a core could hold a
    secret), and under gdb from its start the storm runs too slowly to meet the crash; with --stacks the TUI runs
    with a small preloaded library (compiled with cc) whose raise() stops the process when the TUI's fatal-signal
    handler passes the signal on, and gdb then attaches and writes every thread's stack to stacks.txt;
  - the tabs are switched in turn (Escape, then 1 to 5; a few seconds on each, cycling), and on some tabs a key
    is pressed every second or so while there: the APDU tab sends `select oath`, the FIDO2 and PIV tabs reload;
  - `ykterm virtual-key usb unplug` and `plug` alternate with pauses of 20 to 200 ms between them (random, from
    the seed), until N plug-ins are done or M minutes have passed (each command returns once pcscd has seen the
    card leave or arrive, so a cycle takes longer than its two pauses);
  - the TUI's process is checked by PID, and its screen read, every 0.25 s: any exit stops the storm at once.
At the end the key is left plugged in and the TUI is switched to the OATH tab: its three accounts and their
right codes (checked against pyotp) must be on screen within a few seconds. The TUI's RSS, descriptors and
threads are taken after its first codes and again at the end (figures, not criteria); then q must end it with
status 0 (under AddressSanitizer, that exit is when leaks are reported).

Outside the namespace, --load starts CPU load: one busy loop per core (`--load-procs`), at niceness 0 as the
TUI and pcscd have (`--load-nice`), stopped by PID at the end. The script prints one JSON object (inside) and,
outside, the figures: plug-ins (in all and per tab), the commands' durations, the duration, exits, the bytes on
stderr and the final check; on a failure, stderr's contents. test_storm.py runs it in `make test` (a CI size);
`failures()` is the pass criteria. Every process it starts is stopped by its PID; the work directory is a
temporary one removed at the end, unless --workdir names one to keep.
"""

import argparse
import errno
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
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
from harness import (YKTERM, descendants, isolate_environ, stop_pid, stop_tree,  # noqa: E402
                     usb_unavailable_reason)

SERIAL = 34000001
READER = "Yubico YubiKey OTP+FIDO+CCID"
# Pause between one plug command and the next, in seconds.
GAP = (0.02, 0.2)
TAB_SECONDS = 4.0
# The final check: the OATH tab's accounts and right codes on screen this soon after switching to it.
FINAL_DEADLINE = 5.0
# A code still on screen this long after its period ended is not wrong yet (as in soak.py).
LAG = 3.0
WATCH_EVERY = 0.25
# Lines on the TUI's standard error known to be harmless (none so far): regular expressions.
HARMLESS_STDERR = []

# --stacks: ykterm makes itself not dumpable and sets RLIMIT_CORE to 0 at its start (SecretMemory.protectProcess:
# a core could hold a PIN or an OATH key), so there is never a core file, and the TUI under gdb from its start
# is too slow (every thread it starts stops for gdb) to meet a crash the storm finds in minutes. Instead the TUI
# runs with this library preloaded: its fatal-signal handler restores the terminal, reports, puts the default
# action back and calls raise(); this raise() first stops the whole process (SIGSTOP), with every thread where
# it was and the faulting one inside the handler, and the storm attaches gdb (root may trace a process that is
# not dumpable) and writes every thread's stack to stacks.txt before letting the signal take its course.
STOP_ON_CRASH_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

int raise(int sig) {
    static int (*real)(int);
    if (sig == SIGSEGV || sig == SIGABRT || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP) {
        static const char note[] = "storm: the process stops for a debugger before the fatal signal\n";
        (void)!write(2, note, sizeof note - 1);
        kill(getpid(), SIGSTOP);
    }
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "raise");
    return real(sig);
}
"""
GDB_ATTACH = ["-batch", "-nx", "-iex", "set complaints 0", "-ex", "set pagination off",
              "-ex", "set print thread-events off", "-ex", "info threads", "-ex", "thread apply all bt",
              "-ex", "detach"]

# Each tab: its key, its name, what shows it is on screen (key present or not), and what is pressed on it now and
# then (None: nothing).
TABS = [
    ("1", "OATH", r"Enter/c copy|Storm\s+totp", None),
    ("2", "OTP", r"chal-resp", None),
    ("3", "FIDO2", r"FIDO2 authenticator|s set PIN", "r"),
    ("4", "APDU", r"APDU console", "select oath"),
    ("5", "PIV", r"PIV application|certificate · v verify", "r"),
]


class Account:
    def __init__(self, name, period=30, digits=6, algorithm="SHA1"):
        self.issuer, self.name = "Storm", name
        self.period, self.digits, self.algorithm = period, digits, algorithm
        self.secret = pyotp.random_base32(32)

    @property
    def id(self):
        return f"{self.issuer}:{self.name}"

    def code(self, t):
        digest = {"SHA1": hashlib.sha1, "SHA256": hashlib.sha256}[self.algorithm]
        return pyotp.TOTP(self.secret, digits=self.digits, digest=digest, interval=self.period).at(int(t))

    def valid(self, code, start, end):
        return code in (self.code(start - LAG), self.code(end))


ROW = re.compile(r"Storm\s+(\S+)(?:\s+(\d{3,4}) (\d{3,4})(?=\s|$))?")


def rows(text):
    """The accounts on an OATH screen and their codes (None while being read)."""
    found = {}
    for line in text.splitlines():
        m = ROW.search(line)
        if m:
            found[f"Storm:{m.group(1)}"] = m.group(2) + m.group(3) if m.group(2) else None
    return found


def run_quiet(argv, timeout=60, input=None):
    """Runs `argv` and returns its CompletedProcess. ykterm's binary may be replaced by a build under way (a
    moment missing, or busy being written): it is tried again for up to two minutes."""
    deadline = time.monotonic() + 120
    while True:
        try:
            return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                                  input=input, stdin=subprocess.DEVNULL if input is None else None)
        except OSError as e:
            if e.errno not in (errno.ETXTBSY, errno.ENOENT) or time.monotonic() > deadline:
                raise
            time.sleep(1)


def process_state(pid):
    """The state letter of `pid` (R, S, T for stopped, Z...), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def process_running(pid):
    return process_state(pid) not in (None, "Z")


def resources(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    return {"rss_kib": int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1)),
            "threads": int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1)),
            "fds": len(os.listdir(f"/proc/{pid}/fd"))}


class Storm:
    """Everything inside the namespace (see the module's description)."""

    def __init__(self, workdir, plugs, seconds, seed, tab_seconds, stacks):
        self.dir = Path(workdir)
        self.plugs_wanted, self.seconds = plugs, seconds
        self.rng = random.Random(seed)
        self.tab_seconds = tab_seconds
        self.stacks = stacks
        self.accounts = [Account("totp-30"), Account("totp-60", period=60),
                         Account("sha256-8", digits=8, algorithm="SHA256")]
        self.stop = threading.Event()
        self.tab = TABS[0]
        self.tab_lock = threading.Lock()     # the tmux keys of a tab switch and of a tab's action don't mix
        self.tui = None
        self.tui_pid = None
        self.plugged = True
        self.began = time.monotonic()
        self.seen_tab = True
        self.r = {
            "seed": seed, "plugs": 0, "unplugs": 0, "per_tab": {name: 0 for _, name, _, _ in TABS},
            "tab_visits": {name: 0 for _, name, _, _ in TABS}, "tab_not_shown": {name: 0 for _, name, _, _ in TABS},
            "actions": 0, "seconds": 0.0, "gap_ms": [int(GAP[0] * 1000), int(GAP[1] * 1000)],
            "command_ms": {"plug": [], "unplug": []}, "command_failures": [],
            "exits": [], "stderr": "", "stderr_bytes": 0, "stacks": None,
            "final": None, "quit_status": None, "errors": [],
            # The TUI after its first codes, every 30 s (plug-ins, RSS KiB, descriptors, threads), at the end.
            "resources": {"start": None, "end": None, "series": []},
        }

    def progress(self, text):
        print(f"storm {time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)

    # --- set-up ---------------------------------------------------------------------------------------

    def wait_reader(self, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = run_quiet([YKTERM, "list", "--readers"], timeout=30)
            if re.search(rf"^{re.escape(READER)}.*: key present", r.stdout, re.M):
                return
            time.sleep(0.1)
        raise RuntimeError(f"{READER} shows no key after {timeout} s")

    def add_accounts(self):
        for a in self.accounts:
            r = run_quiet([YKTERM, "oath", "add", "--reader", READER, "--issuer", a.issuer, "--name", a.name,
                           "--period", a.period, "--digits", a.digits, "--algorithm", a.algorithm,
                           "--secret", "-"], input=a.secret + "\n")
            if r.returncode != 0:
                raise RuntimeError(f"oath add {a.id}: {r.stderr.strip()}")

    def start_tui(self):
        from test_tui import Tmux
        env = dict(os.environ, XDG_CONFIG_HOME=str(self.dir / "config"))
        command = f"cd {shlex.quote(str(self.dir))} && "
        if self.stacks:
            (self.dir / "stop_on_crash.c").write_text(STOP_ON_CRASH_C)
            cc = run_quiet(["cc", "-shared", "-fPIC", "-O2", "-o", self.dir / "stop_on_crash.so",
                            self.dir / "stop_on_crash.c", "-ldl"])
            if cc.returncode != 0:
                raise RuntimeError("cc stop_on_crash.c: " + cc.stderr)
            command += f"LD_PRELOAD={shlex.quote(str(self.dir / 'stop_on_crash.so'))} "
        command += f"{shlex.quote(str(YKTERM))} 2>stderr.txt"
        self.tui = Tmux(command, env)
        # For the outside, which stops the server and removes its socket's directory if this script cannot.
        (self.dir / "tmux-dir").write_text(self.tui.dir)
        (self.dir / "tmux-server.pid").write_text(str(self.tui.server_pid))
        self.tui_pid = self.find_tui_pid()

    def find_tui_pid(self, timeout=10):
        exe = os.path.realpath(YKTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in descendants(self.tui.server_pid):
                try:
                    if os.readlink(f"/proc/{p}/exe") == exe:
                        return p
                except OSError:
                    pass
            time.sleep(0.05)
        raise RuntimeError("the TUI's process was not found under tmux")

    # --- the TUI --------------------------------------------------------------------------------------

    def codes_right(self, timeout):
        """Waits up to `timeout` s for the OATH tab to show every account with a right code; returns (seconds
        taken or None, the last screen, wrong codes seen)."""
        began = time.monotonic()
        wrong, text = [], ""
        ids = {a.id for a in self.accounts}
        by_id = {a.id: a for a in self.accounts}
        while time.monotonic() - began < timeout:
            start = time.time()
            text = self.tui.screen()
            end = time.time()
            shown = rows(text)
            if set(shown) == ids and all(shown.values()):
                bad = [(k, c) for k, c in shown.items() if not by_id[k].valid(c, start, end)]
                if not bad:
                    return time.monotonic() - began, text, wrong
                wrong += [{"account": k, "shown": c, "expected": by_id[k].code(end)} for k, c in bad
                          if {"account": k, "shown": c, "expected": by_id[k].code(end)} not in wrong]
            time.sleep(0.1)
        return None, text, wrong

    def exited(self, text=None):
        """An exit of the TUI, recorded once: from the screen's EXITED= line, or the process gone."""
        if self.r["exits"]:
            return True
        if text is None:
            try:
                text = self.tui.screen()
            except subprocess.CalledProcessError:
                text = ""
        m = re.search(r"EXITED=(\d+)", text)
        if m is None and self.stacks and process_state(self.tui_pid) == "T":
            self.take_stacks()
            text = self.tui.screen()
            m = re.search(r"EXITED=(\d+)", text)
        if m is None and process_running(self.tui_pid):
            return False
        if m is None:
            # Gone, and the shell has not printed its line yet: a moment for it.
            time.sleep(0.5)
            text = self.tui.screen()
            m = re.search(r"EXITED=(\d+)", text)
        self.r["exits"].append({"after_seconds": round(time.monotonic() - self.began, 1), "tab": self.tab[1],
                                "plugs_before": self.r["plugs"], "plugged": self.plugged,
                                "status": int(m.group(1)) if m else None, "screen": text})
        self.progress(f"the TUI exited (status {m.group(1) if m else '?'}) on the {self.tab[1]} tab after "
                      f"{self.r['plugs']} plug-ins")
        self.stop.set()
        return True

    def take_stacks(self):
        """Every thread's stack of the TUI, stopped by stop_on_crash.so, to stacks.txt; then the signal goes on."""
        self.progress(f"the TUI stopped before a fatal signal: gdb attaches to {self.tui_pid}")
        try:
            r = run_quiet(["gdb", *GDB_ATTACH, "-p", self.tui_pid], timeout=300)
            text = r.stdout + "".join(line for line in r.stderr.splitlines(keepends=True)
                                      if not line.startswith("During symbol reading"))
        except subprocess.TimeoutExpired:
            text = "gdb did not finish in 300 s"
        (self.dir / "stacks.txt").write_text(text)
        self.r["stacks"] = text[-60000:]
        os.kill(self.tui_pid, signal.SIGCONT)
        deadline = time.monotonic() + 10
        while process_running(self.tui_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)

    def watch(self):
        while not self.stop.is_set():
            try:
                text = self.tui.screen()
            except subprocess.CalledProcessError as e:
                self.r["errors"].append(f"capture-pane failed: {e.stderr}")
                self.stop.set()
                return
            if self.exited(text):
                return
            with self.tab_lock:
                tab = self.tab
                if re.search(tab[2], text):
                    self.seen_tab = True
            self.stop.wait(WATCH_EVERY)

    def switch(self, tab):
        """Escape (the APDU tab's input lets go of the digits), a moment (else Escape and the digit are read as
        Alt+digit), the tab's digit."""
        with self.tab_lock:
            self.tui.send("Escape")
        time.sleep(0.3)
        with self.tab_lock:
            self.tui.send(tab[0])
            if self.tab is not tab:
                previous, self.tab = self.tab, tab
                if not self.seen_tab:
                    self.r["tab_not_shown"][previous[1]] += 1
                self.seen_tab = False
                self.r["tab_visits"][tab[1]] += 1

    def tabs(self):
        """The tabs in turn, `tab_seconds` on each, with the tab's action now and then."""
        i = 0
        while not self.stop.is_set():
            tab = TABS[i % len(TABS)]
            i += 1
            self.switch(tab)
            until = time.monotonic() + self.tab_seconds
            while not self.stop.is_set() and time.monotonic() < until:
                self.stop.wait(self.rng.uniform(0.7, 1.3))
                if tab[3] is None or self.stop.is_set():
                    continue
                with self.tab_lock:
                    if len(tab[3]) == 1:
                        self.tui.send(tab[3])
                    else:
                        self.tui.type(tab[3])
                        self.tui.send("Enter")
                self.r["actions"] += 1

    # --- the storm ------------------------------------------------------------------------------------

    def usb(self, action):
        started = time.monotonic()
        try:
            r = run_quiet([YKTERM, "virtual-key", "usb", action], timeout=60)
            rc, err = r.returncode, r.stderr.strip()
        except subprocess.TimeoutExpired:
            rc, err = -1, "no answer in 60 s"
        self.r["command_ms"][action].append(round((time.monotonic() - started) * 1000))
        if rc != 0:
            self.r["command_failures"].append({"action": action, "exit": rc, "stderr": err[-500:]})
            if len(self.r["command_failures"]) >= 20:
                self.r["errors"].append("20 usb commands failed: " + json.dumps(self.r["command_failures"][:3]))
                self.stop.set()
            return False
        self.plugged = action == "plug"
        if action == "plug":
            self.r["plugs"] += 1
            self.r["per_tab"][self.tab[1]] += 1
        else:
            self.r["unplugs"] += 1
        return True

    def storm(self):
        end = self.began + self.seconds if self.seconds else None
        last_report = time.monotonic()
        while not self.stop.is_set():
            if self.plugs_wanted is not None and self.r["plugs"] >= self.plugs_wanted:
                break
            if end is not None and time.monotonic() >= end:
                break
            self.usb("unplug" if self.plugged else "plug")
            if time.monotonic() - last_report >= 30:
                last_report = time.monotonic()
                sample = resources(self.tui_pid) if process_running(self.tui_pid) else {}
                if sample:
                    self.r["resources"]["series"].append([self.r["plugs"], sample["rss_kib"], sample["fds"],
                                                          sample["threads"]])
                self.progress(f"{self.r['plugs']} plug-ins ({self.r['per_tab']}), "
                              f"{time.monotonic() - self.began:.0f} s; TUI {sample}")
            self.stop.wait(self.rng.uniform(*GAP))

    # --- the whole run --------------------------------------------------------------------------------

    def run(self):
        self.wait_reader()
        self.add_accounts()
        self.start_tui()
        took, screen, wrong = self.codes_right(timeout=20)
        if took is None:
            raise RuntimeError("the accounts' codes did not show at the start:\n" + screen)
        self.r["resources"]["start"] = resources(self.tui_pid)
        self.began = time.monotonic()
        self.progress(f"storm: {self.plugs_wanted or '-'} plug-ins, {self.seconds or '-'} s, tabs "
                      f"{self.tab_seconds:g} s each (pid {self.tui_pid})")
        threads = [threading.Thread(target=f, name=f.__name__) for f in (self.watch, self.tabs)]
        for t in threads:
            t.start()
        try:
            self.storm()
        finally:
            stormed = time.monotonic() - self.began
            self.stop.set()
            for t in threads:
                t.join(timeout=30)
        self.r["seconds"] = round(stormed, 1)
        if not self.exited():
            self.final()
        return self.r

    def final(self):
        """The key left plugged in, the OATH tab: its accounts and right codes within FINAL_DEADLINE."""
        if not self.plugged:
            self.usb("plug")
        self.switch(TABS[0])
        took, screen, wrong = self.codes_right(timeout=FINAL_DEADLINE)
        self.r["final"] = {"seconds": None if took is None else round(took, 2), "wrong": wrong,
                           "screen": screen if took is None or wrong else ""}
        if self.exited():
            return
        # At rest (the worker threads a burst of work starts end after 5 s idle), for the figures.
        time.sleep(7)
        if process_running(self.tui_pid):
            self.r["resources"]["end"] = resources(self.tui_pid)
        # Then q, as a person leaves it: the TUI must end by itself with status 0 (with AddressSanitizer, this
        # exit is when LeakSanitizer looks for leaks).
        self.tui.send("q")
        deadline = time.monotonic() + 30
        status = None
        while time.monotonic() < deadline and status is None:
            m = re.search(r"EXITED=(\d+)", self.tui.screen())
            status = int(m.group(1)) if m else None
            time.sleep(0.2)
        self.r["quit_status"] = status

    def collect(self):
        path = self.dir / "stderr.txt"
        if path.exists():
            data = path.read_bytes()
            self.r["stderr_bytes"] = len(data)
            self.r["stderr"] = data.decode(errors="replace")[-20000:]

    def cleanup(self):
        self.stop.set()
        if self.tui is not None:
            self.tui.close()
        # serve --usb waits for nothing it need not: the key is left as it is.


def inside(workdir, plugs, minutes, seed, tab_seconds, stacks):
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    storm = Storm(workdir, plugs, minutes * 60 if minutes else None, seed, tab_seconds, stacks)
    try:
        result = storm.run()
    except Exception as e:  # noqa: BLE001 (reported in the result, which the outside fails on)
        import traceback
        storm.r["errors"].append("".join(traceback.format_exception(e))[-3000:])
        result = storm.r
    finally:
        storm.cleanup()
        storm.collect()
    print(json.dumps(result))


# --- outside the namespace ----------------------------------------------------------------------------

def unavailable():
    reason = usb_unavailable_reason()
    if reason:
        return reason
    if shutil.which("tmux") is None:
        return "tmux is missing: run `make deps`"
    return None


def start_load(procs, nice):
    """`procs` busy loops at niceness `nice`, as CPU load."""
    def niced():
        os.nice(nice) if nice > 0 else None
        if nice < 0:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=niced,
                             stdin=subprocess.DEVNULL) for _ in range(procs)]


def run(plugs=None, minutes=None, seed=None, load=False, load_procs=None, load_nice=0, tab_seconds=TAB_SECONDS,
        workdir=None, stacks=False, progress=None):
    """Runs the storm in `virtual-key serve --usb` (until `plugs` plug-ins or `minutes`, whichever comes first;
    300 plug-ins when neither is given) and returns its figures. Progress lines go to `progress` (a file), or
    into the figures' "log" when None."""
    if plugs is None and minutes is None:
        plugs = 300
    seed = random.randrange(1 << 30) if seed is None else seed
    keep = workdir is not None
    if keep:
        workdir = Path(workdir).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        if any(workdir.iterdir()):
            raise RuntimeError(f"{workdir} is not empty: the key's state, stderr.txt and stacks.txt would mix")
    else:
        workdir = Path(tempfile.mkdtemp(prefix="ykterm-storm-"))
    log = progress if progress is not None else open(workdir / "storm.log", "w+")
    loaders = []
    try:
        if load:
            loaders = start_load(load_procs or os.cpu_count() or 2, load_nice)
        argv = [str(YKTERM), "virtual-key", "serve", "--usb", "--serial", str(SERIAL),
                "--state", str(workdir / "usb-key.json"), "--",
                sys.executable, str(Path(__file__).resolve()), "--inside", str(workdir), "--seed", str(seed),
                "--tab-seconds", str(tab_seconds)]
        if plugs is not None:
            argv += ["--plugs", str(plugs)]
        if minutes is not None:
            argv += ["--minutes", str(minutes)]
        if stacks:
            argv += ["--stacks"]
        env = dict(os.environ, YKTERM_BIN=str(YKTERM))
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                                env=env, cwd=str(workdir))
        budget = (minutes * 60 if minutes else 0) + (plugs * 3 if plugs and not minutes else 0) + 300
        try:
            out, _ = proc.communicate(timeout=budget)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                out, _ = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                server = workdir / "tmux-server.pid"
                if server.exists():
                    stop_tree(int(server.read_text()))
                    shutil.rmtree((workdir / "tmux-dir").read_text(), ignore_errors=True)
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
        result["load"] = {"procs": len(loaders), "nice": load_nice} if load else None
        result["workdir"] = str(workdir) if keep else None
        # A ykterm built with a sanitizer (make storm STORM_SANITIZER=...): its reports, written to files.
        result["sanitizer_reports"] = sanitizers.reports()
        return result
    finally:
        for p in loaders:
            stop_pid(p)
        if progress is None:
            log.close()
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def unexplained_stderr(r):
    """The lines on the TUI's standard error that HARMLESS_STDERR does not explain."""
    return [line for line in r.get("stderr", "").splitlines()
            if line.strip() and not any(re.search(p, line) for p in HARMLESS_STDERR)]


def failures(r, plugs_wanted=None):
    """The pass criteria, as a list of what failed (empty: passed)."""
    out = []
    if r.get("errors"):
        out += ["errors: " + e[-1500:] for e in r["errors"]]
    for e in r.get("exits", []):
        out.append(f"the TUI exited with status {e['status']} on the {e['tab']} tab after {e['after_seconds']} s "
                   f"and {e['plugs_before']} plug-ins (key {'in' if e['plugged'] else 'out'}); screen:\n"
                   + e["screen"].rstrip()[-1500:])
    final = r.get("final")
    if not r.get("exits") and not r.get("errors"):
        if final is None:
            out.append("no final check")
        elif final["seconds"] is None:
            out.append(f"the OATH tab did not show the accounts' right codes within {FINAL_DEADLINE:g} s of the "
                       f"key left plugged in:\n{final['screen']}")
        if final and final["wrong"]:
            out.append(f"wrong codes at the end: {final['wrong']}")
        if r.get("quit_status") != 0:
            out.append(f"the TUI did not end with status 0 on q: {r.get('quit_status')}")
    if plugs_wanted is not None and r.get("plugs", 0) < plugs_wanted and not out:
        out.append(f"{r.get('plugs', 0)} plug-ins, {plugs_wanted} wanted")
    if r.get("tab_visits") and min(r["tab_visits"].values()) < 1 and not out:
        out.append(f"not every tab was visited: {r['tab_visits']}")
    unexplained = unexplained_stderr(r)
    if unexplained:
        out.append(f"the TUI's stderr ({r['stderr_bytes']} bytes):\n" + "\n".join(unexplained)[-4000:])
    if r.get("stacks"):
        out.append("the TUI's threads when it stopped before the fatal signal (stacks.txt):\n" + r["stacks"][-8000:])
    found = r.get("sanitizer_reports") or []
    if found:
        out.append(f"{len(found)} sanitizer reports:\n  " + "\n  ".join(sanitizers.summary(found))
                   + "\nthe first:\n" + found[0][1][-6000:])
    return out


def _ms(values, how):
    if not values:
        return "-"
    return f"{(max(values) if how == 'worst' else statistics.median(values)):.0f} ms"


def table(r):
    if "plugs" not in r:
        return "storm: no figures\n" + "\n".join(r.get("errors", []))
    res = r["resources"]
    load = r.get("load")
    rows = [
        ("plug-ins", f"{r['plugs']} in {r['seconds']:g} s (seed {r['seed']}), {r['unplugs']} pulls; pauses "
                     f"{r['gap_ms'][0]}-{r['gap_ms'][1]} ms"),
        ("per tab", ", ".join(f"{k} {v}" for k, v in r["per_tab"].items())),
        ("tab visits", ", ".join(f"{k} {v}" for k, v in r["tab_visits"].items())
         + f"; {r['actions']} key presses on the tabs"),
        ("load", f"{load['procs']} busy loops at niceness {load['nice']}" if load else "none"),
        ("usb plug", f"{_ms(r['command_ms']['plug'], 'median')} (median), {_ms(r['command_ms']['plug'], 'worst')} "
                     f"(worst)"),
        ("usb unplug", f"{_ms(r['command_ms']['unplug'], 'median')} (median), "
                       f"{_ms(r['command_ms']['unplug'], 'worst')} (worst); "
                       f"{len(r['command_failures'])} commands failed"),
        ("exits", f"{len(r['exits'])}" + (f" (status {r['exits'][0]['status']})" if r["exits"] else "")),
        ("stderr", f"{r['stderr_bytes']} bytes"),
        ("final check", "-" if not r.get("final") else
         (f"right codes after {r['final']['seconds']:g} s" if r["final"]["seconds"] is not None else "FAILED")
         + (f", {len(r['final']['wrong'])} wrong" if r["final"]["wrong"] else "")),
        ("TUI", f"{res['start']} at the start, {res['end']} at the end; q ended it with "
                f"{r.get('quit_status')}"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def main():
    parser = argparse.ArgumentParser(description="The TUI on a USB virtual key plugged in and out every 20-200 ms "
                                                 "(see storm.py's description).")
    parser.add_argument("--plugs", type=int, help="stop after this many plug-ins")
    parser.add_argument("--minutes", type=float, help="stop after this long")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--load", action="store_true", help="CPU load: a busy loop per core")
    parser.add_argument("--load-procs", type=int, help="busy loops (default: one per core)")
    parser.add_argument("--load-nice", type=int, default=0, help="their niceness (default 0)")
    parser.add_argument("--tab-seconds", type=float, default=TAB_SECONDS)
    parser.add_argument("--workdir", help="keep the run's files (stderr.txt, stacks.txt) in this directory")
    parser.add_argument("--stacks", action="store_true",
                        help="on a fatal signal, every thread's stack of the TUI to stacks.txt (needs cc and gdb)")
    parser.add_argument("--json", help="write the figures as JSON to this file")
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.inside:
        inside(a.inside, a.plugs, a.minutes, a.seed, a.tab_seconds, a.stacks)
        return 0
    reason = unavailable()
    if reason:
        print(f"storm: cannot run here: {reason}", file=sys.stderr)
        return 2
    # What ykterm and the TUI get does not depend on the shell this was started from, as for soak.py.
    home = isolate_environ()
    try:
        r = run(a.plugs, a.minutes, a.seed, a.load, a.load_procs, a.load_nice, a.tab_seconds, a.workdir, a.stacks,
                progress=sys.stderr)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=1))
    print(table(r))
    failed = failures(r, a.plugs if not a.minutes else None)
    if failed and r.get("stderr"):
        print("the TUI's stderr:\n" + r["stderr"][-6000:])
    print("storm: " + ("passed" if not failed else "FAILED\n  " + "\n  ".join(failed)))
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
