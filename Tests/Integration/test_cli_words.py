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


# What a command says while it runs, on the virtual key (a fresh one for each run: PIN 123456, no FIDO PIN, empty
# OTP slots): (arguments, standard input, exit status, the stream it is on, the English, the German).
SAID = [
    # Labels of a human-readable output.
    (["otp", "info", "--virtual"], "", 0, "stdout", "Serial: 28123456\nSlot 1: empty\n",
     "Seriennummer: 28123456\nSlot 1: leer\n"),
    (["piv", "info", "--virtual"], "", 0, "stdout", "PIN tries left        3 of 3 (default PIN)",
     "PIN-Versuche übrig      3 von 3 (Standard-PIN)"),
    (["fido", "info", "--virtual"], "", 0, "stdout", "Minimum PIN length:   4",
     "Mindestlänge der PIN:   4"),
    # Results.
    (["piv", "pin", "change", "--virtual"], "123456\n654321\n", 0, "stdout", "PIN changed\n", "PIN geändert\n"),
    (["fido", "pin", "set", "--virtual"], "4321\n", 0, "stdout", "PIN set\n", "PIN gesetzt\n"),
    (["fido", "test", "--virtual"], "", 0, "stdout", "FIDO2 self-test passed\n", "FIDO2-Selbsttest bestanden\n"),
    # Errors of the command line's own.
    (["otp", "calculate", "--virtual", "--slot", "1", "00"], "", 1, "stderr",
     "ykterm: slot 1 is empty; program it with ykterm otp chalresp --slot 1\n",
     "ykterm: Slot 1 ist leer; mit ykterm otp chalresp --slot 1 programmieren\n"),
    (["piv", "pin", "change", "--virtual"], "123456\n12\n", 2, "stderr",
     "ykterm: a PIV PIN or PUK has 6 to 8 characters, not 2; nothing was changed",
     "ykterm: eine PIV-PIN oder -PUK hat 6 bis 8 Zeichen, nicht 2; nichts wurde geändert"),
    (["piv", "pin", "change", "--virtual"], "", 1, "stderr", "ykterm: standard input ended before Current PIN was given",
     "ykterm: die Standardeingabe endete vor der Eingabe „Aktuelle PIN“"),
    # A question without a terminal to ask it on: refused, --force required.
    (["fido", "reset", "--virtual"], "", 2, "stderr", "ykterm: reset needs --force when standard input is not a terminal",
     "ykterm: das Zurücksetzen braucht --force, wenn die Standardeingabe kein Terminal ist"),
    # Every application's reset alike.
    *[([app, "reset", "--virtual"], "", 2, "stderr",
       "ykterm: reset needs --force when standard input is not a terminal",
       "ykterm: das Zurücksetzen braucht --force, wenn die Standardeingabe kein Terminal ist")
      for app in ("oath", "piv", "openpgp", "hsmauth")],
    (["otp", "swap", "--virtual"], "", 2, "stderr",
     "ykterm: swapping the slots needs --force when standard input is not a terminal",
     "ykterm: die Slots zu tauschen braucht --force, wenn die Standardeingabe kein Terminal ist"),
]


def test_results_labels_and_refusals_come_out_in_the_users_language():
    for args, stdin, status, stream, english, german in SAID:
        for lang, expected in (("C.UTF-8", english), ("de_DE.UTF-8", german)):
            r = ykterm(*args, stdin=stdin, lang=lang)
            said = r.stdout if stream == "stdout" else r.stderr
            assert r.returncode == status and expected in said, (args, lang, r.returncode, r.stdout, r.stderr)
