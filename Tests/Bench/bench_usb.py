"""The USB part of `make bench`, run inside `ykterm virtual-key serve --usb --accounts 32 -- python bench_usb.py RUNS`:
the virtual key as a USB YubiKey (CCID on a private pcscd, FIDO and OTP HID as hidraw nodes). ykterm beside
libfido2's fido2-token and the C reference on the same FIDO node, and beside ykman; interleaved, every run's time
kept; prints one JSON object for bench.py's tables. Asserts nothing."""

import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import CTAPHID_REF, PCSC_REF, REFS, YKMAN, YKTERM, Pty, interleaved, run_ykterm  # noqa: E402

PIN = "bench-pin-1"
CREDENTIALS = 10


def fido_node():
    """The hidraw node of the FIDO interface (usage page 0xF1D0 in its report descriptor)."""
    for name in sorted(os.listdir("/sys/class/hidraw")):
        descriptor = Path(f"/sys/class/hidraw/{name}/device/report_descriptor").read_bytes()
        if descriptor.startswith(b"\x06\xd0\xf1"):
            return f"/dev/{name}"
    raise SystemExit("no FIDO hidraw node")


def make_credentials(node, count):
    """`count` discoverable credentials, one per relying party, made with python-fido2."""
    from fido2.ctap2 import Ctap2
    from fido2.ctap2.pin import ClientPin
    from fido2.hid import CtapHidDevice, open_device

    device = open_device(node)
    assert isinstance(device, CtapHidDevice)
    ctap = Ctap2(device)
    client_pin = ClientPin(ctap)
    for n in range(count):
        rp_id = f"site{n:02d}.example"
        token = client_pin.get_pin_token(PIN, ClientPin.PERMISSION.MAKE_CREDENTIAL, rp_id)
        cdh = os.urandom(32)
        ctap.make_credential(cdh, {"id": rp_id, "name": rp_id},
                             {"id": f"user-{n}".encode(), "name": f"user{n}@example.com"},
                             [{"type": "public-key", "alg": -7}], options={"rk": True},
                             pin_uv_param=client_pin.protocol.authenticate(token, cdh),
                             pin_uv_protocol=client_pin.protocol.VERSION)
    device.close()


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    env = dict(os.environ)
    node = fido_node()
    run_ykterm("fido", "pin", "set", env=env, input=PIN + "\n")
    make_credentials(node, CREDENTIALS)
    listed = run_ykterm("fido", "credentials", "list", "--json", env=env, input=PIN + "\n")
    count = len(json.loads(listed.stdout))
    out = {"node": node}
    # libfido2 opens only character devices; the FUSE-served node is a regular file to fstat (hidraw_shim.c).
    fido2_env = dict(env, LD_PRELOAD=str(REFS / "hidraw_shim.so"))

    s = interleaved({
        "ykterm": ([YKTERM, "fido", "info"], env),
        "fido2-token": (["fido2-token", "-I", node], fido2_env),
        "c": ([CTAPHID_REF, node], env),
    }, runs, rss_runs=0)
    out["fido_info"] = {side: v["s"] for side, v in s.items()}

    s = interleaved({
        "ykterm": (lambda i: ([YKTERM, "fido", "credentials", "list"], PIN + "\n"), env),
        "fido2-token": (lambda i: (["fido2-token", "-L", "-r", node], PIN + "\n"), fido2_env),
    }, runs, rss_runs=0)
    out["credentials"] = {side: v["s"] for side, v in s.items()}
    out["credentials"]["count"] = count

    for name, mine, theirs in (
        ("info_ykman", [YKTERM, "fido", "info", "--json"], [YKMAN, "fido", "info"]),
        ("oath_ccid", [YKTERM, "oath", "code", "--json"], [YKMAN, "oath", "accounts", "code"]),
        ("list_usb", [YKTERM, "list", "--json"], [YKMAN, "list"]),
    ):
        # ykman resets the card as it leaves (see bench.interleaved): the C reference takes that, unmeasured.
        s = interleaved({"ykterm": (mine, env), "ykman": (theirs, env)}, runs, rss_runs=0,
                        settle={"ykman": ([PCSC_REF, "list", "Yubico"], env)})
        out[name] = {side: v["s"] for side, v in s.items()}

    starts = []
    for _ in range(runs):
        p = Pty([str(YKTERM)], env)
        try:
            starts.append(p.read_until(r"\d{3} \d{3}"))
        finally:
            p.close()
    out["start_s"] = statistics.median(starts)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
