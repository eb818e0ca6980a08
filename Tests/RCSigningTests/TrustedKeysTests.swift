import Glibc
import RCCore
import RCSigning
import TestSupport
import Testing

/// Reading `TrustedKeys=`: a file of PEM blocks or a directory of them, refused when another user
/// can write it.
@Suite struct TrustedKeysTests {
    static func pem(_ key: Ed25519PrivateKey) throws -> String { String(decoding: try key.publicPEM(), as: UTF8.self) }

    @Test func aFileMayHoldSeveralKeysAndCommentsAndDuplicatesCountOnce() throws {
        try TemporaryDirectory.with { directory in
            let a = try Ed25519PrivateKey()
            let b = try Ed25519PrivateKey()
            let path = try directory.write(
                "keys.pem", "# ops key\n" + Self.pem(a) + "\n# ci key\n" + Self.pem(b) + Self.pem(a))
            let trusted = try TrustedKeys.load(path)
            #expect(trusted.keys.map(\.keyID) == [try a.publicKey().keyID, try b.publicKey().keyID])
        }
    }

    @Test func aDirectoryReadsItsPemAndPubFiles() throws {
        try TemporaryDirectory.with { directory in
            let a = try Ed25519PrivateKey()
            let b = try Ed25519PrivateKey()
            try directory.write("keys/a.pem", Self.pem(a))
            try directory.write("keys/b.pub", Self.pem(b))
            try directory.write("keys/README", "not a key")
            try directory.write("keys/.c.pem.swp", "not a key")
            chmod(directory.file("keys"), 0o755)
            #expect(try TrustedKeys.load(directory.file("keys")).keys.count == 2)
        }
    }

    @Test func keysOthersCanWriteAreRefused() throws {
        try TemporaryDirectory.with { directory in
            let path = try directory.write("keys.pem", Self.pem(try Ed25519PrivateKey()))
            chmod(path, 0o664)
            #expect(throws: SigningError.self) { try TrustedKeys.load(path) }
            do { _ = try TrustedKeys.load(path) } catch let error as SigningError {
                #expect(error.description.contains("can be written by group"))
            }
            chmod(path, 0o644)
            #expect(try TrustedKeys.load(path).keys.count == 1)
            try directory.write("dir/k.pem", Self.pem(try Ed25519PrivateKey()))
            chmod(directory.file("dir"), 0o777)
            #expect(throws: SigningError.self) { try TrustedKeys.load(directory.file("dir")) }
            do { _ = try TrustedKeys.load(directory.file("dir")) } catch let error as SigningError {
                #expect(error.description.contains("the directory can be written by every user"))
            }
        }
    }

    @Test func notAKeyIsAnErrorNamingTheFileAndLine() throws {
        try TemporaryDirectory.with { directory in
            let empty = try directory.write("empty.pem", "nothing here\n")
            #expect(throws: SigningError(.key, "\(empty): no \"BEGIN PUBLIC KEY\" block")) {
                try TrustedKeys.load(empty)
            }
            let broken = try directory.write(
                "broken.pem", "\n\n-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
            do { _ = try TrustedKeys.load(broken) } catch let error as SigningError {
                #expect(error.description.hasPrefix("key: \(broken):3: not a PEM public key"))
            }
            #expect(throws: SigningError.self) { try TrustedKeys.load(directory.file("missing.pem")) }
        }
    }
}
