"""The soak (issue 22, section 1; issue 35) in `make test`: soak.py for SOAK_MINUTES (3 by default; `make soak` runs
it for 30) — two TUIs (one on the OATH tab, one moving from tab to tab) on a USB virtual key pulled out and plugged
in every few seconds and a second served key that comes and goes, pcscd killed every minute, ykman and `ykterm oath
code` reading codes beside them. It asserts the pass criteria for both TUIs (soak.failures: no wrong code, no missed
period boundary, every arrival on screen, RSS growth under 1 MiB after warm-up, descriptors back where they
started, no more threads than then, no exit, nothing on standard error) and prints the figures, how soon the codes
showed among them: performance is measured, not asserted, so a loaded machine cannot fail the test by chance."""

import os

import pytest

import soak

MINUTES = float(os.environ.get("SOAK_MINUTES", "3"))

pytestmark = pytest.mark.skipif(soak.unavailable() is not None, reason=soak.unavailable() or "")


def test_two_tuis_keep_right_codes_on_churning_keys_without_growing(capsys):
    r = soak.run(MINUTES)
    with capsys.disabled():
        print(f"\nsoak, {MINUTES:g} min:\n{soak.table(r)}")
    failed = soak.failures(r)
    assert not failed, "\n".join(failed) + "\n\nprogress:\n" + r.get("log", "")[-3000:]
