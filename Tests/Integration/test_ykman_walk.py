"""Every command ykman has, ykterm has too, under ykterm's own name where the two differ, unless README names it as
deliberately left out and says why (issue 34, item 7).

ykman's commands are walked through click itself (the command objects of the installed yubikey-manager), not its
help text. A command ykman hides from its --help (`apdu`, `sd`: shown only with `ykman --full-help`; the
deprecated `hsmauth access change-management-key`) is not required, but README may name it. ykterm's counterpart
is found by its own --help: ArgumentParser answers `ykterm oath nosuch --help` with the help of `oath`, exit 0,
so the usage line must name the command asked for."""

import re

import click
import pytest

from harness import ROOT, run_ykterm

README = ROOT / "README.md"
SECTION = "ykman commands ykterm leaves out"

# ykman's command → the ykterm commands that together do the same, where ykterm names it otherwise; a ykman
# command not here has a ykterm command of the same path. "path <value>" is a ykterm command that takes the
# action as an argument value (oath password set|change|clear|remember|forget): its help must list the value.
RENAMED = {
    # ykman sets a PIN when there is none and changes it otherwise; ykterm has a command for each.
    "fido access change-pin": ["fido pin set", "fido pin change"],
    "fido access force-change": ["fido pin force-change"],
    "fido access set-min-length": ["fido pin set-min-length"],
    "fido access verify-pin": ["fido pin verify"],
    # ykman's change sets, changes or (with --clear) removes the password.
    "oath access change": ["oath password <set>", "oath password <change>", "oath password <clear>"],
    "oath access forget": ["oath password <forget>"],
    "oath access remember": ["oath password <remember>"],
    "oath accounts add": ["oath add"],
    "oath accounts code": ["oath code"],
    "oath accounts delete": ["oath delete"],
    "oath accounts import": ["oath import"],
    "oath accounts list": ["oath list"],
    "oath accounts rename": ["oath rename"],
    # ykman adds an account from an otpauth:// URI; ykterm's add takes the URI as its argument.
    "oath accounts uri": ["oath add"],
    "piv access change-management-key": ["piv management-key change"],
    "piv access change-pin": ["piv pin change"],
    "piv access change-puk": ["piv puk change"],
    "piv access unblock-pin": ["piv pin unblock"],
}


def ykman_commands():
    """Every ykman command path (groups and leaves) → (is a group, hidden from ykman's --help, itself or a group
    above it). Imported here, in pytest, without --full-help on the command line: the commands ykman shows only
    with it are hidden, as for a user who runs ykman --help."""
    from ykman._cli.__main__ import cli

    found = {}

    def walk(group, path, hidden):
        for name, command in group.commands.items():
            p = path + (name,)
            h = hidden or bool(getattr(command, "hidden", False))
            is_group = isinstance(command, click.Group)
            found[" ".join(p)] = (is_group, h)
            if is_group:
                walk(command, p, h)

    walk(cli, (), False)
    return found


def readme_absentees():
    """The README section's list: one item per command, `ykman PATH` in backticks first, then the reason."""
    text = README.read_text()
    m = re.search(rf"^(#+) {re.escape(SECTION)}\s*$(.*?)(?=^#{{1,6}} |\Z)", text, re.M | re.S)
    assert m, f"README.md has no section '{SECTION}'"
    items = {}
    for line in m.group(2).splitlines():
        if not re.match(r"^[-*] ", line):
            continue
        item = re.match(r"^[-*] `ykman ([a-z0-9 -]+)`(.*)$", line)
        assert item, f"README '{SECTION}': an item that does not start with `ykman COMMAND`: {line!r}"
        command, reason = item.group(1).strip(), item.group(2).strip(" :—-")
        assert len(reason.split()) >= 4, f"README '{SECTION}': `ykman {command}` has no reason given"
        assert command not in items, f"README '{SECTION}' names `ykman {command}` twice"
        items[command] = reason
    assert items, f"README '{SECTION}' lists no command"
    return items


_helps = {}


def ykterm_help(path):
    """ykterm's help for `path` when it has that command, else None."""
    if path not in _helps:
        r = run_ykterm(*path.split(), "--help", check=False)
        usage = re.search(r"^USAGE: ykterm (.*)$", r.stdout, re.M)
        ok = r.returncode == 0 and usage and (usage.group(1) + " ").startswith(path + " ")
        _helps[path] = " ".join(r.stdout.split()) if ok else None
    return _helps[path]


def ykterm_has(counterpart):
    """Whether ykterm has `counterpart` ("path" or "path <value>")."""
    m = re.fullmatch(r"(.*?)(?: <([a-z-]+)>)?", counterpart)
    path, value = m.group(1), m.group(2)
    text = ykterm_help(path)
    if text is None:
        return False
    if value is None:
        return True
    values = re.search(r"\(values: ([^)]*)\)", text)
    return bool(values) and value in [v.strip() for v in values.group(1).split(",")]


def counterparts(command):
    return RENAMED.get(command, [command])


@pytest.fixture(scope="module")
def ykman():
    commands = ykman_commands()
    # The walk found ykman's tree, not an empty or partial one.
    for known in ("oath accounts code", "piv keys generate", "fido credentials list", "config usb", "script"):
        assert known in commands and not commands[known][0] and not commands[known][1], known
    assert commands["sd"][1] and commands["apdu"][1]
    return commands


def test_every_ykman_command_has_a_ykterm_counterpart_or_a_reason_in_readme(ykman):
    absent = readme_absentees()

    def left_out(command):
        return any(command == a or command.startswith(a + " ") for a in absent)

    leaves = sorted(c for c, (is_group, hidden) in ykman.items() if not is_group and not hidden)
    assert len(leaves) > 90, leaves
    missing = []
    for command in leaves:
        if left_out(command):
            continue
        lacking = [c for c in counterparts(command) if not ykterm_has(c)]
        if lacking:
            missing.append(f"ykman {command} (ykterm {', ykterm '.join(lacking)})")
    assert not missing, ("ykman commands with neither a ykterm counterpart nor a reason in README's "
                         f"'{SECTION}':\n  " + "\n  ".join(missing))


def test_readme_names_only_commands_ykman_has_and_ykterm_lacks(ykman):
    untrue = []
    for command in readme_absentees():
        if command not in ykman:
            untrue.append(f"ykman {command}: ykman has no such command")
            continue
        if command in RENAMED:
            untrue.append(f"ykman {command}: the table above maps it to ykterm {RENAMED[command]}")
        # A group left out is lacking in ykterm as a whole; a command, under its own path.
        if ykterm_help(command) is not None:
            untrue.append(f"ykman {command}: ykterm {command} exists")
    assert not untrue, f"README's '{SECTION}' is not true:\n  " + "\n  ".join(untrue)


def test_the_table_maps_only_commands_ykman_shows(ykman):
    # A renamed command that ykman no longer has, or one it hides, goes from the table.
    stale = [c for c in RENAMED if c not in ykman or ykman[c][0] or ykman[c][1]]
    assert not stale, stale
