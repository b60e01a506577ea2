# Over 500 lines on purpose: one table from one run — every row's measurement with the private pcscd and pty
# plumbing they share; start-up phases are in startup.py, the USB rows in bench_usb.py.
"""`make bench`: ykterm against the floor (C clients that do only what the command needs) and against ykman, on the
virtual key served through a private pcscd (and, as root with FUSE, plugged in as a USB key); and the Debian
package's link of the same objects (Debian's shared libraries) beside the release build.

Every row is measured in the same run, its sides interleaved, and reported as medians and ratios against a goal;
then peak memory, and where start-up goes (Tests/Bench/startup.py). This is a benchmark, not a test: it asserts
nothing, it prints tables (and a JSON copy with --json FILE).
"""

import argparse
import fcntl
import json
import os
import platform
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Integration"))
from harness import VPCD_DRIVER, YKTERM, VENV_BIN, PrivatePCSC, ServedKey, run_ykterm, stop_pid  # noqa: E402

import startup  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
YKMAN = VENV_BIN / "ykman"
# The C references `make bench` builds (Tests/Bench/*.c).
REFS = Path(os.environ.get("BENCH_REFS", ROOT / ".build" / "bench"))
PCSC_REF = REFS / "pcsc_ref"
CTAPHID_REF = REFS / "ctaphid_ref"
VERSION_REF = REFS / "version_ref"
SWIFT_FLOOR = REFS / "swift_floor"
ARGPARSE_FLOOR = REFS / "argparse_floor"
GNU_TIME = shutil.which("time", path="/usr/bin:/bin") or "/usr/bin/time"
# The Debian package's binary (`make release-shared`: the same objects linked against Debian's shared libraries, as
# a PIE), measured beside the release build: what those libraries cost at start-up. A figure, not a goal.
SHARED = Path(os.environ["YKTERM_SHARED_BIN"]) if os.environ.get("YKTERM_SHARED_BIN") else None


def run_timed(argv, env, stdin_text=None, check=True):
    """Runs argv to the end; returns (wall seconds, the process's stderr).

    Spawned straight from here (Python uses vfork and exec): the time is the command's, plus one spawn and one
    reap, the same for every side. In a session of its own, without a controlling terminal, so a program that
    asks for a PIN on /dev/tty (fido2-token) reads it from standard input."""
    started = time.perf_counter()
    p = subprocess.Popen([str(a) for a in argv], env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    _, err = p.communicate(stdin_text.encode() if stdin_text else None)
    wall = time.perf_counter() - started
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} exited {p.returncode}: {err.decode()[-400:]}")
    return wall, err.decode(errors="replace")


def peak_rss(argv, env, stdin_text=None):
    """The command's peak RSS in KiB, from GNU time, which forks the command and reports that child's rusage.

    Taking the rusage of a child of this Python process instead would be wrong: a process started with fork (or
    vfork) and exec keeps, as its peak, the RSS its parent had at the fork, so every command would show at least
    this interpreter's ~16 MiB."""
    with tempfile.NamedTemporaryFile("r") as peak:
        p = subprocess.run([GNU_TIME, "-f", "%M", "-o", peak.name] + [str(a) for a in argv], env=env,
                           input=stdin_text.encode() if stdin_text else None, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, argv))} exited {p.returncode}: {p.stderr.decode()[-400:]}")
        return int(peak.read().split()[-1])


def interleaved(sides, runs, rss_runs=5, settle=None):
    """sides: {name: (argv or fn(i) -> (argv, stdin), env)}; each run runs every side once, in turn, starting with
    the next side each time (what ran just before a side, ykman's 40 MiB of Python or a small C program, changes
    what it finds in the caches). settle: {name: (argv, env)} run, unmeasured, right after that side (ykman resets
    the card when it disconnects, and the next program to connect is told so and connects again: the settling run
    takes that). Returns {name: {"s": [...], "rss": [...], "stderr": [...]}}."""
    out = {name: {"s": [], "rss": [], "stderr": []} for name in sides}
    names = list(sides)
    settle = settle or {}
    for i in range(runs):
        for name in names[i % len(names):] + names[:i % len(names)]:
            make, env = sides[name]
            argv, stdin_text = make(i) if callable(make) else (make, None)
            wall, err = run_timed(argv, env, stdin_text)
            out[name]["s"].append(wall)
            out[name]["stderr"].append(err)
            if name in settle:
                run_timed(*settle[name])
    for i in range(rss_runs):
        for name, (make, env) in sides.items():
            argv, stdin_text = make(runs + i) if callable(make) else (make, None)
            out[name]["rss"].append(peak_rss(argv, env, stdin_text))
    return out


def med(values):
    return statistics.median(values) if values else float("nan")


def apdus(key):
    """Command APDUs the served key has seen so far (its --log-apdus lines)."""
    key.log.flush()
    return key.log_path.read_text(errors="replace").count("virtual-key: apdu ")


def apdu_headers(key, since, until=None):
    lines = [l for l in key.log_path.read_text(errors="replace").splitlines() if "virtual-key: apdu " in l]
    return [l.split("virtual-key: apdu ", 1)[1] for l in lines[since:until]]


INSTRUCTIONS = {"A4": "SELECT", "A5": "SEND REMAINING", "A1": "LIST", "1D": "READ CONFIG", "10": "NFCCTAP_MSG"}


def describe_headers(headers):
    """'00 A4 04 00 +9' → 'SELECT', with CALCULATE ALL told from SELECT by P1/P2, runs of one written ×N."""
    names = []
    for h in headers:
        parts = h.split()
        ins = parts[1]
        name = "CALCULATE ALL" if ins == "A4" and parts[2:4] == ["00", "01"] else INSTRUCTIONS.get(ins, "INS " + ins)
        if names and names[-1][0] == name:
            names[-1][1] += 1
        else:
            names.append([name, 1])
    return ", ".join(f"{n} ×{c}" if c > 1 else n for n, c in names)


class Pty:
    """A program on a pseudo-terminal of its own, 100x30, its output drained so it never blocks on a full
    terminal; the bytes are kept for `read_until`."""

    def __init__(self, argv, env, started=None):
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        env = dict(env, TERM="xterm-256color", LC_ALL="C.UTF-8")
        self.config = tempfile.mkdtemp()
        env.setdefault("XDG_CONFIG_HOME", self.config)
        self.started = started or time.perf_counter()
        self.proc = subprocess.Popen(argv, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.text = ""
        self.rusage = None

    def read_until(self, pattern, timeout=10):
        """Seconds from start until the (escape-stripped) output matches pattern."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            r, _, _ = select.select([self.master], [], [], 0.05)
            if r:
                self.text += os.read(self.master, 65536).decode("utf-8", "replace")
                plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-B]|\x1b[=>]", "", self.text)
                if re.search(pattern, plain):
                    return time.perf_counter() - self.started
        raise RuntimeError(f"{pattern!r} not seen: {self.text[-500:]!r}")

    def drain(self, seconds):
        """Reads (and forgets) what the program draws for `seconds`."""
        deadline = time.perf_counter() + seconds
        while (left := deadline - time.perf_counter()) > 0:
            if select.select([self.master], [], [], min(left, 0.5))[0]:
                try:
                    os.read(self.master, 65536)
                except OSError:
                    return

    def quiet(self, seconds=0.2, timeout=5):
        """Reads until no output came for `seconds`."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            r, _, _ = select.select([self.master], [], [], seconds)
            if not r:
                return
            os.read(self.master, 65536)

    def keystroke_latency(self, data):
        """Seconds from writing `data` to the first byte of the screen update it causes."""
        os.write(self.master, data)
        sent = time.perf_counter()
        r, _, _ = select.select([self.master], [], [], 2)
        if not r:
            raise RuntimeError("no screen update after a keystroke")
        latency = time.perf_counter() - sent
        os.read(self.master, 65536)
        return latency

    def close(self, keys=b"q", sig=None):
        """Ends the program (`keys` typed, or `sig` sent) and reaps it; its rusage (with the children it reaped)
        is kept in self.rusage."""
        try:
            if sig:
                os.kill(self.proc.pid, sig)
            else:
                os.write(self.master, keys)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                pid, _, ru = os.wait4(self.proc.pid, os.WNOHANG)
                if pid:
                    self.rusage = ru
                    self.proc.returncode = 0
                    break
                self.drain(0.02)
        except (OSError, ChildProcessError):
            pass
        if self.rusage is None:
            stop_pid(self.proc)
        os.close(self.master)
        shutil.rmtree(self.config, ignore_errors=True)


class BenchPCSC(PrivatePCSC):
    """A private pcscd with `pairs` vpcd reader configurations of two slots each: readers "Virtual PCD 00 0S", then
    "Bench PCD N 00 0S" (each configuration has a name of its own, as pcscd numbers readers of the same name
    alike)."""

    def __init__(self, pairs=1):
        super().__init__()
        self.ports = [self.port]
        conf = self.dir / "reader.conf.d"
        for n in range(1, pairs):
            port = self.port
            while port in self.ports or port + 1 in self.ports:
                port = free_port_pair()
            self.ports.append(port)
            # vpcd keeps its slots' state in globals indexed by slot alone: a second configuration of the same
            # library shares them with the first. A copy of the library is an instance of its own.
            driver = self.dir / f"libifdvpcd-{n}.so"
            shutil.copyfile(VPCD_DRIVER, driver)
            (conf / f"vpcd{n}").write_text(
                f'FRIENDLYNAME "Bench PCD {n}"\nDEVICENAME   /dev/null:0x{port:X}\n'
                f"LIBPATH      {driver}\nCHANNELID    0x{port:X}\n")

    def start(self):
        super().start()
        names = [self.reader(n) for n in range(2 * len(self.ports))]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            listed = run_ykterm("list", "--readers", env=self.env(), check=False).stdout
            if all(n in listed for n in names):
                return self
            time.sleep(0.1)
        raise RuntimeError("pcscd did not list every vpcd reader")

    def reader(self, n):
        return f"Virtual PCD 00 {n % 2:02d}" if n < 2 else f"Bench PCD {n // 2} 00 {n % 2:02d}"

    def serve(self, n, state, extra=()):
        """The virtual key in reader n (0, 1: the first configuration's slots; 2, 3: the second's ...)."""
        key = ServedKey(self, slot=0, state=state, extra=extra)
        port = self.ports[n // 2] + n % 2
        key.args = [a if not a.startswith("127.0.0.1:") else f"127.0.0.1:{port}" for a in key.args]
        key.reader = self.reader(n)
        return key


def free_port_pair():
    from harness import free_port_pair as f
    return f()


def task_cpu(pid):
    """CPU seconds of the process's threads alive now (their schedstat, in nanoseconds)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9


class CPUWindow:
    """The CPU time a process spends between `start()` and `stop()`, every thread counted — those that begin and end
    in between too, which a sum over /proc/PID/task misses.

    Read from a cgroup (v2) of the process's own, made where the machine lets us (root, cgroup2 mounted): its
    `cpu.stat` counts the time of every thread that ran in it, to the microsecond. Elsewhere the figure is the
    process's rusage when it has been reaped less its live threads' time at `start()`: start-up threads that
    finished before it, and the exit, are then counted in, so the window comes out larger."""

    def __init__(self, proc):
        self.proc, self.group, self.started, self.ended = proc, None, None, None
        for line in Path("/proc/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2":
                group = Path(fields[1]) / f"ykterm-bench-{os.getpid()}-{proc.pid}"
                try:
                    group.mkdir()
                    (group / "cgroup.procs").write_text(str(proc.pid))
                    self.group = group
                except OSError:
                    if group.exists():
                        group.rmdir()
                    continue
                break
        self.method = "cgroup" if self.group else "rusage"

    def _usage(self):
        for line in (self.group / "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) / 1e6
        raise RuntimeError(f"no usage_usec in {self.group}/cpu.stat")

    def start(self):
        self.started = self._usage() if self.group else task_cpu(self.proc.pid)

    def stop(self):
        if self.group:
            self.ended = self._usage()

    def seconds(self, rusage):
        """The window's CPU seconds; `rusage` is the reaped process's (used without a cgroup)."""
        if self.group:
            return self.ended - self.started
        return rusage.ru_utime + rusage.ru_stime - self.started

    def remove(self):
        """Removes the cgroup (once the process is gone from it)."""
        if not self.group:
            return
        deadline = time.monotonic() + 5
        while True:
            try:
                self.group.rmdir()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


class Row:
    """One line of the main table: what, ykterm's figure, the reference's, the ratio, the goal, met or by how much
    it misses."""

    def __init__(self, what, mine, reference, ratio, goal, met, miss=""):
        self.cells = [what, mine, reference, ratio, goal, "yes" if met else f"no: {miss}"]


def ms(seconds):
    return f"{seconds * 1000:.2f} ms" if seconds < 0.01 else f"{seconds * 1000:.1f} ms"


def mib(kib):
    return f"{kib / 1024:.1f} MiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=20, help="runs of each command (medians; default 20)")
    ap.add_argument("--idle", type=float, default=120, help="seconds of idle TUI (default 120)")
    ap.add_argument("--idle-keys", type=float, default=60,
                    help="seconds of idle TUI over four keys, and over one (default 60 each)")
    ap.add_argument("--idle-keys-runs", type=int, default=3,
                    help="runs of the idle TUI over four keys and over one, interleaved (medians; default 3)")
    ap.add_argument("--latency", type=int, default=5,
                    help="the served keys' processing time per command in the list row, ms (default 5)")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    for ref in (PCSC_REF, CTAPHID_REF, VERSION_REF, SWIFT_FLOOR, ARGPARSE_FLOOR):
        if not ref.exists():
            raise SystemExit(f"{ref} is missing: `make bench` builds the C references")

    rows, results, notes = [], {}, []
    work = Path(tempfile.mkdtemp(prefix="ykterm-bench-"))
    pcsc, single = BenchPCSC(pairs=2), PrivatePCSC()
    keys = []
    try:
        pcsc.start()
        single.start()
        key = pcsc.serve(0, work / "key32.json", ("--accounts", "32", "--log-apdus")).start()
        keys.append(key)
        env = pcsc.env(XDG_CONFIG_HOME=str(work / "config"), YKTERM_READER=key.reader)
        run_ykterm("fido", "pin", "set", env=env, input="bench-pin-1\n")

        # `oath code` against ykman and against the C reference, all three interleaved in the same runs.
        oath = interleaved({
            "ykterm": ([YKTERM, "oath", "code"], env),
            "c": ([PCSC_REF, "oath-code", key.reader], env),
            "ykman": ([YKMAN, "--reader", key.reader, "oath", "accounts", "code"], env),
            **({"shared": ([SHARED, "oath", "code"], env)} if SHARED else {}),
        }, args.runs, settle={"ykman": ([PCSC_REF, "list", key.reader], env)})
        before = apdus(key)
        run_timed([YKTERM, "oath", "code"], env)
        oath_headers = apdu_headers(key, before)
        before = apdus(key)
        run_timed([PCSC_REF, "oath-code", key.reader], env)
        c_headers = apdu_headers(key, before)
        key_time = med([int(re.search(r"transmit_us=(\d+)", e).group(1)) / 1e6 for e in oath["c"]["stderr"]])
        y, c, k = (med(oath[s]["s"]) for s in ("ykterm", "c", "ykman"))
        ry, rc, rk = (med(oath[s]["rss"]) for s in ("ykterm", "c", "ykman"))
        results["oath_code"] = {"ykterm_s": y, "c_s": c, "ykman_s": k, "ykterm_rss_kib": ry, "c_rss_kib": rc,
                                "ykman_rss_kib": rk, "key_time_s": key_time, "ykterm_apdus": oath_headers,
                                "c_apdus": c_headers}
        rows.append(Row("`oath code`, 32 accounts, vs ykman", f"{ms(y)}, {mib(ry)}", f"{ms(k)}, {mib(rk)}",
                        f"{k / y:.1f}x faster, {ry / rk:.2f} of the memory", "≥ 60x faster, ≤ 1/4 the peak memory",
                        k / y >= 60 and ry <= rk / 4,
                        ", ".join(m for m in (f"{60 / (k / y):.2f}x too slow" if k / y < 60 else "",
                                              f"{ry / (rk / 4):.2f}x the memory" if ry > rk / 4 else "") if m)))
        rows.append(Row("`oath code` vs the C reference (same APDUs through libpcsclite)", ms(y), ms(c),
                        f"{y / c:.2f}x", "≤ 2x", y / c <= 2, f"{y / c / 2:.2f}x over"))
        if len(oath_headers) != len(c_headers):
            notes.append(f"ykterm sent {len(oath_headers)} APDUs for `oath code`, the C reference {len(c_headers)}")

        # `--version` against a C program linked with the same libraries.
        # Beside them, Swift's own floors: a Swift program that prints a line, and one that parses its arguments with
        # ArgumentParser (both linked as the release binary is).
        version = interleaved({"ykterm": ([YKTERM, "--version"], env), "c": ([VERSION_REF], env),
                               "swift": ([SWIFT_FLOOR], env), "argparse": ([ARGPARSE_FLOOR, "--version"], env),
                               **({"shared": ([SHARED, "--version"], env)} if SHARED else {})},
                              args.runs)
        y, c = med(version["ykterm"]["s"]), med(version["c"]["s"])
        results["version"] = {"ykterm_s": y, "c_s": c, "ykterm_rss_kib": med(version["ykterm"]["rss"]),
                              "c_rss_kib": med(version["c"]["rss"]), "swift_floor_s": med(version["swift"]["s"]),
                              "argparse_floor_s": med(version["argparse"]["s"])}
        needed = subprocess.run(["readelf", "-d", str(YKTERM)], capture_output=True, text=True).stdout
        libs = re.findall(r"Shared library: \[(.*?)\]", needed)
        results["version"]["libraries"] = libs
        rows.append(Row(f"`ykterm --version` vs a C program linked with the same {len(libs)} libraries", ms(y), ms(c),
                        f"{y / c:.2f}x", "≤ 2x", y / c <= 2, f"{y / c / 2:.2f}x over"))
        if SHARED:
            needed = subprocess.run(["readelf", "-d", str(SHARED)], capture_output=True, text=True).stdout
            results["package_link"] = {
                "libraries": re.findall(r"Shared library: \[(.*?)\]", needed),
                "version": {side: {"s": med(version[side]["s"]), "rss_kib": med(version[side]["rss"])}
                            for side in ("ykterm", "shared")},
                "oath_code": {side: {"s": med(oath[side]["s"]), "rss_kib": med(oath[side]["rss"])}
                              for side in ("ykterm", "shared")}}

        # The earlier rows against ykman (same key, interleaved).
        ykm = [str(YKMAN), "--reader", key.reader]
        pin = ["bench-pin-1"]  # the key's PIN now: each change sets the other one

        def next_pin():
            old = pin[0]
            pin[0] = "bench-pin-2" if old == "bench-pin-1" else "bench-pin-1"
            return old, pin[0]

        versus = interleaved({
            "list ykterm": ([YKTERM, "list", "--json"], env),
            "list ykman": ([YKMAN, "list"], env),
            "pin ykterm": (lambda i: ([YKTERM, "fido", "pin", "change"], "%s\n%s\n" % next_pin()), env),
            "pin ykman": (lambda i: (ykm + ["fido", "access", "change-pin", "--pin", pin[0], "--new-pin",
                                            next_pin()[1]], None), env),
            "info ykterm": ([YKTERM, "fido", "info", "--json"], env),
            "info ykman": (ykm + ["fido", "info"], env),
        }, args.runs, rss_runs=0, settle={side: ([PCSC_REF, "list", key.reader], env)
                                          for side in ("list ykman", "pin ykman", "info ykman")})
        results["versus_ykman"] = {n: med(v["s"]) for n, v in versus.items()}

        # `list` with four keys against `list` with one, each key taking --latency ms per command.
        # Each with the demo accounts: the `oath code --all-keys` and idle rows below calculate codes on them.
        four = [pcsc.serve(n, work / f"list{n}.json", ("--latency", str(args.latency), "--serial", str(28200000 + n),
                                                      "--demo-accounts"))
                for n in range(1, 4)]
        for k_ in four:
            k_.start()
            keys.append(k_)
        one = ServedKey(single, slot=0, state=work / "list-single.json",
                        extra=("--latency", str(args.latency), "--demo-accounts")).start()
        keys.append(one)
        # The 32-account key answers at once: for this row it leaves pcscd's first reader to a slow one.
        key.stop()
        keys.remove(key)
        slow0 = pcsc.serve(0, work / "list0.json", ("--latency", str(args.latency), "--serial", "28200000",
                                                    "--demo-accounts")).start()
        keys.append(slow0)
        env4 = pcsc.env(XDG_CONFIG_HOME=str(work / "config"))
        env1 = single.env(XDG_CONFIG_HOME=str(work / "config"))
        listed = interleaved({"four": ([YKTERM, "list", "--json"], env4), "one": ([YKTERM, "list", "--json"], env1)},
                             args.runs)
        n4 = len(json.loads(subprocess.run([str(YKTERM), "list", "--json"], env=env4, capture_output=True,
                                           text=True).stdout))
        f4, f1 = med(listed["four"]["s"]), med(listed["one"]["s"])
        results["list"] = {"four_s": f4, "one_s": f1, "keys_listed": n4, "latency_ms": args.latency}
        rows.append(Row(f"`list` with {n4} keys vs `list` with 1 key ({args.latency} ms per command in each key)",
                        ms(f4), ms(f1), f"{f4 / f1:.2f}x", "≤ 1.5x (keys probed in parallel)", f4 / f1 <= 1.5,
                        f"{f4 / f1 / 1.5:.2f}x over"))
        # Every key at once: `oath code --all-keys` on those keys against `oath code` on one, same latency.
        codes = interleaved({"all": ([YKTERM, "oath", "code", "--all-keys"], env4),
                             "one": ([YKTERM, "oath", "code"], env1)}, args.runs)
        c4, c1 = med(codes["all"]["s"]), med(codes["one"]["s"])
        results["oath_all_keys"] = {"all_s": c4, "one_s": c1, "keys": n4, "latency_ms": args.latency}
        rows.append(Row(f"`oath code --all-keys` with {n4} keys vs `oath code` with 1 key ({args.latency} ms per command)",
                        ms(c4), ms(c1), f"{c4 / c1:.2f}x", "≤ 1.5x (keys asked in parallel)", c4 / c1 <= 1.5,
                        f"{c4 / c1 / 1.5:.2f}x over"))
        # An idle TUI over every key at once (the all-keys view: each key read, its codes calculated at each period
        # boundary on a connection of its own) against the TUI on one key, each alone for --idle-keys seconds after
        # its first codes.
        (work / "config-all" / "ykterm").mkdir(parents=True, exist_ok=True)
        (work / "config-all" / "ykterm" / "config.toml").write_text("[oath]\nall_keys = true\n")
        idle_cpu, method = {"four": [], "one": []}, "cgroup"
        for _ in range(args.idle_keys_runs):
            for name, idle_env in (("four", pcsc.env(XDG_CONFIG_HOME=str(work / "config-all"))),
                                   ("one", single.env(XDG_CONFIG_HOME=str(work / "config-all")))):
                tui = Pty([str(YKTERM)], idle_env, started=time.perf_counter())
                window = CPUWindow(tui.proc)
                try:
                    tui.read_until(r"\d{3} \d{3}")
                    if name == "four":
                        tui.read_until(r"Keys:")
                    # Every key read and drawn: the screen settles.
                    tui.quiet(1.0, timeout=15)
                    window.start()
                    tui.drain(args.idle_keys)
                    window.stop()
                finally:
                    tui.close()
                    window.remove()
                idle_cpu[name].append(window.seconds(tui.rusage))
                if window.method != "cgroup":
                    method = window.method
        i4, i1 = med(idle_cpu["four"]), med(idle_cpu["one"])
        results["idle_keys"] = {"seconds": args.idle_keys, "four_cpu_s": i4, "one_cpu_s": i1, "keys": n4,
                                "runs": idle_cpu, "measured_by": method}
        rows.append(Row(f"TUI idle {args.idle_keys:.0f} s over every key ({n4} keys, all-keys view) vs one key "
                        f"(CPU of the idle time alone, from {'a cgroup' if method == 'cgroup' else 'rusage'}; "
                        f"medians of {args.idle_keys_runs})",
                        f"{i4 * 1000:.0f} ms CPU", f"{i1 * 1000:.0f} ms CPU", f"{i4 / i1:.2f}x",
                        "≤ 1.5x (keys wake only at period boundaries)", i4 / i1 <= 1.5, f"{i4 / i1 / 1.5:.2f}x over"))
        slow0.stop()
        keys.remove(slow0)
        # Each reader is empty again before the TUI rows start (pcscd notices a key gone at its next poll).
        for k_ in four:
            k_.stop()
            keys.remove(k_)
        one.stop(wait=False)
        keys.remove(one)
        key = pcsc.serve(0, work / "key32.json", ("--accounts", "32", "--log-apdus")).start()
        keys.append(key)

        # The TUI: start to first codes, less the key's own time (the C reference's time in SCardTransmit for
        # the same APDUs); then idle beside `watch -n 1 ykman oath accounts code` on a key of its own.
        starts, start_apdus = [], None
        for i in range(args.runs):
            before = apdus(key)
            p = Pty([str(YKTERM), "--reader", key.reader], env)
            try:
                starts.append(p.read_until(r"\d{3} \d{3}"))
            finally:
                p.close()
            if i == 0:
                start_apdus = apdu_headers(key, before)
        start = med(starts)
        results["tui_start"] = {"s": start, "key_time_s": key_time, "apdus": start_apdus}
        rows.append(Row("TUI: start to first codes on screen, minus the key's own time",
                        f"{ms(start - key_time)} ({ms(start)} - {ms(key_time)})", "-", "-", "≤ 10 ms",
                        start - key_time <= 0.010, f"{(start - key_time) * 1000 - 10:.1f} ms over"))

        peer_key = pcsc.serve(1, work / "peer32.json", ("--accounts", "32", "--log-apdus")).start()
        keys.append(peer_key)
        peer_env = pcsc.env(XDG_CONFIG_HOME=str(work / "config"))
        watch_cmd = f"{YKMAN} --reader '{peer_key.reader}' oath accounts code"
        peer_before = apdus(peer_key)
        t0 = time.perf_counter()
        mine = Pty([str(YKTERM), "--reader", key.reader], env, started=t0)
        peer = Pty(["watch", "-n", "1", watch_cmd], peer_env, started=t0)
        mine.read_until(r"\d{3} \d{3}")
        # Idle is what follows the first codes (the start has its row above): the CPU so far is taken off the total.
        # Threads already gone are not in this sum, which can only make the idle figure larger.
        start_cpu = task_cpu(mine.proc.pid)
        after_start = apdus(key)
        threading.Thread(target=peer.drain, args=(args.idle,), daemon=True).start()
        # The APDU count in the middle of each 30 s period, far from the boundaries where the TUI refreshes: the
        # difference between two marks is one refresh.
        marks = []
        deadline = t0 + args.idle
        while True:
            to_mid = (15 - time.time() % 30) % 30 or 30
            if time.perf_counter() + to_mid >= deadline:
                mine.drain(max(0, deadline - time.perf_counter()))
                break
            mine.drain(to_mid)
            marks.append(apdus(key))
        with open(f"/proc/{mine.proc.pid}/status") as f:
            tui_rss = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
        idle_headers = apdu_headers(key, after_start)
        peer_apdus = apdus(peer_key) - peer_before
        mine.close()
        peer.close(sig=signal.SIGINT)
        total_mine = mine.rusage.ru_utime + mine.rusage.ru_stime
        cpu_mine = total_mine - start_cpu
        cpu_peer = peer.rusage.ru_utime + peer.rusage.ru_stime
        results["idle"] = {"seconds": args.idle, "ykterm_cpu_s": cpu_mine, "ykterm_cpu_with_start_s": total_mine,
                           "peer_cpu_s": cpu_peer, "ykterm_rss_kib": tui_rss, "ykterm_idle_apdus": idle_headers,
                           "peer_apdus": peer_apdus}
        rows.append(Row(f"TUI idle {args.idle:.0f} s, 32 accounts, vs `watch -n1 ykman oath accounts code`",
                        f"{cpu_mine * 1000:.0f} ms CPU after the first codes ({total_mine * 1000:.0f} ms with the start)",
                        f"{cpu_peer:.2f} s CPU", f"{cpu_peer / cpu_mine:.0f}x less", "≥ 200x less",
                        cpu_peer / cpu_mine >= 200, f"{200 / (cpu_peer / cpu_mine):.2f}x too much"))
        # APDUs per refresh, against what the C reference sends for the same codes: the protocol's minimum on a key
        # shared through pcscd (SELECT, since another program may have selected another application meanwhile;
        # CALCULATE ALL; SEND REMAINING for each further part of the answer).
        per_refresh = [b - a for a, b in zip(marks, marks[1:])]
        refresh = apdu_headers(key, marks[0], marks[1]) if len(marks) > 1 else []
        minimum = len(c_headers)
        results["refresh"] = {"apdus": refresh, "per_refresh": per_refresh, "minimum": minimum}
        rows.append(Row("APDUs per TOTP refresh (TUI, 32 accounts)",
                        f"{len(refresh)}: {describe_headers(refresh)}", f"{minimum}: {describe_headers(c_headers)}",
                        "-", "the protocol minimum (the C reference's)", 0 < len(refresh) <= minimum,
                        f"{len(refresh) - minimum} more" if refresh else "no refresh seen"))

        # The same key plugged in as a USB key (root, FUSE): FIDO over HID against libfido2's fido2-token and the
        # C reference, and the earlier ykman rows; measured inside its namespace by bench_usb.py.
        usb = None
        if os.geteuid() == 0 and os.path.exists("/dev/fuse"):
            r = subprocess.run([str(YKTERM), "virtual-key", "serve", "--usb", "--accounts", "32", "--state",
                                str(work / "usb.json"), "--", sys.executable,
                                str(Path(__file__).resolve().parent / "bench_usb.py"), str(args.runs)],
                               capture_output=True, text=True, timeout=1800,
                               env=dict(os.environ, XDG_CONFIG_HOME=str(work / "config-usb"),
                                        BENCH_REFS=str(REFS)))
            if r.returncode != 0:
                raise RuntimeError("USB bench failed: " + r.stderr[-3000:])
            usb = json.loads(r.stdout.strip().splitlines()[-1])
            results["usb"] = usb
            s = usb["fido_info"]
            y, t, c = med(s["ykterm"]), med(s["fido2-token"]), med(s["c"])
            rows.append(Row(f"`fido info` over HID vs `fido2-token -I` on the same node (C reference: {ms(c)})",
                            ms(y), ms(t), f"{y / t:.2f}x", "≤ 1.5x", y / t <= 1.5, f"{y / t / 1.5:.2f}x over"))
            s = usb["credentials"]
            y, t = med(s["ykterm"]), med(s["fido2-token"])
            rows.append(Row(f"`fido credentials list` ({s['count']} credentials) vs `fido2-token -L -r`", ms(y), ms(t),
                            f"{y / t:.2f}x", "≤ 1.5x", y / t <= 1.5, f"{y / t / 1.5:.2f}x over"))
        else:
            rows.append(Row("FIDO over HID rows", "skipped: need root and /dev/fuse", "-", "-", "-", False, "skipped"))

        # 1000 accounts (beyond any hardware): list + calculate all.
        big = pcsc.serve(1, work / "key1000.json", ("--accounts", "1000", "--log-apdus"))
        peer_key.stop()
        keys.remove(peer_key)
        big.start()
        keys.append(big)
        big_env = dict(env, YKTERM_READER=big.reader)
        before = apdus(big)
        big_walls = interleaved({"big": ([YKTERM, "oath", "code", "--json"], big_env)}, args.runs, rss_runs=0)
        results["1000"] = {"code_s": med(big_walls["big"]["s"]), "apdus": (apdus(big) - before) // args.runs}

        # Where start-up goes, and the C references beside.
        breakdown_cmds = [
            {"name": "ykterm oath code", "argv": [str(YKTERM), "oath", "code"], "env": env, "ykterm": True},
            {"name": "C: pcsc_ref oath-code", "argv": [str(PCSC_REF), "oath-code", key.reader], "env": env},
            {"name": "ykterm --version", "argv": [str(YKTERM), "--version"], "env": env, "ykterm": True},
            *([{"name": "ykterm --version (package link)", "argv": [str(SHARED), "--version"], "env": env,
                "ykterm": True}] if SHARED else []),
            {"name": "C: version_ref", "argv": [str(VERSION_REF)], "env": env},
            {"name": "Swift: swift_floor", "argv": [str(SWIFT_FLOOR)], "env": env},
            {"name": "argparse_floor --version", "argv": [str(ARGPARSE_FLOOR), "--version"], "env": env,
             "ykterm": True},
            {"name": "ykterm list (1 key)", "argv": [str(YKTERM), "list"], "env": env, "ykterm": True},
        ]
        breakdown = None
        if os.geteuid() == 0:  # uprobes and tracefs
            breakdown = startup.run_isolated(breakdown_cmds, args.runs)
            results["startup"] = breakdown
    finally:
        for k_ in keys:
            k_.stop(wait=False)
        pcsc.cleanup()
        single.cleanup()
        shutil.rmtree(work, ignore_errors=True)

    cpu_model = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                      if l.startswith("model name")), platform.machine())
    load = os.getloadavg()
    print(f"ykterm benchmark, {time.strftime('%Y-%m-%d %H:%M')}: {args.runs} runs of each, medians, sides interleaved; "
          f"{os.cpu_count()} cores, {cpu_model}; {platform.platform()}; load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f} at the end")
    print()
    print("| what | ykterm | reference | ratio | goal | met |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row.cells) + " |")
    for n in notes:
        print(f"Note: {n}")
    print()
    print(f"APDUs of `oath code`: ykterm {describe_headers(results['oath_code']['ykterm_apdus'])}; "
          f"the C reference {describe_headers(results['oath_code']['c_apdus'])}. TUI start: "
          f"{describe_headers(results['tui_start']['apdus'])}. Idle: {len(results['idle']['ykterm_idle_apdus'])} APDUs "
          f"in {args.idle:.0f} s (per refresh {results['refresh']['per_refresh']}); ykman under watch "
          f"{results['idle']['peer_apdus']}.")
    v = results["version"]
    print(f"Start-up floors (same runs as --version): the C program {ms(v['c_s'])}; a Swift program that prints a line "
          f"{ms(v['swift_floor_s'])} ({v['swift_floor_s'] / v['c_s']:.2f}x); one that parses its arguments with "
          f"ArgumentParser, `argparse_floor --version` {ms(v['argparse_floor_s'])} "
          f"({v['argparse_floor_s'] / v['c_s']:.2f}x); `ykterm --version` {ms(v['ykterm_s'])} "
          f"({v['ykterm_s'] / v['c_s']:.2f}x).")
    if "package_link" in results:
        p = results["package_link"]
        print()
        print(f"The Debian package's link (make release-shared: {len(p['libraries'])} shared libraries, "
              f"{', '.join(p['libraries'])}; PIE) beside the release build, in the same runs:")
        print("| what | release build | package link | the package's cost |")
        print("|---|---|---|---|")
        for name, label in (("version", "`--version`"), ("oath_code", "`oath code`, 32 accounts")):
            r, d = p[name]["ykterm"], p[name]["shared"]
            print(f"| {label} | {ms(r['s'])}, {mib(r['rss_kib'])} | {ms(d['s'])}, {mib(d['rss_kib'])} | "
                  f"{(d['s'] - r['s']) * 1000:+.2f} ms, {(d['rss_kib'] - r['rss_kib']) / 1024:+.1f} MiB |")
    else:
        print()
        print("The Debian package's link: not measured (YKTERM_SHARED_BIN unset; `make bench` sets it).")
    print()
    print("Peak memory (RSS):")
    print("| what | ykterm | C reference | ykman |")
    print("|---|---|---|---|")
    o = results["oath_code"]
    print(f"| `oath code`, 32 accounts | {mib(o['ykterm_rss_kib'])} | {mib(o['c_rss_kib'])} (pcsc_ref) | "
          f"{mib(o['ykman_rss_kib'])} |")
    print(f"| TUI after {args.idle:.0f} s idle | {mib(results['idle']['ykterm_rss_kib'])} | {mib(o['c_rss_kib'])} "
          f"(pcsc_ref) | - |")
    v = results["version"]
    print(f"| `--version` | {mib(v['ykterm_rss_kib'])} | {mib(v['c_rss_kib'])} (version_ref) | - |")
    print()
    v = results["versus_ykman"]
    print("Against ykman, the other rows:")
    print("| what | ykterm | ykman | ratio |")
    print("|---|---|---|---|")
    for name, label in (("list", "`list` (one key)"), ("pin", "`fido pin change`"), ("info", "`fido info` (PC/SC)")):
        print(f"| {label} | {ms(v[name + ' ykterm'])} | {ms(v[name + ' ykman'])} | "
              f"{v[name + ' ykman'] / v[name + ' ykterm']:.1f}x faster |")
    if usb:
        for name, label in (("oath_ccid", "USB key: `oath code` over CCID"), ("list_usb", "USB key: `list`"),
                            ("info_ykman", "USB key: `fido info` over FIDO HID")):
            s = usb[name]
            print(f"| {label} | {ms(med(s['ykterm']))} | {ms(med(s['ykman']))} | "
                  f"{med(s['ykman']) / med(s['ykterm']):.1f}x faster |")
        print(f"| USB key: TUI start to first codes | {ms(usb['start_s'])} | - | - |")
    print(f"| 1000 accounts: `oath code --json` | {ms(results['1000']['code_s'])} ({results['1000']['apdus']} APDUs) "
          f"| - | - |")
    if breakdown:
        print()
        print("Where the time goes (ms, medians of the phases over the runs; Tests/Bench/startup.py):")
        print(startup.table(breakdown, [c["name"] for c in breakdown_cmds]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
