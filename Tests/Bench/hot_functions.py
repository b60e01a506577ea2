"""`make hot-functions`: which functions of the release binary everyday commands run, for the link order.

Runs the release build under valgrind's callgrind against a virtual key with 32 accounts behind a private pcscd
(`oath code`, `oath list`, `list`, `fido info`, a FIDO2 PIN change, `--help`, and the TUI counting down for a
few seconds), collects every function of the ykterm binary that executed, and writes them as input-section
names (`.text.<symbol>`), one per line, to Resources/link/hot-functions.txt. `make release` hands that file to
the linker (`--section-ordering-file`), which places those functions next to each other: the pages a run
touches are then a few hundred kilobytes together instead of being spread over the whole 20 MiB of code,
and each process maps (and keeps resident) correspondingly less.

Only which functions run matters, not how often: the file changes when the code does, and a stale entry
(a renamed function) is simply not found. Regenerate it after larger changes; nothing breaks when it is old.
"""

import argparse
import os
import re
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Integration"))
from harness import PrivatePCSC, ServedKey, stop_pid  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "Resources" / "link" / "hot-functions.txt"


def executed_functions(profile, binary):
    """Names of the functions of `binary` that ran, from a callgrind profile (first seen first)."""
    objects, names, seen = {}, [], set()
    current = called = ""
    spec = re.compile(r"^(ob|cob|fn|cfn)=\((\d+)\)(?: (.*))?$")
    fn_objects = {}
    for line in Path(profile).read_text(errors="replace").splitlines():
        m = spec.match(line)
        if not m:
            continue
        kind, number, name = m.groups()
        if kind in ("ob", "cob"):
            if name:
                objects[number] = name
            if kind == "ob":
                current = called = objects.get(number, "")
            else:
                called = objects.get(number, "")
            continue
        owner = current if kind == "fn" else called
        if kind == "fn":
            called = current
        if name:
            fn_objects[number] = owner
        if fn_objects.get(number) != binary or not name:
            continue
        # Addresses without a symbol and callgrind's own pseudo-entries are no section names.
        if name.startswith("0x") or name.startswith("("):
            continue
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def callgrind(argv, env, out, stdin_text=None):
    cmd = ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}"] + argv
    subprocess.run(cmd, env=env, input=stdin_text, text=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=300)


def tui(binary, env, out, seconds):
    """The TUI on a pseudo-terminal of its own, left counting down, then quit with `q`."""
    master, slave = os.openpty()
    env = dict(env, TERM="xterm-256color", LC_ALL="C.UTF-8")
    argv = ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}", binary]
    proc = subprocess.Popen(argv, env=env, stdin=slave, stdout=slave, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    os.close(slave)
    deadline = time.monotonic() + seconds
    try:
        # Keep reading what it draws, so its writes never block on a full terminal.
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    os.read(master, 65536)
                except OSError:
                    break
        os.write(master, b"q")
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            stop_pid(proc)
        os.close(master)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=str(ROOT / ".build" / "release" / "ykterm"))
    ap.add_argument("--output", default=str(OUTPUT))
    ap.add_argument("--tui-seconds", type=float, default=8)
    args = ap.parse_args()
    binary = os.path.realpath(args.binary)

    pcsc = PrivatePCSC().start()
    work = Path(tempfile.mkdtemp(prefix="ykterm-hot-"))
    key = None
    try:
        key = ServedKey(pcsc, slot=0, state=work / "key.json", extra=("--accounts", "32")).start()
        env = pcsc.env(XDG_CONFIG_HOME=str(work / "config"), YKTERM_READER=key.reader)
        subprocess.run([binary, "fido", "pin", "set"], env=env, input="hot-pin-1\n", text=True, check=True,
                       capture_output=True)
        runs = [
            (["oath", "code", "--json"], None),
            (["oath", "code"], None),
            (["oath", "list"], None),
            (["list", "--json"], None),
            (["list"], None),
            (["fido", "info", "--json"], None),
            (["fido", "pin", "change"], "hot-pin-1\nhot-pin-2\n"),
            (["--help"], None),
        ]
        profiles = []
        for i, (argv, stdin_text) in enumerate(runs):
            out = work / f"run{i}.out"
            callgrind([binary] + argv, env, out, stdin_text)
            profiles.append(out)
        out = work / "tui.out"
        tui(binary, env, out, args.tui_seconds)
        profiles.append(out)

        names, seen = [], set()
        for profile in profiles:
            if not profile.exists():
                raise SystemExit(f"no profile written for {profile.name}: is valgrind installed?")
            for name in executed_functions(profile, binary):
                if name not in seen:
                    seen.add(name)
                    names.append(name)
        Path(args.output).write_text("".join(f".text.{name}\n" for name in names))
        print(f"{len(names)} functions written to {args.output}")
    finally:
        if key:
            key.stop()
        pcsc.cleanup()
        subprocess.run(["rm", "-rf", str(work)])


if __name__ == "__main__":
    main()
