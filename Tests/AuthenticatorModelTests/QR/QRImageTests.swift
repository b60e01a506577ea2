import CPNG
import Foundation
import KeyKit
import Testing
@testable import AuthenticatorModel

/// QR codes both ways: libqrencode's code drawn (as pixels, and as the terminal's text) and read back by zbar;
/// images decoded by libpng and libjpeg; every way an image can fail to give one account URI.
@Suite struct QRImageTests {
    static let uri = "otpauth://totp/Example:alice@example.com?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=Example"

    @Test func aCodeDrawnAsPixelsReadsBack() throws {
        let code = try #require(try QRCode(Self.uri))
        #expect(code.size >= 21 && (code.size - 17) % 4 == 0, "a QR code's side is 17 + 4 × version modules")
        #expect(try QRImage.codes(in: code.image(scale: 3)) == [Self.uri])
    }

    @Test func theTerminalDrawingReadsBackInHalfBlocksAndInASCII() throws {
        let code = try #require(try QRCode(Self.uri))
        let side = code.size + 2 * QRCode.quietZone
        // Half blocks: two rows of modules a line, one column a module.
        let half = code.lines(unicode: true)
        #expect(half.count == (side + 1) / 2)
        #expect(half.allSatisfy { $0.count == side })
        var modules = [Bool](repeating: false, count: side * side)
        for (line, text) in half.enumerated() {
            for (column, c) in text.enumerated() {
                let top = c == "█" || c == "▀", bottom = c == "█" || c == "▄"
                modules[2 * line * side + column] = top
                if 2 * line + 1 < side { modules[(2 * line + 1) * side + column] = bottom }
            }
        }
        #expect(try QRImage.codes(in: QRCode(size: side, modules: modules).image(scale: 3)) == [Self.uri])
        // ASCII: a row a line, "##" a dark module.
        let ascii = code.lines(unicode: false)
        #expect(ascii.count == side)
        #expect(ascii.allSatisfy { $0.count == 2 * side && $0.allSatisfy { $0 == "#" || $0 == " " } })
        let fromASCII = ascii.flatMap { line in
            stride(from: 0, to: line.count, by: 2).map {
                line.utf8[line.utf8.index(line.utf8.startIndex, offsetBy: $0)] == UInt8(ascii: "#")
            }
        }
        #expect(try QRImage.codes(in: QRCode(size: side, modules: fromASCII).image(scale: 3)) == [Self.uri])
        // The quiet zone: four light modules around the code.
        #expect(ascii.prefix(QRCode.quietZone).allSatisfy { $0.allSatisfy { $0 == " " } })
    }

    @Test func aCodeDrawnLightOnDarkReadsBack() throws {
        // As on a dark terminal without colours: the light modules drawn, the dark ones the background.
        let image = try #require(try QRCode(Self.uri)).image(scale: 3)
        let inverted = GreyImage(width: image.width, height: image.height, pixels: image.pixels.map { 255 - $0 })
        #expect(try QRImage.codes(in: inverted) == [Self.uri])
    }

    @Test func aPNGFileGivesItsURIAndItsAccounts() throws {
        let directory = temporaryDirectory()
        let path = directory + "/code.png"
        try Data(png(try #require(try QRCode(Self.uri)).image(scale: 4))).write(to: URL(fileURLWithPath: path))
        let uri = try QRImage.accountURI(inFile: path)
        #expect(uri == Self.uri)
        let accounts = try OTPAuthURI.accounts(in: uri)
        #expect(accounts.map(\.id.string) == ["Example:alice@example.com"])
        #expect(accounts.first?.secret == (try Base32.decode("JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP")))
    }

    @Test func aCodeOnTransparencyIsReadAsDarkOnLight() throws {
        // Dark modules opaque black, the rest transparent (grey-alpha with alpha 0): composed on white.
        let image = try #require(try QRCode(Self.uri)).image(scale: 4)
        var pixels = [UInt8]()
        for p in image.pixels { pixels += p == 0 ? [0, 255] : [0, 0] }
        let bytes = png(pixels, width: image.width, height: image.height, format: UInt32(PNG_FORMAT_GA))
        let grey = try QRImage.grey(bytes, path: "t.png")
        #expect(grey.pixels == image.pixels)
        #expect(try QRImage.codes(in: grey) == [Self.uri])
    }

    @Test func anImageWithoutACodeOrWithTwoIsRefused() throws {
        let directory = temporaryDirectory()
        let blank = GreyImage(width: 200, height: 120, pixels: [UInt8](repeating: 255, count: 200 * 120))
        try Data(png(blank)).write(to: URL(fileURLWithPath: directory + "/blank.png"))
        #expect(throws: QRImageError.noCode(path: directory + "/blank.png")) {
            try QRImage.accountURI(inFile: directory + "/blank.png")
        }
        // Two codes side by side.
        let a = try #require(try QRCode(Self.uri)).image(scale: 4)
        let b = try #require(try QRCode("otpauth://totp/Other:bob?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ")).image(
            scale: 4)
        let height = max(a.height, b.height)
        var pixels = [UInt8]()
        for y in 0..<height {
            pixels +=
                y < a.height
                ? a.pixels[(y * a.width)..<((y + 1) * a.width)] : ArraySlice(repeating: 255, count: a.width)
            pixels +=
                y < b.height
                ? b.pixels[(y * b.width)..<((y + 1) * b.width)] : ArraySlice(repeating: 255, count: b.width)
        }
        let two = GreyImage(width: a.width + b.width, height: height, pixels: pixels)
        #expect(
            try QRImage.codes(in: two).sorted()
                == [Self.uri, "otpauth://totp/Other:bob?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"].sorted())
        try Data(png(two)).write(to: URL(fileURLWithPath: directory + "/two.png"))
        #expect(throws: QRImageError.severalCodes(path: directory + "/two.png", count: 2)) {
            try QRImage.accountURI(inFile: directory + "/two.png")
        }
        // A code that is no account.
        try Data(png(try #require(try QRCode("https://example.com/")).image())).write(
            to: URL(fileURLWithPath: directory + "/web.png"))
        #expect(throws: QRImageError.notAccountURI(path: directory + "/web.png", text: "https://example.com/")) {
            try QRImage.accountURI(inFile: directory + "/web.png")
        }
    }

    @Test func whatIsNoImageIsSaidSo() throws {
        let directory = temporaryDirectory()
        #expect(throws: QRImageError.notAnImage(path: "t")) { try QRImage.grey(Array("hello".utf8), path: "t") }
        #expect(throws: QRImageError.notAnImage(path: "t")) { try QRImage.grey([], path: "t") }
        // A PNG cut short, and a JPEG that is only its signature.
        let whole = png(try #require(try QRCode(Self.uri)).image())
        #expect {
            try QRImage.grey(Array(whole.prefix(100)), path: "t")
        } throws: { error in
            guard case .damaged(_, "PNG", let detail) = error as? QRImageError else { return false }
            return !detail.isEmpty
        }
        #expect {
            try QRImage.grey([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, 0x4A, 0x46], path: "t")
        } throws: { error in
            guard case .damaged(_, "JPEG", let detail) = error as? QRImageError else { return false }
            return !detail.isEmpty
        }
        // A file that is not there, and a directory.
        #expect {
            try QRImage.accountURI(inFile: directory + "/missing.png")
        } throws: { error in
            guard case .unreadable(_, let reason) = error as? QRImageError else { return false }
            return reason == String(cString: strerror(ENOENT))
        }
        #expect {
            try QRImage.accountURI(inFile: directory)
        } throws: { error in
            guard case .unreadable = error as? QRImageError else { return false }
            return true
        }
    }

    @Test func theErrorsHaveTheirWords() {
        let tables = StringTables.load(language: "en")
        let cases: [(QRImageError, ErrorKind, String)] = [
            (.noCode(path: "a.png"), .qrNoCode, "no QR code found in a.png"),
            (.severalCodes(path: "a.png", count: 2), .qrSeveralCodes, "a.png holds 2 QR codes"),
            (.notAnImage(path: "a.txt"), .qrNotAnImage, "a.txt is not a PNG or JPEG image"),
            (.notAccountURI(path: "a.png", text: "https://x"), .qrNotAccount, "(it begins: https://x)"),
            (.damaged(path: "a.png", format: "PNG", detail: "bad"), .qrImageDamaged, "PNG image a.png: bad"),
            (.pixels(path: "a.png", width: 0, height: 5), .qrImageTooLarge, "0 × 5 pixels"),
            (.fileTooLarge(path: "a.png", bytes: 70_000_000), .qrFileTooLarge, "at most 64 MiB"),
            (.unreadable(path: "a.png", reason: "EIO"), .fileUnreadable, "cannot read a.png: EIO"),
            (
                .libraryMissing(library: "libzbar.so.0", package: "libzbar0", detail: "x"), .qrLibraryMissing,
                "apt install libzbar0"
            ),
        ]
        for (error, kind, words) in cases {
            let e = ErrorExplanation(error)
            #expect(e.kind == kind)
            #expect(tables.text(e.text).contains(words), "\(tables.text(e.text))")
        }
    }

    /// `image` as a PNG file's bytes, written by libpng (the test's own encoder; the reader is the code tested).
    func png(_ image: GreyImage) -> [UInt8] {
        png(image.pixels, width: image.width, height: image.height, format: UInt32(PNG_FORMAT_GRAY))
    }

    func png(_ pixels: [UInt8], width: Int, height: Int, format: UInt32) -> [UInt8] {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = png_uint_32(width)
        image.height = png_uint_32(height)
        image.format = png_uint_32(format)
        let channels = pixels.count / (width * height)
        var size = 0
        _ = pixels.withUnsafeBytes {
            png_image_write_to_memory(&image, nil, &size, 0, $0.baseAddress, png_int_32(width * channels), nil)
        }
        var out = [UInt8](repeating: 0, count: size)
        let ok = out.withUnsafeMutableBytes { memory in
            pixels.withUnsafeBytes {
                png_image_write_to_memory(
                    &image, memory.baseAddress, &size, 0, $0.baseAddress, png_int_32(width * channels), nil)
            }
        }
        precondition(ok != 0, "libpng could not write the test's image")
        return Array(out.prefix(size))
    }
}
