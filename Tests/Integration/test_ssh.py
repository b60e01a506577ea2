"""SSH keys on the key (issue 32): `ykterm ssh new | list | export | delete` on the virtual key through pcscd,
checked with OpenSSH's ssh-keygen (which reads the handle files and fingerprints the public keys) and with
python-fido2 (which lists the credentials: relying party, user ID, user name, credProtect, public key)."""

import base64
import hashlib
import json
import shutil
import struct
import subprocess

import pytest

from harness import run_ykterm
from test_fido import peer

PIN = "ssh-pin-4711"


def ssh(key, env, *args, **kw):
    return run_ykterm("ssh", *args, env=dict(env, YKTERM_READER=key.reader), **kw)


def keygen(*args):
    return subprocess.run(["ssh-keygen", *args], capture_output=True, text=True, timeout=30, check=True).stdout


def wire(*fields):
    """SSH wire strings (RFC 4251): each field with its 32-bit length."""
    return b"".join(struct.pack(">I", len(f)) + f for f in fields)


@pytest.fixture
def pinned(key, env):
    run_ykterm("fido", "pin", "set", env=dict(env, YKTERM_READER=key.reader), input=PIN + "\n")
    return key


pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) is missing")


def test_a_key_made_is_what_ssh_keygen_reads_and_python_fido2_lists(pinned, env, tmp_path):
    key = pinned
    handle = tmp_path / "work"
    r = ssh(key, env, "new", "--type", "ecdsa", "--application", "ssh:work", "--user", "alice", "--out",
            str(handle), input=PIN + "\n")
    line = (tmp_path / "work.pub").read_text().strip()
    assert line in r.stdout and f"{handle}.pub" in r.stdout, r.stdout
    assert oct(handle.stat().st_mode & 0o777) == "0o600"
    # ssh-keygen reads the handle file: the public key in it is the .pub's.
    assert keygen("-y", "-f", str(handle)).split()[:2] == line.split()[:2]
    typ, blob, comment = line.split()
    assert typ == "sk-ecdsa-sha2-nistp256@openssh.com" and comment == "ssh:work"
    # python-fido2 lists the credential as OpenSSH makes one: rp ssh:work, user ID "alice" NUL-padded to 32
    # bytes, user name "openssh", credProtect 2; its public key is the one in the line.
    creds = [c for c in peer(key, env, "list-resident", pin=PIN)["credentials"] if c["rp_id"] == "ssh:work"]
    assert len(creds) == 1, creds
    c = creds[0]
    assert bytes.fromhex(c["user_id"]) == b"alice" + bytes(27) and c["user_name"] == "openssh", c
    assert c["cred_protect"] == 2 and c["alg"] == -7, c
    point = b"\x04" + bytes.fromhex(c["x"]) + bytes.fromhex(c["y"])
    assert base64.b64decode(blob) == wire(typ.encode(), b"nistp256", point, b"ssh:work")
    # ssh list: the same line, the fingerprint ssh-keygen gives, the file name ssh-keygen -K gives.
    listed = json.loads(ssh(key, env, "list", "--json", input=PIN + "\n").stdout)
    assert len(listed) == 1, listed
    k = listed[0]
    assert k["public_key"] == line and k["credential_id"] == c["credential_id"], k
    assert k["fingerprint"] == keygen("-l", "-f", f"{handle}.pub").split()[1], k
    assert (k["application"], k["user"], k["cred_protect"], k["touch_required"], k["verify_required"]) == \
        ("ssh:work", "alice", 2, True, False), k
    assert k["file"] == "id_ecdsa_sk_rk_work_alice"
    text = ssh(key, env, "list", input=PIN + "\n").stdout
    assert line in text and "user alice" in text and k["fingerprint"] in text, text


def test_export_writes_what_ssh_keygen_K_writes_and_delete_asks(pinned, env, tmp_path):
    key = pinned
    made = tmp_path / "made"
    made.mkdir()
    ssh(key, env, "new", "--type", "ecdsa", "--application", "ssh:", "--verify-required", "--out",
        str(made / "k"), input=PIN + "\n")
    ssh(key, env, "new", "--type", "ecdsa", "--application", "ssh:backup", "--user", "../x", "--out",
        str(made / "b"), input=PIN + "\n")
    out = tmp_path / "out"
    out.mkdir()
    r = ssh(key, env, "export", "--dir", str(out), input=PIN + "\n")
    # ssh-keygen -K's names: the application without "ssh:", the user in hex when it holds a path character.
    names = sorted(p.name for p in out.iterdir())
    assert names == ["id_ecdsa_sk_rk", "id_ecdsa_sk_rk.pub", "id_ecdsa_sk_rk_backup_2e2e2f78",
                     "id_ecdsa_sk_rk_backup_2e2e2f78.pub"], (names, r.stdout)
    assert (out / "id_ecdsa_sk_rk.pub").read_text() == (made / "k.pub").read_text()
    assert (out / "id_ecdsa_sk_rk_backup_2e2e2f78.pub").read_text() == (made / "b.pub").read_text()
    for name in ("id_ecdsa_sk_rk", "id_ecdsa_sk_rk_backup_2e2e2f78"):
        assert keygen("-y", "-f", str(out / name)).split()[:2] == (out / (name + ".pub")).read_text().split()[:2]
    listed = {k["application"]: k for k in json.loads(ssh(key, env, "list", "--json", input=PIN + "\n").stdout)}
    assert listed["ssh:"]["verify_required"] and listed["ssh:"]["cred_protect"] == 3
    # Again into the same directory, without a terminal: refused without --force, nothing changed.
    again = ssh(key, env, "export", "--dir", str(out), input=PIN + "\n", check=False)
    assert again.returncode == 2 and "--force" in again.stderr, again
    # The same application and user again: refused without --force; the key keeps its SSH key.
    same = ssh(key, env, "new", "--type", "ecdsa", "--application", "ssh:", "--out", str(made / "k2"),
               input=PIN + "\n", check=False)
    assert same.returncode == 2 and "already holds an SSH key for ssh:" in same.stderr, same
    assert not (made / "k2").exists()
    # Delete: refused without a terminal unless --force; then gone from the key.
    victim = listed["ssh:backup"]["credential_id"]
    refused = ssh(key, env, "delete", victim[:8], input=PIN + "\n", check=False)
    assert refused.returncode == 2 and "--force" in refused.stderr, refused
    deleted = ssh(key, env, "delete", victim[:8], "--force", input=PIN + "\n")
    assert "Deleted the SSH key of ssh:backup" in deleted.stdout
    left = json.loads(ssh(key, env, "list", "--json", input=PIN + "\n").stdout)
    assert [k["application"] for k in left] == ["ssh:"], left


def test_a_credential_of_another_site_is_not_an_ssh_key(pinned, env):
    key = pinned
    peer(key, env, "make-resident", "example.com", "bob", pin=PIN)
    assert json.loads(ssh(key, env, "list", "--json", input=PIN + "\n").stdout) == []
    bad = ssh(key, env, "new", "--application", "web:x", input=PIN + "\n", check=False)
    assert bad.returncode == 2 and "must start with ssh:" in bad.stderr, bad


# --- Logging in with OpenSSH, on the virtual key plugged in over USB --------------------------------------------

from test_usb import PRELUDE, results, ssh_keygen_env, ssh_keygen_unavailable_reason  # noqa: E402
from harness import serve_usb  # noqa: E402
from sshd_scripts import SSHD  # noqa: E402

LOGIN_SCRIPT = PRELUDE + SSHD + """
import tempfile
PIN = "ssh-pin-246"
env = dict(os.environ, LD_PRELOAD=os.environ["HIDRAW_SHIM"], SSH_ASKPASS=os.environ["PIN_ASKPASS"],
           SSH_ASKPASS_REQUIRE="force")
work = tempfile.mkdtemp(prefix="ykterm-ssh-login-")
def run(argv, stdin=None, cwd=None, shim=False):
    return subprocess.run(argv, env=env if shim else os.environ, cwd=cwd, capture_output=True, text=True,
                          timeout=60, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)
p = run([YKTERM, "fido", "pin", "set"], stdin=PIN + "\\n")
emit(pin_set=p.returncode, pin_err=p.stderr)
# Two keys ykterm makes, one OpenSSH makes.
made = {}
for name, args in (("ed", ["--application", "ssh:login"]), ("ec", ["--type", "ecdsa", "--application", "ssh:login-ec"])):
    r = run([YKTERM, "ssh", "new", *args, "--out", work + "/" + name], stdin=PIN + "\\n")
    made[name] = {"rc": r.returncode, "out": r.stdout + r.stderr}
emit(made=made)
k = run(["ssh-keygen", "-t", "ed25519-sk", "-O", "resident", "-O", "application=ssh:openssh", "-N", "", "-f",
         work + "/openssh"], shim=True)
emit(openssh=k.returncode, openssh_out=k.stdout + k.stderr)
listed = run([YKTERM, "ssh", "list", "--json"], stdin=PIN + "\\n")
emit(listed=json.loads(listed.stdout) if listed.returncode == 0 else listed.stderr)
# What ssh-keygen -K downloads.
os.mkdir(work + "/downloaded")
d = run(["ssh-keygen", "-K", "-N", ""], cwd=work + "/downloaded", shim=True)
emit(download=d.returncode, download_err=d.stderr,
     downloaded={n: open(work + "/downloaded/" + n).read() for n in os.listdir(work + "/downloaded") if n.endswith(".pub")})
files = {n: open(work + "/" + n).read() for n in ("ed.pub", "ec.pub", "openssh.pub") if os.path.exists(work + "/" + n)}
emit(files=files)
# An sshd of our own on 127.0.0.1 that accepts the two keys ykterm made; ssh logs in with each handle file.
sshd = Sshd(work, files.get("ed.pub", "") + files.get("ec.pub", ""))
try:
    logins = {}
    for name in ("ed", "ec", "openssh"):
        r = run(sshd.client() + ["-i", work + "/" + name, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
                                 "127.0.0.1", "echo", "logged-in-" + name], shim=True)
        logins[name] = {"rc": r.returncode, "out": r.stdout.strip(), "err": r.stderr[-400:]}
    emit(logins=logins)
finally:
    sshd.stop()
    shutil.rmtree(work, ignore_errors=True)
"""


def login_unavailable_reason():
    if shutil.which("/usr/sbin/sshd") is None or shutil.which("ssh") is None:
        return "sshd or ssh is missing (make test installs openssh-server)"
    return ssh_keygen_unavailable_reason()


@pytest.mark.skipif(login_unavailable_reason() is not None, reason=login_unavailable_reason() or "")
def test_ssh_logs_in_with_the_keys_ykterm_made_and_ssh_keygen_K_finds_them(tmp_path):
    """On the USB virtual key: `ykterm ssh new` makes an ed25519-sk and an ecdsa-sk key; OpenSSH (ssh, through
    libfido2) logs in with each handle file to an sshd of the test's own; `ssh-keygen -K` downloads them with the
    same public keys as `ykterm ssh list` shows, and a key ssh-keygen made is in that list with its public key."""
    r = results(serve_usb("--interfaces", "fido", script=LOGIN_SCRIPT, env=ssh_keygen_env(tmp_path), timeout=300))
    assert r["pin_set"] == 0, r["pin_err"]
    assert all(m["rc"] == 0 for m in r["made"].values()), r["made"]
    assert r["openssh"] == 0, r["openssh_out"]
    files = r["files"]
    lines = {k["application"]: k["public_key"] for k in r["listed"]}
    assert lines["ssh:login"] == files["ed.pub"].strip() and lines["ssh:login-ec"] == files["ec.pub"].strip()
    assert lines["ssh:login"].startswith("sk-ssh-ed25519@openssh.com ")
    assert lines["ssh:login-ec"].startswith("sk-ecdsa-sha2-nistp256@openssh.com ")
    assert lines["ssh:openssh"].split()[:2] == files["openssh.pub"].split()[:2], (lines, files)
    assert r["download"] == 0, r["download_err"]
    downloaded = r["downloaded"]
    assert downloaded["id_ed25519_sk_rk_login.pub"].strip() == lines["ssh:login"]
    assert downloaded["id_ecdsa_sk_rk_login-ec.pub"].strip() == lines["ssh:login-ec"]
    assert r["logins"]["ed"] == {"rc": 0, "out": "logged-in-ed", "err": r["logins"]["ed"]["err"]}, r["logins"]
    assert r["logins"]["ec"]["rc"] == 0 and r["logins"]["ec"]["out"] == "logged-in-ec", r["logins"]
    # The key the server does not list is refused.
    assert r["logins"]["openssh"]["rc"] != 0, r["logins"]
