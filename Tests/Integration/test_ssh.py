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
