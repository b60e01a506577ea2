import CZBar
import Glibc

/// zbar's image scanner, loaded with dlopen the first time an image is scanned: libzbar.so.0 needs 17 more shared
/// libraries (X11, dbus, v4l and theirs), about 2 ms at every start of ykterm were it linked, for a command few
/// runs. Debian's package depends on libzbar0; without it (the tarball on another system) scanning says so.
struct QRScanner: @unchecked Sendable {  // function pointers into a library that is never unloaded
    static let library = "libzbar.so.0"

    private typealias ScannerCreate = @convention(c) () -> OpaquePointer?
    private typealias ScannerDestroy = @convention(c) (OpaquePointer?) -> Void
    private typealias ScannerSetConfig =
        @convention(c) (OpaquePointer?, zbar_symbol_type_t, zbar_config_t, Int32)
        -> Int32
    private typealias ImageCreate = @convention(c) () -> OpaquePointer?
    private typealias ImageDestroy = @convention(c) (OpaquePointer?) -> Void
    private typealias ImageSetFormat = @convention(c) (OpaquePointer?, UInt) -> Void
    private typealias ImageSetSize = @convention(c) (OpaquePointer?, UInt32, UInt32) -> Void
    private typealias ImageSetData =
        @convention(c) (
            OpaquePointer?, UnsafeRawPointer?, UInt, (@convention(c) (OpaquePointer?) -> Void)?
        ) -> Void
    private typealias ScanImage = @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32
    private typealias FirstSymbol = @convention(c) (OpaquePointer?) -> OpaquePointer?
    private typealias NextSymbol = @convention(c) (OpaquePointer?) -> OpaquePointer?
    private typealias SymbolType = @convention(c) (OpaquePointer?) -> zbar_symbol_type_t
    private typealias SymbolData = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
    private typealias SymbolLength = @convention(c) (OpaquePointer?) -> UInt32

    private let scannerCreate: ScannerCreate
    private let scannerDestroy: ScannerDestroy
    private let scannerSetConfig: ScannerSetConfig
    private let imageCreate: ImageCreate
    private let imageDestroy: ImageDestroy
    private let imageSetFormat: ImageSetFormat
    private let imageSetSize: ImageSetSize
    private let imageSetData: ImageSetData
    private let scanImage: ScanImage
    private let firstSymbol: FirstSymbol
    private let nextSymbol: NextSymbol
    private let symbolType: SymbolType
    private let symbolData: SymbolData
    private let symbolLength: SymbolLength

    private static let loaded: Result<QRScanner, QRImageError> = Result { () throws(QRImageError) in
        try QRScanner()
    }

    /// The scanner, loaded once for the process.
    static func shared() throws(QRImageError) -> QRScanner { try loaded.get() }

    private init() throws(QRImageError) {
        let library = try LoadedLibrary(Self.library, package: "libzbar0")
        func symbol<T>(_ name: String, _ type: T.Type) throws(QRImageError) -> T { try library.symbol(name, type) }
        scannerCreate = try symbol("zbar_image_scanner_create", ScannerCreate.self)
        scannerDestroy = try symbol("zbar_image_scanner_destroy", ScannerDestroy.self)
        scannerSetConfig = try symbol("zbar_image_scanner_set_config", ScannerSetConfig.self)
        imageCreate = try symbol("zbar_image_create", ImageCreate.self)
        imageDestroy = try symbol("zbar_image_destroy", ImageDestroy.self)
        imageSetFormat = try symbol("zbar_image_set_format", ImageSetFormat.self)
        imageSetSize = try symbol("zbar_image_set_size", ImageSetSize.self)
        imageSetData = try symbol("zbar_image_set_data", ImageSetData.self)
        scanImage = try symbol("zbar_scan_image", ScanImage.self)
        firstSymbol = try symbol("zbar_image_first_symbol", FirstSymbol.self)
        nextSymbol = try symbol("zbar_symbol_next", NextSymbol.self)
        symbolType = try symbol("zbar_symbol_get_type", SymbolType.self)
        symbolData = try symbol("zbar_symbol_get_data", SymbolData.self)
        symbolLength = try symbol("zbar_symbol_get_data_length", SymbolLength.self)
    }

    /// Y800: 8-bit grey, zbar's name for it as a fourcc.
    static let y800 = UInt(0x3030_3859)

    /// The text of every QR code in `image` (only QR codes: the other symbologies are off), as UTF-8 from the
    /// code's bytes as they are (zbar's binary mode: no guessing of character sets).
    func scan(_ image: GreyImage) -> [String] {
        guard let scanner = scannerCreate() else { return [] }
        defer { scannerDestroy(scanner) }
        _ = scannerSetConfig(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        _ = scannerSetConfig(scanner, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1)
        _ = scannerSetConfig(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1)
        guard let zimage = imageCreate() else { return [] }
        defer { imageDestroy(zimage) }
        imageSetFormat(zimage, Self.y800)
        imageSetSize(zimage, UInt32(image.width), UInt32(image.height))
        return image.pixels.withUnsafeBytes { pixels in
            // zbar keeps the pointer until the image is destroyed (above, before `pixels` goes), with no cleanup.
            imageSetData(zimage, pixels.baseAddress, UInt(pixels.count), nil)
            guard scanImage(scanner, zimage) > 0 else { return [] }
            var texts = [String]()
            var symbol = firstSymbol(zimage)
            while let s = symbol {
                if symbolType(s) == ZBAR_QRCODE, let data = symbolData(s) {
                    let bytes = UnsafeRawBufferPointer(start: data, count: Int(symbolLength(s)))
                    texts.append(String(decoding: bytes, as: UTF8.self))
                }
                symbol = nextSymbol(s)
            }
            return texts
        }
    }
}

/// A shared library loaded with dlopen, never unloaded, and its functions.
struct LoadedLibrary: @unchecked Sendable {  // the handle of a library that stays loaded
    let name: String
    let package: String
    private let handle: UnsafeMutableRawPointer

    /// Loads `name` (a soname); `package` is the Debian package that has it, for the error.
    init(_ name: String, package: String) throws(QRImageError) {
        guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
            throw .libraryMissing(
                library: name, package: package, detail: dlerror().map { String(cString: $0) } ?? "")
        }
        self.name = name
        self.package = package
        self.handle = handle
    }

    /// The function `symbol` as the C function type `T`.
    func symbol<T>(_ symbol: String, _: T.Type) throws(QRImageError) -> T {
        guard let address = dlsym(handle, symbol) else {
            throw .libraryMissing(library: name, package: package, detail: "no \(symbol)")
        }
        return unsafeBitCast(address, to: T.self)
    }
}
