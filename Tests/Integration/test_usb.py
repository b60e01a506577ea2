"""`ykterm virtual-key serve --usb`: the virtual key plugged in as a USB YubiKey inside a private mount
namespace, checked with independent clients (python-fido2, ykman, pyscard through pcscd) running inside."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

from harness import ROOT, YKTERM, serve_usb, stop_pid, usb_unavailable_reason

pytestmark = pytest.mark.skipif(usb_unavailable_reason() is not None, reason=usb_unavailable_reason() or "")

PRELUDE = """
import glob, json, os, subprocess, sys, time, threading
YKTERM = os.environ["YKTERM_BIN"]
YKMAN = os.environ["YKMAN_BIN"]
def emit(**kw):
    print(json.dumps(kw), flush=True)
def ykterm(*args):
    return subprocess.run([YKTERM] + list(args), capture_output=True, text=True, timeout=30)
def ykman(*args):
    return subprocess.run([YKMAN] + list(args), capture_output=True, text=True, timeout=60)
"""


def results(run):
    assert run.returncode == 0, f"exit {run.returncode}\nstdout: {run.stdout}\nstderr: {run.stderr}"
    out = {}
    for line in run.stdout.splitlines():
        if line.startswith("{"):
            out.update(json.loads(line))
    return out


def mounts_of_ours():
    with open("/proc/self/mountinfo") as f:
        return [line for line in f if "ykterm-hid" in line or "/run/ykterm-usb" in line]


def test_fido_over_hid_and_pin_shared_with_pcsc():
    r = results(serve_usb("--serial", "7654321", script=PRELUDE + """
from fido2.hid import CtapHidDevice
from fido2.ctap2 import Ctap2, ClientPin
from fido2.pcsc import CtapPcscDevice
devices = list(CtapHidDevice.list_devices())
emit(hid_devices=[d.descriptor.path for d in devices])
hid = Ctap2(devices[0])
emit(versions=hid.info.versions, aaguid=str(hid.info.aaguid))
ClientPin(hid).set_pin("246810")
readers = list(CtapPcscDevice.list_devices())
emit(pcsc=[repr(d) for d in readers])
pcsc = Ctap2(readers[0])
emit(pcsc_aaguid=str(pcsc.info.aaguid), pcsc_pin_set=pcsc.info.options.get("clientPin"))
token = ClientPin(pcsc).get_pin_token("246810")
emit(token_length=len(token))
try:
    ClientPin(pcsc).get_pin_token("000000")
except Exception as e:
    emit(wrong_pin=str(e))
emit(retries_over_hid=ClientPin(Ctap2(list(CtapHidDevice.list_devices())[0])).get_pin_retries()[0])
"""))
    assert len(r["hid_devices"]) == 1
    assert "FIDO_2_0" in r["versions"] and "U2F_V2" in r["versions"]
    assert r["pcsc"] == ["CtapPcscDevice(Yubico YubiKey OTP+FIDO+CCID 00 00)"]
    assert r["pcsc_aaguid"] == r["aaguid"]
    assert r["pcsc_pin_set"] is True
    assert r["token_length"] > 0
    assert "PIN_INVALID" in r["wrong_pin"]
    assert r["retries_over_hid"] == 7


def test_ykman_sees_one_usb_key():
    r = results(serve_usb("--serial", "7654321", "--firmware", "5.7.2", script=PRELUDE + """
for name, args in [("list", ["list"]), ("info", ["info"]), ("fido", ["fido", "info"]), ("otp", ["otp", "info"])]:
    p = ykman(*args)
    emit(**{name: p.stdout, name + "_rc": p.returncode, name + "_err": p.stderr})
"""))
    assert r["list_rc"] == 0, r["list_err"]
    assert r["list"].strip().splitlines() == ["YubiKey 5 NFC (5.7.2) [OTP+FIDO+CCID] Serial: 7654321"]
    assert r["info_rc"] == 0 and "Serial number: 7654321" in r["info"]
    assert "Enabled USB interfaces: OTP, FIDO, CCID" in r["info"]
    assert r["fido_rc"] == 0 and "AAGUID:" in r["fido"], r["fido"] + r["fido_err"]
    assert "PIN:" in r["fido"] and "Not supported" not in r["fido"]
    assert r["otp_rc"] == 0 and "Slot 1:" in r["otp"], r["otp_err"]


def test_sysfs_and_dev_as_on_real_hardware():
    r = results(serve_usb(script=PRELUDE + """
nodes = sorted(glob.glob("/dev/hidraw*"))
emit(nodes=nodes, sys=sorted(os.listdir("/sys/class/hidraw")))
usb = set()
for n in sorted(os.listdir("/sys/class/hidraw")):
    d = os.path.realpath(f"/sys/class/hidraw/{n}/device")
    emit(**{n + "_uevent": open(f"/sys/class/hidraw/{n}/uevent").read(),
            n + "_hid": open(d + "/uevent").read(),
            n + "_rdesc": open(d + "/report_descriptor", "rb").read()[:3].hex()})
    while not os.path.exists(d + "/idVendor"):
        d = os.path.dirname(d)
    usb.add(d)
d = usb.pop() if len(usb) == 1 else None
emit(usb_devices=len(usb) + (1 if d else 0))
if d:
    read = lambda f: open(os.path.join(d, f)).read().strip()
    emit(idVendor=read("idVendor"), idProduct=read("idProduct"), manufacturer=read("manufacturer"),
         product=read("product"), serial=read("serial") if os.path.exists(d + "/serial") else "",
         busnum=read("busnum"), devnum=read("devnum"), usb_uevent=read("uevent"))
emit(verify=os.environ.get("SYSTEMD_DEVICE_VERIFY_SYSFS"), control=os.environ.get("YKTERM_USB_CONTROL"),
     pcscd_socket=os.path.exists("/run/pcscd/pcscd.comm"))
import pty
m, s = pty.openpty()
emit(pty=os.ttyname(s))
r = ykterm("list", "--json")
emit(ykterm_list=json.loads(r.stdout) if r.returncode == 0 else r.stderr)
"""))
    assert r["nodes"] == ["/dev/hidraw0", "/dev/hidraw1"] and r["sys"] == ["hidraw0", "hidraw1"]
    assert "DEVNAME=hidraw0" in r["hidraw0_uevent"]
    for n in ("hidraw0", "hidraw1"):
        assert "HID_ID=0003:00001050:00000407" in r[n + "_hid"]
        assert "HID_NAME=Yubico YubiKey OTP+FIDO+CCID" in r[n + "_hid"] and "HID_UNIQ=" in r[n + "_hid"]
    assert r["hidraw0_rdesc"] == "050109"      # the OTP keyboard: usage page 1, usage 6
    assert r["hidraw1_rdesc"] == "06d0f1"      # FIDO: usage page 0xF1D0
    assert r["usb_devices"] == 1
    assert (r["idVendor"], r["idProduct"], r["manufacturer"], r["product"], r["serial"]) == \
        ("1050", "0407", "Yubico", "YubiKey OTP+FIDO+CCID", "")
    assert r["busnum"] and r["devnum"]
    assert "DEVTYPE=usb_device" in r["usb_uevent"] and "PRODUCT=1050/407/" in r["usb_uevent"]
    assert r["verify"] == "0" and r["control"] and r["pcscd_socket"]
    assert r["pty"].startswith("/dev/pts/")
    keys = r["ykterm_list"]
    assert isinstance(keys, list) and len(keys) == 1, keys
    assert keys[0]["fido_hid"] == "/dev/hidraw1" and keys[0]["otp_hid"] == "/dev/hidraw0"
    assert keys[0]["reader"] == "Yubico YubiKey OTP+FIDO+CCID 00 00" and keys[0]["transport"] == "usb"
    assert keys[0]["atr"] == "3bfd1300008131fe158073c021c057597562694b657940"   # a USB YubiKey's ATR


def test_security_key_has_fido_only_and_no_pcscd():
    r = results(serve_usb("--interfaces", "fido", script=PRELUDE + """
from fido2.hid import CtapHidDevice
from fido2.ctap2 import Ctap2
devices = list(CtapHidDevice.list_devices())
emit(devices=len(devices), versions=Ctap2(devices[0]).info.versions, nodes=sorted(glob.glob("/dev/hidraw*")),
     pcscd=os.path.exists("/run/pcscd/pcscd.comm"),
     hid=open(os.path.realpath("/sys/class/hidraw/hidraw0/device") + "/uevent").read(),
     ykman_info=ykman("info").stdout, info=ykterm("info", "--json").stdout)
"""))
    assert r["devices"] == 1 and "FIDO_2_0" in r["versions"]
    assert r["nodes"] == ["/dev/hidraw0"] and r["pcscd"] is False
    assert "HID_NAME=Yubico Security Key NFC" in r["hid"] and "HID_ID=0003:00001050:00000120" in r["hid"]
    # Its Management application says what it is, as ykman reads it: a Security Key with FIDO alone (ykman names
    # a Security Key by its USB product; ykterm by what the key says, and one with a serial is an Enterprise
    # Edition).
    assert "Device type: Security Key NFC" in r["ykman_info"], r["ykman_info"]
    assert re.search(r"^FIDO2\s+Enabled\s+Enabled", r["ykman_info"], re.M), r["ykman_info"]
    assert re.search(r"^PIV\s+Not available", r["ykman_info"], re.M), r["ykman_info"]
    info = json.loads(r["info"])
    assert info["product"] == "Security Key NFC - Enterprise Edition" and info["sky"], info
    assert {a for a, s in info["usb"].items() if s == "enabled"} == {"u2f", "fido2"}, info


def test_unplug_and_plug_from_inside():
    r = results(serve_usb(script=PRELUDE + """
from fido2.hid import CtapHidDevice
from fido2.ctap2 import Ctap2
from fido2.pcsc import CtapPcscDevice
fd = os.open("/dev/hidraw1", os.O_RDWR)
held = {}
READ = {"x86_64": 0, "aarch64": 63}[os.uname().machine]  # read(2)'s number in /proc/.../syscall
def reader():
    try:
        os.read(fd, 64)
        held["result"] = "data"
    except OSError as e:
        held["result"] = e.errno
t = threading.Thread(target=reader)
t.start()
# Unplugged once the read is held by the key (read(2) on the node, waiting).
deadline = time.monotonic() + 10
while time.monotonic() < deadline and "result" not in held:
    try:
        with open(f"/proc/self/task/{t.native_id}/syscall") as f:
            fields = f.read().split()
    except OSError:
        fields = []
    if len(fields) > 1 and fields[0] == str(READ) and int(fields[1], 16) == fd:
        break
    time.sleep(0.01)
p = ykterm("virtual-key", "usb", "unplug")
t.join(5)
emit(unplug=p.returncode, held=held.get("result"))
os.close(fd)
emit(gone_nodes=glob.glob("/dev/hidraw*"), gone_sys=os.listdir("/sys/class/hidraw"),
     gone_pcsc=len(list(CtapPcscDevice.list_devices())), gone_hid=len(list(CtapHidDevice.list_devices())))
p = ykterm("virtual-key", "usb", "unplug")
emit(unplug_again=p.returncode, unplug_again_err=p.stderr)
p = ykterm("virtual-key", "usb", "plug")
emit(plug=p.returncode, nodes=sorted(glob.glob("/dev/hidraw*")))
devices = list(CtapHidDevice.list_devices())
emit(hid=len(devices), versions=Ctap2(devices[0]).info.versions, pcsc=len(list(CtapPcscDevice.list_devices())))
p = ykterm("virtual-key", "usb", "plug")
emit(plug_again=p.returncode, plug_again_err=p.stderr)
"""))
    assert r["unplug"] == 0
    assert r["held"] == 19                     # ENODEV, as a hidraw read when the key leaves
    assert r["gone_nodes"] == [] and r["gone_sys"] == [] and r["gone_pcsc"] == 0 and r["gone_hid"] == 0
    assert r["unplug_again"] != 0 and "not plugged in" in r["unplug_again_err"]
    assert r["plug"] == 0 and r["nodes"] == ["/dev/hidraw0", "/dev/hidraw1"]
    assert r["hid"] == 1 and "FIDO_2_0" in r["versions"] and r["pcsc"] == 1
    assert r["plug_again"] != 0 and "already plugged in" in r["plug_again_err"]


def pcscds_of_ours():
    """Every pcscd whose reader configuration is serve --usb's (the namespace's pcscd shows its own PID in its
    pid file only if it has none of the host's; other runs on this machine may have one already: only a new one
    counts)."""
    found = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"/run/ykterm-usb" in f.read():
                        found.add(pid)
            except OSError:
                pass
    return found


def test_exit_status_and_nothing_left_behind():
    ours = pcscds_of_ours
    tmp_before = set(os.listdir(tempfile.gettempdir()))
    before = ours()
    run = serve_usb(command=["sh", "-c", "echo pcscd=$(cat /run/pcscd/pcscd.pid); exit 7"])
    assert run.returncode == 7, run.stderr
    pcscd = int(run.stdout.split("pcscd=")[1].split()[0])
    leftovers = sorted(ours() - before)
    assert leftovers == [], f"still running: {leftovers} (pcscd pid file said {pcscd})"
    assert mounts_of_ours() == []
    new = {n for n in set(os.listdir(tempfile.gettempdir())) - tmp_before if "ykterm-usb-test" not in n}
    assert not {n for n in new if "pcsc" in n or "ykterm" in n or "hidraw" in n}, new


def test_sigterm_reaches_command_and_everything_stops():
    script = PRELUDE + """
emit(ready=True)
time.sleep(60)  # runs until serve --usb passes SIGTERM on: the scenario
"""
    workdir = tempfile.mkdtemp(prefix="ykterm-usb-test-")
    try:
        path = os.path.join(workdir, "inside.py")
        with open(path, "w") as f:
            f.write(script)
        env = dict(os.environ, YKTERM_BIN=str(YKTERM), YKMAN_BIN="ykman")
        proc = subprocess.Popen([str(YKTERM), "virtual-key", "serve", "--usb", "--", sys.executable, path],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        try:
            assert "ready" in proc.stdout.readline()
            proc.terminate()
            assert proc.wait(timeout=15) == 128 + signal.SIGTERM
        finally:
            stop_pid(proc)
            proc.stdout.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    assert mounts_of_ours() == []


def test_refused_without_root_and_with_bad_interfaces():
    bad = subprocess.run([str(YKTERM), "virtual-key", "serve", "--usb", "--interfaces", "ccid,usb", "--", "true"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "--interfaces" in bad.stderr
    nobody = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(YKTERM),
                             "virtual-key", "serve", "--usb", "--", "true"], capture_output=True, text=True, timeout=30,
                            env={"PATH": os.environ["PATH"], "HOME": "/nonexistent"})
    assert nobody.returncode != 0 and "needs root" in nobody.stderr
    outside = subprocess.run([str(YKTERM), "virtual-key", "usb", "plug"], capture_output=True, text=True, timeout=30,
                             env={k: v for k, v in os.environ.items() if k != "YKTERM_USB_CONTROL"})
    assert outside.returncode != 0 and "YKTERM_USB_CONTROL" in outside.stderr


def test_state_file_keeps_what_the_key_stores(tmp_path):
    state = tmp_path / "key.json"
    first = results(serve_usb("--state", state, "--interfaces", "fido", script=PRELUDE + """
from fido2.hid import CtapHidDevice
from fido2.ctap2 import Ctap2, ClientPin
ClientPin(Ctap2(list(CtapHidDevice.list_devices())[0])).set_pin("135790")
emit(done=True)
"""))
    assert first["done"] and state.exists() and (state.stat().st_mode & 0o777) == 0o600
    # The key made is a Security Key: plugged in again with every interface asked for, it still has FIDO alone.
    second = results(serve_usb("--state", state, script=PRELUDE + """
from fido2.hid import CtapHidDevice
from fido2.ctap2 import Ctap2, ClientPin
ctap = Ctap2(list(CtapHidDevice.list_devices())[0])
emit(pin_set=ctap.info.options.get("clientPin"), token=len(ClientPin(ctap).get_pin_token("135790")),
     nodes=sorted(glob.glob("/dev/hidraw*")), listed=json.loads(ykterm("list", "--json").stdout))
"""))
    assert second["pin_set"] is True and second["token"] > 0
    assert second["nodes"] == ["/dev/hidraw0"] and [k["interfaces"] for k in second["listed"]] == [["fido"]]


def test_otp_over_hid_shares_the_slots_with_ccid():
    import hashlib
    import hmac
    secret = bytes(range(1, 21))
    challenge = bytes.fromhex("00112233")
    r = results(serve_usb("--serial", "4455667", script=PRELUDE + f"""
p = ykman("otp", "chalresp", "--force", "2", "{secret.hex()}")
emit(program=p.returncode, program_err=p.stderr)
p = ykman("otp", "calculate", "2", "{challenge.hex()}")
emit(hid_response=p.stdout.strip(), hid_err=p.stderr)
p = ykman("otp", "info")
emit(info=p.stdout)
from ykman.pcsc import list_devices
from yubikit.core.smartcard import SmartCardConnection
from yubikit.yubiotp import YubiOtpSession
from yubikit.core.otp import OtpConnection
from ykman.hid import list_otp_devices
with list_devices()[0].open_connection(SmartCardConnection) as c:
    emit(ccid_response=YubiOtpSession(c).calculate_hmac_sha1(2, bytes.fromhex("{challenge.hex()}")).hex())
otp = list_otp_devices()
with otp[0].open_connection(OtpConnection) as c:
    session = YubiOtpSession(c)
    emit(otp_devices=len(otp), otp_serial=session.get_serial(), otp_version=str(session.version))
"""))
    assert r["program"] == 0, r["program_err"]
    expected = hmac.new(secret, challenge, hashlib.sha1).hexdigest()
    assert r["hid_response"] == expected, r["hid_err"]
    assert r["ccid_response"] == expected
    assert "Slot 2: programmed" in r["info"]
    assert r["otp_devices"] == 1 and r["otp_serial"] == 4455667 and r["otp_version"] == "5.7.2"


def test_piv_over_the_usb_keys_ccid_agrees_with_ykman():
    """PIV on a USB key goes through its CCID interface (the reader pcscd names after the interfaces): a key and
    certificate ykman makes there are what `ykterm piv info` shows, and `piv verify` signs with that key."""
    r = results(serve_usb("--serial", "5566778", script=PRELUDE + """
import tempfile
MGM = "010203040506070801020304050607080102030405060708"
with tempfile.TemporaryDirectory() as d:
    pub = os.path.join(d, "pub.pem")
    g = ykman("piv", "keys", "generate", "-a", "ECCP256", "-m", MGM, "9a", pub)
    c = ykman("piv", "certificates", "generate", "-s", "CN=usb-piv", "-m", MGM, "-P", "123456", "9a", pub)
    emit(generated=g.returncode, certificate=c.returncode, errors=g.stderr + c.stderr, public=open(pub).read())
info = ykterm("piv", "info", "--json")
emit(info=json.loads(info.stdout) if info.returncode == 0 else info.stderr)
v = subprocess.run([YKTERM, "piv", "verify", "9a"], input="123456\\n", capture_output=True, text=True, timeout=30)
emit(verify=v.returncode, verify_out=v.stdout + v.stderr)
emit(readers=ykterm("list", "--json").stdout)
"""))
    assert r["generated"] == 0 and r["certificate"] == 0, r["errors"]
    [slot] = r["info"]["slots"]
    assert slot["slot"] == "9A" and slot["certificate"]["subject"] == "CN=usb-piv"
    assert slot["public_key_pem"] == r["public"] and r["info"]["serial"] == 5566778
    assert r["verify"] == 0 and r["verify_out"].startswith("OK: slot 9A's key (ECCP256)"), r["verify_out"]
    assert "Yubico YubiKey OTP+FIDO+CCID" in r["readers"]


def test_openpgp_and_hsmauth_over_the_usb_keys_ccid_agree_with_ykman():
    """OpenPGP and YubiHSM Auth on a USB key go through its CCID interface too: `ykterm openpgp info` reads what
    ykman reads, the PIN ykterm changes is the one ykman then needs, and the YubiHSM Auth credentials ykterm and
    ykman add are listed alike by both."""
    r = results(serve_usb("--serial", "5566779", "--firmware", "5.7.2", script=PRELUDE + """
def run(argv, stdin):
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60)
info = ykterm("openpgp", "info", "--json")
emit(pgp=json.loads(info.stdout) if info.returncode == 0 else info.stderr, pgp_ykman=ykman("openpgp", "info").stdout)
c = run([YKTERM, "openpgp", "access", "change-pin"], "123456\\n24681357\\n")
emit(change=c.returncode, change_out=c.stdout + c.stderr)
old = ykman("openpgp", "access", "change-pin", "-P", "123456", "-n", "11223344")
new = ykman("openpgp", "access", "change-pin", "-P", "24681357", "-n", "13572468")
emit(old=old.returncode, new=new.returncode, new_err=new.stderr)
info = ykterm("openpgp", "info", "--json")
emit(pgp_after=json.loads(info.stdout) if info.returncode == 0 else info.stderr)
h = ykterm("hsmauth", "info", "--json")
emit(hsm=json.loads(h.stdout) if h.returncode == 0 else h.stderr)
a = run([YKTERM, "hsmauth", "credentials", "derive", "by-ykterm"], "\\ns3cret-cred\\npassword\\n")
b = ykman("hsmauth", "credentials", "generate", "by-ykman", "-m", "", "-c", "s3cret-cred")
emit(added=[a.returncode, b.returncode], add_err=a.stderr + b.stderr)
listed = ykterm("hsmauth", "credentials", "list", "--json")
emit(listed=json.loads(listed.stdout) if listed.returncode == 0 else listed.stderr,
     listed_ykman=ykman("hsmauth", "credentials", "list").stdout)
"""))
    lines = [line.split(":", 1) for line in r["pgp_ykman"].splitlines() if ":" in line]
    ykman_info = {k.strip(): v.strip() for k, v in lines}
    assert r["pgp"]["serial"] == 5566779 and r["pgp"]["application_version"] == "5.7.2"
    assert ykman_info["Application version"] == r["pgp"]["application_version"]
    assert ykman_info["OpenPGP version"] == r["pgp"]["openpgp_version"] == "3.4"
    assert int(ykman_info["PIN tries remaining"]) == r["pgp"]["pin_tries"] == 3
    assert int(ykman_info["Admin PIN tries remaining"]) == r["pgp"]["admin_pin_tries"] == 3
    assert r["change"] == 0, r["change_out"]
    # The old PIN is wrong for ykman (a try used), the new one works (the tries back).
    assert r["old"] != 0 and r["new"] == 0, r["new_err"]
    assert r["pgp_after"]["pin_tries"] == 3
    assert r["hsm"]["version"] == "5.7.2" and r["hsm"]["credentials"] == 0, r["hsm"]
    assert r["added"] == [0, 0], r["add_err"]
    ours = {c["label"]: c["type"] for c in r["listed"]}
    assert ours == {"by-ykterm": "symmetric", "by-ykman": "asymmetric"}, r["listed"]
    theirs = {line.split("\t")[0].strip(): line.split("\t")[1].strip()
              for line in r["listed_ykman"].splitlines()[2:] if "\t" in line}
    assert {k: v.lower() for k, v in theirs.items()} == {"by-ykterm": "symmetric", "by-ykman": "asymmetric"}, theirs


def test_security_key_has_no_openpgp_or_hsmauth_and_says_so():
    """A Security Key (FIDO HID only, no CCID, no pcscd): `openpgp info` and `hsmauth info` end at once with a
    non-zero status and words naming the missing application, not a crash or a wait."""
    r = results(serve_usb("--interfaces", "fido", script=PRELUDE + """
for name, args in (("pgp", ["openpgp", "info"]), ("hsm", ["hsmauth", "info"]), ("pgp_json", ["openpgp", "info", "--json"])):
    start = time.monotonic()
    p = ykterm(*args)
    emit(**{name: {"rc": p.returncode, "out": p.stdout, "err": p.stderr, "seconds": time.monotonic() - start}})
for name, args in (("pgp_de", ["openpgp", "info"]), ("hsm_de", ["hsmauth", "info"])):
    p = subprocess.run([YKTERM] + args, capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, LANG="de_DE.UTF-8", LC_ALL="de_DE.UTF-8"))
    emit(**{name: {"rc": p.returncode, "err": p.stderr}})
"""))
    for name, application in (("pgp", "OpenPGP"), ("hsm", "YubiHSM Auth"), ("pgp_json", "OpenPGP")):
        got = r[name]
        assert got["rc"] not in (0, None) and got["rc"] < 128, got
        assert got["seconds"] < 20 and got["out"] == "", got
        assert application in got["err"] and "Security Key" in got["err"], got
        assert "Traceback" not in got["err"] and "Fatal error" not in got["err"], got
    for name, application in (("pgp_de", "OpenPGP"), ("hsm_de", "YubiHSM Auth")):
        assert r[name]["rc"] not in (0, None) and application in r[name]["err"], r[name]
        assert "Security Key" in r[name]["err"] and r[name]["err"] != r[name[:3]]["err"], r[name]


SSH_SCRIPT = PRELUDE + """
import tempfile
PIN = "ssh-pin-246"
# libfido2 opens only character devices; the FUSE-served nodes are regular files to fstat (hidraw_shim.c).
env = dict(os.environ, LD_PRELOAD=os.environ["HIDRAW_SHIM"], SSH_ASKPASS=os.environ["PIN_ASKPASS"],
           SSH_ASKPASS_REQUIRE="force")
def keygen(*args, cwd=None, shim=True):
    return subprocess.run(["ssh-keygen", *args], env=env if shim else os.environ, cwd=cwd, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
work = tempfile.mkdtemp()
if os.environ.get("SET_PIN"):
    p = subprocess.run([YKTERM, "fido", "pin", "set"], input=PIN + "\\n", capture_output=True, text=True, timeout=30)
    emit(pin_set=p.returncode, pin_err=p.stderr)
k = keygen("-t", "ed25519-sk", "-O", "resident", "-O", "application=ssh:ykterm", "-N", "", "-C", "eddsa@test",
           "-f", work + "/id")
emit(enroll=k.returncode, enroll_out=k.stdout + k.stderr)
if k.returncode == 0:
    emit(public=open(work + "/id.pub").read())
    with open(work + "/data", "w") as f:
        f.write("signed by the virtual key")
    s = keygen("-Y", "sign", "-f", work + "/id", "-n", "file", work + "/data")
    emit(sign=s.returncode, sign_err=s.stderr)
    with open(work + "/allowed", "w") as f:
        f.write("eddsa@test " + " ".join(open(work + "/id.pub").read().split()[:2]) + "\\n")
    v = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", work + "/allowed", "-I", "eddsa@test", "-n", "file",
                        "-s", work + "/data.sig"], stdin=open(work + "/data"), capture_output=True, text=True,
                       timeout=30)
    emit(verify=v.returncode, verify_out=v.stdout + v.stderr)
    # The resident key again, from credential management (ssh-keygen -K, with the PIN).
    os.mkdir(work + "/downloaded")
    d = keygen("-K", "-N", "", cwd=work + "/downloaded")
    emit(download=d.returncode, download_err=d.stderr, downloaded=sorted(os.listdir(work + "/downloaded")))
    for name in os.listdir(work + "/downloaded"):
        if name.endswith(".pub"):
            emit(downloaded_public=open(work + "/downloaded/" + name).read())
    listed = subprocess.run([YKTERM, "fido", "credentials", "list", "--json"], input=PIN + "\\n",
                            capture_output=True, text=True, timeout=30)
    emit(listed=json.loads(listed.stdout) if listed.returncode == 0 else listed.stderr)
"""


def ssh_keygen_unavailable_reason():
    """Why OpenSSH's ssh-keygen cannot reach the USB key here, or None: it needs ssh-keygen, and a C compiler for
    the LD_PRELOAD shim that lets libfido2 open the FUSE-served hidraw nodes."""
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen (openssh-client) is missing"
    if shutil.which("cc") is None:
        return "cc is missing (the hidraw shim for libfido2 is built here)"
    return None


def ssh_keygen_env(tmp_path):
    """The environment for SSH_SCRIPT: the hidraw shim, built here, and an askpass program that answers the PIN."""
    shim = tmp_path / "hidraw_shim.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(shim), str(ROOT / "Tests/Bench/hidraw_shim.c"), "-ldl"],
                   check=True, capture_output=True, timeout=120)
    askpass = tmp_path / "askpass"
    askpass.write_text("#!/bin/sh\necho ssh-pin-246\n")
    askpass.chmod(0o755)
    return dict(os.environ, HIDRAW_SHIM=str(shim), PIN_ASKPASS=str(askpass))


@pytest.mark.skipif(ssh_keygen_unavailable_reason() is not None, reason=ssh_keygen_unavailable_reason() or "")
def test_ssh_keygen_makes_a_resident_ed25519_sk_key(tmp_path):
    """OpenSSH 9.2's ssh-keygen, through libfido2, makes a resident ed25519-sk key (EdDSA, COSE -8) on the USB key
    with a PIN, signs a file with it, which ssh-keygen verifies with OpenSSH's own Ed25519, and downloads it again
    from credential management (-K)."""
    r = results(serve_usb("--interfaces", "fido", script=SSH_SCRIPT, env=dict(ssh_keygen_env(tmp_path), SET_PIN="1"),
                          timeout=240))
    assert r["pin_set"] == 0, r["pin_err"]
    assert r["enroll"] == 0, r["enroll_out"]
    algorithm, blob, comment = r["public"].split()
    assert (algorithm, comment) == ("sk-ssh-ed25519@openssh.com", "eddsa@test")
    assert r["sign"] == 0, r["sign_err"]
    assert r["verify"] == 0 and 'Good "file" signature for eddsa@test with ED25519-SK key' in r["verify_out"], \
        r["verify_out"]
    assert r["download"] == 0, r["download_err"]
    assert r["downloaded"] == ["id_ed25519_sk_rk_ykterm", "id_ed25519_sk_rk_ykterm.pub"]
    assert r["downloaded_public"].split()[:2] == [algorithm, blob]
    [listed] = r["listed"]
    assert listed["rp_id"] == "ssh:ykterm" and listed["user_name"] == "openssh"


@pytest.mark.skipif(ssh_keygen_unavailable_reason() is not None, reason=ssh_keygen_unavailable_reason() or "")
def test_ssh_keygen_gets_no_ed25519_sk_key_from_firmware_before_5_2(tmp_path):
    r = results(serve_usb("--interfaces", "fido", "--firmware", "5.1.2", script=SSH_SCRIPT,
                          env=ssh_keygen_env(tmp_path), timeout=120))
    assert r["enroll"] != 0 and "requested feature not supported" in r["enroll_out"], r["enroll_out"]


SCENARIOS = ROOT / "Tests" / "Integration" / "usb_scenarios.py"


def test_config_mode_re_enumerates_a_yubikey_4_with_the_modes_interfaces(tmp_path):
    """`ykterm config mode` and `ykman config mode` on a YubiKey 4 plugged in over USB: SET MODE makes the key leave
    the bus and come back as the product of the new mode's interfaces (usb_scenarios.usb_mode), which ykman and
    ykterm both see; the reader pcscd shows for it stays; nothing runs or stays mounted afterwards."""
    before = pcscds_of_ours()
    run = subprocess.run([str(YKTERM), "virtual-key", "serve", "--usb", "--firmware", "4.3.7", "--serial", "4300017",
                          "--", sys.executable, str(SCENARIOS), "usb_mode", str(tmp_path), "4300017"],
                         capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, f"exit {run.returncode}\nstdout: {run.stdout[-3000:]}\nstderr: {run.stderr[-3000:]}"
    r = json.loads(run.stdout.strip().splitlines()[-1])
    for step in ("set_fido", "set_all", "ykman_set", "set_ccid", "set_back"):
        assert r[step]["status"] == 0, (step, r[step])
    assert "Mode set to FIDO" in r["set_fido"]["stdout"]
    expected = {
        # mode: hidraw nodes, reader, ykterm's interfaces, applications ykterm says are enabled over USB
        # (a YubiKey 4: OTP, FIDO U2F, OATH, PIV and OpenPGP; no FIDO2, no YubiHSM Auth)
        "start": ("OTP+FIDO+CCID", 2, ["ccid", "fido", "otp"], {"otp", "u2f", "oath", "piv", "openpgp"}),
        "fido": ("FIDO", 1, ["fido"], {"u2f"}),
        "all": ("OTP+FIDO+CCID", 2, ["ccid", "fido", "otp"], {"otp", "u2f", "oath", "piv", "openpgp"}),
        "otp_ccid": ("OTP+CCID", 1, ["ccid", "otp"], {"otp", "oath", "piv", "openpgp"}),
        "ccid": ("CCID", 0, ["ccid"], {"oath", "piv", "openpgp"}),
        "back": ("OTP+FIDO+CCID", 2, ["ccid", "fido", "otp"], {"otp", "u2f", "oath", "piv", "openpgp"}),
    }
    ykman_names = {"otp": "Yubico OTP", "u2f": "FIDO U2F", "oath": "OATH", "piv": "PIV", "openpgp": "OpenPGP"}
    for step, (mode, nodes, interfaces, enabled) in expected.items():
        seen = r[step]
        # On the bus: one hidraw node per HID interface, named after the product, and a reader only with CCID.
        assert seen["nodes"] == [f"/dev/hidraw{i}" for i in range(nodes)], (step, seen)
        assert seen["hid_names"] == ["Yubico YubiKey " + mode] * nodes, (step, seen)
        assert seen["readers"] == ([f"Yubico YubiKey {mode} 00 00"] if "CCID" in mode else []), (step, seen)
        # ykman: what a YubiKey 4 in that mode shows.
        assert seen["ykman_list"] == f"YubiKey 4 (4.3.7) [{mode}] Serial: 4300017", (step, seen)
        assert "Device type: YubiKey 4" in seen["ykman_info"], (step, seen)
        assert f"Enabled USB interfaces: {mode.replace('+', ', ')}" in seen["ykman_info"], (step, seen)
        # Its applications over USB alone (no NFC column): those of the mode on, the others off, and FIDO2 and
        # YubiHSM Auth not there at all.
        table = {}
        for line in seen["ykman_info"].splitlines():
            parts = [p.strip() for p in line.split("\t")]
            if len(parts) >= 2 and parts[-1] in ("Enabled", "Disabled", "Not available"):
                table[parts[0]] = parts[1:]
        assert "NFC" not in seen["ykman_info"], (step, seen["ykman_info"])
        assert table == {"FIDO2": ["Not available"], "YubiHSM Auth": ["Not available"],
                         **{n: ["Enabled" if a in enabled else "Disabled"] for a, n in ykman_names.items()}}, (step, table)
        # ykterm agrees: one key, its interfaces and nodes, the applications on over USB.
        [key] = seen["list"]
        assert key["serial"] == 4300017 and key["version"] == "4.3.7" and key["transport"] == "usb", (step, key)
        assert key["name"] == "YubiKey 4" and seen["info"]["product"] == "YubiKey 4", (step, key)
        assert not seen["info"].get("nfc"), (step, seen["info"])
        assert key["interfaces"] == interfaces, (step, key)
        assert (key["fido_hid"] is not None) == ("fido" in interfaces), (step, key)
        assert (key["otp_hid"] is not None) == ("otp" in interfaces), (step, key)
        assert {a for a, state in seen["info"]["usb"].items() if state == "enabled"} == enabled, (step, seen)
    assert r["later_readers"] == ["Yubico YubiKey OTP+FIDO+CCID 00 00"], r["later_readers"]
    assert sorted(pcscds_of_ours() - before) == []
    assert mounts_of_ours() == []


def test_nfc_restricted_until_the_key_is_next_on_usb_power():
    """config nfc --restrict on a USB key: ykterm and ykman both read NFC restricted (the key keeps its NFC
    applications for later); unplugged and plugged in again (USB power), NFC is on again for both."""
    r = results(serve_usb(script=PRELUDE + """
import json as j
p = ykterm("config", "nfc", "--restrict")
emit(no_force=p.returncode, no_force_err=p.stderr)
p = ykterm("config", "nfc", "--restrict", "--force")
emit(restrict=p.returncode, restrict_out=p.stdout, restrict_err=p.stderr)
emit(info=j.loads(ykterm("info", "--json").stdout), text=ykterm("info").stdout, ykman=ykman("info").stdout)
ykterm("virtual-key", "usb", "unplug")
ykterm("virtual-key", "usb", "plug")
emit(after=j.loads(ykterm("info", "--json").stdout), ykman_after=ykman("info").stdout)
"""))
    assert r["no_force"] == 2 and "--force" in r["no_force_err"], r["no_force_err"]
    assert r["restrict"] == 0, r["restrict_err"]
    assert "NFC: off until the key is next powered from USB" in r["restrict_out"], r["restrict_out"]
    assert r["info"]["nfc_restricted"] is True and r["info"]["nfc"]["oath"] == "enabled", r["info"]
    assert "restricted: off until the key is next powered from USB" in r["text"], r["text"]
    assert "NFC transport is restricted" in r["ykman"], r["ykman"]
    assert r["after"]["nfc_restricted"] is False, r["after"]
    assert "NFC transport is enabled" in r["ykman_after"], r["ykman_after"]


def test_enhanced_pin_and_openpgp_kdf_on_the_usb_keys_own_interfaces():
    """An Enhanced PIN USB key (serve --usb --pin-complexity): FIDO2 over its FIDO HID interface and PIV over its
    CCID interface refuse a PIN too easy to guess, explained, with nothing changed; a good FIDO2 PIN ykterm sets is
    the one python-fido2 then gets a token with over HID. OpenPGP's KDF, turned on by ykterm over CCID, derives
    the PINs alike for ykterm and ykman."""
    r = results(serve_usb("--pin-complexity", script=PRELUDE + """
from fido2.hid import CtapHidDevice
from fido2.ctap2 import Ctap2
from fido2.ctap2.pin import ClientPin
def run(argv, stdin):
    return subprocess.run([YKTERM] + argv, input=stdin, capture_output=True, text=True, timeout=60)
info = ykterm("info", "--json")
emit(info=json.loads(info.stdout) if info.returncode == 0 else info.stderr)
simple = run(["fido", "pin", "set"], "123456\\n")
good = run(["fido", "pin", "set"], "4829-16\\n")
[dev] = list(CtapHidDevice.list_devices())
token = ClientPin(Ctap2(dev)).get_pin_token("4829-16")
dev.close()
emit(fido_simple=[simple.returncode, simple.stderr], fido_good=[good.returncode, good.stderr], token=len(token))
p = run(["piv", "pin", "change"], "123456\\n111111\\n")
emit(piv=[p.returncode, p.stderr], piv_ykman=ykman("piv", "info").stdout)
k = run(["openpgp", "access", "kdf", "on", "--force"], "12345678\\n")
emit(kdf=[k.returncode, k.stdout + k.stderr], kdf_ykman=ykman("openpgp", "info").stdout)
theirs = ykman("openpgp", "access", "change-pin", "-P", "123456", "-n", "24681357")
ours = run(["openpgp", "access", "change-pin"], "24681357\\n13572468\\n")
back = ykman("openpgp", "access", "change-pin", "-P", "13572468", "-n", "35792468")
emit(changes=[theirs.returncode, ours.returncode, back.returncode], changes_err=theirs.stderr + ours.stderr + back.stderr)
pgp = ykterm("openpgp", "info", "--json")
emit(pgp=json.loads(pgp.stdout) if pgp.returncode == 0 else pgp.stderr)
"""))
    assert r["info"]["pin_complexity"] is True, r["info"]
    code, err = r["fido_simple"]
    assert code == 1 and "breaks the key's PIN rules" in err, err
    assert r["fido_good"][0] == 0, r["fido_good"][1]
    assert r["token"] > 0
    code, err = r["piv"]
    assert code == 1 and "enforces PIN complexity and refused the new PIN as too easy to guess" in err, err
    assert re.search(r"^PIN tries remaining:\s+3/3$", r["piv_ykman"], re.M), r["piv_ykman"]
    assert "Using default PIN" in r["piv_ykman"], r["piv_ykman"]
    assert r["kdf"][0] == 0, r["kdf"][1]
    assert re.search(r"^KDF enabled:\s+True$", r["kdf_ykman"], re.M), r["kdf_ykman"]
    assert r["changes"] == [0, 0, 0], r["changes_err"]
    assert r["pgp"]["kdf_enabled"] is True and r["pgp"]["pin_tries"] == 3, r["pgp"]


def test_enhanced_pin_otp_access_code_over_the_keyboard_interface():
    """An Enhanced PIN USB key with CCID turned off (OTP and FIDO HID): the OTP application is on the keyboard
    interface and Management answers over HID, so ykterm learns there that the key enforces PIN complexity and
    refuses a new access code of one byte repeated, writing nothing; a code of two different bytes is set over
    OTP HID and guards the slot for ykman."""
    r = results(serve_usb("--pin-complexity", "--interfaces", "otp,fido", script=PRELUDE + """
def run(argv, stdin):
    return subprocess.run([YKTERM] + argv, input=stdin, capture_output=True, text=True, timeout=60)
trivial = run(["otp", "chalresp", "--slot", "2", "--lock", "--force", "0a0b0c"], "111111111111\\n")
info = ykman("otp", "info")
good = run(["otp", "chalresp", "--slot", "2", "--lock", "--force", "0a0b0c"], "a0b0c0d0e0f0\\n")
unguarded = ykman("otp", "delete", "2", "--force")
guarded = ykman("otp", "--access-code", "a0b0c0d0e0f0", "delete", "2", "--force")
emit(trivial=[trivial.returncode, trivial.stderr], info=info.stdout, good=[good.returncode, good.stderr],
     unguarded=unguarded.returncode, guarded=[guarded.returncode, guarded.stderr])
"""))
    code, err = r["trivial"]
    assert code == 2 and "a new access code must not be one byte repeated" in err, err
    assert re.search(r"^Slot 2:\s+empty", r["info"], re.M), r["info"]
    assert r["good"][0] == 0, r["good"][1]
    assert r["unguarded"] != 0
    assert r["guarded"][0] == 0, r["guarded"][1]


def test_nfc_restricted_on_a_security_key_over_its_fido_interface():
    """A Security Key NFC (FIDO HID only, no CCID): config nfc --restrict goes to its Management application over
    FIDO HID; ykterm and ykman read NFC restricted, and USB power (unplug, plug) lifts it."""
    r = results(serve_usb("--interfaces", "fido", script=PRELUDE + """
import json as j
p = ykterm("config", "nfc", "--restrict", "--force")
emit(restrict=p.returncode, restrict_err=p.stderr)
emit(info=j.loads(ykterm("info", "--json").stdout), ykman=ykman("info").stdout)
ykterm("virtual-key", "usb", "unplug")
ykterm("virtual-key", "usb", "plug")
emit(after=j.loads(ykterm("info", "--json").stdout), ykman_after=ykman("info").stdout)
"""))
    assert r["restrict"] == 0, r["restrict_err"]
    assert r["info"]["nfc_restricted"] is True and r["info"]["sky"] is True, r["info"]
    assert "NFC transport is restricted" in r["ykman"], r["ykman"]
    assert r["after"]["nfc_restricted"] is False, r["after"]
    assert "NFC transport is enabled" in r["ykman_after"], r["ykman_after"]
