"""Fitting the system: the config file drives ykterm, the redacted trace holds no secret, make install and
uninstall, completions, the udev rule and doctor."""

import base64
import hashlib
import hmac
import os
import re
import shlex
import stat
import struct
import subprocess
import time

import pytest

from harness import ROOT, YKTERM, run_ykterm
from test_tui import Tmux

OATH_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"       # base32 of 20 bytes
OATH_PASSWORD = "tr4ce-pass word"
FIDO_PIN_1 = "4711-first"
FIDO_PIN_2 = "4711-second"
HMAC_KEY = "303132333435363738393a3b3c3d3e3f40414243"  # 20 bytes
CHALLENGE = "a1b2c3d4e5f60718"
AES_KEY = "00112233445566778899aabbccddeeff"
AES_PUBLIC_ID = "vvccccdbhfhh"


@pytest.fixture
def env(pcsc, tmp_path):
    """Own HOME, config and state directories per test."""
    home = tmp_path / "home"
    home.mkdir()
    return pcsc.env(HOME=home, XDG_CONFIG_HOME=home / ".config", XDG_STATE_HOME=home / ".local" / "state")


def write_config(env, text, mode=0o600):
    path = os.path.join(env["XDG_CONFIG_HOME"], "ykterm", "config.toml")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def yk(key, env, *args, **kw):
    return run_ykterm(*args, env=dict(env, YKTERM_READER=key.reader), **kw)


def forms(data):
    """The ways a secret could show in a trace: hex either case, base32, and as text when it is text."""
    out = {data.hex(), data.hex().upper(), base64.b32encode(data).decode().rstrip("=")}
    try:
        text = data.decode()
        if text.isprintable():
            out.add(text)
    except UnicodeDecodeError:
        pass
    return out


def oath_truncated(secret, t, period=30):
    """The 4 bytes a YKOATH CALCULATE with truncation answers for time `t` (RFC 4226 dynamic truncation)."""
    digest = hmac.new(secret, struct.pack(">Q", int(t) // period), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return bytes([digest[offset] & 0x7F]) + digest[offset + 1:offset + 4], digest


def select_salts(trace):
    """The salts (tag 71) in the answers to SELECT OATH in the trace."""
    salts = set()
    lines = trace.splitlines()
    for i, line in enumerate(lines):
        if "SELECT OATH" in line and i + 1 < len(lines) and "] < " in lines[i + 1]:
            data = bytes.fromhex(lines[i + 1].split("] < ", 1)[1].split(" ")[0])
            j = 0
            while j + 2 <= len(data):
                tag, length = data[j], data[j + 1]
                if tag == 0x71:
                    salts.add(data[j + 2:j + 2 + length])
                j += 2 + length
    return salts


def test_a_traced_session_holds_no_secret_but_every_header(key, env, tmp_path):
    """OATH add, code, password set and unlock, FIDO2 PIN set and change, OTP challenge-response: run with
    --verbose and YKTERM_LOG; the trace names every command and holds none of the secrets, in any form."""
    trace_path = tmp_path / "trace.log"
    tenv = dict(env, YKTERM_LOG=str(trace_path))
    start = time.time()
    r = yk(key, tenv, "--verbose", "oath", "add", "--issuer", "Trace", "--name", "acct", "--secret", "-",
           input=OATH_SECRET + "\n")
    assert f"writing a redacted trace to {trace_path}" in r.stderr
    codes = yk(key, tenv, "oath", "code", "Trace").stdout
    shown_code = re.search(r"\b(\d{6})\b", codes).group(1)
    yk(key, tenv, "--verbose", "oath", "password", "set", input=OATH_PASSWORD + "\n")
    assert yk(key, tenv, "oath", "list", input=OATH_PASSWORD + "\n").stdout.split() == ["Trace:acct"]
    end = time.time()
    yk(key, tenv, "fido", "pin", "set", input=FIDO_PIN_1 + "\n")
    yk(key, tenv, "--verbose", "fido", "pin", "change", input=f"{FIDO_PIN_1}\n{FIDO_PIN_2}\n")
    yk(key, tenv, "otp", "chalresp", "--slot", "2", "-", input=HMAC_KEY + "\n")
    response = yk(key, tenv, "--verbose", "otp", "calculate", "--slot", "2", CHALLENGE).stdout.strip()
    expected = hmac.new(bytes.fromhex(HMAC_KEY), bytes.fromhex(CHALLENGE), hashlib.sha1).hexdigest()
    assert response == expected

    assert stat.S_IMODE(os.stat(trace_path).st_mode) == 0o600
    trace = trace_path.read_text()
    # Headers and names of what was done are all there.
    for needle in ["00A40400", "SELECT OATH", "OATH PUT", "OATH CALCULATE", "OATH SET CODE", "OATH VALIDATE",
                   "SELECT FIDO", "NFCCTAP_MSG clientPIN", "NFCCTAP_MSG getInfo", "SELECT OTP",
                   "OTP CONFIG SLOT 2", "OTP CHALLENGE HMAC SLOT 2", f"[{key.reader}] > ", "bytes redacted>"]:
        assert needle in trace, needle
    # The challenge is not a secret: it is shown.
    assert CHALLENGE.upper() in trace

    secret = base64.b32decode(OATH_SECRET)
    forbidden = forms(secret) | {OATH_SECRET}
    for t in range(int(start) - 30, int(end) + 31, 30):
        truncated, digest = oath_truncated(secret, t)
        forbidden |= forms(truncated) | forms(digest)
    forbidden.add(shown_code)
    forbidden |= forms(OATH_PASSWORD.encode())
    salts = select_salts(trace)
    assert salts, "no OATH salt in the SELECT answers"
    for salt in salts:
        forbidden |= forms(hashlib.pbkdf2_hmac("sha1", OATH_PASSWORD.encode(), salt, 1000, 16))
    for pin in (FIDO_PIN_1, FIDO_PIN_2):
        forbidden |= forms(pin.encode()) | forms(hashlib.sha256(pin.encode()).digest()[:16])
    forbidden |= forms(bytes.fromhex(HMAC_KEY)) | forms(bytes.fromhex(expected))
    for f in forbidden:
        assert f not in trace, f"the trace holds a secret: {f!r}"


def test_verbose_alone_writes_to_the_state_directory(key, env):
    r = yk(key, env, "--verbose", "list")
    path = os.path.join(env["XDG_STATE_HOME"], "ykterm", "trace.log")
    assert path in r.stderr
    assert "SELECT" in open(path).read()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # A subcommand's own --verbose is its own, not the trace's.
    os.unlink(path)
    yk(key, env, "apdu", "--verbose", "00A4040007A0000005272101")
    assert not os.path.exists(path)


def test_a_trace_that_cannot_be_written_is_a_usage_error(key, env):
    r = yk(key, dict(env, YKTERM_LOG="/proc/ykterm/none/trace.log"), "list", check=False)
    assert r.returncode == 2 and "cannot" in r.stderr and "trace" in r.stderr


def test_the_tui_is_traced_too(tmp_path):
    trace_path = tmp_path / "tui-trace.log"
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"), YKTERM_LOG=str(trace_path))
    t = Tmux(f"{shlex.quote(str(YKTERM))} --virtual", env)
    try:
        t.wait_for(r"GitHub")
        t.send("q")
        t.wait_for(r"EXITED=0")
    finally:
        t.close()
    trace = trace_path.read_text()
    assert "SELECT OATH" in trace and "OATH CALCULATE ALL" in trace
    calc = [line for line in trace.splitlines() if "] < " in line and "redacted" in line]
    assert calc, "the codes' answers are not redacted"


# ---------------------------------------------------------------------------------------------------------
# The config file


@pytest.mark.parametrize("text, line, words", [
    ("[ui]\nclipboard = \"pbcopy\"\n", 2, "clipboard must be one of \"osc52\", \"wl-copy\", \"xclip\", \"auto\", \"none\""),
    ("[colour]\n", 1, "unknown table [colour]; allowed: key, ui, colors, keys, otp, otp.aes_keys"),
    ("[keys]\ncopy = \"q\"\n", 2, "\"q\" is bound to both quit and copy"),
    ("\n[key]\nserial = \"x\"\n", 3, "serial must be an integer"),
    ("[ui]\ncolor = never\n", 2, "strings need quotes"),
])
def test_a_bad_config_stops_every_command_with_its_line(env, text, line, words):
    path = write_config(env, text)
    for args in (["list"], ["--virtual"], ["oath", "list", "--virtual"]):
        r = run_ykterm(*args, env=env, check=False)
        assert r.returncode == 2, (args, r.stderr)
        assert f"ykterm: config: {path}:{line}: " in r.stderr and words in r.stderr, r.stderr
    # --help still works, and doctor reports the file instead of stopping.
    assert run_ykterm("--help", env=env).returncode == 0
    r = run_ykterm("doctor", "--virtual", env=env, check=False)
    assert r.returncode == 1 and f"fail  config: {path}:{line}: " in r.stdout


def test_aes_keys_need_a_private_file(env):
    text = f"[otp.aes_keys]\n{AES_PUBLIC_ID} = \"{AES_KEY}\"\n"
    path = write_config(env, text, mode=0o644)
    r = run_ykterm("otp", "parse", "cccccccccccb", env=env, check=False)
    assert r.returncode == 2
    assert f"{path}:1: [otp.aes_keys] holds secret keys, but others can read this file (mode 0644); " \
           f"run: chmod 600 {path}" in r.stderr
    assert AES_KEY not in r.stderr
    os.chmod(path, 0o600)
    assert run_ykterm("otp", "parse", "cccccccccccb", env=env).returncode == 0
    r = run_ykterm("doctor", "--virtual", env=env)
    assert f"ok    config: {path} (1 OTP AES keys, mode 0600)" in r.stdout


def test_default_key_comes_from_the_config_after_options_and_environment(key, env):
    write_config(env, "[key]\nserial = 99999\n")
    r = run_ykterm("oath", "list", env=env, check=False)
    assert r.returncode == 3 and "99999" in r.stderr
    # The environment and the options win.
    assert run_ykterm("oath", "list", env=dict(env, YKTERM_READER=key.reader), input="").returncode == 0
    assert run_ykterm("oath", "list", "--reader", key.reader, env=env, input="").returncode == 0
    write_config(env, f"[key]\nreader = \"{key.reader.lower()}\"\n")
    assert run_ykterm("oath", "list", env=env, input="").returncode == 0
    write_config(env, "[key]\nreader = \"no such reader\"\n")
    assert run_ykterm("oath", "list", env=env, check=False).returncode == 3


def test_otp_parsers_find_the_otp_in_what_the_key_typed(env):
    otp = "ccccccdbhfhhbhtbjvkkvrvjtnhclclklkfvrucceedv"
    typed = "https://otp.example.com/?otp=" + otp
    before = run_ykterm("otp", "parse", "--json", typed, env=env).stdout
    assert "yubico" not in before.lower() or otp not in before
    write_config(env, "[otp]\nparsers = ['https://otp\\.example\\.com/\\?otp=([cbdefghijklnrtuv]{32,64})']\n")
    after = run_ykterm("otp", "parse", "--json", typed, env=env).stdout
    assert otp in after and "ccccccdbhfhh" in after


def test_yktermconfig_names_another_file(env, tmp_path):
    other = tmp_path / "other.toml"
    other.write_text("[ui]\nlanguage = \"xx\"\n")
    r = run_ykterm("list", "--virtual", env=dict(env, YKTERM_CONFIG=str(other)), check=False)
    assert r.returncode == 2 and f"{other}:2: language must be one of \"en\", \"de\", \"auto\"" in r.stderr


def test_tui_takes_language_bindings_and_colours_from_the_config(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    write_config(env, "[ui]\nlanguage = \"de\"\nclipboard = \"none\"\n[keys]\nquit = \"x\"\ncopy = \"y\"\n"
                      "[colors]\ncode = \"magenta\"\n")
    t = Tmux(f"{shlex.quote(str(YKTERM))} --virtual", env, columns=150)
    try:
        t.wait_for(r"GitHub")
        assert "virtueller Schlüssel" in t.wait_for(r"virtueller Schlüssel")
        # The hints come back once the greeting in the status line has gone.
        screen = t.wait_for(r"x beenden", timeout=20)
        assert "Enter/y kopieren" in screen, screen
        # In the last five seconds of a period codes take the expiring colour instead, so look
        # again until a period has turned over.
        deadline = time.monotonic() + 10
        while True:
            coloured = t.tmux("capture-pane", "-p", "-e", "-t", "0")
            if "\x1b[35m" in coloured or "\x1b[38;5;5m" in coloured or time.monotonic() > deadline:
                break
            time.sleep(0.5)  # until the next capture: a period's last seconds pass
        assert "\x1b[35m" in coloured or "\x1b[38;5;5m" in coloured, repr(coloured[:400])
        # q is not the quit key here: the ? after it still reaches ykterm, which opens its help.
        t.send("q")
        t.send("?")
        screen = t.wait_for("jede andere Taste schließt die Hilfe")
        assert "EXITED" not in screen
        t.send("Escape")
        t.wait_gone("jede andere Taste schließt die Hilfe")
        t.send("x")
        t.wait_for(r"EXITED=0")
    finally:
        t.close()


# ---------------------------------------------------------------------------------------------------------
# Install, completions, udev, doctor


def test_make_install_and_uninstall(tmp_path):
    prefix = tmp_path / "prefix"
    make = ["make", "-C", str(ROOT), "-o", "release", f"PREFIX={prefix}", f"BUILT={YKTERM}"]
    r = subprocess.run(make + ["install"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    files = {
        "bin/ykterm", "share/man/man1/ykterm.1", "share/bash-completion/completions/ykterm",
        "share/zsh/site-functions/_ykterm", "share/fish/vendor_completions.d/ykterm.fish",
        "share/ykterm/udev/70-ykterm-fido.rules", "share/ykterm/strings/en.json", "share/ykterm/strings/de.json",
        "share/ykterm/config.example.toml", "lib/ykterm/libykterm-ifd-one-slot.so",
    }
    for f in files:
        assert (prefix / f).is_file(), f
    assert os.access(prefix / "bin/ykterm", os.X_OK)
    # The completions know the subcommands.
    assert "oath" in (prefix / "share/bash-completion/completions/ykterm").read_text()
    assert "#compdef ykterm" in (prefix / "share/zsh/site-functions/_ykterm").read_text()
    assert re.search(r"^complete -c '?ykterm'? .*oath", (prefix / "share/fish/vendor_completions.d/ykterm.fish").read_text(),
                     re.M)
    # The installed binary finds its string tables and the udev rule next to it.
    env = dict(os.environ, LANG="de_DE.UTF-8", LC_ALL="", LC_MESSAGES="", HOME=str(tmp_path))
    env.pop("YKTERM_RESOURCES", None)
    r = subprocess.run([str(prefix / "bin/ykterm"), "doctor", "--virtual"], env=env, capture_output=True, text=True)
    # German tables, found and in use: doctor's own line is in German.
    assert "ok    Texte: de" in r.stdout, r.stdout
    # bash loads the completion without complaint.
    r = subprocess.run(["bash", "-c", f"source {prefix}/share/bash-completion/completions/ykterm && complete -p ykterm"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "ykterm" in r.stdout, r.stderr
    r = subprocess.run(make + ["uninstall"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    left = [str(p.relative_to(prefix)) for p in prefix.rglob("*") if p.is_file()]
    assert left == [], left


def test_udev_rule_gives_fido_hidraw_to_the_seat():
    rule = (ROOT / "Resources/udev/70-ykterm-fido.rules").read_text()
    lines = [l for l in rule.splitlines() if l and not l.startswith("#")]
    assert 'SUBSYSTEM!="hidraw", GOTO="ykterm_fido_end"' in lines
    assert 'ENV{ID_FIDO_TOKEN}=="1", TAG+="uaccess"' in lines
    assert lines[-1] == 'LABEL="ykterm_fido_end"'
    # Sorted before 73-seat-late.rules, which turns uaccess into an ACL.
    names = os.listdir(ROOT / "Resources/udev")
    assert names and all(int(n.split("-")[0]) < 73 for n in names if n.endswith(".rules")), names
    # Yubico's vendor ID too, for systems whose udev lacks fido_id.
    assert 'ATTRS{idVendor}=="1050", TAG+="uaccess"' in lines
    if subprocess.run(["which", "udevadm"], capture_output=True).returncode == 0:
        r = subprocess.run(["udevadm", "verify", str(ROOT / "Resources/udev/70-ykterm-fido.rules")],
                           capture_output=True, text=True)
        if "Unknown command" not in r.stderr and "unrecognized" not in r.stderr.lower():
            assert r.returncode == 0, r.stderr


def test_doctor_explains_what_to_do(env, tmp_path):
    # No pcscd behind the socket: installed but not running, with the command to start it.
    r = run_ykterm("doctor", env=dict(env, PCSCLITE_CSOCK_NAME=str(tmp_path / "none.comm")), check=False)
    assert r.returncode == 1
    assert "fail  pcscd is not reachable" in r.stdout and "systemctl enable --now pcscd.socket" in r.stdout
    assert re.search(r"^(ok  |warn)  terminal: ", r.stdout, re.M), r.stdout
    assert "config: none at" in r.stdout and "strings: " in r.stdout
