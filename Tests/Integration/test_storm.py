"""The plug-in storm (issue 35) in `make test`, CI-sized: storm.py for STORM_PLUGS plug-ins (120 by default; `make
storm` runs it longer) under CPU load (a busy loop per core): the TUI on a USB virtual key pulled out and plugged in
with 20 to 200 ms between the commands, switched from tab to tab every 4 s. Each `virtual-key usb plug` and
`unplug` returns once pcscd has seen the card arrive or leave (about 0.3 s here), so a plug-in takes about 0.8 s
with its pauses: 120 take under two minutes. It asserts that the TUI never exited, that every tab took plug-ins,
that the OATH tab showed the right codes (pyotp) within 5 s of the key left in, and that nothing unexplained
reached the TUI's standard error (a fatal signal's report goes there).
"""

import os

import pytest

import storm

PLUGS = int(os.environ.get("STORM_PLUGS", "120"))

pytestmark = pytest.mark.skipif(storm.unavailable() is not None, reason=storm.unavailable() or "")


def test_the_tui_survives_a_plug_in_storm_on_every_tab_under_load(capsys):
    r = storm.run(plugs=PLUGS, load=True)
    with capsys.disabled():
        print(f"\nstorm, {PLUGS} plug-ins under load:\n{storm.table(r)}")
    failed = storm.failures(r, plugs_wanted=PLUGS)
    assert not failed, "\n".join(failed) + "\n\nprogress:\n" + r.get("log", "")[-3000:]
    assert not r["exits"], r["exits"]
    # Every tab took its share of the plug-ins.
    assert min(r["per_tab"].values()) >= PLUGS // 20, r["per_tab"]
