"""PINs and passwords are never taken from argv (issue 10, secrets).

The whole command tree comes from ArgumentParser's own description of it (`--experimental-dump-help`), so a
command added later is checked too. No option or argument of any command may be named like a PIN or a password,
and every command refuses such options as unknown (a usage error, before anything talks to a key). Commands that
take OATH secrets, URIs and keys on argv offer `-` for standard input and say so in their help.
"""

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness import YKTERM

# Names of options that would carry a PIN or password, as other tools spell them; a policy about one (PIV's
# --pin-policy, as ykman names it) carries none, and neither does a flag, which takes no value
# (virtual-key serve --pin-complexity).
SECRET_OPTION = re.compile(r"(^|[-_])(pin|puk|password|passwd|passphrase|new-?pin|old-?pin|new-?password|"
                           r"current-?pin|current-?password|access-?code|management-?key)([-_]|$)(?!.*policy$)",
                           re.I)
REFUSED = ["--pin", "--password", "--new-pin", "--old-pin", "--new-password", "--passphrase", "--access-code"]
EX_USAGE = 2  # ykterm exits 2 on usage errors (man page, EXIT STATUS)


def dump_help():
    r = subprocess.run([str(YKTERM), "--experimental-dump-help"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["command"]


def walk(command, path=()):
    """(path, command) for every command in the tree, the root included."""
    here = path + (command["commandName"],)
    yield here, command
    for sub in command.get("subcommands", []):
        yield from walk(sub, here)


def commands():
    return [(path[1:], c) for path, c in walk(dump_help())
            if path[-1] != "help"]  # ArgumentParser's own `help` command takes command names only


def leaf_commands():
    return [(path, c) for path, c in commands() if path and not c.get("subcommands")]


def test_the_tree_is_complete_enough_to_mean_something():
    paths = {" ".join(p) for p, _ in commands()}
    for expected in ("oath add", "oath password", "fido pin", "otp chalresp", "apdu"):
        assert any(p == expected or p.startswith(expected + " ") for p in paths), (expected, sorted(paths))


def test_no_option_or_argument_is_named_like_a_pin_or_password():
    offenders = []
    for path, command in commands():
        for argument in command.get("arguments", []):
            if argument.get("kind") == "flag":
                continue
            names = [n["name"] for n in argument.get("names", [])]
            if argument.get("kind") == "positional":
                names += [argument.get("valueName", "")]
            for name in names:
                if SECRET_OPTION.search(name):
                    offenders.append((" ".join(path), name))
    assert offenders == []


def placeholder_option(argument):
    name = argument.get("preferredName") or argument["names"][0]
    dashes = "--" if name["kind"] == "long" else "-"
    return f"{dashes}{name['name']}={placeholder_value(argument)}"


def placeholder_value(argument):
    """A value the parser accepts: the first choice (from the list, the completion list such as a PIV slot's, or
    a value name such as `1|2`), else 1."""
    if argument.get("allValues"):
        return argument["allValues"][0]
    completions = argument.get("completionKind", {}).get("list", {}).get("values")
    if completions:
        return completions[0]
    value_name = argument.get("valueName", "")
    return value_name.split("|")[0] if "|" in value_name else "1"


def refused(path, given):
    """Runs `ykterm PATH GIVEN` with no key, pcscd or terminal in reach."""
    return subprocess.run([str(YKTERM), *path, *given], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "PCSCLITE_CSOCK_NAME": "/nonexistent"})


@pytest.mark.parametrize("option", REFUSED)
def test_every_command_refuses_pin_and_password_options(option):
    attempts = []
    for path, command in leaf_commands():
        # Placeholders for the command's positional arguments (a valid choice where there are choices), so
        # that the option is the one thing the parser trips on.
        positionals = [placeholder_value(a) for a in command.get("arguments", []) if a.get("kind") == "positional"]
        required = [placeholder_option(a) for a in command.get("arguments", [])
                    if a.get("kind") == "option" and not a.get("isOptional", True)]
        positionals = required + positionals
        attempts.append((path, [f"{option}=123456", *positionals]))
        if not positionals:
            attempts.append((path, [option, "123456"]))
    # A usage error costs ArgumentParser most of a debug build's start: the runs share the cores.
    with ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 1)) as pool:
        results = list(pool.map(lambda attempt: refused(*attempt), attempts))
    for (path, given), r in zip(attempts, results):
        assert r.returncode == EX_USAGE, (path, given, r.returncode, r.stdout, r.stderr)
        assert "Unknown option" in r.stderr and option in r.stderr, (path, given, r.stderr)
        assert "123456" not in r.stdout


def test_commands_that_take_secrets_on_argv_offer_standard_input():
    """oath add (--secret, the URI), otp chalresp (the key), otp decrypt (--key): `-` reads standard input."""
    found = {}
    for path, command in commands():
        key = " ".join(path)
        if key in ("oath add", "otp chalresp", "otp decrypt"):
            found[key] = " ".join(a.get("abstract", "") for a in command.get("arguments", []))
    assert set(found) == {"oath add", "otp chalresp", "otp decrypt"}, found
    for key, help_text in found.items():
        assert re.search(r"(^|\W)-(\W|$)", help_text) and "standard input" in help_text, (key, help_text)
