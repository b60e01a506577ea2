// swift-tools-version:6.0
import PackageDescription

// The commit `ykterm --version` names, from the environment (the Makefile exports YKTERM_COMMIT: the short hash,
// with -dirty for changes not committed, or nothing outside a git checkout). Only Sources/CBuildInfo gets it, as
// a C macro: a new commit recompiles that one file and links again. Without it (a plain `swift build`) the
// version is printed alone. Only ASCII letters, digits and - are kept, so the value cannot break the C string.
let commit = String(
    (Context.environment["YKTERM_COMMIT"] ?? "").filter {
        $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-")
    })

let package = Package(
    name: "ykterm",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ykterm", targets: ["ykterm"]),
        .library(name: "KeyKit", targets: ["KeyKit"]),
        .library(name: "VirtualKey", targets: ["VirtualKey"]),
        // pcscd reader driver for `virtual-key serve --usb`: vpcd with one slot (loaded by pcscd, next to ykterm).
        .library(name: "ykterm-ifd-one-slot", type: .dynamic, targets: ["CIFDOneSlot"]),
        .library(name: "AuthenticatorModel", targets: ["AuthenticatorModel"]),
        .library(name: "TerminalUI", targets: ["TerminalUI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // libpcsclite's .pc file adds -pthread, which SwiftPM drops with a notice ("prohibited flag"); its
        // -I/usr/include/PCSC is what the headers need. ncursesw's .pc file only adds -D flags SwiftPM would
        // drop the same way, and its headers sit in the default include path, so its module map names them
        // directly. The Makefile checks all four libraries with pkg-config before building.
        .systemLibrary(name: "CPCSCLite", pkgConfig: "libpcsclite", providers: [.apt(["libpcsclite-dev"])]),
        .systemLibrary(
            name: "CHIDAPI", pkgConfig: "hidapi-hidraw",
            providers: [.apt(["libhidapi-dev"])]),
        .systemLibrary(name: "CNCursesW"),
        // prctl (variadic in C) through fixed-argument wrappers: process hardening for secrets.
        .systemLibrary(name: "CLinux"),
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        // zlib for gzip-compressed PIV certificates; inflateInit2 and deflateInit2 are macros, the shim wraps them.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // QR codes: libqrencode draws a generated account's (`oath add --generate`); zbar finds the codes in a PNG or
        // JPEG image (`oath add --qr`), decoded to grey by libpng and libjpeg. libqrencode and zbar are loaded with
        // dlopen when used (see their shim.h): no pkg-config, whose -l would link them. The JPEG decode is a C
        // function in the shim: libjpeg reports errors with longjmp.
        .systemLibrary(name: "CQREncode"),
        .systemLibrary(name: "CZBar"),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CJPEG", pkgConfig: "libjpeg", providers: [.apt(["libjpeg62-turbo-dev"])]),
        // libxml2 for PSKC (RFC 6030) files: OATH accounts read and written as XML. Only its tree API is used.
        .systemLibrary(name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        .target(
            name: "KeyKit", dependencies: ["CPCSCLite", "CHIDAPI", "COpenSSL", "CLinux", "CZlib", "CLibXML2"]),
        .target(name: "VirtualKey", dependencies: ["KeyKit"]),
        // The virtual key as a USB composite device: hidraw nodes served through FUSE, sysfs, vpcd.
        .target(name: "VirtualUSB", dependencies: ["VirtualKey", "KeyKit"]),
        .target(name: "CIFDOneSlot"),
        // The version (its one place, include/build_info.h) and the commit the build was made from.
        .target(
            name: "CBuildInfo",
            cSettings: commit.isEmpty ? [] : [.define("YKTERM_COMMIT", to: "\"\(commit)\"")]),
        // The config file's TOML: toml++ (Debian's libtomlplusplus-dev, which the Makefile checks with pkg-config
        // too) behind a small C API. Its headers are compiled in (header-only), not linked to its shared library,
        // which would load the shared libstdc++ at every start.
        .target(name: "CTOMLPlusPlus"),
        // The app's state, messages, pure update() and the runner that performs commands with KeyKit.
        .target(
            name: "AuthenticatorModel",
            dependencies: [
                "KeyKit", "CTOMLPlusPlus", "CQREncode", "CZBar", "CPNG", "CJPEG",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Screen protocol, ncurses and in-memory screens, input decoding, and one view per tab.
        .target(name: "TerminalUI", dependencies: ["AuthenticatorModel", "KeyKit", "CNCursesW", "CLinux"]),
        .executableTarget(
            name: "ykterm",
            dependencies: [
                "KeyKit", "VirtualKey", "VirtualUSB", "AuthenticatorModel", "TerminalUI", "CNCursesW", "CHIDAPI",
                "CBuildInfo",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .testTarget(name: "KeyKitTests", dependencies: ["KeyKit"]),
        .testTarget(name: "VirtualUSBTests", dependencies: ["VirtualUSB"]),
        // AuthenticatorModel for the trace of exchanges with the virtual key (WireTracer, APDURedactor).
        .testTarget(name: "VirtualKeyTests", dependencies: ["VirtualKey", "KeyKit", "AuthenticatorModel"]),
        .testTarget(name: "AuthenticatorModelTests", dependencies: ["AuthenticatorModel", "KeyKit", "VirtualKey"]),
        // Golden: the whole frames the view tests compare with (`make golden` writes them).
        // VirtualKey: the key the whole TUI loop runs against in TerminalLoopTests.
        // The executable's own parts: DirectCommandLine against ArgumentParser.
        .testTarget(name: "YktermTests", dependencies: ["ykterm"]),
        .testTarget(
            name: "TerminalUITests", dependencies: ["TerminalUI", "AuthenticatorModel", "KeyKit", "VirtualKey"],
            exclude: ["Golden"]),
    ],
    swiftLanguageModes: [.v6],
    // toml++ 3 needs C++17.
    cxxLanguageStandard: .cxx17
)
