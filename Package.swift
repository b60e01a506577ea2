// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ykterm",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ykterm", targets: ["ykterm"]),
        .library(name: "KeyKit", targets: ["KeyKit"]),
        .library(name: "VirtualKey", targets: ["VirtualKey"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // libpcsclite's and ncursesw's pkg-config files carry -pthread and -D flags that SwiftPM rejects
        // with a warning on every build; their headers sit in the default include path on Debian, so their
        // module maps name them directly. The Makefile checks all four with pkg-config before building.
        .systemLibrary(name: "CPCSCLite"),
        .systemLibrary(name: "CHIDAPI", pkgConfig: "hidapi-hidraw",
                       providers: [.apt(["libhidapi-dev"])]),
        .systemLibrary(name: "CNCursesW"),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .target(name: "KeyKit", dependencies: ["CPCSCLite", "CHIDAPI", "COpenSSL"]),
        .target(name: "VirtualKey", dependencies: ["KeyKit"]),
        .executableTarget(name: "ykterm", dependencies: [
            "KeyKit", "VirtualKey", "CNCursesW", "CHIDAPI",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .testTarget(name: "KeyKitTests", dependencies: ["KeyKit"]),
        .testTarget(name: "VirtualKeyTests", dependencies: ["VirtualKey", "KeyKit"]),
    ],
    swiftLanguageModes: [.v6]
)
