"""Sanitizer reports of a soak or a storm run against a ykterm built with --sanitize=thread or address.

`make soak SOAK_SANITIZER=thread` (or address; `make storm STORM_SANITIZER=...` alike) sets TSAN_OPTIONS or
ASAN_OPTIONS (and LSAN_OPTIONS) with log_path=DIR/report: every sanitized process the run starts (the TUI, the
served keys, `oath code`, the plug commands) then writes each report to DIR/report.PID instead of its standard
error, where a TUI's report would be lost with its screen. soak.py and storm.py read them at the end with
`reports()`, and a report fails the run.
"""

import glob
import os
import re

VARIABLES = ("TSAN_OPTIONS", "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS")


def log_paths(environ=None):
    """The log_path prefixes the sanitizer option variables name."""
    environ = os.environ if environ is None else environ
    paths = []
    for var in VARIABLES:
        # Options are separated by colons or spaces: log_path=/x/report:halt_on_error=0
        m = re.search(r"(?:^|[:\s])log_path=([^:\s]+)", environ.get(var, ""))
        if m and m.group(1) not in ("stderr", "stdout") and m.group(1) not in paths:
            paths.append(m.group(1))
    return paths


def reports(environ=None, limit=20000):
    """[(file, text)] of every report file written under the log paths, the text cut to `limit` characters."""
    found = []
    for prefix in log_paths(environ):
        for path in sorted(glob.glob(glob.escape(prefix) + ".*")):
            try:
                with open(path, errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            if text.strip():
                found.append((path, text[:limit]))
    return found


def summary(found):
    """One line per report: its file and its first line that names the problem."""
    lines = []
    for path, text in found:
        first = next((line for line in text.splitlines() if re.search(r"(WARNING|ERROR|SUMMARY): \w+Sanitizer", line)),
                     text.strip().splitlines()[0] if text.strip() else "")
        lines.append(f"{os.path.basename(path)}: {first.strip()}")
    return lines
