"""Set-ups where a PC/SC reader does not answer (issue 35, item 6), for tests and by hand.

Each set-up is a context manager that yields a `StuckSetup` and stops, by PID, everything it started, and
removes its files, when it ends.

`two_configs_one_library()`: a private pcscd whose reader.conf.d holds two vpcd configurations with the same
LIBPATH ("Virtual PCD A" on ports P, P+1 and "Virtual PCD B" on Q, Q+1) and three virtual keys served to
them. What happens in pcscd 1.9.9 with Debian's vsmartcard-vpcd 3.3:

  * pcscd loads the library once. The driver keeps its sockets in one static array indexed by slot
    (`ctx[Lun & 0xffff]` in ifd-vpcd.c), and both configurations have slots 0 and 1, so the second
    configuration's IFDHCreateChannel replaces the first one's listening sockets: all four readers talk to
    Q and Q+1, "A 00 00" and "B 00 00" to the same key. P and P+1 still listen (leaked), so a key served
    there connects (the kernel accepts into the backlog) and is never read: it "never comes up".
  * pcscd does not take the two configurations for one device (no TAG_IFD_SIMULTANEOUS_ACCESS), so each
    reader gets a mutex of its own, although the driver says it is not thread-safe; and the driver's own
    per-socket lock is a no-op in this build (vpcd/lock.c without HAVE_PTHREAD). Two threads on two
    readers that share a socket (the presence polls of two event threads, 0.4 s apart and nearly in step,
    or two clients connecting at once) interleave their reads on one TCP stream; one takes the ATR's first
    two bytes (3B 8D) for a length of 15245, and both then wait in recv(MSG_WAITALL) for bytes that never
    come, each holding its reader's mutex (and, in SCardConnect's power-up, its powerState_lock). When
    both event threads find the listening socket readable at once, one accepts the key and the other stays
    in accept() for good (its reader stays EMPTY).
  * pcscd keeps showing the readers as they were (PRESENT, or EMPTY); nothing marks them stuck. Every later
    SCardConnect to a stuck PRESENT reader waits for ever, and the pcscd thread serving it stays blocked
    even after the client has gone.

Which reader ends up where varies from run to run. With `wedge=True` the set-up makes it certain: it connects
to the two readers of each shared slot at the same moment (from two child processes) and then finds, with one
SCardConnect per reader and a deadline, which readers still answer (`StuckSetup.working`) and which do not
(`StuckSetup.stuck`); it starts again (up to `attempts` times) until at least one reader is stuck.

`silent_beside_working(mode)`: a private pcscd with one vpcd configuration (as harness.PrivatePCSC has), a
stand-in card that never answers (`SilentCard`) on slot 0 and a working virtual key (serial 28200001, demo
accounts) on slot 1. pcscd asks a vpcd card for its ATR to learn whether it is there, with no timeout, so:

  * after-power-up (the default): the card answers until pcscd has seen it and powered it up, then nothing.
    The reader shows PRESENT (with the ATR); pcscd's event thread blocks in the next presence check (inside
    the power-down after the grace period: EHStatusHandlerThread -> IFDPowerICC -> IFDStatusICC ->
    IFDHICCPresence -> recv) holding the reader's mutex and powerState_lock, and every SCardConnect
    (which takes powerState_lock to power the card up) waits for ever.
  * atr-only: it answers every GET ATR but no command APDU. The first client connects and waits in
    SCardTransmit (its pcscd thread in IFDHTransmitToICC -> recv, holding the reader's mutex and the client's
    transaction); later clients wait for ever in SCardConnect ("Waiting for release of lock").
  * silent: it never answers, not even the first GET ATR; the event thread blocks before it sees a card, and
    the reader stays EMPTY: clients see an empty reader, and nothing hangs.

Reader states are read with pyscard in a child process (`reader_states`): libpcsclite reads
PCSCLITE_CSOCK_NAME once per process, and SCardGetStatusChange with a zero timeout reads pcscd's copy of the
reader states without calling the driver, so it answers even when every reader is stuck.

Run this file to start a set-up by hand and keep it until Enter (or SIGTERM):
    python stuck_readers.py two-configs [--wedge] | silent [after-power-up|atr-only|silent]
"""

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import VPCD_DRIVER, YKTERM, ServedKey, free_port_pair, stop_pid

# The ATR the virtual key gives (VirtualKey.atr): a YubiKey 5 NFC on an NFC reader.
YUBIKEY_NFC_ATR = bytes.fromhex("3b8d80018073c021c057597562694b6579f9")

# SCARD_STATE_* flags of SCardGetStatusChange's dwEventState, by name, for reports.
SCARD_STATES = {
    0x0001: "IGNORE", 0x0002: "CHANGED", 0x0004: "UNKNOWN", 0x0008: "UNAVAILABLE", 0x0010: "EMPTY",
    0x0020: "PRESENT", 0x0040: "ATRMATCH", 0x0080: "EXCLUSIVE", 0x0100: "INUSE", 0x0200: "MUTE",
    0x0400: "UNPOWERED",
}


def state_names(flags):
    """`0x10022` -> ["CHANGED", "PRESENT"] (the event counter in the high 16 bits left out)."""
    return [name for bit, name in SCARD_STATES.items() if flags & bit]


# --- PC/SC from child processes (pyscard) ------------------------------------------------------------------

_STATES_SCRIPT = r"""
import json, sys
from smartcard.scard import *
hr, ctx = SCardEstablishContext(SCARD_SCOPE_USER)
if hr != SCARD_S_SUCCESS:
    print(json.dumps({"error": SCardGetErrorMessage(hr)})); sys.exit(0)
hr, readers = SCardListReaders(ctx, [])
if hr != SCARD_S_SUCCESS:
    readers = []
states = []
if readers:
    hr, states = SCardGetStatusChange(ctx, 0, [(r, SCARD_STATE_UNAWARE) for r in readers])
print(json.dumps([{"reader": r, "state": s, "atr": bytes(a).hex()} for (r, s, a) in states]))
SCardReleaseContext(ctx)
"""

# Connects to one reader in shared mode (after sleeping until `at`, a time.time() value, when given), asks
# SCardStatus and disconnects; prints the outcome.
_CONNECT_SCRIPT = r"""
import sys, time
from smartcard.scard import *
reader, at = sys.argv[1], float(sys.argv[2])
hr, ctx = SCardEstablishContext(SCARD_SCOPE_USER)
if at > 0:
    time.sleep(max(0.0, at - time.time()))
print("ready", flush=True)
hr, card, proto = SCardConnect(ctx, reader, SCARD_SHARE_SHARED, SCARD_PROTOCOL_T0 | SCARD_PROTOCOL_T1)
if hr != SCARD_S_SUCCESS:
    print("error " + SCardGetErrorMessage(hr).strip()); sys.exit(0)
hr, name, state, proto, atr = SCardStatus(card)
print("answered" if hr == SCARD_S_SUCCESS else "error " + SCardGetErrorMessage(hr).strip())
SCardDisconnect(card, SCARD_LEAVE_CARD)
SCardReleaseContext(ctx)
"""


def reader_states(env, timeout=5.0):
    """{reader name: {"state": flags, "names": [...], "atr": hex}} as SCardGetStatusChange(0) reports them."""
    r = subprocess.run([sys.executable, "-c", _STATES_SCRIPT], env=env, capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("reading the reader states failed: " + r.stderr)
    data = json.loads(r.stdout)
    if isinstance(data, dict):
        raise RuntimeError("SCardEstablishContext: " + data["error"])
    return {d["reader"]: {"state": d["state"], "names": state_names(d["state"]), "atr": d["atr"]} for d in data}


def try_connect(env, readers, timeout=2.0, together=False):
    """SCardConnect + SCardStatus on each reader, from a child process each: {reader: "answered", "error ...",
    or "no answer" when it had not returned `timeout` seconds after it began to connect (the child is then
    killed by PID; pcscd's thread serving it stays blocked)}. With `together`, all children connect at the same
    moment (to make readers that share a driver socket collide); otherwise one after the other."""
    results = {}
    if together:
        # Each child starts Python and loads pyscard before the moment: 1.5 s ahead, so that on a loaded
        # machine they are all waiting for it (0.5 s was not always enough, and the set-up then found
        # nothing stuck).
        lead = 1.5
        at = time.time() + lead
        procs = {r: subprocess.Popen([sys.executable, "-c", _CONNECT_SCRIPT, r, str(at)], env=env, bufsize=0,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
                 for r in readers}
        # Each child's `timeout` counts from its moment (`_outcome`), when they all connect.
        for r, p in procs.items():
            results[r] = _outcome(p, timeout)
        return results
    for r in readers:
        p = subprocess.Popen([sys.executable, "-c", _CONNECT_SCRIPT, r, "0"], env=env, bufsize=0,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        results[r] = _outcome(p, timeout)
    return results


# How long a child may take to start Python, load pyscard and reach its SCardConnect: generous, since a slow
# start on a loaded machine must not be taken for a reader that does not answer.
CHILD_START_LIMIT = 30.0


def _outcome(proc, timeout):
    """What the child found. `timeout` counts from the moment it says it is about to connect ("ready"): a
    child that took 2 s to load pyscard once made a working reader count as stuck. Its output is read unbuffered,
    a line at a time, so that no answer is left in a buffer the next wait does not look at."""
    ready = _line(proc, CHILD_START_LIMIT) == "ready"
    if ready:
        answer = _line(proc, timeout)
        if answer:
            proc.wait()
            return answer
    if proc.poll() is not None:
        return f"exited {proc.returncode}"
    stop_pid(proc, timeout=2)
    proc.communicate()
    return "no answer"


def _line(proc, timeout):
    """The child's next line (without its end), "" at its end, None when none came within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([proc.stdout], [], [], remaining)[0]:
            return None
        byte = proc.stdout.read(1)
        if not byte:
            return line.decode(errors="replace").strip()
        line += byte
    return line.decode(errors="replace").strip()


# --- pcscd with several vpcd configurations -------------------------------------------------------------

def _free_pair_apart_from(taken):
    for _ in range(200):
        p = free_port_pair()
        if all(abs(p - t) >= 2 for t in taken):
            return p
    raise RuntimeError("no free port pair for vpcd")


class MultiVpcdPCSC:
    """A private pcscd, started as harness.PrivatePCSC starts one (own mount namespace, reached through
    /proc/PID/root), with one or more vpcd reader configurations.

    `configs`: (FRIENDLYNAME, LIBPATH) per configuration; each gets a port pair of its own (P for its slot 0,
    P+1 for slot 1) and readers "NAME 00 00" and "NAME 00 01". With `debug`, pcscd logs with -d to
    `log_path`."""

    def __init__(self, configs, debug=False):
        self.dir = Path(tempfile.mkdtemp(prefix="ykterm-stuck-"))
        self.configs = []
        conf = self.dir / "reader.conf.d"
        conf.mkdir()
        ports = []
        for i, (name, libpath) in enumerate(configs):
            port = _free_pair_apart_from(ports)
            ports.append(port)
            (conf / f"vpcd{i}").write_text(
                f'FRIENDLYNAME "{name}"\n'
                f"DEVICENAME   /dev/null:0x{port:X}\n"
                f"LIBPATH      {libpath}\n"
                f"CHANNELID    0x{port:X}\n"
            )
            self.configs.append({"name": name, "port": port, "libpath": libpath})
        self.debug = debug
        self.proc = None
        self.log = None
        self.log_path = self.dir / "pcscd.log"

    def reader(self, config, slot):
        """The name pcscd gives slot `slot` of configuration `config`."""
        return f"{self.configs[config]['name']} 00 {slot:02X}"

    def port_of(self, config, slot):
        return self.configs[config]["port"] + slot

    @property
    def readers(self):
        return [self.reader(c, s) for c in range(len(self.configs)) for s in (0, 1)]

    def start(self, timeout=10):
        flags = "-f -d" if self.debug else "-f"
        script = ("mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p /run/pcscd && "
                  f"exec pcscd {flags} -c \"$0\"")
        unshare = ["unshare", "--mount", "--propagation", "private"]
        if os.geteuid() != 0:
            unshare.insert(1, "--map-root-user")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(unshare + ["sh", "-c", script, str(self.dir / "reader.conf.d")],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("pcscd exited: " + self.log_path.read_text(errors="replace"))
            if Path(self.socket).exists():
                try:
                    if set(self.readers) <= set(reader_states(self.env())):
                        return self
                except (RuntimeError, subprocess.TimeoutExpired):
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError("pcscd did not list the vpcd readers: "
                                   + self.log_path.read_text(errors="replace")[-2000:])
            time.sleep(0.1)

    @property
    def pid(self):
        """pcscd's own PID (unshare execs sh, which execs pcscd), for gdb."""
        return self.proc.pid

    @property
    def socket(self):
        return f"/proc/{self.proc.pid}/root/run/pcscd/pcscd.comm"

    def env(self, **extra):
        e = dict(os.environ)
        e["PCSCLITE_CSOCK_NAME"] = self.socket
        e.pop("YKTERM_READER", None)
        e.pop("YKTERM_DEVICE", None)
        e.update({k: str(v) for k, v in extra.items()})
        return e

    def states(self):
        return reader_states(self.env())

    def present(self):
        """The readers pcscd shows with a card."""
        return [r for r, s in self.states().items() if "PRESENT" in s["names"]]

    def stop(self):
        stop_pid(self.proc)
        if self.log:
            self.log.close()
            self.log = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class KeyOnPort(ServedKey):
    """`ykterm virtual-key serve` connected to one vpcd port (of any configuration), meant for `reader`.

    Registered in ServedKey.running like the harness's keys, so conftest stops it after a test that failed
    half-way. Its presence is checked with `reader_states`, never with ykterm (which may hang)."""

    def __init__(self, pcsc, port, reader, serial=None, state=None, extra=()):
        # The fields ServedKey's start and stop use (its own __init__ takes the port from a PrivatePCSC).
        self.pcsc = pcsc
        self.port = port
        self.slot = None
        self.reader = reader
        self.state = state
        args = ["virtual-key", "serve", "--vpcd", f"127.0.0.1:{port}"]
        if serial is not None:
            args += ["--serial", str(serial)]
        if state is not None:
            args += ["--state", str(state)]
        self.args = args + list(extra)
        self.serial = serial
        self.proc = None
        self.log_path = pcsc.dir / f"serve-{port}-{time.monotonic_ns()}.log"

    def wait_connected(self, timeout=10):
        """Until the key has reached its port (accepted by the driver, or only queued by the kernel)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.log_path.exists() and "connected to vpcd" in self.log_path.read_text(errors="replace"):
                return
            time.sleep(0.05)
        raise RuntimeError(f"virtual key did not reach vpcd on port {self.port}")

    def wait_present(self, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = reader_states(self.pcsc.env()).get(self.reader)
            if s and "PRESENT" in s["names"]:
                return
            time.sleep(0.1)
        raise RuntimeError(f"no card seen in {self.reader}: " + self.log_path.read_text(errors="replace"))

    def stop(self, wait=False):
        # A stuck reader never shows the key leave: never wait for that.
        super().stop(wait=False)


# --- The stand-in card that never answers -----------------------------------------------------------------

# It speaks vpcd's protocol (a 2-byte big-endian length, then that many bytes; a 1-byte message is a control
# code: 0 power off, 1 power on, 2 reset (no card answers those), 4 GET ATR (wants the ATR back); longer
# messages are command APDUs and want the response APDU), but stops answering, as the module's notes say for
# each mode. Every message is logged with what was done with it.
_SILENT_CARD = r"""
import os, signal, socket, sys, time
host, port, mode, atr, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], bytes.fromhex(sys.argv[4]), sys.argv[5]
signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
out = open(log, "a", buffering=1)
while True:
    try:
        s = socket.create_connection((host, port))
        break
    except OSError:
        time.sleep(0.2)
out.write(f"connected to vpcd at {host}:{port}, mode {mode}\n")
powered_up = quiet = False
buf = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        out.write("vpcd closed the connection\n")
        os._exit(0)
    buf += chunk
    while len(buf) >= 2 and len(buf) - 2 >= int.from_bytes(buf[:2], "big"):
        n = int.from_bytes(buf[:2], "big")
        msg, buf = buf[2:2 + n], buf[2 + n:]
        if msg in (b"\x00", b"\x01", b"\x02"):
            out.write(f"{time.time():.3f} got {['power off', 'power on', 'reset'][msg[0]]} (never answered)\n")
            powered_up = powered_up or msg == b"\x01"
            continue
        reply = None
        if msg == b"\x04":
            kind = "GET ATR"
            if mode == "atr-only" or (mode == "after-power-up" and not quiet):
                reply = atr
                # The GET ATR after the power on is the power-up's own: the last one answered.
                quiet = powered_up
        else:
            kind = f"APDU {msg[:4].hex()} +{max(0, len(msg) - 4)}"
        out.write(f"{time.time():.3f} got {kind}: {'answered' if reply is not None else 'NO ANSWER'}\n")
        if reply is not None:
            s.sendall(len(reply).to_bytes(2, "big") + reply)
"""


class SilentCard:
    """A stand-in card on a vpcd port that stops answering (mode: after-power-up, atr-only or silent; see the
    module's notes); a Python child process, stopped by PID."""

    MODES = ("after-power-up", "atr-only", "silent")
    running = []

    def __init__(self, pcsc, port, reader, mode="after-power-up", atr=YUBIKEY_NFC_ATR):
        if mode not in self.MODES:
            raise ValueError(f"mode {mode!r}: one of {', '.join(self.MODES)}")
        self.pcsc, self.port, self.reader, self.mode, self.atr = pcsc, port, reader, mode, atr
        self.dir = Path(tempfile.mkdtemp(prefix="ykterm-silent-card-"))
        self.log_path = self.dir / "card.log"
        self.proc = None

    def start(self, timeout=10):
        script = self.dir / "silent_card.py"
        script.write_text(_SILENT_CARD)
        self.proc = subprocess.Popen([sys.executable, str(script), "127.0.0.1", str(self.port), self.mode,
                                      self.atr.hex(), str(self.log_path)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        SilentCard.running.append(self)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "connected" in self.log():
                return self
            if self.proc.poll() is not None:
                raise RuntimeError("the stand-in card exited")
            time.sleep(0.05)
        raise RuntimeError(f"the stand-in card did not reach vpcd on port {self.port}")

    def wait_unanswered(self, timeout=10):
        """Until pcscd has asked something that went unanswered (the thread that asked now blocks)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "NO ANSWER" in self.log():
                return self
            time.sleep(0.05)
        raise RuntimeError("pcscd never asked the stand-in card anything it left unanswered: " + self.log())

    def log(self):
        try:
            return self.log_path.read_text()
        except OSError:
            return ""

    def stop(self):
        if self in SilentCard.running:
            SilentCard.running.remove(self)
        stop_pid(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


def stop_leftovers():
    """Stops every stand-in card still running (after a test that failed half-way)."""
    for c in list(SilentCard.running):
        c.stop()


# --- The set-ups ------------------------------------------------------------------------------------------

@dataclass
class StuckSetup:
    pcsc: MultiVpcdPCSC
    keys: list = field(default_factory=list)        # KeyOnPort, in the order served
    silent: "SilentCard | None" = None
    stuck: list = field(default_factory=list)       # readers shown PRESENT that do not answer SCardConnect
    working: list = field(default_factory=list)     # readers shown PRESENT that answer
    probes: dict = field(default_factory=dict)      # what try_connect found, reader by reader

    def env(self, **extra):
        return self.pcsc.env(**extra)


@contextlib.contextmanager
def two_configs_one_library(names=("Virtual PCD A", "Virtual PCD B"), keys=((0, 0), (1, 0), (1, 1)),
                            wedge=True, attempts=4, collisions=6, debug=False, settle=2.0):
    """Two vpcd configurations with one LIBPATH and a virtual key served to each (configuration, slot) in
    `keys` (serials 28100001, 28100002, ... in that order). Waits until each key reached its port, then
    `settle` seconds for pcscd's presence polls. With `wedge`, makes readers stuck for certain (see the
    module's notes: up to `collisions` simultaneous connects on each pcscd, on up to `attempts` pcscds that show
    a card) and fills `stuck` and `working`; otherwise `stuck` and `working` are left empty (what pcscd shows is
    in `pcsc.states()`). Yields a StuckSetup."""
    # A pcscd on which no reader shows a card (its event threads both took the key's connection at once, and the
    # one left in accept() keeps its reader EMPTY, see the notes) has nothing to collide on: it is replaced
    # without counting as an attempt, up to `starts` pcscds in all.
    attempt, starts = 0, 3 * attempts
    for start in range(1, starts + 1):
        pcsc = MultiVpcdPCSC([(n, VPCD_DRIVER) for n in names], debug=debug)
        setup = StuckSetup(pcsc)
        try:
            pcsc.start()
            for i, (config, slot) in enumerate(keys):
                k = KeyOnPort(pcsc, pcsc.port_of(config, slot), pcsc.reader(config, slot), serial=28100001 + i)
                setup.keys.append(k)
                k.start(wait=False)
                k.wait_connected()
            time.sleep(settle)
            # On a loaded machine pcscd's presence polls can lag behind the keys: wait (bounded) until every
            # served key's reader shows a card, so that the collisions below have readers to collide on.
            served = {pcsc.reader(c, s) for c, s in keys}
            deadline = time.monotonic() + 15
            while not served <= set(pcsc.present()) and time.monotonic() < deadline:
                time.sleep(0.2)
            if wedge:
                env = pcsc.env()
                # Collisions are a race: each round makes the readers of a shared slot connect at one moment,
                # then finds what answers and what does not; the rounds go on until a reader is stuck.
                for _ in range(collisions):
                    present = pcsc.present()
                    if not present:
                        break
                    for slot in (0, 1):
                        shared = [pcsc.reader(c, slot) for c in range(len(names))]
                        if all(r in present for r in shared):
                            try_connect(env, shared, together=True)
                    # A moment for collisions of pcscd's own presence polls, then what answers and what does not.
                    time.sleep(0.5)
                    present = pcsc.present()
                    setup.probes = try_connect(env, present)
                    setup.stuck = [r for r in present if setup.probes[r] == "no answer"]
                    setup.working = [r for r in present if setup.probes[r] == "answered"]
                    if setup.stuck:
                        break
                attempt += 1 if setup.probes else 0
                if not setup.stuck and attempt < attempts and start < starts:
                    _teardown(setup)
                    continue
                if not setup.stuck:
                    raise RuntimeError(f"no reader got stuck in {attempt} pcscds of {collisions} collisions each "
                                       f"({start} started): {setup.probes}")
        except BaseException:
            _teardown(setup)
            raise
        try:
            yield setup
        finally:
            _teardown(setup)
        return


@contextlib.contextmanager
def silent_beside_working(mode="after-power-up", serial=28200001, extra=(), debug=False, name="Virtual PCD"):
    """One vpcd configuration (readers "NAME 00 00" on port P and "NAME 00 01" on P+1), a SilentCard in
    `mode` on slot 0 and a working virtual key (`serial`, demo accounts) on slot 1. Yields a StuckSetup once
    pcscd shows the working key and the stand-in is as its mode leaves it (after-power-up: shown PRESENT
    and its presence check blocked; atr-only: shown PRESENT; silent: its first presence check blocked).
    `stuck` holds the stand-in's reader unless the mode is silent (its reader looks empty); `working` the key's."""
    pcsc = MultiVpcdPCSC([(name, VPCD_DRIVER)], debug=debug)
    setup = StuckSetup(pcsc)
    try:
        pcsc.start()
        setup.silent = SilentCard(pcsc, pcsc.port_of(0, 0), pcsc.reader(0, 0), mode=mode).start()
        key = KeyOnPort(pcsc, pcsc.port_of(0, 1), pcsc.reader(0, 1), serial=serial,
                        extra=("--demo-accounts",) + tuple(extra))
        setup.keys.append(key)
        key.start(wait=False)
        key.wait_present()
        if mode == "atr-only":
            KeyOnPort.wait_present(setup.silent)
        else:
            setup.silent.wait_unanswered()
        # after-power-up: the card is shown PRESENT once powered up; its next presence check (0.4 s later)
        # is the one that blocks. A moment to get there.
        time.sleep(1.0)
        setup.working = [key.reader]
        if mode != "silent":
            setup.stuck = [setup.silent.reader]
    except BaseException:
        _teardown(setup)
        raise
    try:
        yield setup
    finally:
        _teardown(setup)


def _teardown(setup):
    for k in setup.keys:
        k.stop()
    if setup.silent is not None:
        setup.silent.stop()
    setup.pcsc.cleanup()


def run_timed(args, env, timeout=15, input=None):
    """Runs ykterm ARGS; returns (CompletedProcess, seconds). A run still going after `timeout` is killed (by
    subprocess, by its PID) and comes back with returncode None and what it had printed."""
    start = time.monotonic()
    try:
        r = subprocess.run([str(YKTERM)] + [str(a) for a in args], env=env, capture_output=True, text=True,
                           timeout=timeout, input=input)
    except subprocess.TimeoutExpired as e:
        return (subprocess.CompletedProcess(e.cmd, None, _text(e.stdout), _text(e.stderr)),
                time.monotonic() - start)
    return r, time.monotonic() - start


def _text(b):
    if b is None:
        return ""
    return b.decode(errors="replace") if isinstance(b, bytes) else b


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "two-configs"
    if which == "two-configs":
        held = two_configs_one_library(debug=True, wedge="--wedge" in sys.argv)
    else:
        held = silent_beside_working(mode=sys.argv[2] if len(sys.argv) > 2 else "after-power-up", debug=True)
    with held as s:
        print(f"PCSCLITE_CSOCK_NAME={s.pcsc.socket}")
        print(f"pcscd pid {s.pcsc.pid}, log {s.pcsc.log_path}")
        for k in s.keys + ([s.silent] if s.silent else []):
            print(f"{type(k).__name__} pid {k.proc.pid} port {k.port} ({k.reader}), log {k.log_path}")
        print("stuck:", s.stuck, "working:", s.working, "probes:", s.probes)
        print(json.dumps(s.pcsc.states(), indent=1), flush=True)
        # Enter, end of input, SIGTERM or SIGINT ends it (everything is stopped by PID on the way out).
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
        try:
            input("Enter stops everything\n")
        except EOFError:
            signal.pause()
        except KeyboardInterrupt:
            pass
