"""The USB part of `make bench`, run inside `ykterm virtual-key serve --usb --accounts 32 -- python bench_usb.py`:
the virtual key as a USB YubiKey (CCID on a private pcscd, FIDO and OTP HID as hidraw nodes). ykterm and ykman
side by side, interleaved, medians; prints one JSON object for bench.py's table. Asserts nothing."""

import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import YKMAN, YKTERM, Pty, measure  # noqa: E402


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    env = dict(__import__("os").environ)
    subprocess.run([str(YKTERM), "fido", "pin", "set"], env=env, input="bench-pin-1\n", text=True, check=True,
                   capture_output=True)
    cases = [
        ("USB key: fido info over FIDO HID", [str(YKTERM), "fido", "info", "--json"], [str(YKMAN), "fido", "info"]),
        ("USB key: oath code, 32 TOTP accounts over CCID", [str(YKTERM), "oath", "code", "--json"],
         [str(YKMAN), "oath", "accounts", "code"]),
        ("USB key: list (three interfaces, one key)", [str(YKTERM), "list", "--json"], [str(YKMAN), "list"]),
    ]
    samples = {name: {"ykterm": [], "ykman": [], "rss_ykterm": [], "rss_ykman": []} for name, _, _ in cases}
    for _ in range(runs):
        for name, mine, theirs in cases:
            for side, argv in (("ykterm", mine), ("ykman", theirs)):
                wall, rss = measure(argv, env)
                samples[name][side].append(wall)
                samples[name]["rss_" + side].append(rss)
    out = {name: {k: statistics.median(v) for k, v in s.items()} for name, s in samples.items()}
    starts = []
    for _ in range(runs):
        p = Pty([str(YKTERM)], env)
        try:
            starts.append(p.read_until(r"\d{3} \d{3}"))
        finally:
            p.close()
    out["start_ms"] = statistics.median(starts) * 1000
    print(json.dumps(out))


if __name__ == "__main__":
    main()
