"""The TUI's SSH tab end to end in tmux, on the virtual key plugged in over USB (usb_scenarios.ssh_tab): both kinds
of SSH key in one list, each line copied through OSC 52 as the command line prints it, a key made in the tab that
OpenSSH logs in with (ssh, through libfido2, to an sshd of the test's own on 127.0.0.1), and its deletion."""

import pytest

from test_ssh import login_unavailable_reason
from test_usb import ssh_keygen_env
from test_usb_tui import scenario, usable


def unavailable():
    return usable() or login_unavailable_reason()


@pytest.mark.skipif(unavailable() is not None, reason=unavailable() or "")
def test_ssh_tab_lists_both_kinds_copies_makes_a_key_ssh_logs_in_with_and_deletes_it(tmp_path):
    env = ssh_keygen_env(tmp_path)
    (tmp_path / "home").mkdir()
    r = scenario("ssh_tab", tmp_path / "home", "--serial", "31000009", timeout=300, env=env)
    assert (r["pin_set"], r["piv_key"], r["piv_cert"]) == (0, 0, 0), r
    # Before: the PIV slot, with its certificate's subject and the fingerprint ssh-keygen would print.
    assert "PIV 9A" in r["before"] and "CN=tui-ssh" in r["before"], r["before"]
    # The key the tab made: in the list with its fingerprint, and its files as ssh-keygen -K writes them.
    cli = {k["application"]: k for k in r["listed_cli"]}
    made = cli["ssh:tui"]
    assert made["type"] == "sk-ssh-ed25519@openssh.com" and made["touch_required"] and not made["verify_required"]
    assert made["fingerprint"] in r["list"], r["list"]
    files = r["files"]
    assert files["id_ed25519_sk_rk_tui"][0] == "0o600" and files["id_ed25519_sk_rk_tui.pub"][0] == "0o644", files
    assert files["id_ed25519_sk_rk_tui"][1].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert files["id_ed25519_sk_rk_tui.pub"][1].strip() == made["public_key"]
    # c: exactly the authorized_keys lines the command line prints, through OSC 52.
    assert r["copied_fido"] == made["public_key"], (r["copied_fido"], made["public_key"])
    assert r["copied_piv"] == r["piv_line"] and r["piv_line"].startswith("ecdsa-sha2-nistp256 "), r
    # Enter (on the PIV slot): the line in full on screen (it wraps; every character is there).
    assert r["piv_line"].split()[1] in r["details"].replace("\n", "").replace(" ", ""), r["details"]
    # OpenSSH logs in with the handle file the tab wrote.
    assert r["login"]["rc"] == 0 and r["login"]["out"] == "logged-in-from-tab", r["login"]
    # d: gone from the key.
    assert "ssh:tui" not in {k["application"] for k in r["listed_after"]}, r["listed_after"]
