"""The man page and --help stay true to each other; groff finds nothing to warn about."""

import functools
import json
import re
import shutil
import subprocess

import pytest

from harness import ROOT, run_ykterm

MAN = ROOT / "man" / "ykterm.1"
JSON_FIELDS = ROOT / "Tests" / "Integration" / "json_fields.json"


@functools.cache
def help_text(path=()):
    """`ykterm PATH --help`, run once per command for all the tests of this file."""
    return run_ykterm(*path, "--help").stdout


@functools.cache
def subcommands(path=()):
    out = help_text(path)
    section = out.split("SUBCOMMANDS:", 1)
    if len(section) < 2:
        return []
    names = []
    for line in section[1].splitlines():
        m = re.match(r"^  (\S+)", line)
        if m and not line.strip().startswith("See "):
            names.append(m.group(1))
    found = []
    for n in names:
        found.append(path + (n,))
        found += subcommands(path + (n,))
    return tuple(found)


def man_text():
    # Undo the escapes groff needs so names read as typed.
    return MAN.read_text().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "").replace("\\fI", "")


def test_every_subcommand_is_in_the_man_page():
    text = man_text()
    commands = subcommands()
    assert ("oath", "code") in commands and ("virtual-key", "serve") in commands
    for cmd in commands:
        assert " ".join(cmd) in text, f"'{' '.join(cmd)}' is listed by --help but missing from man/ykterm.1"


def test_every_long_option_is_in_the_man_page():
    text = man_text()
    for cmd in [()] + list(subcommands()):
        out = help_text(cmd)
        for opt in set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", out)):
            if opt in ("--help", "--version"):
                continue
            assert opt in text, f"{opt} of '{' '.join(cmd)}' is missing from man/ykterm.1"


def json_output_subsections():
    """The JSON OUTPUT section by command: each .SS heading names commands, comma-separated (options in it, such
    as --readers, dropped); a command's text is that of every subsection naming it."""
    text = man_text()
    m = re.search(r"^\.SH JSON OUTPUT\n(.*?)^\.SH ", text, re.S | re.M)
    assert m, "man/ykterm.1 has no JSON OUTPUT section"
    # Other escapes groff needs: \e (a backslash), \& and \(xx (special characters).
    body = re.sub(r"\\e|\\&|\\\(..", " ", m.group(1))
    parts = re.split(r"^\.SS (.*)$", body, flags=re.M)
    found = {}
    for heading, part in zip(parts[1::2], parts[2::2]):
        for name in heading.replace('"', "").split(","):
            command = " ".join(w for w in name.split() if not w.startswith("-"))
            found[command] = found.get(command, "") + part
    return found


def commands_with_json():
    return {" ".join(cmd) for cmd in subcommands()
            if re.search(r"^\s+--json\b", help_text(cmd), re.M)}


def test_json_output_section_names_every_field():
    # json_fields.json records the field paths each command's --json prints (test_json_fields.py); the man
    # page's subsection for the command names each field: the last part of its path ("slots[].certificate.serial"
    # is "serial"; an object's keys, such as fido info's options, are named too).
    recorded = json.loads(JSON_FIELDS.read_text())
    sections = json_output_subsections()
    for command, paths in recorded.items():
        assert command in sections, f"JSON OUTPUT in man/ykterm.1 has no subsection for '{command}'"
        for path in paths:
            name = [p for p in re.split(r"\[\]|\.", path) if p][-1]
            assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", sections[command]), \
                f"'{command}': field {path} is missing from JSON OUTPUT in man/ykterm.1"


def test_json_output_section_names_the_commands_with_json():
    # Every command with --json (as --help lists its options) has a subsection, and every subsection is a
    # command's that has --json; json_fields.json records some of them.
    with_json = commands_with_json()
    assert {"list", "oath code", "piv info", "monitor"} <= with_json
    assert set(json.loads(JSON_FIELDS.read_text())) <= with_json
    documented = set(json_output_subsections())
    assert not documented - with_json, f"JSON OUTPUT names commands without --json: {sorted(documented - with_json)}"
    assert not with_json - documented, f"JSON OUTPUT lacks commands with --json: {sorted(with_json - documented)}"


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed")
def test_groff_reports_nothing():
    r = subprocess.run(["groff", "-man", "-ww", "-z", str(MAN)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == ""


def test_no_command_takes_a_pin_or_password_option():
    for cmd in [()] + list(subcommands()):
        out = help_text(cmd).lower()
        # An option that takes a secret; --pin-policy (when a PIV key asks for the PIN) takes none.
        assert not re.search(r"--(pin|puk|password|new-pin|new-password|passphrase|management-key)(?![\w-])", out), cmd


@pytest.mark.parametrize("shell,marker", [("bash", "-F _ykterm ykterm"), ("zsh", "#compdef ykterm"), ("fish", "complete -c 'ykterm'")])
def test_completion_scripts_name_every_command(shell, marker):
    # ykterm lets ArgumentParser skip its own search for this flag when a command line lacks it; with it, the
    # script must still come, in both spellings, naming the subcommands.
    for args in (("--generate-completion-script", shell), (f"--generate-completion-script={shell}",)):
        script = run_ykterm(*args).stdout
        assert marker in script
        for name in ("oath", "fido", "piv", "virtual-key"):
            assert name in script


def test_usage_and_help_name_the_tool_once():
    # The name the quick parse lends the root for the length of the parse never reaches what is printed.
    r = run_ykterm("oath", "code", "--no-such-option", check=False)
    assert r.returncode == 2
    assert "Usage: ykterm oath code" in r.stderr and "ykterm ykterm" not in r.stderr
    out = run_ykterm("help", "oath").stdout
    assert "USAGE: ykterm oath" in out and "ykterm ykterm" not in out
    assert "ykterm ykterm" not in run_ykterm("fido", "--help").stdout
