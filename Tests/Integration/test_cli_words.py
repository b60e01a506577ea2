"""The command line speaks the user's language through the string tables, as the TUI does (issue 31, section 4),
and quotes at most an excerpt of what the user gave."""

import os
import subprocess

from harness import YKTERM


def ykterm(*args, lang="C.UTF-8", stdin=""):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_") and k not in ("LANG", "LANGUAGE")}
    env["LANG"] = lang
    return subprocess.run([str(YKTERM), *args], input=stdin, capture_output=True, text=True, timeout=60, env=env)


def test_usage_errors_and_results_come_out_in_german_without_the_locale_installed():
    installed = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.lower()
    assert "de_de" not in installed, "de_DE is installed here: the test is about a locale that is not"
    r = ykterm("otp", "calculate", "--virtual", "--slot", "3", "00", lang="de_DE.UTF-8")
    assert r.returncode == 2 and "--slot muss 1 oder 2 sein, nicht „3“" in r.stderr, r.stderr
    r = ykterm("piv", "keys", "generate", "--virtual", "-a", "FOO", "9a", lang="de_DE.UTF-8")
    assert r.returncode == 2 and "unbekannter Schlüsselalgorithmus „FOO“: ECCP256" in r.stderr, r.stderr
    assert "ED25519 oder X25519" in r.stderr, r.stderr
    r = ykterm("oath", "add", "--virtual", "--name", "alice", "--secret", "-", stdin="JBSWY3DPEHPK3PXP\n",
               lang="de_DE.UTF-8")
    assert r.returncode == 0 and r.stdout == "alice hinzugefügt\n", (r.stdout, r.stderr)
    # The same in English without a language set.
    r = ykterm("oath", "add", "--virtual", "--name", "alice", "--secret", "-", stdin="JBSWY3DPEHPK3PXP\n")
    assert r.returncode == 0 and r.stdout == "Added alice\n", (r.stdout, r.stderr)
    r = ykterm("otp", "calculate", "--virtual", "--slot", "3", "00")
    assert r.returncode == 2 and '--slot must be 1 or 2, not "3"' in r.stderr, r.stderr


def test_a_long_argument_is_quoted_as_an_excerpt_with_its_length():
    apdu = "00" * 35_000 + "0"
    r = ykterm("apdu", "--virtual", apdu)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip()
    assert line.startswith('ykterm: invalid APDU "' + "0" * 32 + "…" + "0" * 12 + ' [70001 characters]": '), line
    assert len(line) < 200, len(line)
    r = ykterm("apdu", "--virtual", apdu, lang="de_DE.UTF-8")
    assert "[70001 Zeichen]" in r.stderr and len(r.stderr) < 200, r.stderr
    # A short one is quoted whole.
    r = ykterm("apdu", "--virtual", "00A4040")
    assert 'invalid APDU "00A4040": ' in r.stderr, r.stderr
