"""python-fido2 as the independent client for the fingerprint tests (authenticatorBioEnrollment through
fido2.ctap2.bio), over PC/SC.

Usage: fido2_bio_peer.py READER ACTION [ARGS...]; prints one JSON object. The PIN comes from stdin (one line),
never from argv. Template IDs are hex.
"""

import json
import sys

from fido2.ctap import CtapError
from fido2.ctap2 import Ctap2
from fido2.ctap2.bio import BioEnrollment, CaptureError, FPBioEnrollment
from fido2.ctap2.pin import ClientPin
from fido2.pcsc import CtapPcscDevice


def device(reader):
    for d in CtapPcscDevice.list_devices(reader):
        return d
    raise SystemExit(json.dumps({"error": "no device"}))


def bio(ctap):
    client_pin = ClientPin(ctap)
    token = client_pin.get_pin_token(sys.stdin.readline().rstrip("\n"), ClientPin.PERMISSION.BIO_ENROLL)
    return FPBioEnrollment(ctap, client_pin.protocol, token)


def main():
    reader, action, *args = sys.argv[1:]
    ctap = Ctap2(device(reader))
    result = {}
    try:
        if action == "info":
            info = ctap.get_info()
            result = {"supported": BioEnrollment.is_supported(info), "options": info.options,
                      "uv_modality": info.uv_modality}
        elif action == "sensor":
            s = FPBioEnrollment(ctap, None, None).get_fingerprint_sensor_info()
            result = {"kind": s.get(BioEnrollment.RESULT.FINGERPRINT_KIND),
                      "samples": s.get(BioEnrollment.RESULT.MAX_SAMPLES_REQUIRED),
                      "max_name": s.get(BioEnrollment.RESULT.MAX_TEMPLATE_FRIENDLY_NAME)}
        elif action == "list":
            result = {"fingerprints": {k.hex(): v for k, v in bio(ctap).enumerate_enrollments().items()}}
        elif action == "enroll":
            b = bio(ctap)
            context = b.enroll()
            statuses, template = [], None
            while template is None:
                try:
                    template = context.capture()
                    statuses.append(["GOOD", context.remaining])
                except CaptureError as e:
                    statuses.append([e.code.name, context.remaining])
            if args:
                b.set_name(template, args[0])
            result = {"id": template.hex(), "steps": statuses}
        elif action == "rename":
            bio(ctap).set_name(bytes.fromhex(args[0]), args[1])
            result = {"done": True}
        elif action == "delete":
            bio(ctap).remove_enrollment(bytes.fromhex(args[0]))
            result = {"done": True}
        else:
            result = {"error": "unknown action " + action}
    except CtapError as e:
        result = {"ctap_error": e.code.name}
    except ValueError as e:
        result = {"value_error": str(e)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
