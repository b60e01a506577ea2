"""Private pcscd + virtual key for the integration tests, and the environment every program they start gets.

pcscd 1.9 always listens on /run/pcscd/pcscd.comm, so each test session starts its own pcscd in a
private mount namespace (a tmpfs over /run) with its own reader configuration: a vpcd reader on a port
that is free for this run. Clients outside the namespace reach it through
PCSCLITE_CSOCK_NAME=/proc/<pcscd pid>/root/run/pcscd/pcscd.comm. A pcscd already running on the
machine is never touched. Every process started here is stopped by its PID.
"""

import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
YKTERM = Path(os.environ.get("YKTERM_BIN", ROOT / ".build" / "debug" / "ykterm"))
VENV_BIN = Path(sys.executable).parent
VPCD_DRIVER = "/usr/lib/pcsc/drivers/serial/libifdvpcd.so"


# --- The environment -------------------------------------------------------------------------------------
#
# What ykterm does depends on these variables, so the user's shell must not decide them for a test: they are
# cleared (or fixed, below) for every program the tests start, and a test that wants one sets it itself.
# Read by ykterm: every YKTERM_* (READER, DEVICE, CONFIG, LOG, CARD_TIMEOUT, RESOURCES; IFD_DRIVER in the
# one-slot reader driver; USB_NAMESPACE and USB_CONTROL, which `virtual-key serve --usb` sets for what runs
# inside), PCSCLITE_CSOCK_NAME, LANG, LC_ALL, LC_CTYPE, LC_MESSAGES, NO_COLOR, TERM, TMUX and STY, DISPLAY
# and WAYLAND_DISPLAY (the clipboard), SSH_CONNECTION (doctor), HOME, XDG_CONFIG_HOME, XDG_STATE_HOME, SHELL
# (serve --usb without a command), PATH (the clipboard's helper programs: kept), SYSTEMD_DEVICE_VERIFY_SYSFS
# (libudev; serve --usb sets it inside). By the libraries it links: COLUMNS, LINES and SAP_SHELL* (argument
# parser), TERMINFO*, TERMCAP, ESCDELAY, TABSIZE and NCURSES_* (ncurses), OPENSSL_CONF and OPENSSL_MODULES
# (libcrypto), other PCSCLITE_* and SYSTEMD_* (libpcsclite, libudev).
# Kept: YKTERM_BIN, the tests' own choice of binary (set to the one they run); TMPDIR and TMUX_TMPDIR (where
# temporary files go, which make test and .ci/run decide); PATH; TZ (the tests read the time as ykterm does).
ENV_CLEARED = {"PCSCLITE_CSOCK_NAME", "LANG", "LANGUAGE", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLORTERM",
               "TERM", "TMUX", "STY", "DISPLAY", "WAYLAND_DISPLAY", "HOME", "SHELL", "COLUMNS", "LINES",
               "SAP_SHELL", "SAP_SHELL_VERSION", "TERMINFO", "TERMINFO_DIRS", "TERMCAP", "ESCDELAY", "TABSIZE",
               "OPENSSL_CONF", "OPENSSL_MODULES"}
ENV_CLEARED_PREFIXES = ("YKTERM_", "LC_", "XDG_", "SSH_", "PCSCLITE_", "NCURSES_", "SYSTEMD_")
ENV_KEPT = {"YKTERM_BIN"}


def clean_environ(home, base=None, keep=()):
    """`base` (os.environ by default) without every variable ykterm or a library it links reads (ENV_CLEARED,
    ENV_CLEARED_PREFIXES), except those in `keep`, and with the fixed ones: HOME=`home` (so ~/.config and
    ~/.local/state are the test run's own; XDG_* are cleared and fall back to it), LANG=C.UTF-8,
    TERM=xterm-256color, SHELL=/bin/sh, YKTERM_BIN=the binary under test."""
    base = os.environ if base is None else base
    keep = ENV_KEPT | set(keep)
    env = {k: v for k, v in base.items()
           if k in keep or not (k in ENV_CLEARED or k.startswith(ENV_CLEARED_PREFIXES))}
    env.update(HOME=str(home), LANG="C.UTF-8", TERM="xterm-256color", SHELL="/bin/sh", YKTERM_BIN=str(YKTERM))
    return env


def isolate_environ(keep=()):
    """Makes os.environ clean_environ's, with a new private HOME (in TMPDIR), for this process and every one it
    starts; returns that HOME, which the caller removes at its end."""
    home = tempfile.mkdtemp(prefix="ykterm-home-")
    env = clean_environ(home, keep=keep)
    os.environ.clear()
    os.environ.update(env)
    return home


# --- Waiting ----------------------------------------------------------------------------------------------

def wait_until(predicate, timeout, what, interval=0.05):
    """Calls `predicate` until it returns something true, and returns that; raises AssertionError naming
    `what` when `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout} s")
        time.sleep(interval)


def process_state(pid):
    """The state letter of `pid` (R, S, D, T for stopped, Z...), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


# The numbers of read(2), poll(2) and ppoll(2), as /proc/PID/task/TID/syscall shows them.
_SYSCALLS = {"x86_64": {"read": 0, "poll": 7, "ppoll": 271},
             "aarch64": {"read": 63, "ppoll": 73}}.get(os.uname().machine)


def reads_done(pid):
    """How many read(2)s `pid` has finished (a read still waiting is not counted), or -1 when it is gone."""
    try:
        with open(f"/proc/{pid}/io") as f:
            return int(next(line for line in f if line.startswith("syscr:")).split()[1])
    except (OSError, StopIteration, ValueError):
        return -1


def _polls_input(pid, address, count, fds):
    """Whether the pollfd array at `address` in `pid` (poll's first argument) asks for input on one of `fds`."""
    try:
        with open(f"/proc/{pid}/mem", "rb") as mem:
            mem.seek(address)
            data = mem.read(8 * min(count, 64))
    except (OSError, ValueError):
        return False
    for i in range(0, len(data) - 7, 8):
        fd = int.from_bytes(data[i:i + 4], sys.byteorder, signed=True)
        events = int.from_bytes(data[i + 4:i + 6], sys.byteorder)
        if fd in fds and events & select.POLLIN:
            return True
    return False


def reading_stdin(pid):
    """True when a thread of `pid` is blocked in read(2) on its standard input, or in poll(2)/ppoll(2) waiting
    for input on it: it waits for what is typed."""
    return _waits_for_input(pid, {0})


def reading_terminal(pid):
    """reading_stdin for a program that reads its terminal through a descriptor of its own (the TUI opens
    /dev/tty): blocked reading, or polling for input on, any descriptor open on /dev/tty or on the terminal of
    its stdin."""
    try:
        terminals = {os.readlink(f"/proc/{pid}/fd/0"), "/dev/tty"}
        fds = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd") if os.readlink(f"/proc/{pid}/fd/{fd}") in terminals}
    except OSError:
        return False
    return _waits_for_input(pid, fds)


def _waits_for_input(pid, fds):
    if _SYSCALLS is None:
        raise RuntimeError(f"the system call numbers of {os.uname().machine} are not known here")
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/syscall") as f:
                fields = f.read().split()
        except OSError:
            continue
        if len(fields) < 3 or not fields[0].isdigit():
            continue
        number, first, second = int(fields[0]), int(fields[1], 16), int(fields[2], 16)
        if number == _SYSCALLS["read"] and first in fds:
            return True
        if number in (_SYSCALLS.get("poll"), _SYSCALLS["ppoll"]) and _polls_input(pid, first, second, fds):
            return True
    return False


def wait_for_input(proc, since=None, timeout=10):
    """Waits until `proc` (a Popen) is blocked reading its standard input — after more reads than `since`
    (reads_done before the previous answer was typed), so that an answer already read does not count — or
    has ended. Returns reads_done, to pass as `since` next time."""
    wait_until(lambda: proc.poll() is not None or ((since is None or reads_done(proc.pid) > since)
                                                   and reading_stdin(proc.pid)),
               timeout, f"{proc.args[0]} waiting for input")
    return reads_done(proc.pid)


def _port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port_pair():
    """A port P with P and P+1 free (vpcd's first reader listens on P, the second on P+1)."""
    for _ in range(200):
        p = random.randrange(20000, 60000, 2)
        if _port_free(p) and _port_free(p + 1):
            return p
    raise RuntimeError("no free port pair for vpcd")


def stop_pid(proc, timeout=5.0):
    """Stops a process we started: SIGTERM, then SIGKILL; always reaps it."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=timeout)


def descendants(pid):
    """The PIDs of every process below `pid` (read from /proc), children first found first."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _sessions(pids):
    """The session IDs of `pids` (a tmux pane's shell leads a session of its own)."""
    found = set()
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                found.add(int(f.read().rsplit(")", 1)[1].split()[3]))
        except (OSError, IndexError, ValueError):
            pass
    return found


def _in_sessions(sessions):
    """Running processes whose session is one of `sessions` (also those whose parent has gone)."""
    return [p for p in _all_pids() if _sessions([p]) & sessions and is_running(p)]


def _all_pids():
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def stop_tree(pid, timeout=5.0):
    """Stops a process that is not our child (a tmux server) and everything below it, including what its panes'
    shells start while it is being stopped (found by session): SIGTERM, then SIGKILL to what is left after
    `timeout`; returns when none of them runs any more."""
    pids = [pid] + descendants(pid)
    sessions = _sessions(pids[1:]) - {os.getsid(0)}
    deadline = time.monotonic() + timeout
    sig = signal.SIGTERM
    while True:
        alive = [p for p in set(pids + _in_sessions(sessions)) if is_running(p)]
        if not alive:
            return
        if time.monotonic() > deadline:
            if sig == signal.SIGKILL and time.monotonic() > deadline + timeout:
                return
            sig = signal.SIGKILL
        for p in alive:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def is_running(pid):
    """True while `pid` exists and is not a zombie."""
    return process_state(pid) not in (None, "Z")


class PrivatePCSC:
    """A pcscd of our own, with one vpcd reader configuration (two slots: P and P+1)."""

    READER0 = "Virtual PCD 00 00"
    READER1 = "Virtual PCD 00 01"

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="ykterm-pcsc-"))
        self.port = free_port_pair()
        conf = self.dir / "reader.conf.d"
        conf.mkdir()
        (conf / "vpcd").write_text(
            'FRIENDLYNAME "Virtual PCD"\n'
            f"DEVICENAME   /dev/null:0x{self.port:X}\n"
            f"LIBPATH      {VPCD_DRIVER}\n"
            f"CHANNELID    0x{self.port:X}\n"
        )
        self.proc = None
        self.log = None

    def start(self):
        script = "mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p /run/pcscd && exec pcscd -f -c \"$0\""
        unshare = ["unshare", "--mount", "--propagation", "private"]
        if os.geteuid() != 0:
            unshare.insert(1, "--map-root-user")
        self.log = open(self.dir / "pcscd.log", "ab")
        self.proc = subprocess.Popen(unshare + ["sh", "-c", script, str(self.dir / "reader.conf.d")],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        # Generous limits: each wait ends as soon as pcscd is there, and a busy machine may need them.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("pcscd exited: " + (self.dir / "pcscd.log").read_text())
            if Path(self.socket).exists():
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("pcscd did not create its socket")
        # Wait until both vpcd readers are registered.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = run_ykterm("list", "--readers", env=self.env(), check=False)
            if self.READER0 in r.stdout and self.READER1 in r.stdout:
                return self
            time.sleep(0.1)
        raise RuntimeError("pcscd did not list the vpcd readers")

    @property
    def socket(self):
        return f"/proc/{self.proc.pid}/root/run/pcscd/pcscd.comm"

    def env(self, **extra):
        """The environment (clean_environ's, which conftest gives os.environ) with this pcscd's socket."""
        e = dict(os.environ)
        e["PCSCLITE_CSOCK_NAME"] = self.socket
        e.update({k: str(v) for k, v in extra.items()})
        return e

    def stop(self):
        stop_pid(self.proc)
        if self.log:
            self.log.close()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class ServedKey:
    """`ykterm virtual-key serve` connected to one vpcd slot of a PrivatePCSC."""

    def __init__(self, pcsc, slot=0, serial=None, state=None, latency_ms=0, extra=()):
        self.pcsc = pcsc
        self.slot = slot
        self.reader = pcsc.READER0 if slot == 0 else pcsc.READER1
        self.state = state
        args = ["virtual-key", "serve", "--vpcd", f"127.0.0.1:{pcsc.port + slot}"]
        if serial is not None:
            args += ["--serial", str(serial)]
        if state is not None:
            args += ["--state", str(state)]
        if latency_ms:
            args += ["--latency", str(latency_ms)]
        self.args = args + list(extra)
        self.proc = None
        self.log_path = pcsc.dir / f"serve-{slot}-{time.monotonic_ns()}.log"

    # Every key started and not yet stopped, so a test that fails half-way leaves no process behind
    # (conftest stops them after each test).
    running = []

    def start(self, wait=True):
        self.log = open(self.log_path, "ab")
        ServedKey.running.append(self)
        self.proc = subprocess.Popen([str(YKTERM)] + self.args, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        if wait:
            self.wait_present()
        return self

    def wait_present(self, timeout=30):
        """Until the key answers, twice 0.3 s apart: a row that says it could not be read (vpcd answers "card
        reset" for a moment after a card comes or goes in another of its readers) does not count, and neither
        does a first answer that such a moment may still follow (a client's first connect then fails)."""
        deadline = time.monotonic() + timeout
        answered = 0
        while time.monotonic() < deadline:
            r = run_ykterm("list", "--json", "--reader", self.reader, env=self.pcsc.env(), check=False)
            rows = json.loads(r.stdout or "[]") if r.returncode == 0 else []
            if rows and all(not k.get("error") and k.get("version") for k in rows):
                answered += 1
                if answered == 2:
                    return
                time.sleep(0.3)
                continue
            answered = 0
            time.sleep(0.1)
        raise RuntimeError(f"virtual key not seen in {self.reader}: " + self.log_path.read_text())

    def wait_absent(self, timeout=20):
        """pcscd notices a vanished card at its next presence poll; wait for that."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = run_ykterm("list", "--readers", "--reader", self.reader, env=self.pcsc.env(), check=False)
            if r.returncode == 0 and "empty" in r.stdout:
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.reader} still shows a key after the virtual key stopped")

    def stop(self, wait=True):
        if self in ServedKey.running:
            ServedKey.running.remove(self)
        if self.proc is None:
            return
        # Stopped before without waiting (a key pulled out), it is still waited for here: the next test must
        # not find pcscd still showing it.
        if self.proc.poll() is None:
            stop_pid(self.proc)
        if not self.log.closed:
            self.log.close()
        if wait and self.pcsc.proc is not None and self.pcsc.proc.poll() is None:
            self.wait_absent()


def run_ykterm(*args, env=None, input=None, check=True, timeout=60):
    r = subprocess.run([str(YKTERM)] + [str(a) for a in args], env=env, input=input, capture_output=True,
                       text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"ykterm {' '.join(map(str, args))} exited {r.returncode}\n"
                             f"stdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def run_ykman(reader, *args, env=None, input=None, check=True, timeout=60):
    r = subprocess.run([str(VENV_BIN / "ykman"), "--reader", reader] + [str(a) for a in args], env=env,
                       input=input, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"ykman {' '.join(map(str, args))} exited {r.returncode}\n"
                             f"stdout: {r.stdout}\nstderr: {r.stderr}")
    return r


# --- The virtual key as a USB key (`virtual-key serve --usb`) -------------------------------------------

def usb_unavailable_reason():
    """Why `virtual-key serve --usb` cannot run here (it needs root and /dev/fuse), or None."""
    if os.geteuid() != 0:
        return "virtual-key serve --usb needs root"
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing (no FUSE in this kernel)"
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is missing"
    return None


def serve_usb(*args, script=None, command=None, env=None, timeout=90):
    """Runs `ykterm virtual-key serve --usb ARGS -- COMMAND` and returns the finished process.

    `script` is Python run inside the namespace with the test venv's interpreter (its source is written to
    a temporary directory that is removed afterwards); `command` is an argv list instead. Every process it
    starts is stopped by PID when the time runs out."""
    workdir = Path(tempfile.mkdtemp(prefix="ykterm-usb-test-"))
    try:
        if script is not None:
            path = workdir / "inside.py"
            path.write_text(script)
            command = [sys.executable, str(path)]
        e = dict(os.environ if env is None else env)
        e["YKTERM_BIN"] = str(YKTERM)
        e["YKMAN_BIN"] = str(VENV_BIN / "ykman")
        proc = subprocess.Popen([str(YKTERM), "virtual-key", "serve", "--usb"] + [str(a) for a in args] + ["--"]
                                + list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=e, stdin=subprocess.DEVNULL)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for pid in reversed(descendants(proc.pid)):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            stop_pid(proc)
            out, err = proc.communicate()
            raise AssertionError(f"serve --usb did not finish in {timeout} s\nstdout: {out}\nstderr: {err}")
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
