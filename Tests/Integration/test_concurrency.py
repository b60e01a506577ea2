"""Other programs on the same key (issue 22, section 2).

ykterm's operations on a PC/SC key are one transaction each, so another program cannot select another
application between ykterm's SELECT and its command, and ykterm holds the key only while it works. Here ykterm
(the command line in a loop, and the TUI open beside it) and ykman in a loop read codes from one served key at
the same time for CONCURRENCY_SECONDS (60 by default); every code on both sides is checked against pyotp. The
test prints its figures.
"""

import json
import os
import re
import shlex
import threading
import time

import pyotp

from harness import YKTERM, run_ykman, run_ykterm
from test_tui import Tmux, code_of

SECRETS = {"Alpha:one": "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", "Beta:two": "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"}
SECONDS = float(os.environ.get("CONCURRENCY_SECONDS", "60"))


def right(account, code, started, ended):
    """The code is the account's for a time within the call (the period may turn over during it)."""
    t = pyotp.TOTP(SECRETS[account])
    return code in {t.at(started), t.at(ended)}


def test_ykterm_and_ykman_on_one_key_at_once(key, env, tmp_path):
    for account, secret in SECRETS.items():
        issuer, name = account.split(":")
        run_ykterm("oath", "add", "--issuer", issuer, "--name", name, "--secret", "-", "--reader", key.reader,
                   env=env, input=secret + "\n")
    stop = time.monotonic() + SECONDS
    figures = {"ykterm": [0, 0, []], "ykman": [0, 0, []]}  # runs, codes checked, failures
    busy = [0]

    def ykterm_loop():
        f = figures["ykterm"]
        while time.monotonic() < stop:
            started = time.time()
            r = run_ykterm("oath", "code", "--json", "--reader", key.reader, env=env, check=False)
            ended = time.time()
            f[0] += 1
            if r.returncode != 0:
                f[2].append(f"exit {r.returncode}: {r.stderr.strip()}")
                continue
            for e in json.loads(r.stdout):
                f[1] += 1
                if not right(e["id"], e["code"], started, ended):
                    f[2].append(f"wrong code for {e['id']}")

    def ykman_loop():
        f = figures["ykman"]
        while time.monotonic() < stop:
            started = time.time()
            r = run_ykman(key.reader, "oath", "accounts", "code", env=env, check=False)
            ended = time.time()
            f[0] += 1
            if r.returncode != 0 and ("Failed to connect" in r.stderr or "Card is unpowered" in r.stderr):
                # ykman opens the card exclusively and gives up at once when another program is connected
                # for its moment: its "busy", which a user (and this loop) answers by running it again. It
                # also powers the card down as it leaves, and gives up the same way when its next connect
                # finds pcscd still powering the card up (SCARD_W_UNPOWERED_CARD; ykterm leaves the card
                # powered and waits that moment out).
                busy[0] += 1
                continue
            if r.returncode != 0:
                f[2].append(f"exit {r.returncode}: {r.stderr.strip()}")
                continue
            for line in r.stdout.splitlines():
                m = re.match(r"^(.*\S)\s+(\d{6,8})$", line)
                if m and m.group(1) in SECRETS:
                    f[1] += 1
                    if not right(m.group(1), m.group(2), started, ended):
                        f[2].append(f"wrong code for {m.group(1)}")

    tui = Tmux(f"{shlex.quote(str(YKTERM))} --reader {shlex.quote(key.reader)}", env)
    try:
        tui.wait_for("Alpha")
        threads = [threading.Thread(target=ykterm_loop), threading.Thread(target=ykman_loop)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # The TUI kept reading right codes through it all (it refreshed at each period boundary meanwhile).
        started = time.time()
        code, _ = code_of(tui.screen(), "Alpha")
        assert right("Alpha:one", code, started - 1, started)
    finally:
        tui.close()

    print(f"\nconcurrency {SECONDS:.0f} s on one key: ykterm {figures['ykterm'][0]} runs, "
          f"{figures['ykterm'][1]} codes checked, {len(figures['ykterm'][2])} failures; ykman "
          f"{figures['ykman'][0]} runs, {figures['ykman'][1]} codes checked, {len(figures['ykman'][2])} failures "
          f"(and {busy[0]} runs that found the key busy with ykterm and were run again)")
    for side, (runs, checked, failures) in figures.items():
        for f in sorted(set(failures)):
            print(f"  {side}: {failures.count(f)} x {f[-600:]}")
    for side, (runs, checked, failures) in figures.items():
        assert runs > 0 and checked > 0, side
        assert failures == [], f"{side}: {failures[:5]}"
