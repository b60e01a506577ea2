#!/usr/bin/env bash
# Runs every libFuzzer target (or those named) for FUZZ_SECONDS each, starting from its seed corpus in
# Tests/Fuzz/Corpus/<target>/, and prints a table: executions, new corpus inputs, crashes. New inputs go to
# Tests/Fuzz/.work/<target>/corpus (not the seeds), crash inputs to Tests/Fuzz/.work/<target>/ with the
# libFuzzer log beside them; the table's last column is libFuzzer's peak RSS in MB. Exits 1 when any target
# crashed. Build first (`make fuzz` does both).
# The session targets (whole KeyKit operations against a device fed by the input) also fail on any single
# allocation over 128 MB.
#
# The address sanitizer keeps at most 8 frames of each allocation's and deallocation's stack (its default is
# 30). Every distinct stack goes into its stack depot, which is never freed, and a recursive parser makes a new
# one for every new nesting: FuzzCBOR's decoder calls itself from four places (array element, map key, map value,
# tag) down to 16 levels, so 30 frames tell apart nearly every nesting the fuzzer tries. With 30, FuzzCBOR's depot
# held 1.5 million stacks (351 MB) after 400,000 runs and the process passed 1.6 GB after a million, and would
# have passed -rss_limit_mb in a long run; with 8 it holds 25,738 stacks (9 MB) after a million runs and the RSS
# stays near 580 MB (most of it the 256 MB quarantine that catches use after free, full after about 65,000 runs).
# An ASAN_OPTIONS of your own is read after these and wins.
#
#   FUZZ_SECONDS=60 Tests/Fuzz/run.sh [Target ...]
set -u
cd "$(dirname "$0")"
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
BIN=.build/release
ALL=(FuzzCBOR FuzzTLV FuzzResponse FuzzCTAPHID FuzzVpcd FuzzOTPAuthURI FuzzMigration FuzzNDEF FuzzOTP FuzzAPDUHex FuzzOTPHID
     FuzzX509 FuzzCTAP2PINChange FuzzCTAP2Credentials FuzzOATHCalculateAll FuzzOTPHIDExchange FuzzPIVSession
     FuzzBioEnrollment FuzzManagementConfig FuzzOTPSlotProgramming FuzzCTAP2Config FuzzOpenPGP FuzzHSMAuth FuzzPSKC)
SESSION_TARGETS=" FuzzCTAP2PINChange FuzzCTAP2Credentials FuzzOATHCalculateAll FuzzOTPHIDExchange FuzzPIVSession "
SESSION_TARGETS+="FuzzBioEnrollment FuzzManagementConfig FuzzOTPSlotProgramming FuzzCTAP2Config "
# A crash is libFuzzer's report (and the sanitizer's), not the Swift runtime's backtrace on top of it.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS="malloc_context_size=8${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
# What Swift's lazy globals allocate is not a leak (lsan.supp says why LeakSanitizer can think so at exit).
export LSAN_OPTIONS="suppressions=$PWD/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL[@]}"); fi

failed=0
rows=()
for t in "${TARGETS[@]}"; do
    if [ ! -x "$BIN/$t" ]; then
        echo "fuzz: $BIN/$t is missing: build the fuzz package first (make fuzz-build)" >&2
        exit 2
    fi
    work=.work/$t
    mkdir -p "$work/corpus"
    rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*
    log=$work/fuzz.log
    echo "fuzz: $t for ${SECONDS_PER_TARGET}s"
    # -timeout: an input that takes over 10 s is a hang; -rss_limit_mb: over 2 GB is a memory blow-up.
    extra=()
    case "$SESSION_TARGETS" in *" $t "*) extra=(-malloc_limit_mb=128) ;; esac
    "$BIN/$t" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 "${extra[@]}" -print_final_stats=1 \
        -artifact_prefix="$work/" "$work/corpus" "Corpus/$t" >"$log" 2>&1
    status=$?
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    if [ -z "$execs" ]; then
        execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
    fi
    crashes=$(find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
    if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes="?"; fi
    rss=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    corpus=$(find "$work/corpus" -type f | wc -l)
    rows+=("$(printf '%-22s %14s %8s %8s %8s' "$t" "${execs:-0}" "$corpus" "$crashes" "${rss:-?}")")
    if [ "$status" -ne 0 ]; then
        failed=1
        echo "fuzz: $t stopped with status $status; see $log" >&2
        grep -m1 -E 'ERROR: (AddressSanitizer|libFuzzer)|fuzz invariant failed|Fatal error' "$log" >&2
        find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) >&2
    fi
done

echo
printf '%-22s %14s %8s %8s %8s\n' target executions corpus crashes 'peak MB'
for r in "${rows[@]}"; do echo "$r"; done
exit $failed
