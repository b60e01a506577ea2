"""Scenarios for test_unprivileged.py: ykterm run as an ordinary user (nobody, 65534) on the virtual key plugged in
as a USB key.

Each scenario runs as root inside `ykterm virtual-key serve --usb [--hidraw-mode 0600] -- unshare --mount ...`,
whose own mount namespace has fresh tmpfs over /tmp and /var/tmp: whatever the user writes outside its HOME
shows there (and in the key's namespace's /dev, /dev/shm and /run), and nothing is left on disk afterwards. Every
ykterm, tmux server and tmux client runs as nobody through setpriv, with a clean environment (PATH, HOME, TERM,
LANG, and SYSTEMD_DEVICE_VERIFY_SYSFS=0 that the namespace's sysfs needs, as serve --usb gives its command) and
no XDG_* variables, so ykterm uses $HOME/.config and $HOME/.local/state. HOME is a directory of the scenario's
own (nobody's, mode 0700). python-fido2 and pyotp check the results as root.

A scenario prints one JSON object per step ({step: result}); a step that raises records its traceback under
"<step>_exception" and the scenario goes on, so one failure hides none of the others.
"""

import hashlib
import hmac
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import YKTERM, descendants, stop_tree  # noqa: E402
from test_tui import Tmux, b32, code_of, totp  # noqa: E402
from usb_scenarios import pin_works_over_hid  # noqa: E402

NOBODY = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]

# Two OATH accounts (20-byte secrets, as pyotp wants at least 16), the FIDO2 PINs, the OATH password and the
# challenge-response key of slot 2.
ACCOUNTS = {"Unpriv": ("alice", bytes(range(40, 60))), "Ordinary": ("bob", bytes(range(100, 120)))}
PIN_1, PIN_2 = "nobody-pin-1", "nobody-pin-2"
OATH_PASSWORD = "nobody's oath password"
HMAC_KEY = bytes(range(1, 21))
CHALLENGE = b"asked by an ordinary user"


def emit(**kw):
    print(json.dumps(kw), flush=True)


def step(name, fn, *args):
    """Runs one step and prints its result (or its traceback); returns the result or None."""
    try:
        result = fn(*args)
    except Exception:  # noqa: BLE001 (reported to the test, which fails on it)
        emit(**{name + "_exception": traceback.format_exc()})
        return None
    emit(**{name: result})
    return result


class User:
    """nobody with a HOME of its own (0700) and a directory for tmux's socket (TMUX_TMPDIR), both under `base`."""

    def __init__(self, base):
        self.base = Path(base)
        self.home = self.base / "home"
        self.tmux_dir = self.base / "tmux"
        for d in (self.home, self.tmux_dir):
            d.mkdir(mode=0o700)
            os.chown(d, NOBODY, NOBODY)
            os.chmod(d, 0o700)

    def env(self, **extra):
        e = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home), "TERM": "xterm-256color",
             "LANG": "C.UTF-8", "SYSTEMD_DEVICE_VERIFY_SYSFS": "0"}
        e.update(extra)
        return e

    def run(self, argv, input=None, timeout=60, **env):
        r = subprocess.run(SETPRIV + [str(a) for a in argv], env=self.env(**env), cwd=self.home, input=input,
                           stdin=subprocess.DEVNULL if input is None else None, capture_output=True, text=True,
                           timeout=timeout)
        return {"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr}

    def ykterm(self, *args, input=None, timeout=60, **env):
        return self.run([YKTERM, *args], input=input, timeout=timeout, **env)


class NobodyTmux(Tmux):
    """test_tui's Tmux with the tmux server and every tmux client run as nobody, its socket in the user's
    TMUX_TMPDIR. Stopped (by root) by its server's PID."""

    def __init__(self, user, command, columns=100, rows=30):
        self.socket = "ykterm-unpriv-" + uuid.uuid4().hex[:8]
        self.user = user
        self.env = user.env(TMUX_TMPDIR=str(user.tmux_dir))
        shell = (f"trap true INT; {command}; echo EXITED=$?; "
                 "stty -a | tr ' ' '\\n' | grep -x -e echo -e icanon | tr '\\n' ' '; echo; sleep 60")
        self.server_pid = None
        try:
            subprocess.run(SETPRIV + ["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-x",
                                      str(columns), "-y", str(rows), "sh", "-c", shell],
                           env=self.env, cwd=user.home, check=True, capture_output=True, text=True)
            self.server_pid = int(self.tmux("display-message", "-p", "#{pid}").strip())
        except BaseException:
            subprocess.run(SETPRIV + ["tmux", "-L", self.socket, "kill-server"], env=self.env, cwd=user.home,
                           capture_output=True)
            raise

    def tmux(self, *args):
        return subprocess.run(SETPRIV + ["tmux", "-L", self.socket] + list(args), env=self.env, cwd=self.user.home,
                              check=True, capture_output=True, text=True).stdout

    def close(self):
        # The server, and the shell, ykterm and sleep below it, stopped by PID (root may signal them); the
        # socket's directory is the user's and goes with the private /tmp.
        if self.server_pid is not None:
            stop_tree(self.server_pid)

    def processes(self):
        """The tmux server and everything below it: command name, real and effective uid, and for ykterm the
        environment it was started with."""
        found = []
        for pid in [self.server_pid] + descendants(self.server_pid):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            uid = [int(x) for x in re.search(r"^Uid:\s+(.*)$", status, re.M).group(1).split()]
            gid = [int(x) for x in re.search(r"^Gid:\s+(.*)$", status, re.M).group(1).split()]
            groups = re.search(r"^Groups:[ \t]*(.*)$", status, re.M).group(1).split()
            entry = {"pid": pid, "comm": comm, "uid": uid, "gid": gid, "groups": groups}
            if comm == "ykterm":
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                entry["env"] = sorted(e.decode().split("=", 1)[0] for e in environ if e)
                entry["home"] = next((e.decode()[5:] for e in environ if e.startswith(b"HOME=")), None)
            found.append(entry)
        return found


def away_from_boundary(period=30, margin=2.0):
    while True:
        left = period - time.time() % period
        if margin < left < period - margin:
            return
        time.sleep(0.5)


def codes_on_screen(t):
    """Each account's code as the TUI shows it, with pyotp's for the same moment."""
    away_from_boundary()
    screen = t.screen()
    now = time.time()
    shown = {}
    for issuer, (_, secret) in ACCOUNTS.items():
        try:
            shown[issuer] = {"shown": code_of(screen, issuer)[0], "pyotp": totp(secret, now)}
        except AssertionError as e:
            shown[issuer] = {"shown": None, "pyotp": totp(secret, now), "error": str(e)}
    return {"codes": shown, "screen": screen}


def codes_from_cli(result):
    """`oath code --json` output against pyotp (at each code's valid_from)."""
    if result["rc"] != 0:
        return {"error": result}
    found = {}
    for entry in json.loads(result["stdout"]):
        issuer = entry.get("issuer")
        if issuer in ACCOUNTS and entry.get("code") is not None:
            found[issuer] = {"shown": entry["code"], "pyotp": totp(ACCOUNTS[issuer][1], entry["valid_from"])}
    return found


def add_accounts(user):
    out = {}
    for issuer, (name, secret) in ACCOUNTS.items():
        out[issuer] = user.ykterm("oath", "add", "--issuer", issuer, "--name", name, "--secret", "-",
                                  input=b32(secret) + "\n")
    return out


def chalresp(user):
    """Slot 2 programmed for challenge-response by nobody (`otp chalresp`, the key from stdin), then asked."""
    programmed = user.ykterm("otp", "chalresp", "--slot", "2", "--force", "-", input=HMAC_KEY.hex() + "\n")
    answer = user.ykterm("otp", "calculate", "--slot", "2", CHALLENGE.hex())
    return {"programmed": programmed, "answer": answer,
            "expected": hmac.new(HMAC_KEY, CHALLENGE, hashlib.sha1).hexdigest()}


def census(user):
    """Every file and directory under HOME (its type, permission bits, owner) and `stat`'s view of them; and
    every entry owned by nobody (user or group) in the places outside HOME it could write to."""
    home = []
    for root, dirs, files in os.walk(user.home):
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(root, name)
            st = os.lstat(path)
            kind = "dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"
            home.append({"path": os.path.relpath(path, user.home), "kind": kind,
                         "mode": f"{stat.S_IMODE(st.st_mode):04o}", "uid": st.st_uid, "gid": st.st_gid})
    paths = [str(user.home)] + [str(user.home / e["path"]) for e in home]
    stat_lines = subprocess.run(["stat", "-c", "%a %U:%G %F %n"] + paths, capture_output=True, text=True).stdout
    # Outside HOME, only tmux's socket directory (TMUX_TMPDIR) and the scenario's own directories may be nobody's.
    tmux = sorted(str(p.relative_to(user.tmux_dir)) for p in user.tmux_dir.rglob("*"))
    expected = {str(user.home), str(user.tmux_dir)}
    elsewhere = []
    for top in ("/tmp", "/var/tmp", "/dev/shm", "/run", "/dev"):
        for root, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in expected]
            for name in dirs + files:
                path = os.path.join(root, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if st.st_uid == NOBODY or st.st_gid == NOBODY:
                    elsewhere.append(f"{path} ({stat.S_IMODE(st.st_mode):04o} {st.st_uid}:{st.st_gid})")
    home_mode = os.stat(user.home)
    return {"home": home, "stat": stat_lines, "elsewhere": elsewhere, "tmux_dir": tmux,
            "home_itself": {"mode": f"{stat.S_IMODE(home_mode.st_mode):04o}", "uid": home_mode.st_uid}}


def tui_ordinary(user):
    """The TUI as nobody: the accounts' codes (the key is protected by now: the remembered access key opens it),
    an account pinned (pins.json), then the FIDO2 PIN changed on the FIDO2 tab."""
    out = {}
    t = NobodyTmux(user, shlex.quote(str(YKTERM)))
    try:
        t.wait_for("Ordinary", timeout=20)
        out["processes"] = t.processes()
        out.update(codes_on_screen(t))
        t.send("p")
        out["pinned"] = t.wait_for("★")
        t.send("3")
        out["fido_before"] = t.wait_for("FIDO2 authenticator")
        out["fido_set"] = t.wait_for(r"set · \d+ tries left")
        t.send("c")
        t.wait_for("Change the FIDO2 PIN")
        t.submit(PIN_1, PIN_2, PIN_2)
        out["fido_changed"] = t.wait_for("FIDO2 PIN changed")
        t.send("q")
        out["exit"] = t.wait_for("EXITED=")
    finally:
        try:
            out.setdefault("last_screen", t.screen())
        except Exception as e:  # noqa: BLE001 (the tmux server is gone: say so)
            out.setdefault("last_screen", repr(e))
        t.close()
    return out


def ordinary(base):
    """Flows a, b and c: the command line and the TUI as nobody on a key whose hidraw nodes anyone may open."""
    user = User(base)
    step("uid", lambda: user.run(["id"]))
    step("doctor", lambda: user.ykterm("doctor"))
    step("oath_add", add_accounts, user)
    step("oath_code", lambda: codes_from_cli(user.ykterm("oath", "code", "--json")))
    step("fido_info_before", lambda: user.ykterm("fido", "info", "--json"))
    step("fido_pin_set", lambda: user.ykterm("fido", "pin", "set", input=PIN_1 + "\n"))
    step("fido_pin_set_works", lambda: pin_works_over_hid(PIN_1))
    step("fido_info_after", lambda: user.ykterm("fido", "info", "--json"))
    step("otp_chalresp", chalresp, user)
    step("oath_password_set", lambda: user.ykterm("oath", "password", "set", "--remember", input=OATH_PASSWORD + "\n"))
    # No password on stdin: the remembered access key opens the key.
    step("oath_code_remembered", lambda: codes_from_cli(user.ykterm("oath", "code", "--json")))
    step("oath_keys_file", lambda: (user.home / ".config/ykterm/oath-keys.json").read_text())
    # A trace, so the state directory gets a file too.
    step("verbose_list", lambda: user.ykterm("--verbose", "oath", "list"))
    step("tui", tui_ordinary, user)
    step("fido_pin_after_tui", lambda: {"new": pin_works_over_hid(PIN_2), "old": pin_works_over_hid(PIN_1)})
    step("census", census, user)
    # The remembered key was what opened it: forgotten, the key asks for the password again (none on stdin).
    step("oath_password_forget", lambda: user.ykterm("oath", "password", "forget"))
    step("oath_code_forgotten", lambda: user.ykterm("oath", "code", "--json"))


def tui_no_udev_rule(user):
    """The TUI as nobody on a key whose hidraw nodes it cannot open: OATH codes (over CCID), then the FIDO2 tab."""
    out = {}
    t = NobodyTmux(user, shlex.quote(str(YKTERM)))
    try:
        t.wait_for("Ordinary", timeout=20)
        out["processes"] = t.processes()
        out.update(codes_on_screen(t))
        t.send("3")
        out["fido"] = t.wait_for(r"/dev/hidraw\d|[Pp]ermission|udev|FIDO2 authenticator", timeout=20)
        # What it settles on (the message may come after a first frame).
        time.sleep(1.5)
        out["fido_later"] = t.screen()
        t.send("2")
        out["otp_tab"] = t.wait_for(r"[Ss]lot 1", timeout=20)
        t.send("q")
        out["exit"] = t.wait_for("EXITED=")
    finally:
        try:
            out.setdefault("last_screen", t.screen())
        except Exception as e:  # noqa: BLE001 (the tmux server is gone: say so)
            out.setdefault("last_screen", repr(e))
        t.close()
    return out


def as_root(*args):
    r = subprocess.run([str(YKTERM), *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    return {"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr}


def nodes():
    found = {}
    for n in sorted(os.listdir("/dev")):
        if n.startswith("hidraw"):
            st = os.stat("/dev/" + n)
            found["/dev/" + n] = {"mode": f"{stat.S_IMODE(st.st_mode):04o}", "uid": st.st_uid}
    return found


def no_udev_rule(base):
    """Flow d: hidraw nodes root's alone (--hidraw-mode 0600), as on a machine without the udev rule."""
    user = User(base)
    step("nodes", nodes)
    step("nobody_opens_node", lambda: {n: user.run(["sh", "-c", f": <> {n}"]) for n in nodes()})
    step("list", lambda: user.ykterm("list"))
    step("list_json", lambda: user.ykterm("list", "--json"))
    step("doctor", lambda: user.ykterm("doctor"))
    step("fido_info", lambda: user.ykterm("fido", "info"))
    # The same from an SSH session (as sshd sets it): the seat rule's uaccess does not cover it.
    ssh = {"SSH_CONNECTION": "127.0.0.1 50000 127.0.0.1 22"}
    step("doctor_remote", lambda: user.ykterm("doctor", **ssh))
    step("fido_info_remote", lambda: user.ykterm("fido", "info", **ssh))
    step("root_fido_info", as_root, "fido", "info", "--json")
    step("oath_add", add_accounts, user)
    step("oath_code", lambda: codes_from_cli(user.ykterm("oath", "code", "--json")))
    step("otp_info", lambda: user.ykterm("otp", "info"))
    step("otp_chalresp", chalresp, user)
    step("tui", tui_no_udev_rule, user)
    step("census", census, user)


def main():
    name = sys.argv[1]
    # On the private tmpfs over /tmp (see the module's docstring): gone with the namespace.
    base = Path(tempfile.mkdtemp(prefix="ykterm-unprivileged-", dir="/tmp"))
    os.chmod(base, 0o755)
    emit(base=str(base), tmp_is_private=subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "/tmp"],
                                                       capture_output=True, text=True).stdout.strip())
    globals()[name](base)
    emit(done=True)


if __name__ == "__main__":
    main()
