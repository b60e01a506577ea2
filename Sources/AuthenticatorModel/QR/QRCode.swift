import CQREncode
import Glibc
import KeyKit

/// A QR code as its modules (libqrencode): `size` × `size`, true for a dark module, row after row, without the
/// quiet zone around it (`quietZone` modules on each side, which whoever draws it adds).
public struct QRCode: Sendable, Equatable {
    public var size: Int
    public var modules: [Bool]
    /// The light margin the QR specification asks for on every side, in modules.
    public static let quietZone = 4

    /// The code of `text`, in byte mode where needed, with error correction level M (a photo of a screen stays
    /// readable); nil when the text is too long for a QR code (more than about 2300 bytes). libqrencode is loaded
    /// the first time (`QREncoder`).
    public init?(_ text: String) throws(QRImageError) {
        let encoder = try QREncoder.shared()
        guard let code = encoder.encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { encoder.free(code) }
        let width = Int(code.pointee.width)
        size = width
        // Bit 0 of each byte is the module's colour (1: dark); the other bits say what the module is part of.
        modules = (0..<width * width).map { code.pointee.data[$0] & 1 == 1 }
    }

    public init(size: Int, modules: [Bool]) {
        precondition(modules.count == size * size, "a QR code has size × size modules")
        self.size = size
        self.modules = modules
    }

    /// Whether the module at `row`, `column` is dark; outside the code (the quiet zone) it is light.
    public func isDark(_ row: Int, _ column: Int) -> Bool {
        guard (0..<size).contains(row), (0..<size).contains(column) else { return false }
        return modules[row * size + column]
    }

    /// The code drawn as a grey image, `scale` pixels a module, with the quiet zone (for tests and the scanner).
    public func image(scale: Int = 4) -> GreyImage {
        let side = (size + 2 * Self.quietZone) * scale
        var pixels = [UInt8](repeating: 255, count: side * side)
        for y in 0..<side {
            for x in 0..<side where isDark(y / scale - Self.quietZone, x / scale - Self.quietZone) {
                pixels[y * side + x] = 0
            }
        }
        return GreyImage(width: side, height: side, pixels: pixels)
    }

    /// The code as lines of text, the quiet zone included: with `unicode`, two rows of modules a line in half
    /// blocks (▀ ▄ █: dark modules drawn, light ones blank), for a terminal with dark text on a light background
    /// or colours set so; without, each module two characters wide ("##" dark, two spaces light), a row a line.
    public func lines(unicode: Bool) -> [String] {
        let q = Self.quietZone
        let range = -q..<(size + q)
        if !unicode {
            return range.map { row in
                String(range.map { isDark(row, $0) ? "##" : "  " }.joined())
            }
        }
        return stride(from: -q, to: size + q, by: 2).map { row in
            String(
                range.map { column -> Character in
                    switch (isDark(row, column), isDark(row + 1, column)) {
                    case (true, true): "█"
                    case (true, false): "▀"
                    case (false, true): "▄"
                    case (false, false): " "
                    }
                })
        }
    }
}

/// libqrencode, loaded with dlopen the first time a code is drawn, so that ykterm starts without it.
struct QREncoder: @unchecked Sendable {  // function pointers into a library that is never unloaded
    static let library = "libqrencode.so.4"

    typealias EncodeString =
        @convention(c) (UnsafePointer<CChar>?, Int32, QRecLevel, QRencodeMode, Int32)
        -> UnsafeMutablePointer<QRcode>?
    typealias Free = @convention(c) (UnsafeMutablePointer<QRcode>?) -> Void

    let encodeString: EncodeString
    let free: Free

    private static let loaded: Result<QREncoder, QRImageError> = Result { () throws(QRImageError) in
        let library = try LoadedLibrary(Self.library, package: "libqrencode4")
        return QREncoder(
            encodeString: try library.symbol("QRcode_encodeString", EncodeString.self),
            free: try library.symbol("QRcode_free", Free.self))
    }

    /// The encoder, loaded once for the process.
    static func shared() throws(QRImageError) -> QREncoder { try loaded.get() }
}
