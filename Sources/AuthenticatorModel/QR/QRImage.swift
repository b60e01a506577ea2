import CJPEG
import CPNG
import Glibc
import KeyKit

/// An image as 8-bit grey: one byte a pixel (0 black, 255 white), row after row, no padding.
public struct GreyImage: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height, "a grey image has width × height pixels")
        self.width = width
        self.height = height
        self.pixels = pixels
    }
}

/// What kept an image from giving one account URI (facts; the words are `ErrorExplanation`'s).
public enum QRImageError: Error, Sendable, Equatable {
    /// The file could not be read (`reason`: the system's words).
    case unreadable(path: String, reason: String)
    /// The file is larger than `QRImage.maximumFileBytes`.
    case fileTooLarge(path: String, bytes: Int)
    /// Neither PNG nor JPEG (by its first bytes).
    case notAnImage(path: String)
    /// A PNG or JPEG file its decoder could not read (`detail`: the decoder's words, in English).
    case damaged(path: String, format: String, detail: String)
    /// More pixels than `QRImage.maximumPixels`, or none.
    case pixels(path: String, width: Int, height: Int)
    /// No QR code found in the image.
    case noCode(path: String)
    /// `count` QR codes: which one is meant cannot be known.
    case severalCodes(path: String, count: Int)
    /// The one QR code holds no `otpauth://` or `otpauth-migration://` URI (`text`: its first characters).
    case notAccountURI(path: String, text: String)
    /// A QR library (zbar to scan, libqrencode to draw) could not be loaded; `package` is Debian's that has it.
    case libraryMissing(library: String, package: String, detail: String)
}

/// Reading the QR codes in a PNG or JPEG image: the file is decoded to grey (libpng, libjpeg) and scanned by zbar
/// (`QRScanner`). `oath add --qr` and the Add dialog's image path go through `accountURI(inFile:)`.
public enum QRImage {
    /// Larger files are refused before they are read whole (a screenshot is a few MB).
    public static let maximumFileBytes = 64 << 20
    /// Larger images are refused before they are decoded (about ten 4K screens).
    public static let maximumPixels = 80_000_000

    /// The one `otpauth://` or `otpauth-migration://` URI in the image at `path`.
    public static func accountURI(inFile path: String) throws(QRImageError) -> String {
        let texts = try codes(in: try grey(try read(path), path: path))
        guard !texts.isEmpty else { throw .noCode(path: path) }
        guard texts.count == 1, let text = texts.first else { throw .severalCodes(path: path, count: texts.count) }
        let trimmed = text.trimmingWhitespace
        let lower = trimmed.lowercased()
        guard lower.hasPrefix("otpauth://") || lower.hasPrefix("otpauth-migration://") else {
            throw .notAccountURI(path: path, text: String(trimmed.prefix(40)))
        }
        return trimmed
    }

    /// The bytes of the file at `path`, refused past `maximumFileBytes`.
    static func read(_ path: String) throws(QRImageError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            throw .unreadable(path: path, reason: String(cString: strerror(EISDIR)))
        }
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
            if n == 0 { return out }
            out += buffer[0..<n]
            if out.count > maximumFileBytes { throw .fileTooLarge(path: path, bytes: out.count) }
        }
    }

    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    static let jpegSignature: [UInt8] = [0xFF, 0xD8, 0xFF]

    /// The image in `bytes` (PNG or JPEG, told apart by their signatures) as grey; `path` names it in errors.
    public static func grey(_ bytes: [UInt8], path: String) throws(QRImageError) -> GreyImage {
        if bytes.starts(with: pngSignature) { return try png(bytes, path: path) }
        if bytes.starts(with: jpegSignature) { return try jpeg(bytes, path: path) }
        throw .notAnImage(path: path)
    }

    /// A PNG image through libpng's simplified API: any colour type and depth, transparency put on white (a code
    /// drawn on a transparent background stays dark on light).
    static func png(_ bytes: [UInt8], path: String) throws(QRImageError) -> GreyImage {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        defer { png_image_free(&image) }
        func failure() -> QRImageError {
            let detail = withUnsafeBytes(of: image.message) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            return .damaged(path: path, format: "PNG", detail: detail)
        }
        let begun = bytes.withUnsafeBytes { png_image_begin_read_from_memory(&image, $0.baseAddress, $0.count) }
        guard begun != 0 else { throw failure() }
        let width = Int(image.width), height = Int(image.height)
        guard width > 0, height > 0, width * height <= maximumPixels else {
            throw .pixels(path: path, width: width, height: height)
        }
        image.format = png_uint_32(PNG_FORMAT_GRAY)
        var white = png_color(red: 255, green: 255, blue: 255)
        var pixels = [UInt8](repeating: 255, count: width * height)
        let finished = pixels.withUnsafeMutableBytes {
            png_image_finish_read(&image, &white, $0.baseAddress, png_int_32(width), nil)
        }
        guard finished != 0 else { throw failure() }
        return GreyImage(width: width, height: height, pixels: pixels)
    }

    /// A JPEG image through libjpeg (the shim's `cjpeg_decode_grey`).
    static func jpeg(_ bytes: [UInt8], path: String) throws(QRImageError) -> GreyImage {
        var pixels: UnsafeMutablePointer<UInt8>?
        var width: UInt32 = 0, height: UInt32 = 0
        var message = [CChar](repeating: 0, count: 256)
        let status = bytes.withUnsafeBufferPointer { data in
            cjpeg_decode_grey(
                data.baseAddress, UInt(data.count), UInt(maximumPixels), &pixels, &width, &height, &message,
                message.count)
        }
        defer { free(pixels) }
        switch status {
        case 0:
            guard let pixels else { throw .damaged(path: path, format: "JPEG", detail: "") }
            let count = Int(width) * Int(height)
            return GreyImage(
                width: Int(width), height: Int(height), pixels: Array(UnsafeBufferPointer(start: pixels, count: count)))
        case 1:
            throw .pixels(path: path, width: Int(width), height: Int(height))
        default:
            let detail = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw .damaged(path: path, format: "JPEG", detail: detail)
        }
    }

    /// The text of every QR code in `image` (zbar, loaded when first needed). An image with none is scanned again
    /// inverted: a code drawn light on dark (a screenshot of a dark terminal or a dark theme) is read too.
    public static func codes(in image: GreyImage) throws(QRImageError) -> [String] {
        let scanner = try QRScanner.shared()
        let texts = scanner.scan(image)
        guard texts.isEmpty else { return texts }
        return scanner.scan(GreyImage(width: image.width, height: image.height, pixels: image.pixels.map { 255 - $0 }))
    }
}
