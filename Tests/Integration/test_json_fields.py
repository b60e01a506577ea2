"""Every --json output keeps its fields (issue 31): the key paths each command prints on the virtual key are
compared with those recorded in json_fields.json, so that moving an output to another type cannot rename, drop
or add a field by accident. After a deliberate change: UPDATE_JSON_FIELDS=1 pytest test_json_fields.py
writes the file anew; review it with git diff."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness import YKTERM

RECORD = Path(__file__).with_name("json_fields.json")

COMMANDS = {
    "list": ["list", "--virtual", "--json"],
    "info": ["info", "--virtual", "--json"],
    "oath info": ["oath", "info", "--virtual", "--json"],
    "oath list": ["oath", "list", "--virtual", "--json"],
    "oath code": ["oath", "code", "--virtual", "--json"],
    "fido info": ["fido", "info", "--virtual", "--json"],
    "otp info": ["otp", "info", "--virtual", "--json"],
    "piv info": ["piv", "info", "--virtual", "--json"],
    "piv keys info": ["piv", "keys", "info", "9a", "--virtual", "--json"],
    "openpgp info": ["openpgp", "info", "--virtual", "--json"],
    "hsmauth info": ["hsmauth", "info", "--virtual", "--json"],
    "hsmauth credentials list": ["hsmauth", "credentials", "list", "--virtual", "--json"],
    # The demo key's credential and its password (a line of standard input).
    "hsmauth credentials calculate": (["hsmauth", "credentials", "calculate", "demo", "--context", "00" * 16,
                                       "--virtual", "--json"], "demo\n"),
    "otp parse": ["otp", "parse", "--json", "cccccccbcjdifctrndncchkftchjlnbhvhtugdljibej"],
    "otp decrypt": ["otp", "decrypt", "--json", "--key", "ecde18dbe76fbd0c33330f1c354871db",
                    "dteffujehknhfjbrjnlnldnhcujvddbikngjrtgh"],
    "u2f register": ["u2f", "register", "--virtual", "--json"],
}


def paths(value, prefix=""):
    """Every key path in `value`: objects' keys joined with dots, array elements as []."""
    out = set()
    if isinstance(value, dict):
        for k, v in value.items():
            p = f"{prefix}.{k}" if prefix else k
            out.add(p)
            out |= paths(v, p)
    elif isinstance(value, list):
        for v in value:
            out |= paths(v, prefix + "[]")
    return out


def observed():
    found = {}
    for name, args in COMMANDS.items():
        # A command that asks for something has its answers with it: (arguments, standard input).
        args, answers = args if isinstance(args, tuple) else (args, None)
        r = subprocess.run([str(YKTERM), *args], capture_output=True, text=True, timeout=60,
                           input=answers, stdin=None if answers is not None else subprocess.DEVNULL)
        assert r.returncode == 0, (name, r.stderr)
        found[name] = sorted(paths(json.loads(r.stdout)))
    return found


def test_every_json_output_keeps_its_fields():
    found = observed()
    if os.environ.get("UPDATE_JSON_FIELDS") == "1":
        RECORD.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        pytest.skip("json_fields.json written anew")
    recorded = json.loads(RECORD.read_text())
    assert sorted(recorded) == sorted(found), "the commands checked differ from those recorded"
    for name in COMMANDS:
        gone = sorted(set(recorded[name]) - set(found[name]))
        new = sorted(set(found[name]) - set(recorded[name]))
        assert not gone and not new, f"{name}: fields gone {gone}, fields new {new}"
