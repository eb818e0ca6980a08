import Glibc
import RCSystem
import TestSupport
import Testing

@testable import RCStore

/// The reader file's empty image built in advance (`ReaderImage+Data.swift`) is the one a new state
/// database's schema builds, a store uses it, and a store whose schema is another builds its own.
///
/// After a change to the schema, `RCAGENT_WRITE_READER_IMAGE=1 swift test --filter ReaderImageTests`
/// writes `ReaderImage+Data.swift` again from the image built here; until then the first test fails
/// (and the daemon builds the image at each start, as before).
@Suite struct ReaderImageTests {
    /// A new state database's reader schema, and the image built from it as a store builds one.
    private static func built() throws -> (schema: [String], image: [UInt8]) {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            let schema = try store.readerSchema(of: store.db)
            return (schema, try StateStore.buildReaderImage(schema: schema))
        }
    }

    /// What a database's bytes hold, for comparing two: its schema, `user_version` and page size,
    /// and that SQLite finds it sound. Not its bytes: another SQLite writes its own version in the
    /// header.
    private static func description(_ image: [UInt8]) throws -> [String] {
        let db = try Database(image: image)
        var lines = try db.query("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name") { row in
            (0..<4).map { row.text($0) ?? "NULL" }.joined(separator: " | ")
        }
        lines.append("user_version \(try db.query("PRAGMA user_version") { $0.integer(0) ?? -1 }.first ?? -1)")
        lines.append("page_size \(try db.query("PRAGMA page_size") { $0.integer(0) ?? -1 }.first ?? -1)")
        lines += try db.query("PRAGMA integrity_check") { $0.text(0) ?? "" }
        return lines
    }

    @Test func theImageBuiltInAdvanceIsTheOneANewDatabasesSchemaBuilds() throws {
        let (schema, image) = try Self.built()
        if let path = getenv("RCAGENT_WRITE_READER_IMAGE").map({ _ in Self.dataFile }) {
            try Self.write(schemaKey: ReaderImage.key(schema), image: image, to: path)
        }
        #expect(
            ReaderImage.key(schema) == ReaderImage.schemaKey,
            "ReaderImage+Data.swift is out of date: RCAGENT_WRITE_READER_IMAGE=1 swift test --filter ReaderImageTests")
        let embedded = try #require(ReaderImage.embedded(for: schema))
        let expected = try Self.description(image)
        #expect(expected.contains { $0.hasPrefix("table | active_values |") } && expected.last == "ok")
        #expect(try Self.description(embedded) == expected)
        #expect(embedded.count == image.count)
    }

    /// A store on a new database hands out the image built in advance, and the reader file it
    /// writes from it reads as one built from scratch does.
    @Test func aNewStoreUsesIt() throws {
        try TemporaryDirectory.with { (dir) throws in
            let store = try StateStore.openForWriting(path: dir.file("state.db"))
            try store.replaceDefaults(["greeting": "hello"])
            let embedded = try #require(ReaderImage.embedded(for: try store.readerSchema(of: store.db)))
            #expect(try store.emptyReaderImage() == embedded)
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
            let schema = try store.readerSchema(of: store.db)
            #expect(schema.last == "CREATE TABLE extra (x TEXT)")
            #expect(ReaderImage.embedded(for: schema) == nil)
            let image = try store.emptyReaderImage()
            #expect(try Self.description(image).contains("table | extra | extra | CREATE TABLE extra (x TEXT)"))
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
            #expect(ReaderImage.decode(ReaderImage.encode(bytes)) == bytes, "size \(size)")
        }
        let malformed = [
            "", "4096\n", "size\n", "size -1\n", "size x\n", "size 4\n0 0102030405\n", "size 4\n3 0102\n",
            "size 4\n0 010\n", "size 4\n0 01g2\n", "size 4\n0 0A\n", "size 4\n-1 01\n", "size 4\n001\n",
        ]
        for text in malformed { #expect(ReaderImage.decode(text) == nil, "\(text)") }
        #expect(ReaderImage.decode("size 4\n1 0102\n") == [0, 1, 2, 0])
    }

    /// `ReaderImage+Data.swift` beside `ReaderImage.swift` in the sources.
    private static var dataFile: String {
        let tests = "\(#filePath)".split(separator: "/").dropLast(2).joined(separator: "/")
        return "/" + tests + "/../Sources/RCStore/ReaderImage+Data.swift"
    }

    private static func write(schemaKey: String, image: [UInt8], to path: String) throws {
        let runs = ReaderImage.encode(image).split(separator: "\n").map { "        " + $0 }.joined(separator: "\n")
        let text = """
            // Written by ReaderImageTests (RCAGENT_WRITE_READER_IMAGE=1): do not edit by hand.

            extension ReaderImage {
                /// ``ReaderImage/key(_:)`` of the schema the image was built from.
                static let schemaKey = "\(schemaKey)"
                /// The image (``ReaderImage/decode(_:)``).
                static let runs = \"\"\"
            \(runs)
                    \"\"\"
            }

            """
        try FileBytes.writeAtomically(path, Array(text.utf8))
    }
}
