"""ykterm as an ordinary user (issue 35, item 4): nobody (65534) with a HOME of its own, on the virtual key
plugged in as a USB key (`virtual-key serve --usb`).

Two scenarios (unprivileged_scenarios.py), each one run of the key, checked here step by step:

- ordinary: hidraw nodes anyone may open (0666, as ykterm's udev rule gives). As nobody, on the command line:
  `oath add` (the secret from stdin), `oath code`, `fido info`, `fido pin set`, `otp chalresp` then
  `otp calculate`, `oath password set --remember` then `oath code` with no password; in the TUI (the tmux server
  nobody's too): the codes of those accounts, an account pinned, the FIDO2 PIN changed on the FIDO2 tab. pyotp,
  hmac and python-fido2 (as root) check the results. Then every file ykterm wrote: in $HOME/.config/ykterm and
  $HOME/.local/state/ykterm (no XDG_* variables are set), nobody's, files 0600 and directories 0700; nothing of
  nobody's anywhere else it could write (/tmp and /var/tmp are fresh tmpfs for the scenario; /dev, /dev/shm,
  /run are the key's namespace's).
- no_udev_rule: `--hidraw-mode 0600`, nodes root's alone as on a machine without the rule. `list`, `doctor`,
  `fido info` and the TUI's FIDO2 tab name each node nobody cannot open and the fix (the udev rule); OATH and
  OTP over CCID keep working, on the command line and in the TUI.
"""

import json
import shutil
import sys
from pathlib import Path

import pytest

from harness import serve_usb, usb_unavailable_reason

SCENARIOS = Path(__file__).resolve().parent / "unprivileged_scenarios.py"
NOBODY = 65534


def unusable():
    reason = usb_unavailable_reason()
    if reason:
        return reason
    for tool in ("setpriv", "tmux", "findmnt", "stat"):
        if shutil.which(tool) is None:
            return f"{tool} is missing"
    return None


pytestmark = pytest.mark.skipif(unusable() is not None, reason=unusable() or "")

# The scenario in a mount namespace of its own inside the key's, with fresh tmpfs over /tmp and /var/tmp: what
# nobody writes there is seen, and nothing is left behind when the namespace ends.
# A checkout under /tmp (CI's clone may be there) would be hidden by the tmpfs: it is bound back in place, from a
# view of the old /tmp kept under the namespace's private /run.
PRIVATE_TMP = ('repo="$1"; shift; '
               "mkdir -p /run/ykterm-outer-tmp && mount --bind /tmp /run/ykterm-outer-tmp && "
               "mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp && "
               "mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /var/tmp && "
               'case "$repo" in /tmp/*) rel="${repo#/tmp/}"; mkdir -p "/tmp/$rel" && '
               'mount --bind "/run/ykterm-outer-tmp/$rel" "/tmp/$rel";; esac && exec "$@"')
REPO = Path(__file__).resolve().parents[2]


class Scenario:
    """The steps' results of one scenario run; a step that raised or was not reached fails with its traceback
    and serve's output."""

    def __init__(self, run):
        self.run = run
        self.steps = {}
        for line in run.stdout.splitlines():
            if line.startswith("{"):
                self.steps.update(json.loads(line))

    def why(self):
        return f"exit {self.run.returncode}\nstderr: {self.run.stderr[-3000:]}"

    def __getitem__(self, name):
        if name not in self.steps:
            raise AssertionError(f"step {name!r} gave no result: "
                                 f"{self.steps.get(name + '_exception', 'not reached')}\n{self.why()}")
        return self.steps[name]

    def exceptions(self):
        return {k: v for k, v in self.steps.items() if k.endswith("_exception")}


def scenario(name, *serve_args):
    return Scenario(serve_usb(*serve_args, command=["unshare", "--mount", "--propagation", "private", "--", "sh",
                                                    "-c", PRIVATE_TMP, "sh", str(REPO), sys.executable, str(SCENARIOS),
                                                    name],
                              timeout=150))


@pytest.fixture(scope="module")
def ordinary():
    return scenario("ordinary", "--serial", "35000401")


@pytest.fixture(scope="module")
def no_udev_rule():
    return scenario("no_udev_rule", "--serial", "35000402", "--hidraw-mode", "0600")


def joined(text):
    """Screen text with its line breaks and runs of spaces as one space (a message wraps in the TUI)."""
    return " ".join(text.split())


def ok(result):
    assert result["rc"] == 0, result
    return result["stdout"]


def codes_match(codes):
    assert set(codes) == {"Unpriv", "Ordinary"}, codes
    for issuer, c in codes.items():
        assert c["shown"] == c["pyotp"], (issuer, codes)


def all_nobody(processes):
    assert {"tmux: server", "sh", "ykterm"} <= {p["comm"] for p in processes}, processes
    for p in processes:
        assert p["uid"] == [NOBODY] * 4 and p["gid"] == [NOBODY] * 4 and p["groups"] == [], p
    ykterm = next(p for p in processes if p["comm"] == "ykterm")
    assert not [v for v in ykterm["env"] if v.startswith("XDG_")], ykterm["env"]
    assert ykterm["home"].endswith("/home"), ykterm


def check_census(census):
    """Every entry under HOME nobody's, files 0600, directories 0700, and all of them ykterm's own
    (~/.config/ykterm, ~/.local/state/ykterm and the directories above them)."""
    print("\n" + census["stat"], end="")
    assert census["home_itself"] == {"mode": "0700", "uid": NOBODY}
    allowed = {".config", ".config/ykterm", ".local", ".local/state", ".local/state/ykterm"}
    for e in census["home"]:
        assert (e["uid"], e["gid"]) == (NOBODY, NOBODY), e
        assert e["kind"] in ("file", "dir"), e
        assert e["mode"] == ("0600" if e["kind"] == "file" else "0700"), e
        assert e["path"] in allowed or e["path"].startswith((".config/ykterm/", ".local/state/ykterm/")), e
    # Outside HOME: tmux's socket (in the TMUX_TMPDIR given to it) and nothing else of nobody's.
    assert census["elsewhere"] == [], census["elsewhere"]
    assert all(p == "tmux-65534" or p.startswith("tmux-65534/ykterm-unpriv-") for p in census["tmux_dir"]), census


# --- hidraw nodes nobody may open --------------------------------------------------------------------------------

def test_the_ordinary_scenario_ran_every_step_as_nobody(ordinary):
    assert ordinary.run.returncode == 0 and ordinary.steps.get("done"), ordinary.why()
    assert ordinary.exceptions() == {}, ordinary.exceptions()
    assert ordinary["tmp_is_private"] == "tmpfs"
    assert ordinary["uid"]["stdout"].strip() == "uid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup)"


def test_doctor_as_nobody_reaches_pcscd_and_opens_both_hid_interfaces(ordinary):
    doctor = ok(ordinary["doctor"])
    assert "ok    pcscd: reachable" in doctor, doctor
    for what in ("FIDO HID", "OTP HID"):
        assert any(line.startswith("ok") and what in line and "is accessible" in line
                   for line in doctor.splitlines()), doctor
    assert "fail" not in doctor, doctor


def test_command_line_as_nobody(ordinary):
    for issuer, r in ordinary["oath_add"].items():
        assert f"Added {issuer}:" in ok(r), r
    codes_match(ordinary["oath_code"])
    before = json.loads(ok(ordinary["fido_info_before"]))
    assert before["pin_set"] is False and "FIDO_2_1" in before["versions"], before
    assert ok(ordinary["fido_pin_set"]).strip() == "PIN set"
    assert ordinary["fido_pin_set_works"] is True
    after = json.loads(ok(ordinary["fido_info_after"]))
    assert after["pin_set"] is True and after["pin_retries"] == 8, after
    otp = ordinary["otp_chalresp"]
    assert "programmed" in ok(otp["programmed"])
    assert ok(otp["answer"]).strip() == otp["expected"]


def test_a_remembered_oath_password_opens_the_key_for_nobody(ordinary):
    ok(ordinary["oath_password_set"])
    # No password given: the remembered access key opened the key.
    codes_match(ordinary["oath_code_remembered"])
    keys = json.loads(ordinary["oath_keys_file"])
    assert len(keys) == 1 and "oath password" not in ordinary["oath_keys_file"], keys
    # Forgotten, it is the password that is asked for again.
    ok(ordinary["oath_password_forget"])
    forgotten = ordinary["oath_code_forgotten"]
    assert forgotten["rc"] != 0 and "Password" in forgotten["stderr"], forgotten


def test_tui_as_nobody_shows_codes_and_changes_the_fido2_pin(ordinary):
    tui = ordinary["tui"]
    all_nobody(tui["processes"])
    codes_match(tui["codes"])
    assert "★ Ordinary" in tui["pinned"], tui["pinned"]
    assert "set · 8 tries left" in tui["fido_set"], tui["fido_set"]
    assert "FIDO2 PIN changed" in tui["fido_changed"], tui["fido_changed"]
    assert "EXITED=0" in tui["exit"] and "icanon echo" in tui["exit"], tui["exit"]
    # python-fido2 (over HID, as root): the new PIN works, the old one is refused.
    assert ordinary["fido_pin_after_tui"] == {"new": True, "old": "PIN_INVALID"}


def test_every_file_ykterm_wrote_for_nobody_is_its_own_and_0600(ordinary):
    census = ordinary["census"]
    found = {e["path"] for e in census["home"]}
    # Config (the remembered key, the pins) and state (the trace) in the XDG defaults under HOME.
    assert {".config/ykterm/oath-keys.json", ".config/ykterm/pins.json",
            ".local/state/ykterm/trace.log"} <= found, census["stat"]
    assert "/.local/state/ykterm/trace.log" in ordinary["verbose_list"]["stderr"]
    check_census(census)


# --- hidraw nodes root's alone (no udev rule) --------------------------------------------------------------------

def strings_in(value):
    """Every string in a JSON value, however deep."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.keys()) + list(value.values())
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


def node_error_named(text, node):
    """The message for `node`: the node's path and the fix (the udev rule) in one line of `text`."""
    return any(node in line and "udev rule" in line for line in text.splitlines())


def test_the_no_udev_rule_scenario_ran_every_step(no_udev_rule):
    assert no_udev_rule.run.returncode == 0 and no_udev_rule.steps.get("done"), no_udev_rule.why()
    assert no_udev_rule.exceptions() == {}, no_udev_rule.exceptions()
    # The nodes are root's with 0600, and the kernel keeps nobody out.
    nodes = no_udev_rule["nodes"]
    assert sorted(nodes) == ["/dev/hidraw0", "/dev/hidraw1"], nodes
    assert all(n == {"mode": "0600", "uid": 0} for n in nodes.values()), nodes
    for node, r in no_udev_rule["nobody_opens_node"].items():
        assert r["rc"] != 0 and "Permission denied" in r["stderr"], (node, r)


def test_list_names_each_node_nobody_cannot_open_and_the_fix(no_udev_rule):
    listed = json.loads(ok(no_udev_rule["list_json"]))
    assert len(listed) == 1, listed
    key = listed[0]
    # Still the whole key, its CCID applications read through pcscd.
    assert key["interfaces"] == ["ccid", "fido", "otp"] and key["serial"] == 35000402, key
    assert {"OATH", "PIV", "OpenPGP", "OTP", "FIDO2"} <= set(key["applications"]), key
    nodes = [key["fido_hid"], key["otp_hid"]]
    assert sorted(nodes) == sorted(no_udev_rule["nodes"]), key
    text = no_udev_rule["list"]["stdout"] + no_udev_rule["list"]["stderr"]
    assert no_udev_rule["list"]["rc"] == 0, no_udev_rule["list"]
    assert "serial 35000402" in text and "OATH" in text, text
    strings = [v for v in strings_in(key) if "udev rule" in v]
    for node in nodes:
        assert node_error_named(text, node), f"{node} and the udev rule not named:\n{text}"
        assert any(node in s for s in strings), f"{node} and the udev rule not in the JSON: {key}"


def test_doctor_names_each_node_and_the_udev_rule(no_udev_rule):
    doctor = no_udev_rule["doctor"]
    assert doctor["rc"] == 1, doctor
    assert "ok    Yubico YubiKey OTP+FIDO+CCID 00 00: YubiKey 5 NFC, serial 35000402" in doctor["stdout"], doctor
    for node in no_udev_rule["nodes"]:
        assert any(line.startswith("fail") and node in line and "udev rule" in line
                   for line in doctor["stdout"].splitlines()), f"{node}:\n{doctor['stdout']}"


def test_from_a_remote_session_doctor_and_fido_info_give_the_group_rule(no_udev_rule):
    doctor = no_udev_rule["doctor_remote"]
    assert doctor["rc"] == 1, doctor
    for node in no_udev_rule["nodes"]:
        line = next((l for l in doctor["stdout"].splitlines() if l.startswith("fail") and node in l), "")
        assert "remote session" in line and "uaccess" in line, doctor["stdout"]
        assert "70-ykterm-fido-group.rules /etc/udev/rules.d/" in line and "usermod -aG plugdev nobody" in line, line
    fido = no_udev_rule["fido_info_remote"]
    text = fido["stdout"] + fido["stderr"]
    assert fido["rc"] != 0 and "uaccess" in text and "group rule" in text and "plugdev" in text, fido


def test_fido_info_fails_naming_the_node_and_the_udev_rule(no_udev_rule):
    fido = no_udev_rule["fido_info"]
    node = json.loads(no_udev_rule["list_json"]["stdout"])[0]["fido_hid"]
    assert fido["rc"] != 0, fido
    assert node_error_named(fido["stdout"] + fido["stderr"], node), fido
    # The same node serves root, who may open it.
    root = no_udev_rule["root_fido_info"]
    assert json.loads(ok(root))["fido2"] is True, root


def test_oath_and_otp_over_ccid_keep_working_for_nobody(no_udev_rule):
    for issuer, r in no_udev_rule["oath_add"].items():
        assert f"Added {issuer}:" in ok(r), r
    codes_match(no_udev_rule["oath_code"])
    assert "Serial: 35000402" in ok(no_udev_rule["otp_info"])
    otp = no_udev_rule["otp_chalresp"]
    assert "programmed" in ok(otp["programmed"])
    assert ok(otp["answer"]).strip() == otp["expected"]


def test_tui_fido2_tab_names_the_node_while_oath_and_otp_work(no_udev_rule):
    tui = no_udev_rule["tui"]
    all_nobody(tui["processes"])
    codes_match(tui["codes"])
    node = json.loads(no_udev_rule["list_json"]["stdout"])[0]["fido_hid"]
    for screen in (tui["fido"], tui["fido_later"]):
        assert node in screen and "udev rule" in joined(screen), screen
    assert "Slot 1: empty · slot 2: programmed" in tui["otp_tab"], tui["otp_tab"]
    assert "EXITED=0" in tui["exit"], tui["exit"]


def test_nothing_of_nobodys_outside_home_and_every_file_0600(no_udev_rule):
    check_census(no_udev_rule["census"])
