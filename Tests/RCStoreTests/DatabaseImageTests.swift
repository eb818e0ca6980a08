import Glibc
import RCSystem
import TestSupport
import Testing

@testable import RCStore

/// The empty databases built in advance (`DatabaseImage+Data.swift`) are the ones the schema
/// builds: a new state database's, and the reader file's for it. A store uses them, and a store
/// whose schema is another builds its own reader image.
///
/// After a change to the schema, `RCAGENT_WRITE_IMAGES=1 swift test --filter DatabaseImageTests`
/// writes `DatabaseImage+Data.swift` again from the images built here; until then the first test
/// fails (and the daemon builds both images as it needs them, as before).
@Suite struct DatabaseImageTests {
    /// A new state database's reader schema.
    private static func readerSchema() throws -> [String] {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            return try store.readerSchema()
        }
    }

    /// What a database's bytes hold, for comparing two: its schema, `user_version` and rows
    /// (``SchemaTests/contents(of:)``), its page size, and that SQLite finds it sound. Not its bytes:
    /// another SQLite writes its own version in the header.
    private static func description(_ image: [UInt8]) throws -> [String] {
        let db = try Database(image: image)
        var lines = try SchemaTests.contents(of: db)
        lines.append("page_size \(try db.query("PRAGMA page_size") { $0.integer(0) ?? -1 }.first ?? -1)")
        lines += try db.query("PRAGMA integrity_check") { $0.text(0) ?? "" }
        return lines
    }

    @Test func theImagesBuiltInAdvanceAreTheOnesTheSchemaBuilds() throws {
        let readerScript = try Self.readerSchema().joined(separator: ";\n")
        let images = [
            ("fresh", Schema.fresh, DatabaseImage.freshKey, DatabaseImage.freshRuns),
            ("reader", readerScript, DatabaseImage.readerKey, DatabaseImage.readerRuns),
        ]
        if getenv("RCAGENT_WRITE_IMAGES") != nil {
            try Self.write(images.map { ($0.0, DatabaseImage.key($0.1), try DatabaseImage.build($0.1)) })
        }
        for (name, script, key, runs) in images {
            #expect(
                DatabaseImage.key(script) == key,
                "DatabaseImage+Data.swift is out of date: RCAGENT_WRITE_IMAGES=1 swift test --filter DatabaseImageTests"
            )
            let embedded = try #require(DatabaseImage.decode(runs), "\(name)")
            let built = try DatabaseImage.build(script)
            let expected = try Self.description(built)
            #expect(expected.contains { $0.hasPrefix("schema: table meta meta") } && expected.last == "ok", "\(name)")
            #expect(try Self.description(embedded) == expected, "\(name)")
            #expect(embedded.count == built.count, "\(name)")
        }
    }

    /// A store on a new database hands out the image built in advance, and the reader file it
    /// writes from it reads as one built from scratch does.
    @Test func aNewStoreUsesIt() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            try store.replaceDefaults(["greeting": "hello"])
            let schema = try store.readerSchema()
            #expect(DatabaseImage.key(schema.joined(separator: ";\n")) == DatabaseImage.readerKey)
            #expect(try store.emptyReaderImage() == DatabaseImage.decode(DatabaseImage.readerRuns))
            try store.writeReaderFile(to: dir.file("reader.db"))
            let reader = try #require(try StateStore.openReaderFile(path: dir.file("reader.db")))
            #expect(try reader.value(forKey: "greeting")?.text == "hello")
        }
    }

    /// A database whose schema is not this build's (another build's, or one changed by hand) gets
    /// an image built from its own schema, never the one built in advance.
    @Test func anotherSchemaBuildsItsOwnImage() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            try store.db.execute("CREATE TABLE extra (x TEXT)")
            let schema = try store.readerSchema()
            #expect(schema.contains("CREATE TABLE extra (x TEXT)"))
            #expect(DatabaseImage.key(schema.joined(separator: ";\n")) != DatabaseImage.readerKey)
            let image = try store.emptyReaderImage()
            #expect(try Self.description(image).contains("schema: table extra extra CREATE TABLE extra (x TEXT)"))
        }
    }

    @Test func runsRoundTripAndMalformedOnesAreRefused() {
        var generator = SystemRandomNumberGenerator()
        for size in [0, 1, 15, 16, 17, 47, 48, 49, 100, 4096] {
            // Zero runs of every length around the 16 the encoder keeps inside a run.
            var bytes = [UInt8](repeating: 0, count: size)
            var index = 0
            while index < size {
                let run = Int.random(in: 1...40, using: &generator)
                if Bool.random(using: &generator) {
                    for at in index..<min(size, index + run) {
                        bytes[at] = UInt8.random(in: 1...255, using: &generator)
                    }
                }
                index += run
            }
            #expect(DatabaseImage.decode(DatabaseImage.encode(bytes)) == bytes, "size \(size)")
        }
        let malformed = [
            "", "4096\n", "size\n", "size -1\n", "size x\n", "size 4\n0 0102030405\n", "size 4\n3 0102\n",
            "size 4\n0 010\n", "size 4\n0 01g2\n", "size 4\n-1 01\n", "size 4\n001\n",
        ]
        for text in malformed { #expect(DatabaseImage.decode(text) == nil, "\(text)") }
        #expect(DatabaseImage.decode("size 4\n1 0102\n") == [0, 1, 2, 0])
        #expect(DatabaseImage.decode("size 4\n0 0A0b\n") == [10, 11, 0, 0])
    }

    /// `DatabaseImage+Data.swift` beside `DatabaseImage.swift` in the sources.
    private static var dataFile: String {
        let tests = "\(#filePath)".split(separator: "/").dropLast(2).joined(separator: "/")
        return "/" + tests + "/../Sources/RCStore/DatabaseImage+Data.swift"
    }

    /// Writes the data file for `images` (name, key, bytes).
    private static func write(_ images: [(String, String, [UInt8])]) throws {
        var text = """
            // Written by DatabaseImageTests (RCAGENT_WRITE_IMAGES=1): do not edit by hand.

            extension DatabaseImage {

            """
        for (name, key, image) in images {
            let runs = DatabaseImage.encode(image).split(separator: "\n").map { "        " + $0 }.joined(
                separator: "\n")
            text += """
                    /// ``DatabaseImage/key(_:)`` of the script the \(name) image was built from.
                    static let \(name)Key = "\(key)"
                    /// The \(name) image (``DatabaseImage/decode(_:)``).
                    static let \(name)Runs = \"\"\"
                \(runs)
                        \"\"\"

                """
        }
        try FileBytes.writeAtomically(dataFile, Array((text + "}\n").utf8))
    }
}
