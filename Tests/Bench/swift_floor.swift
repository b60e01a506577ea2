// The floor of a Swift program in `make bench`: the Swift runtime linked in as ykterm's is (static standard library,
// fixed address), one line printed. Beside the C program linked with the same libraries, it shows what the runtime's
// own start costs before any of ykterm runs.
print("swift_floor 1")
