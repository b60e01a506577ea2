import FoundationEssentials
import KeyKit
import Testing

/// PSKC (RFC 6030) read and written: the RFC's own example documents (Figures 2 to 7, their secrets known), then
/// what ykterm writes read back under each protection, and the refusals.
@Suite struct PSKCTests {
    /// RFC 6030, Figure 2.
    static let figure2 = """
        <?xml version="1.0" encoding="UTF-8"?>

        <KeyContainer Version="1.0"
            Id="exampleID1"
            xmlns="urn:ietf:params:xml:ns:keyprov:pskc">
            <KeyPackage>
                <Key Id="12345678"
                    Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
                    <Issuer>Issuer-A</Issuer>
                    <Data>
                        <Secret>
                            <PlainValue>MTIzNA==
                            </PlainValue>
                        </Secret>
                    </Data>
                </Key>
            </KeyPackage>
        </KeyContainer>
        """

    /// RFC 6030, Figure 3.
    static let figure3 = """
        <?xml version="1.0" encoding="UTF-8"?>

        <KeyContainer Version="1.0"
            Id="exampleID1"
            xmlns="urn:ietf:params:xml:ns:keyprov:pskc">
            <KeyPackage>
                <DeviceInfo>
                    <Manufacturer>Manufacturer</Manufacturer>
                    <SerialNo>987654321</SerialNo>
                    <UserId>DC=example-bank,DC=net</UserId>
                </DeviceInfo>
                <CryptoModuleInfo>
                    <Id>CM_ID_001</Id>
                </CryptoModuleInfo>
                <Key Id="12345678"
                    Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
                    <Issuer>Issuer</Issuer>
                    <AlgorithmParameters>
                        <ResponseFormat Length="8" Encoding="DECIMAL"/>
                    </AlgorithmParameters>
                    <Data>
                        <Secret>
                            <PlainValue>MTIzNDU2Nzg5MDEyMzQ1Njc4OTA=
                            </PlainValue>
                        </Secret>
                        <Counter>
                            <PlainValue>0</PlainValue>
                        </Counter>
                    </Data>
                    <UserId>UID=jsmith,DC=example-bank,DC=net</UserId>
                </Key>
            </KeyPackage>
        </KeyContainer>
        """

    /// RFC 6030, Figure 4.
    static let figure4 = """
        <?xml version="1.0" encoding="UTF-8"?>

        <KeyContainer Version="1.0"
            Id="exampleID1"
            xmlns="urn:ietf:params:xml:ns:keyprov:pskc">
            <KeyPackage>
                <DeviceInfo>
                    <Manufacturer>Manufacturer</Manufacturer>
                    <SerialNo>987654321</SerialNo>
                </DeviceInfo>
                <CryptoModuleInfo>
                    <Id>CM_ID_001</Id>
                </CryptoModuleInfo>
                <Key Id="12345678"
                    Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
                    <Issuer>Issuer</Issuer>
                    <AlgorithmParameters>
                        <ResponseFormat Length="8" Encoding="DECIMAL"/>
                    </AlgorithmParameters>
                    <KeyProfileId>keyProfile1</KeyProfileId>
                    <KeyReference>MasterKeyLabel
                    </KeyReference>
                    <Data>
                        <Counter>
                            <PlainValue>0</PlainValue>
                        </Counter>
                    </Data>
                    <Policy>
                        <KeyUsage>OTP</KeyUsage>
                    </Policy>
                </Key>
            </KeyPackage>
        </KeyContainer>
        """

    /// RFC 6030, Figure 5.
    static let figure5 = """
        <?xml version="1.0" encoding="UTF-8"?>

        <KeyContainer Version="1.0"
            Id="exampleID1"
            xmlns="urn:ietf:params:xml:ns:keyprov:pskc">
            <KeyPackage>
                <DeviceInfo>
                    <Manufacturer>Manufacturer</Manufacturer>
                    <SerialNo>987654321</SerialNo>
                </DeviceInfo>
                <CryptoModuleInfo>
                    <Id>CM_ID_001</Id>
                </CryptoModuleInfo>
                <Key Id="12345678"
                    Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
                    <Issuer>Issuer</Issuer>
                    <AlgorithmParameters>
                        <ResponseFormat Length="8" Encoding="DECIMAL"/>
                    </AlgorithmParameters>
                    <Data>
                        <Secret>
                            <PlainValue>MTIzNDU2Nzg5MDEyMzQ1Njc4OTA=
                            </PlainValue>
                        </Secret>
                        <Counter>
                            <PlainValue>0</PlainValue>
                        </Counter>
                    </Data>
                    <Policy>
                        <PINPolicy MinLength="4" MaxLength="4"
                            PINKeyId="123456781" PINEncoding="DECIMAL"
                            PINUsageMode="Local"/>
                        <KeyUsage>OTP</KeyUsage>
                    </Policy>
                </Key>
            </KeyPackage>
            <KeyPackage>
                <DeviceInfo>
                    <Manufacturer>Manufacturer</Manufacturer>
                    <SerialNo>987654321</SerialNo>
                </DeviceInfo>
                <CryptoModuleInfo>
                    <Id>CM_ID_001</Id>
                </CryptoModuleInfo>
                <Key Id="123456781"
                    Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:pin">
                    <Issuer>Issuer</Issuer>
                    <AlgorithmParameters>
                        <ResponseFormat Length="4" Encoding="DECIMAL"/>
                    </AlgorithmParameters>
                    <Data>
                        <Secret>
                            <PlainValue>MTIzNA==</PlainValue>
                        </Secret>
                    </Data>
                </Key>
            </KeyPackage>
        </KeyContainer>
        """

    /// RFC 6030, Figure 6.
    static let figure6 = """
        <?xml version="1.0" encoding="UTF-8"?>

        <KeyContainer Version="1.0"
            xmlns="urn:ietf:params:xml:ns:keyprov:pskc"
            xmlns:ds="http://www.w3.org/2000/09/xmldsig#"
            xmlns:xenc="http://www.w3.org/2001/04/xmlenc#">
            <EncryptionKey>
                <ds:KeyName>Pre-shared-key</ds:KeyName>
            </EncryptionKey>
            <MACMethod Algorithm="http://www.w3.org/2000/09/xmldsig#hmac-sha1">
                <MACKey>
                    <xenc:EncryptionMethod
                    Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
                    <xenc:CipherData>
                        <xenc:CipherValue>
            ESIzRFVmd4iZABEiM0RVZgKn6WjLaTC1sbeBMSvIhRejN9vJa2BOlSaMrR7I5wSX
                        </xenc:CipherValue>
                    </xenc:CipherData>
                </MACKey>
            </MACMethod>
            <KeyPackage>
                <DeviceInfo>
                    <Manufacturer>Manufacturer</Manufacturer>
                    <SerialNo>987654321</SerialNo>
                </DeviceInfo>
                <CryptoModuleInfo>
                    <Id>CM_ID_001</Id>
                </CryptoModuleInfo>
                <Key Id="12345678"
                    Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp">
                    <Issuer>Issuer</Issuer>
                    <AlgorithmParameters>
                        <ResponseFormat Length="8" Encoding="DECIMAL"/>
                    </AlgorithmParameters>
                    <Data>
                        <Secret>
                            <EncryptedValue>
                                <xenc:EncryptionMethod
                                Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
                                <xenc:CipherData>
                                    <xenc:CipherValue>
            AAECAwQFBgcICQoLDA0OD+cIHItlB3Wra1DUpxVvOx2lef1VmNPCMl8jwZqIUqGv
                                    </xenc:CipherValue>
                                </xenc:CipherData>
                            </EncryptedValue>
                            <ValueMAC>Su+NvtQfmvfJzF6bmQiJqoLRExc=
                            </ValueMAC>
                        </Secret>
                        <Counter>
                            <PlainValue>0</PlainValue>
                        </Counter>
                    </Data>
                </Key>
            </KeyPackage>
        </KeyContainer>
        """

    /// RFC 6030, Figure 7.
    static let figure7 = """
        <?xml version="1.0" encoding="UTF-8"?>

        <pskc:KeyContainer
          xmlns:pskc="urn:ietf:params:xml:ns:keyprov:pskc"
          xmlns:xenc11="http://www.w3.org/2009/xmlenc11#"
          xmlns:pkcs5="http://www.rsasecurity.com/rsalabs/pkcs/schemas/pkcs-5v2-0#"
          xmlns:xenc="http://www.w3.org/2001/04/xmlenc#" Version="1.0">
            <pskc:EncryptionKey>
                <xenc11:DerivedKey>
                    <xenc11:KeyDerivationMethod
                      Algorithm="http://www.rsasecurity.com/rsalabs/pkcs/schemas/pkcs-5v2-0#pbkdf2">
                        <pkcs5:PBKDF2-params>
                            <Salt>
                                <Specified>Ej7/PEpyEpw=</Specified>
                            </Salt>
                            <IterationCount>1000</IterationCount>
                            <KeyLength>16</KeyLength>
                            <PRF/>
                        </pkcs5:PBKDF2-params>
                    </xenc11:KeyDerivationMethod>
                    <xenc:ReferenceList>
                        <xenc:DataReference URI="#ED"/>
                    </xenc:ReferenceList>
                    <xenc11:MasterKeyName>My Password 1</xenc11:MasterKeyName>
                </xenc11:DerivedKey>
            </pskc:EncryptionKey>
            <pskc:MACMethod
                Algorithm="http://www.w3.org/2000/09/xmldsig#hmac-sha1">
                <pskc:MACKey>
                    <xenc:EncryptionMethod
                    Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
                    <xenc:CipherData>
                        <xenc:CipherValue>
        2GTTnLwM3I4e5IO5FkufoOEiOhNj91fhKRQBtBJYluUDsPOLTfUvoU2dStyOwYZx
                        </xenc:CipherValue>
                    </xenc:CipherData>
                </pskc:MACKey>
            </pskc:MACMethod>
            <pskc:KeyPackage>
                <pskc:DeviceInfo>
                    <pskc:Manufacturer>TokenVendorAcme</pskc:Manufacturer>
                    <pskc:SerialNo>987654321</pskc:SerialNo>
                </pskc:DeviceInfo>
                <pskc:CryptoModuleInfo>
                    <pskc:Id>CM_ID_001</pskc:Id>
                </pskc:CryptoModuleInfo>
                <pskc:Key Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:hotp" Id="123456">
                    <pskc:Issuer>Example-Issuer</pskc:Issuer>
                    <pskc:AlgorithmParameters>
                        <pskc:ResponseFormat Length="8" Encoding="DECIMAL"/>
                    </pskc:AlgorithmParameters>
                    <pskc:Data>
                        <pskc:Secret>
                        <pskc:EncryptedValue Id="ED">
                            <xenc:EncryptionMethod
                                Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
                                <xenc:CipherData>
                                    <xenc:CipherValue>
              oTvo+S22nsmS2Z/RtcoF8Hfh+jzMe0RkiafpoDpnoZTjPYZu6V+A4aEn032yCr4f
                                </xenc:CipherValue>
                            </xenc:CipherData>
                            </pskc:EncryptedValue>
                            <pskc:ValueMAC>LP6xMvjtypbfT9PdkJhBZ+D6O4w=
                            </pskc:ValueMAC>
                        </pskc:Secret>
                    </pskc:Data>
                </pskc:Key>
            </pskc:KeyPackage>
        </pskc:KeyContainer>
        """

    static func file(_ text: String) throws -> PSKC.File { try PSKC.File(Array(text.utf8)) }

    static let twenty = Array("12345678901234567890".utf8)

    @Test func figure2IsOneHOTPAccountNamedByItsKeyID() throws {
        let file = try Self.file(Self.figure2)
        #expect(file.needs == .nothing)
        let read = try file.accounts(key: nil)
        #expect(read.skipped.isEmpty)
        #expect(
            read.accounts == [
                CredentialData(name: "12345678", issuer: "Issuer-A", type: .hotp, secret: Array("1234".utf8))
            ])
    }

    @Test func figure3TakesEightDigitsTheCounterAndTheUserID() throws {
        let read = try Self.file(Self.figure3).accounts(key: nil)
        #expect(
            read.accounts == [
                CredentialData(
                    name: "UID=jsmith,DC=example-bank,DC=net", issuer: "Issuer", type: .hotp, digits: 8, counter: 0,
                    secret: Self.twenty)
            ])
    }

    @Test func figure4HasNoSecretToAdd() throws {
        let read = try Self.file(Self.figure4).accounts(key: nil)
        #expect(read.accounts.isEmpty)
        #expect(read.skipped.map(\.id) == ["12345678"])
        #expect(read.skipped.map(\.reason) == [.noSecret])
    }

    @Test func figure5SkipsThePINKeyPackage() throws {
        let read = try Self.file(Self.figure5).accounts(key: nil)
        #expect(read.accounts.map(\.secret) == [Self.twenty])
        #expect(read.skipped.map(\.id) == ["123456781"])
        #expect(read.skipped.map(\.reason) == [.algorithm("urn:ietf:params:xml:ns:keyprov:pskc:pin")])
    }

    @Test func figure6DecryptsWithThePreSharedKeyAndRefusesAnother() throws {
        let file = try Self.file(Self.figure6)
        #expect(file.needs == .key(name: "Pre-shared-key", length: 16))
        let key = SecretBytes(hex("12345678901234567890123456789012"))
        let read = try file.accounts(key: key)
        #expect(
            read.accounts == [
                CredentialData(name: "12345678", issuer: "Issuer", type: .hotp, digits: 8, secret: Self.twenty)
            ])
        #expect(throws: PSKCError.wrongKey) {
            try file.accounts(key: SecretBytes(hex("12345678901234567890123456789013")))
        }
        #expect(throws: PSKCError.keyNeeded) { try file.accounts(key: nil) }
        #expect(throws: PSKCError.keyLength(32)) {
            try file.accounts(key: SecretBytes([UInt8](repeating: 1, count: 32)))
        }
    }

    @Test func figure7DerivesTheKeyFromThePassphrase() throws {
        let file = try Self.file(Self.figure7)
        #expect(file.needs == .passphrase(name: "My Password 1"))
        let key = try file.key(passphrase: SecretBytes(utf8: "qwerty"))
        #expect(key.copyBytes() == hex("651e63cd57008476af1ff6422cd02e41"))
        let read = try file.accounts(key: key)
        #expect(
            read.accounts == [
                CredentialData(name: "123456", issuer: "Example-Issuer", type: .hotp, digits: 8, secret: Self.twenty)
            ])
        #expect(throws: PSKCError.wrongKey) {
            try file.accounts(key: file.key(passphrase: SecretBytes(utf8: "qwertz")))
        }
    }

    static let accounts = [
        CredentialData(
            name: "alice, \"the\" <admin>", issuer: "Example & Co", type: .totp, algorithm: .sha256, digits: 8,
            period: 60, secret: Array(0..<32)),
        CredentialData(
            name: "bob@example.com", type: .hotp, algorithm: .sha512, digits: 7, counter: 42, secret: twenty),
    ]

    @Test(arguments: ["none", "key16", "key32", "passphrase"])
    func whatItWritesReadsBack(_ protection: String) throws {
        let written: [UInt8]
        var key: SecretBytes?
        switch protection {
        case "key16", "key32":
            key = SecretBytes(Crypto.random(protection == "key16" ? 16 : 32))
            written = try PSKC.document(Self.accounts, protection: .key(key!))
        case "passphrase":
            written = try PSKC.document(Self.accounts, protection: .passphrase(SecretBytes(utf8: "correct horse")))
        default:
            written = try PSKC.document(Self.accounts, protection: .none)
        }
        let text = String(decoding: written, as: UTF8.self)
        #expect(text.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"))
        #expect(text.contains("<pskc:KeyContainer") && text.contains("Version=\"1.0\""))
        let file = try PSKC.File(written)
        switch protection {
        case "key16": #expect(file.needs == .key(name: "Pre-shared-key", length: 16))
        case "key32": #expect(file.needs == .key(name: "Pre-shared-key", length: 32))
        case "passphrase":
            #expect(file.needs == .passphrase(name: nil))
            #expect(throws: PSKCError.wrongKey) {
                try file.accounts(key: file.key(passphrase: SecretBytes(utf8: "wrong horse")))
            }
            key = try file.key(passphrase: SecretBytes(utf8: "correct horse"))
        default:
            #expect(file.needs == .nothing)
            #expect(text.contains(Data(Self.twenty).base64EncodedString()))
        }
        if protection != "none" {
            #expect(!text.contains(Data(Self.twenty).base64EncodedString()))
        }
        let read = try file.accounts(key: key)
        #expect(read.skipped.isEmpty)
        #expect(read.accounts.map(\.name) == Self.accounts.map(\.name))
        #expect(read.accounts.map(\.issuer) == Self.accounts.map(\.issuer))
        #expect(read.accounts == Self.accounts)
    }

    @Test func whatIsNoPSKCIsSaidSo() {
        #expect(throws: PSKCError.self) { try Self.file("not xml <") }
        #expect(throws: PSKCError.notPSKC) { try Self.file("<KeyContainer Version=\"1.0\"/>") }
        #expect(throws: PSKCError.notPSKC) { try Self.file("<a xmlns=\"urn:ietf:params:xml:ns:keyprov:pskc\"/>") }
        #expect(throws: PSKCError.unsupported("2.0")) {
            try Self.file("<KeyContainer xmlns=\"urn:ietf:params:xml:ns:keyprov:pskc\" Version=\"2.0\"/>")
        }
        let wrap = Self.figure6.replacingOccurrences(of: "aes128-cbc", with: "kw-aes128")
        #expect(throws: PSKCError.unsupported("http://www.w3.org/2001/04/xmlenc#kw-aes128")) {
            try Self.file(wrap).accounts(key: SecretBytes(hex("12345678901234567890123456789012")))
        }
    }

    @Test func anExternalEntityIsNotRead() throws {
        let text = """
            <?xml version="1.0"?>
            <!DOCTYPE KeyContainer [<!ENTITY x SYSTEM "file:///etc/hostname">]>
            <KeyContainer xmlns="urn:ietf:params:xml:ns:keyprov:pskc" Version="1.0"><KeyPackage>
            <Key Id="&x;" Algorithm="urn:ietf:params:xml:ns:keyprov:pskc:totp"><Issuer>&x;</Issuer>
            <Data><Secret><PlainValue>MTIzNA==</PlainValue></Secret></Data></Key></KeyPackage></KeyContainer>
            """
        let read = try? Self.file(text).accounts(key: nil)
        #expect(read?.accounts.first?.issuer == nil)
    }

    func hex(_ text: String) -> [UInt8] {
        var out = [UInt8]()
        var i = text.startIndex
        while i < text.endIndex {
            let j = text.index(i, offsetBy: 2)
            out.append(UInt8(text[i..<j], radix: 16)!)
            i = j
        }
        return out
    }
}
