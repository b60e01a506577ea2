"""Where a command's time goes, from the moment it is started to the moment it is gone: `make bench`'s start-up
breakdown.

Each run is timed from outside (the clock read just before the process is spawned and just after it is reaped)
and cut into phases by kernel trace events taken in the same run, on the same clock (the tracefs clock `mono`
is CLOCK_MONOTONIC, which Python's perf_counter reads):

  spawn to exec          fork and exec of the binary (sched_process_exec)
  exec to _start         mapping the binary, loading and relocating the shared libraries, their initialisers
  _start to main         the executable's own static initialisers (Swift runtime, Dispatch, FoundationEssentials)
  main to Ykterm.main    the first top-level statements and the start of the command's task (concurrency runtime)
  argument parsing       ArgumentParser's parseAsRoot, entry to return
  config                 LoadedConfig.load, entry to return
  string tables          StringTables.load, entry to return (every call; nothing when a command needs none)
  PC/SC context          SCardEstablishContext, entry to return
  PC/SC reader states    PCSCContext.status, entry to return (the readers and whether a card is in each)
  HID scan, HID open     HIDScan.scan (the hidraw nodes, read from sysfs) and hid_open_path, entry to return
  APDUs                  from the first SCardTransmit to the last one's return
  CTAPHID messages       from the first hid_write to the last hid_read_timeout's return
  the work itself        everything else up to _exit: connecting, the sessions, the output
  exit                   from _exit to the process being reaped

The points are uprobes (breakpoints the kernel places on a function's first instruction, or on its return) on
the binary's own symbols and on libpcsclite's and libc's; each costs a trap of about a microsecond, and a run
hits a few dozen. They need root and tracefs: the script mounts a tracefs of its own in a private mount namespace
(`unshare -m`, which `run_isolated` starts) and uses a tracing instance of its own, so nothing of the machine's
tracing set-up is touched; the probes it defines are removed when it ends. It measures, it asserts nothing.
"""

import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRACEFS = Path("/sys/kernel/tracing")
LIBPCSCLITE = "/lib/x86_64-linux-gnu/libpcsclite.so.1"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"

# (event, symbol, on return) for the ykterm binary; a symbol may have several specialised copies, all probed.
YKTERM_POINTS = [
    ("start", "_start", False),
    ("main", "main", False),
    ("ymain", "$s6ykterm6YktermV4main9argumentss5Int32VSaySSG_tYaFZ", False),
    ("parse", "$s14ArgumentParser15ParsableCommandPAAE11parseAsRootyAaB_pSaySSGSgKFZ", False),
    ("parse_ret", "$s14ArgumentParser15ParsableCommandPAAE11parseAsRootyAaB_pSaySSGSgKFZ", True),
    ("config", "$s6ykterm12LoadedConfigO4load11environmentySDyS2SG_tKFZ", False),
    ("config_ret", "$s6ykterm12LoadedConfigO4load11environmentySDyS2SG_tKFZ", True),
    ("strings", "$s18AuthenticatorModel12StringTablesV4load8language11directoriesACSS_SaySSGtFZ", False),
    ("strings_ret", "$s18AuthenticatorModel12StringTablesV4load8language11directoriesACSS_SaySSGtFZ", True),
    ("status", "$s6KeyKit11PCSCContextC6statusSayAA12ReaderStatusVGyKF", False),
    ("status_ret", "$s6KeyKit11PCSCContextC6statusSayAA12ReaderStatusVGyKF", True),
    ("hidscan", "$s6KeyKit7HIDScanO4scanSayAA8FoundHIDVG5found_Sb8settlingtyFZ", False),
    ("hidscan_ret", "$s6KeyKit7HIDScanO4scanSayAA8FoundHIDVG5found_Sb8settlingtyFZ", True),
    ("hidopen", "hid_open_path", False),
    ("hidopen_ret", "hid_open_path", True),
    ("hidw", "hid_write", False),
    ("hidr_ret", "hid_read_timeout", True),
]
# For the C references: the same start points.
C_POINTS = [("start", "_start", False), ("main", "main", False)]
LIBRARY_POINTS = [
    (LIBPCSCLITE, "pcsc", "SCardEstablishContext", False),
    (LIBPCSCLITE, "pcsc_ret", "SCardEstablishContext", True),
    (LIBPCSCLITE, "tx", "SCardTransmit", False),
    (LIBPCSCLITE, "tx_ret", "SCardTransmit", True),
    (LIBC, "exit", "_exit", False),
]

PHASES = [
    ("spawn to exec", "fork and exec"),
    ("exec to _start", "loading, dynamic linking, the libraries' initialisers"),
    ("_start to main", "static initialisers: Swift runtime, Dispatch, FoundationEssentials"),
    ("main to Ykterm.main", "first statements, the command's task and the concurrency runtime"),
    ("argument parsing", "ArgumentParser's parseAsRoot"),
    ("config", "LoadedConfig.load"),
    ("string tables", "StringTables.load"),
    ("PC/SC context", "SCardEstablishContext"),
    ("PC/SC reader states", "PCSCContext.status: the readers and their cards"),
    ("HID scan", "HIDScan.scan: the hidraw nodes, read from sysfs"),
    ("HID open", "hid_open_path"),
    ("APDUs", "from the first SCardTransmit to the last one's return"),
    ("CTAPHID messages", "from the first hid_write to the last hid_read_timeout's return"),
    ("the work itself", "everything else before _exit: connect, sessions, output"),
    ("exit", "_exit to reaped"),
]


class ELF:
    """Symbols and loadable segments of an ELF file (enough to place a uprobe: file offsets of functions)."""

    def __init__(self, path):
        self.path = os.path.realpath(path)
        data = Path(self.path).read_bytes()
        if data[:4] != b"\x7fELF" or data[4] != 2:
            raise ValueError(f"{path}: not a 64-bit ELF file")
        phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
        self.segments = []
        for i in range(phnum):
            p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
            if p_type == 1:
                self.segments.append((p_vaddr, p_offset, p_filesz))
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        self.symbols = {}
        for kind in (2, 11):  # SHT_SYMTAB, then SHT_DYNSYM
            for s in sections:
                if s[1] != kind:
                    continue
                strtab = sections[s[6]]
                str_off = strtab[4]
                for j in range(s[5] // 24):
                    name_off, info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", data, s[4] + j * 24)
                    if info & 0xF != 2 or shndx == 0 or value == 0:  # functions defined here
                        continue
                    end = data.index(b"\0", str_off + name_off)
                    name = data[str_off + name_off:end].decode("utf-8", "replace")
                    self.symbols.setdefault(name.split("@")[0], value)

    def offset(self, vaddr):
        for start, off, size in self.segments:
            if start <= vaddr < start + size:
                return vaddr - start + off
        raise ValueError(f"{self.path}: address {vaddr:#x} in no segment")

    def offsets(self, symbol):
        """File offsets of the function `symbol` and of its specialised copies (the same name followed by Tf...)."""
        found = sorted({v for name, v in self.symbols.items() if name == symbol or name.startswith(symbol + "Tf")})
        return [self.offset(v) for v in found]


def _append(path, line):
    """Appends one line to a tracefs control file (Python's append mode seeks, which tracefs refuses)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


class Tracer:
    """Uprobes and two scheduler tracepoints in a tracing instance of our own, on the CLOCK_MONOTONIC clock."""

    def __init__(self, binaries):
        self.group = f"ykb{os.getpid()}"
        self.instance = TRACEFS / "instances" / self.group
        self.defined = []
        self.binaries = binaries

    def __enter__(self):
        if not (TRACEFS / "uprobe_events").exists():
            subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=True)
        try:
            self._set_up()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _set_up(self):
        n = 0
        for binary, points in self.binaries:
            elf = ELF(binary)
            for event, symbol, ret in points:
                for off in elf.offsets(symbol):
                    self._define(f"{event}__{n}", elf.path, off, ret)
                    n += 1
        for library, event, symbol, ret in LIBRARY_POINTS:
            elf = ELF(library)
            for off in elf.offsets(symbol):
                self._define(f"{event}__{n}", elf.path, off, ret)
                n += 1
        self.instance.mkdir()
        (self.instance / "trace_clock").write_text("mono")
        (self.instance / "options" / "record-tgid").write_text("1")
        (self.instance / "buffer_size_kb").write_text("8192")
        (self.instance / "events" / self.group / "enable").write_text("1")
        for tp in ("sched_process_exec", "sched_process_exit"):
            (self.instance / "events" / "sched" / tp / "enable").write_text("1")

    def _define(self, name, path, offset, ret):
        _append(TRACEFS / "uprobe_events", f"{'r' if ret else 'p'}:{self.group}/{name} {path}:{offset:#x}\n")
        self.defined.append(name)

    def __exit__(self, *exc):
        if self.instance.exists():
            (self.instance / "events" / "enable").write_text("0")
            self.instance.rmdir()
        for name in self.defined:
            _append(TRACEFS / "uprobe_events", f"-:{self.group}/{name}\n")

    def take(self):
        """The events recorded since the last call: (pid, seconds, event), oldest first; the buffer is cleared."""
        text = (self.instance / "trace").read_text()
        (self.instance / "trace").write_text("")
        events = []
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            # "  comm-TID (TGID) [CPU] flags  SECONDS: EVENT: ..." (comm may hold spaces, dashes, parentheses)
            try:
                head, rest = line.split("] ", 1)
                tgid = head.rsplit("[", 1)[0].strip().rsplit("(", 1)[1].rstrip(")").strip()
                pid = int(tgid) if tgid.isdigit() else int(head.rsplit("(", 1)[0].strip().rsplit("-", 1)[1])
                fields = rest.split()
                seconds = float(fields[1].rstrip(":"))
                event = fields[2].rstrip(":").split("__")[0]
            except (ValueError, IndexError):
                continue
            if event == "sched_process_exit" and "group_dead=true" not in line:
                continue
            events.append((pid, seconds, event, line))
        return events


def phases_of(events, pid, spawned, reaped):
    """One run's phases in seconds from its events (None for a phase the run did not pass through)."""
    mine = [(t, e) for p, t, e, _ in events if p == pid or (e == "sched_process_exit" and f"pid={pid} " in _)]
    first = {}
    last = {}
    totals = {"config": 0.0, "strings": 0.0, "pcsc": 0.0, "status": 0.0, "hidscan": 0.0, "hidopen": 0.0}
    opened = {}
    for t, e in mine:
        first.setdefault(e, t)
        last[e] = t
        base = e[:-4] if e.endswith("_ret") else e
        if base in totals:
            if e.endswith("_ret") and base in opened:
                totals[base] += t - opened.pop(base)
            elif not e.endswith("_ret"):
                opened[base] = t
    exec_t = first.get("sched_process_exec")
    start, main, ymain = first.get("start"), first.get("main"), first.get("ymain")
    exit_t = first.get("exit", reaped)
    out = {
        "spawn to exec": exec_t - spawned if exec_t else None,
        "exec to _start": start - exec_t if start and exec_t else None,
        "_start to main": main - start if main and start else None,
        "main to Ykterm.main": ymain - main if ymain and main else None,
        "argument parsing": (first["parse_ret"] - first["parse"]) if "parse_ret" in first and "parse" in first else None,
        "config": totals["config"] if "config" in first else None,
        "string tables": totals["strings"] if "strings" in first else None,
        "PC/SC context": totals["pcsc"] if "pcsc" in first else None,
        "PC/SC reader states": totals["status"] if "status" in first else None,
        "HID scan": totals["hidscan"] if "hidscan" in first else None,
        "HID open": totals["hidopen"] if "hidopen" in first else None,
        "APDUs": (last["tx_ret"] - first["tx"]) if "tx" in first and "tx_ret" in last else None,
        "CTAPHID messages": (last["hidr_ret"] - first["hidw"]) if "hidw" in first and "hidr_ret" in last else None,
        "exit": reaped - exit_t if "exit" in first else None,
    }
    accounted = sum(v for k, v in out.items() if v is not None)
    out["the work itself"] = (reaped - spawned) - accounted
    out["total"] = reaped - spawned
    return out


def measure(commands, runs):
    """commands: [{"name", "argv", "env"}]; runs each `runs` times, interleaved; medians per phase (ms)."""
    binaries = {}
    for c in commands:
        exe = os.path.realpath(c["argv"][0])
        binaries[exe] = YKTERM_POINTS if c.get("ykterm") else C_POINTS
    samples = {c["name"]: [] for c in commands}
    with Tracer(list(binaries.items())) as tracer:
        for _ in range(runs):
            for c in commands:
                tracer.take()
                spawned = time.perf_counter()
                p = subprocess.Popen(c["argv"], env=c["env"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
                p.wait()
                reaped = time.perf_counter()
                if p.returncode != 0:
                    raise RuntimeError(f"{c['argv']} exited {p.returncode}")
                samples[c["name"]].append(phases_of(tracer.take(), p.pid, spawned, reaped))
    result = {}
    for name, runs_ in samples.items():
        result[name] = {}
        for key in [k for k, _ in PHASES] + ["total"]:
            values = [r[key] for r in runs_ if r[key] is not None]
            result[name][key] = statistics.median(values) * 1000 if len(values) == len(runs_) else None
    return result


def run_isolated(commands, runs, python=sys.executable):
    """Runs `measure` in a private mount namespace (where it may mount tracefs) and returns its result."""
    with tempfile.TemporaryDirectory(prefix="ykterm-startup-") as d:
        spec = Path(d) / "spec.json"
        out = Path(d) / "out.json"
        spec.write_text(json.dumps({"commands": commands, "runs": runs}))
        subprocess.run(["unshare", "--mount", "--propagation", "private", python, __file__, str(spec), str(out)],
                       check=True)
        return json.loads(out.read_text())


def table(result, order):
    """The breakdown as Markdown, one column per command."""
    lines = ["| phase | " + " | ".join(order) + " |", "|---|" + "---|" * len(order)]
    for key, what in PHASES + [("total", "spawn to reaped")]:
        cells = []
        for name in order:
            v = result[name].get(key)
            cells.append("-" if v is None else f"{v:.2f}")
        label = f"**{key}** ({what})" if key == "total" else f"{key} ({what})"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    spec = json.loads(Path(sys.argv[1]).read_text())
    Path(sys.argv[2]).write_text(json.dumps(measure(spec["commands"], spec["runs"])))
