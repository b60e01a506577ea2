"""PIV keys for SSH (issue 32, item 2), on the virtual key through pcscd: a key ykterm generates, certified with
`piv certificates generate` (signed by the slot's key on the key), is what ykman reads, what openssl fingerprints
and verifies, what ykcs11 offers to `ssh-keygen -D` (ykterm's `piv ssh-key` line) and what `ssh -I libykcs11.so`
logs in with; `piv certificates request` gives a CSR `openssl req -verify` accepts."""

import glob
import os
import shutil
import subprocess

import pytest

from harness import run_ykman, run_ykterm
from harness import serve_usb, usb_unavailable_reason
from sshd_scripts import SSHD
from test_usb import PRELUDE, results

PIN = "123456"


def ykcs11():
    found = sorted(glob.glob("/usr/lib/*/libykcs11.so*") + glob.glob("/usr/lib/libykcs11.so*"))
    return found[0] if found else None


def unusable():
    for tool in ("openssl", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is missing"
    if ykcs11() is None:
        return "ykcs11 (Debian's ykcs11) is missing"
    return None


pytestmark = pytest.mark.skipif(unusable() is not None, reason=unusable() or "")


def piv(key, env, *args, **kw):
    return run_ykterm("piv", *args, env=dict(env, YKTERM_READER=key.reader), **kw)


def openssl(*args, input=None):
    return subprocess.run(["openssl", *args], capture_output=True, text=True, input=input, timeout=30, check=True)


@pytest.fixture
def certified(key, env, tmp_path):
    """Slot 9a with an ECCP256 key ykterm generated and a certificate it made on the key."""
    piv(key, env, "keys", "generate", "9a", "-a", "ECCP256", "--out", str(tmp_path / "9a.pub"))
    r = piv(key, env, "certificates", "generate", "9a", "--subject", "CN=ssh-piv,O=Example", "--valid-days", "30",
            input=PIN + "\n")
    return key, r.stdout


def test_a_generated_certificate_is_read_by_ykman_and_openssl(certified, env, tmp_path):
    key, said = certified
    pem = tmp_path / "9a.pem"
    piv(key, env, "certificates", "export", "9a", "--out", str(pem))
    fingerprint = openssl("x509", "-in", str(pem), "-noout", "-fingerprint", "-sha256").stdout.strip().split("=", 1)[1]
    assert fingerprint in said and "CN=ssh-piv" in said, said
    # Self-signed by the slot's key: openssl checks the signature with the certificate's own public key, which is
    # the one the key gave when it generated it.
    text = openssl("x509", "-in", str(pem), "-noout", "-subject", "-issuer", "-pubkey").stdout
    assert "subject=CN = ssh-piv, O = Example" in text and "issuer=CN = ssh-piv, O = Example" in text, text
    assert openssl("pkey", "-pubin", "-in", str(tmp_path / "9a.pub")).stdout in text
    v = openssl("verify", "-check_ss_sig", "-CAfile", str(pem), str(pem))
    assert v.stdout.strip().endswith(": OK"), v.stdout
    days = openssl("x509", "-in", str(pem), "-noout", "-checkend", str(29 * 86400)).returncode
    assert days == 0
    info = run_ykman(key.reader, "piv", "info", env=env).stdout
    assert "CN=ssh-piv" in info and fingerprint.replace(":", "").lower() in info.replace(":", "").lower(), info


def test_a_request_is_verified_by_openssl(key, env, tmp_path):
    piv(key, env, "keys", "generate", "9c", "-a", "ECCP384")
    csr = tmp_path / "9c.csr"
    piv(key, env, "certificates", "request", "9c", "--subject", "CN=request,OU=Ops", "--out", str(csr),
        input=PIN + "\n")
    r = subprocess.run(["openssl", "req", "-verify", "-in", str(csr), "-noout", "-subject"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0 and "verify OK" in (r.stdout + r.stderr), r
    assert "subject=CN = request, OU = Ops" in r.stdout, r.stdout


def test_a_slot_without_a_key_is_named(key, env):
    r = piv(key, env, "ssh-key", "9d", check=False)
    assert r.returncode == 1 and "9D" in r.stderr, r


PIV_LOGIN_SCRIPT = PRELUDE + SSHD + """
import tempfile
LIB = os.environ["YKCS11"]
work = tempfile.mkdtemp(prefix="ykterm-piv-ssh-")
def run(argv, stdin=None, env=None):
    return subprocess.run(argv, env=env or os.environ, capture_output=True, text=True, timeout=90, input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL)
g = run([YKTERM, "piv", "keys", "generate", "9a", "-a", "ECCP256"])
c = run([YKTERM, "piv", "certificates", "generate", "9a", "--subject", "CN=ssh-piv"], stdin="123456\\n")
line = run([YKTERM, "piv", "ssh-key", "9a"]).stdout.strip()
emit(generated=g.returncode, certified=c.returncode, errors=g.stderr + c.stderr, line=line)
d = run(["ssh-keygen", "-D", LIB])
emit(listed=d.stdout, listed_err=d.stderr[-500:], listed_rc=d.returncode)
askpass = work + "/askpass"
with open(askpass, "w") as f:
    f.write("#!/bin/sh\\necho 123456\\n")
os.chmod(askpass, 0o755)
sshd = Sshd(work, line + "\\n")
try:
    # Not IdentitiesOnly: it would leave out the keys the PKCS #11 module offers.
    r = run(sshd.client() + ["-I", LIB, "127.0.0.1", "echo", "logged-in-piv"],
            env=dict(os.environ, SSH_ASKPASS=askpass, SSH_ASKPASS_REQUIRE="force", DISPLAY=":0"))
    emit(login=r.returncode, login_out=r.stdout.strip(), login_err=r.stderr[-500:])
finally:
    sshd.stop()
    shutil.rmtree(work, ignore_errors=True)
"""


def login_unusable():
    if shutil.which("/usr/sbin/sshd") is None or shutil.which("ssh") is None:
        return "sshd or ssh is missing (make test installs openssh-server)"
    return usb_unavailable_reason()


@pytest.mark.skipif(login_unusable() is not None, reason=login_unusable() or "")
def test_ykcs11_offers_the_piv_ssh_key_line_and_ssh_logs_in_with_it():
    """On the USB virtual key (ykcs11 takes only YubiKey readers): a key ykterm generated and certified is what
    `ssh-keygen -D libykcs11.so` prints as ykterm's `piv ssh-key` line, and `ssh -I libykcs11.so` logs in to an
    sshd of the test's own that lists that line."""
    r = results(serve_usb("--interfaces", "ccid", script=PIV_LOGIN_SCRIPT, env=dict(os.environ, YKCS11=ykcs11()),
                          timeout=240))
    assert r["generated"] == 0 and r["certified"] == 0, r["errors"]
    line = r["line"]
    assert line.startswith("ecdsa-sha2-nistp256 ") and line.endswith(" PIV slot 9A"), line
    assert r["listed_rc"] == 0, r["listed_err"]
    keys = [l.split()[:2] for l in r["listed"].splitlines() if l.strip()]
    assert line.split()[:2] in keys, (line, r["listed"])
    assert r["login"] == 0 and r["login_out"] == "logged-in-piv", (r["login_err"])
