// swift-tools-version:6.0
// libFuzzer targets for every parser in KeyKit and VirtualKey. A package of its own so that the main package
// and `swift test` never see it; `make fuzz` in the repository root builds and runs it:
//
//   swift build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -use-ld=lld
//
// Release mode only: debug builds crash gold's DWARF reader, hence lld too. Each target's LLVMFuzzerTestOneInput
// is the fuzzed function; SwiftPM links executables with `--defsym main=<Target>_main`, so each target also
// defines that symbol and hands control to libFuzzer with LLVMFuzzerRunDriver.
import PackageDescription

let fuzzTargets = [
    "FuzzCBOR", "FuzzTLV", "FuzzResponse", "FuzzCTAPHID", "FuzzVpcd", "FuzzOTPAuthURI", "FuzzMigration",
    "FuzzNDEF", "FuzzOTP", "FuzzAPDUHex", "FuzzOTPHID",
]

let package = Package(
    name: "ykterm-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ykterm", path: "../..")],
    targets: [
        // The declaration of LLVMFuzzerRunDriver; the symbol comes from libFuzzer (-sanitize=fuzzer).
        .systemLibrary(name: "CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"]),
    ] + fuzzTargets.map { name in
        .executableTarget(name: name, dependencies: [
            "FuzzSupport",
            .product(name: "KeyKit", package: "ykterm"),
            .product(name: "VirtualKey", package: "ykterm"),
        ])
    },
    swiftLanguageModes: [.v6]
)
