// swift-tools-version:6.0
// libFuzzer targets for every parser in KeyKit and VirtualKey. A package of its own so that the main package
// and `swift test` never see it; `make fuzz` in the repository root builds and runs it:
//
//   swift build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -use-ld=lld
//
// Release mode only: debug builds crash gold's DWARF reader, hence lld too. Each target's LLVMFuzzerTestOneInput
// is the fuzzed function; SwiftPM links executables with `--defsym main=<Target>_main`, so each target also
// defines that symbol and hands control to libFuzzer with LLVMFuzzerRunDriver.
//
// The session targets run whole KeyKit operations (a CTAP2 PIN change, credential enumeration, OATH calculate
// all with a password, an OTP HID exchange, PIV information, signature, attestation and key generation,
// fingerprint enrollment, authenticatorConfig, the Management application's READ and WRITE CONFIG with the lock
// code over CCID, FIDO HID and OTP HID, and OTP slot programming over CCID and OTP HID) against devices that answer
// from the fuzzer's input (FuzzSessions);
// `<target> --record-seeds DIR` records their seeds against the virtual key.
import PackageDescription

let fuzzTargets = [
    "FuzzCBOR", "FuzzTLV", "FuzzResponse", "FuzzCTAPHID", "FuzzVpcd", "FuzzOTPAuthURI", "FuzzMigration",
    "FuzzNDEF", "FuzzOTP", "FuzzAPDUHex", "FuzzOTPHID", "FuzzX509", "FuzzOpenPGP", "FuzzHSMAuth", "FuzzPSKC",
]

let sessionTargets = [
    "FuzzCTAP2PINChange", "FuzzCTAP2Credentials", "FuzzOATHCalculateAll", "FuzzOTPHIDExchange", "FuzzPIVSession",
    "FuzzBioEnrollment", "FuzzManagementConfig", "FuzzOTPSlotProgramming", "FuzzCTAP2Config",
]

let package = Package(
    name: "ykterm-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ykterm", path: "../..")],
    targets: [
        // The declaration of LLVMFuzzerRunDriver; the symbol comes from libFuzzer (-sanitize=fuzzer).
        .systemLibrary(name: "CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"]),
        // Devices fed by the fuzzer's input, recorders of the virtual key's answers, and the async driver.
        .target(
            name: "FuzzSessions",
            dependencies: [
                "FuzzSupport",
                .product(name: "KeyKit", package: "ykterm"),
                .product(name: "VirtualKey", package: "ykterm"),
            ]),
    ]
        + fuzzTargets.map { name in
            .executableTarget(
                name: name,
                dependencies: [
                    "FuzzSupport",
                    .product(name: "KeyKit", package: "ykterm"),
                    .product(name: "VirtualKey", package: "ykterm"),
                ])
        }
        + sessionTargets.map { name in
            .executableTarget(
                name: name,
                dependencies: [
                    "FuzzSupport", "FuzzSessions",
                    .product(name: "KeyKit", package: "ykterm"),
                    .product(name: "VirtualKey", package: "ykterm"),
                ])
        },
    swiftLanguageModes: [.v6]
)
