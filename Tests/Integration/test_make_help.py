"""`make help` (issue 31): every target the Makefile declares is listed with what it does."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_help_lists_every_declared_target_with_a_description():
    makefile = (ROOT / "Makefile").read_text()
    declared = re.search(r"^\.PHONY:(.*)$", makefile, re.M).group(1).split()
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "--no-print-directory", "help"], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    listed = {}
    for line in r.stdout.splitlines():
        if line and not line.startswith(" "):
            names, _, text = line.partition("  ")
            for name in names.split(" / "):
                listed[name.strip()] = text.strip()
    missing = [t for t in declared if t not in listed]
    assert not missing, f"targets without a ## line: {missing}\n{r.stdout}"
    # Each with words, not an empty line; a description that ran on is cut at its first sentence.
    assert all(len(text.split()) >= 3 for text in listed.values()), listed
    assert listed["test"].startswith("every test, unit then integration"), listed["test"]
    assert "fails on" not in listed["soak"]
