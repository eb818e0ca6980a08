/// What a fuzz target made of one input: the parser took it, or refused it with an error.
public enum FuzzOutcome: Sendable, Equatable {
    case accepted
    case rejected
}

/// A property of a parser that an input broke: a finding, like a crash. The replayer and the
/// libFuzzer entry point stop on it with the message; the corpus test reports it as a failure.
public struct PropertyViolation: Error, CustomStringConvertible, Sendable {
    public let target: String
    public let message: String
    public let location: String

    public var description: String { "\(target): property violated at \(location): \(message)" }
}

/// One parser under fuzzing: a name, what it checks, and a function that feeds it bytes.
///
/// Beyond "does not crash or hang", each target checks properties of the parser's answer: an error
/// names what is wrong (and where, when the parser knows a place), and an accepted input means
/// the same when parsed again from its canonical form or along another path.
public struct FuzzTarget: Sendable {
    public let name: String
    /// The parser fed and the properties checked, one line.
    public let summary: String
    private let body: @Sendable (Checker, [UInt8]) throws(PropertyViolation) -> FuzzOutcome

    /// `summary` is prose (a text block where it is declared), one line once its continuations join.
    init(
        _ name: String, _ body: @escaping @Sendable (Checker, [UInt8]) throws(PropertyViolation) -> FuzzOutcome,
        _ summary: String
    ) {
        self.name = name
        self.summary = summary
        self.body = body
    }

    /// Feeds `bytes` to the parser and checks its properties.
    public func run(_ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        try body(Checker(target: name), bytes)
    }
}

/// Checks properties for one target; a failed check throws a ``PropertyViolation``.
struct Checker {
    let target: String

    func require(
        _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, fileID: StaticString = #fileID,
        line: UInt = #line
    ) throws(PropertyViolation) {
        guard !condition() else { return }
        throw PropertyViolation(target: target, message: message(), location: "\(fileID):\(line)")
    }

    /// An error message says what failed: it starts with the expected prefix (the document, key or
    /// place) and has a reason after it.
    func requireNamed(
        _ error: some CustomStringConvertible, prefix: String, fileID: StaticString = #fileID, line: UInt = #line
    ) throws(PropertyViolation) {
        let text = error.description
        try require(
            text.hasPrefix(prefix) && text.count > prefix.count
                && !text.dropFirst(prefix.count).allSatisfy { $0 == " " || $0 == ":" },
            "error \"\(text)\" does not start with \"\(prefix)\" followed by a reason", fileID: fileID, line: line)
    }
}

extension Checker {
    /// What `parse` made of the input named `name`, or `nil` when it refused it: then its error must
    /// name the input (``requireNamed(_:prefix:fileID:line:)``). The first step of every target whose
    /// parser names the document in its errors.
    func parsed<T>(
        _ name: String, fileID: StaticString = #fileID, line: UInt = #line, _ parse: (String) throws -> T
    ) throws(PropertyViolation) -> T? {
        do { return try parse(name) } catch {
            try requireNamed(String(describing: error), prefix: name + ": ", fileID: fileID, line: line)
            return nil
        }
    }
}

/// Every fuzz target, by name.
public enum FuzzTargets {
    public static let all: [FuzzTarget] =
        ConfigTargets.all + JSONTargets.all + VersionTargets.all + AddressTargets.all + TemplateTargets.all
        + AgentTargets.all + SigningTargets.all

    public static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}

/// Whether `text` holds `part`, compared as UTF-8 bytes: `String.contains` compares characters, and a
/// part that starts with a combining mark joins the character before it in `text`.
func contains(_ text: String, _ part: String) -> Bool {
    part.isEmpty || text.utf8.firstRange(of: part.utf8) != nil
}

/// Text as the parsers that take `String` see it: invalid UTF-8 replaced, as a lenient reader would.
func text(_ bytes: [UInt8]) -> String {
    String(decoding: bytes, as: UTF8.self)
}
