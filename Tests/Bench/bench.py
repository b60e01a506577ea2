"""`make bench`: ykterm against ykman on the same virtual key, served through a private pcscd.

Every row is measured in the same run, the two sides interleaved, and reported as medians and ratios.
This is a benchmark, not a test: it asserts nothing, it prints a table (and a JSON copy with --json FILE).
"""

import argparse
import fcntl
import json
import os
import platform
import re
import select
import shlex
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Integration"))
from harness import YKTERM, VENV_BIN, PrivatePCSC, ServedKey, stop_pid  # noqa: E402

YKMAN = VENV_BIN / "ykman"
CLK_TCK = os.sysconf("SC_CLK_TCK")


GNU_TIME = shutil.which("time", path="/usr/bin:/bin") or "/usr/bin/time"


def measure(argv, env, stdin_text=None):
    """Runs argv to the end; returns (wall seconds, peak RSS in KiB).

    The peak RSS comes from GNU time, which forks the command and reports the rusage of that child. Taking the
    rusage of a child of this Python process instead would be wrong: a process started with fork (or vfork) and
    exec keeps, as its peak, the RSS its parent had at the fork, so every command would show at least this
    interpreter's ~16 MiB."""
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as peak:
        started = time.perf_counter()
        p = subprocess.Popen([GNU_TIME, "-f", "%M", "-o", peak.name] + [str(a) for a in argv], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err)
        if stdin_text:
            p.stdin.write(stdin_text.encode())
        p.stdin.close()
        p.wait()
        wall = time.perf_counter() - started
        if p.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(map(str, argv))} exited {p.returncode}: {err.read().decode()[-400:]}")
        return wall, int(peak.read().split()[-1])


def apdus(key):
    """Command APDUs the served key has seen so far (its --log-apdus lines)."""
    key.log.flush()
    return key.log_path.read_text(errors="replace").count("virtual-key: apdu ")


def apdu_headers(key, since):
    lines = [l for l in key.log_path.read_text(errors="replace").splitlines() if "virtual-key: apdu " in l]
    return [l.split("virtual-key: apdu ", 1)[1] for l in lines[since:]]


class Pty:
    """ykterm's TUI on a pseudo-terminal of its own, 100x30."""

    def __init__(self, argv, env):
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        env = dict(env, TERM="xterm-256color", LC_ALL="C.UTF-8", XDG_CONFIG_HOME=tempfile.mkdtemp())
        self.config = env["XDG_CONFIG_HOME"]
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(argv, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.text = ""

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

    def close(self):
        try:
            os.write(self.master, b"q")
            self.proc.wait(timeout=3)
        except (OSError, subprocess.TimeoutExpired):
            stop_pid(self.proc)
        os.close(self.master)
        shutil.rmtree(self.config, ignore_errors=True)


def tmux_cpu(command, env, seconds):
    """Runs `command` in a detached tmux window of its own for `seconds`; returns the CPU seconds of that
    process and the children it waited for (utime + stime + cutime + cstime)."""
    sock = "ykterm-bench-" + uuid.uuid4().hex[:8]
    env = dict(env, TERM="xterm-256color", LC_ALL="C.UTF-8")
    env.pop("TMUX", None)
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "40",
                    "exec " + command], env=env, check=True)
    server = int(subprocess.run(["tmux", "-L", sock, "display-message", "-p", "#{pid}"], env=env,
                                capture_output=True, text=True, check=True).stdout)
    pane = int(subprocess.run(["tmux", "-L", sock, "list-panes", "-F", "#{pane_pid}"], env=env,
                              capture_output=True, text=True, check=True).stdout)
    try:
        time.sleep(seconds)
        fields = Path(f"/proc/{pane}/stat").read_text().rsplit(")", 1)[1].split()
        # Fields 14-17 of stat (utime, stime, cutime, cstime) are at 11..14 after the command name.
        return sum(int(f) for f in fields[11:15]) / CLK_TCK
    finally:
        for pid in (pane, server):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


def ratio(a, b):
    return f"{b / a:.1f}x" if a > 0 else "inf"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=10, help="runs of each command (median; default 10)")
    ap.add_argument("--idle", type=float, default=60, help="seconds of idle TUI (default 60)")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()

    pcsc = PrivatePCSC().start()
    work = Path(tempfile.mkdtemp(prefix="ykterm-bench-"))
    keys = []
    results = {}
    rows = []
    try:
        key = ServedKey(pcsc, slot=0, state=work / "key32.json", extra=("--accounts", "32", "--log-apdus")).start()
        keys.append(key)
        env = pcsc.env(XDG_CONFIG_HOME=str(work / "config"), YKTERM_READER=key.reader)
        ykm = [str(YKMAN), "--reader", key.reader]
        subprocess.run([str(YKTERM), "fido", "pin", "set"], env=env, input="bench-pin-1\n", text=True,
                       check=True, capture_output=True)
        pins = ["bench-pin-1", "bench-pin-2"]

        def pin_pair(i):
            return pins[i % 2], pins[(i + 1) % 2]

        cases = [
            ("oath code, 32 TOTP accounts",
             lambda i: ([str(YKTERM), "oath", "code", "--json"], None),
             lambda i: (ykm + ["oath", "accounts", "code"], None), "20x faster, 1/3 memory"),
            ("list",
             lambda i: ([str(YKTERM), "list", "--json"], None),
             lambda i: ([str(YKMAN), "list"], None), "20x faster"),
            ("fido pin change",
             lambda i: ([str(YKTERM), "fido", "pin", "change"], "%s\n%s\n" % pin_pair(2 * i)),
             lambda i: (ykm + ["fido", "access", "change-pin", "--pin", pin_pair(2 * i + 1)[0],
                               "--new-pin", pin_pair(2 * i + 1)[1]], None), "10x faster"),
            ("fido info",
             lambda i: ([str(YKTERM), "fido", "info", "--json"], None),
             lambda i: (ykm + ["fido", "info"], None), "10x faster"),
        ]
        samples = {name: {"ykterm": [], "ykman": [], "rss_ykterm": [], "rss_ykman": []} for name, *_ in cases}
        counts = {}
        for i in range(args.runs):
            for name, mine, theirs, _ in cases:
                for side, make in (("ykterm", mine), ("ykman", theirs)):
                    argv, stdin_text = make(i)
                    before = apdus(key)
                    wall, rss = measure(argv, env, stdin_text)
                    samples[name][side].append(wall)
                    samples[name]["rss_" + side].append(rss)
                    if i == 0:
                        counts[(name, side)] = apdu_headers(key, before)
        for name, _, _, target in cases:
            s = samples[name]
            a, b = statistics.median(s["ykterm"]), statistics.median(s["ykman"])
            ra, rb = statistics.median(s["rss_ykterm"]), statistics.median(s["rss_ykman"])
            results[name] = {"ykterm_s": a, "ykman_s": b, "ykterm_rss_kib": ra, "ykman_rss_kib": rb,
                             "ykterm_apdus": len(counts[(name, "ykterm")]),
                             "ykman_apdus": len(counts[(name, "ykman")]),
                             "ykterm_apdu_headers": counts[(name, "ykterm")]}
            rows.append((name, f"{a * 1000:.0f} ms, {ra / 1024:.1f} MiB", f"{b * 1000:.0f} ms, {rb / 1024:.1f} MiB",
                         f"{ratio(a, b)} faster, {rb / ra:.1f}x less memory", target,
                         f"{len(counts[(name, 'ykterm')])} / {len(counts[(name, 'ykman')])}"))

        # Idle: the TUI on the OATH tab and `watch -n 1 ykman oath accounts code` side by side, each on a key
        # of its own (same accounts), for the same time.
        peer_key = ServedKey(pcsc, slot=1, state=work / "peer32.json",
                             extra=("--accounts", "32", "--log-apdus")).start()
        keys.append(peer_key)
        peer_env = pcsc.env(XDG_CONFIG_HOME=str(work / "config"))
        before_mine, before_peer = apdus(key), apdus(peer_key)
        import threading
        cpu = {}
        t = threading.Thread(target=lambda: cpu.__setitem__("peer", tmux_cpu(
            "watch -n 1 " + shlex.quote(f"{YKMAN} --reader '{peer_key.reader}' oath accounts code"), peer_env,
            args.idle)))
        t.start()
        cpu["ykterm"] = tmux_cpu(f"{YKTERM} --reader {shlex.quote(key.reader)}", env, args.idle)
        t.join()
        idle_mine, idle_peer = apdus(key) - before_mine, apdus(peer_key) - before_peer
        boundaries = int(args.idle // 30)
        results["idle"] = {"seconds": args.idle, "ykterm_cpu_s": cpu["ykterm"], "peer_cpu_s": cpu["peer"],
                           "ykterm_apdus": idle_mine, "peer_apdus": idle_peer}
        rows.append((f"TUI idle {args.idle:.0f} s, 32 accounts", f"{cpu['ykterm']:.2f} s CPU, {idle_mine} APDUs",
                     f"{cpu['peer']:.2f} s CPU, {idle_peer} APDUs",
                     ("less than one clock tick" if cpu["ykterm"] == 0 else f"{ratio(cpu['ykterm'], cpu['peer'])} less CPU"),
                     "100x less CPU; APDUs only at period boundaries",
                     f"start + {boundaries} or {boundaries + 1} boundaries"))

        # Start to first codes on screen.
        starts = []
        for _ in range(args.runs):
            p = Pty([str(YKTERM), "--reader", key.reader], env)
            try:
                starts.append(p.read_until(r"\d{3} \d{3}"))
            finally:
                p.close()
        results["start_ms"] = statistics.median(starts) * 1000
        rows.append(("TUI start to first codes", f"{results['start_ms']:.0f} ms", "-", "-", "under 100 ms", ""))

        # 1000 accounts (beyond hardware): list + calculate all, and a filter keystroke in the TUI.
        big = ServedKey(pcsc, slot=1, state=work / "key1000.json", extra=("--accounts", "1000", "--log-apdus"))
        peer_key.stop()
        keys.remove(peer_key)
        big.start()
        keys.append(big)
        big_env = dict(env, YKTERM_READER=big.reader)
        walls = []
        for i in range(args.runs):
            before = apdus(big)
            walls.append(measure([str(YKTERM), "oath", "code", "--json"], big_env)[0])
            if i == 0:
                big_apdus = apdus(big) - before
        p = Pty([str(YKTERM), "--reader", big.reader], big_env)
        latencies = []
        try:
            p.read_until(r"\d{3} \d{3}", timeout=30)
            p.quiet()
            p.keystroke_latency(b"/")
            p.quiet()
            for i in range(2 * args.runs):
                # Right after a countdown redraw, so the next one is almost a second away.
                p.read_until(r"$", timeout=2)
                p.quiet(0.03)
                latencies.append(p.keystroke_latency(b"7" if i % 2 == 0 else b"\x7f"))
                p.quiet(0.05)
        finally:
            p.close()
        results["1000"] = {"code_ms": statistics.median(walls) * 1000, "apdus": big_apdus,
                           "filter_keystroke_ms": statistics.median(latencies) * 1000}
        rows.append(("1000 accounts: oath code (list + calculate all)", f"{results['1000']['code_ms']:.0f} ms",
                     "-", "-", "under 200 ms", f"{big_apdus}"))
        rows.append(("1000 accounts: filter keystroke to screen", f"{results['1000']['filter_keystroke_ms']:.1f} ms",
                     "-", "-", "under 10 ms", ""))

        # The same key plugged in as a USB YubiKey (root, FUSE): FIDO over HID, OATH over its CCID interface,
        # one key from three interfaces, and the TUI's start; measured inside its namespace by bench_usb.py.
        if os.geteuid() == 0 and os.path.exists("/dev/fuse"):
            r = subprocess.run([str(YKTERM), "virtual-key", "serve", "--usb", "--accounts", "32", "--state",
                                str(work / "usb.json"), "--", sys.executable,
                                str(Path(__file__).resolve().parent / "bench_usb.py"), str(args.runs)],
                               capture_output=True, text=True, timeout=1200, env=dict(os.environ, XDG_CONFIG_HOME=str(work / "config")))
            if r.returncode != 0:
                raise RuntimeError("USB bench failed: " + r.stderr[-2000:])
            usb = json.loads(r.stdout.strip().splitlines()[-1])
            results["usb"] = usb
            for name, target in (("USB key: fido info over FIDO HID", "10x faster"),
                                 ("USB key: oath code, 32 TOTP accounts over CCID", "20x faster, 1/3 memory"),
                                 ("USB key: list (three interfaces, one key)", "20x faster")):
                s = usb[name]
                rows.append((name, f"{s['ykterm'] * 1000:.0f} ms, {s['rss_ykterm'] / 1024:.1f} MiB",
                             f"{s['ykman'] * 1000:.0f} ms, {s['rss_ykman'] / 1024:.1f} MiB",
                             f"{ratio(s['ykterm'], s['ykman'])} faster, {s['rss_ykman'] / s['rss_ykterm']:.1f}x less memory",
                             target, ""))
            rows.append(("USB key: TUI start to first codes", f"{usb['start_ms']:.0f} ms", "-", "-", "under 100 ms", ""))
        else:
            rows.append(("USB key rows", "skipped: need root and /dev/fuse", "-", "-", "-", ""))
    finally:
        for k in keys:
            k.stop(wait=False)
        pcsc.cleanup()
        shutil.rmtree(work, ignore_errors=True)

    cpu_model = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                      if l.startswith("model name")), platform.machine())
    print(f"ykterm benchmark: {args.runs} runs each, medians, interleaved; {os.cpu_count()} cores, {cpu_model}; "
          f"{platform.platform()}")
    print("| what | ykterm | ykman | ratio | target | APDUs ykterm / ykman |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print("APDU headers per operation (ykterm):")
    for name, _, _, _ in cases:
        print(f"  {name}: " + ", ".join(h.rsplit(" +", 1)[0][3:5] for h in results[name]["ykterm_apdu_headers"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
